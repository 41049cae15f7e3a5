"""Reads reuse what they read at the key's records version; any write moves it."""
from emulators.pytest_plugin import test_app
from testkit.counter_service import service


def record_reads(app):
    seen = []
    app.runtime.db.conn.set_trace_callback(seen.append)
    return lambda: [sql for sql in seen if sql.startswith("SELECT value FROM records")]


def test_a_read_request_reads_a_record_once_per_change_of_the_key(app, db):
    app.post_json("/items", {"name": "a"}, status=201)
    reads = record_reads(app)
    assert app.get("/items/1").json["name"] == "a"
    assert app.get("/items/1").json["name"] == "a"
    assert len(reads()) == 1
    other = test_app(service, db)  # another worker: its write moves the version
    other.put_json("/__admin/state/items/1", {"value": {"id": 1, "name": "b"}}, status=200)
    assert app.get("/items/1").json["name"] == "b"
    app.delete("/items/1")  # a DELETE reads nothing cached; the next GET sees it gone
    app.get("/items/1", status=404)
    assert len(reads()) == 3


def test_writes_and_transactions_read_fresh(app):
    app.post_json("/items", {"name": "a"}, status=201)
    instance = app.runtime.instance("default", method="GET")
    assert instance.records.get("items", 1)["name"] == "a"  # cached at this version
    with instance.transaction():  # inside a transaction: the database, not the cache
        instance.records.put("items", 1, {"id": 1, "name": "in"})
        assert instance.records.get("items", 1)["name"] == "in"
    assert instance.records.get("items", 1)["name"] == "in"  # it wrote: no more cache
