"""Journal (metadata only, redacted), its filters and scopes, and metrics."""
from tests.emulators.runtime.conftest import ns


def requests(app, query=""):
    return app.get("/__admin/requests" + query).json["requests"]


def test_journal_never_holds_bodies_queries_or_credentials(app):
    app.post_json("/items?token=QUERYSECRET", {"name": "PROMPT TEXT SECRET"},
                  headers={"Authorization": "Bearer BEARERSECRET", "Cookie": "sid=COOKIESECRET"})
    app.get("/items/99?access_token=QUERYSECRET2",
            headers={"Authorization": "Bearer BEARERSECRET"}, status=404)
    text = app.get("/__admin/requests").text
    for secret in ("QUERYSECRET", "PROMPT TEXT", "BEARERSECRET", "COOKIESECRET", "token="):
        assert secret not in text
    first, second = requests(app)
    assert first["path"] == "/items" and first["operationId"] == "createItem"
    assert second["request"] == {"contentType": None, "bodyBytes": None,
                                 "transferEncoding": None}
    assert "request" not in first


def test_entry_fields(app):
    app.post_json("/items", {"name": "x"})
    app.get("/not/a/route", status=404)
    created, unmatched = requests(app)
    assert created["status"] == 201 and created["ids"] == {"itemId": 1}
    assert created["unmatched"] is False and created["seq"] < unmatched["seq"]
    assert unmatched["unmatched"] is True and "operationId" not in unmatched
    assert isinstance(created["durationMs"], float)


def test_filters_and_cursor(app, wall):
    for _ in range(3):
        app.get("/counter")
    wall.now += 60_000
    app.post("/counter")
    app.get("/items/5", status=404)
    assert len(requests(app, "?operationId=getCounter")) == 3
    assert [e["path"] for e in requests(app, "?status=404")] == ["/items/5"]
    assert len(requests(app, "?limit=2")) == 2
    assert requests(app, "?limit=2")[-1]["path"] == "/items/5"
    assert len(requests(app, f"?since={wall.now}")) == 2
    cursor = requests(app)[2]["seq"]
    assert len(requests(app, f"?after={cursor}")) == 2
    for bad, message in (("?status=abc", "status: expected an HTTP status"),
                         ("?since=soon", "since: expected epoch ms or ISO-8601"),
                         ("?limit=-1", "limit: expected a count")):
        res = app.get("/__admin/requests" + bad, status=400)
        assert res.json["error"]["message"] == message


def test_scopes_and_clearing(app):
    app.get("/counter", headers=ns("w1"))
    app.get("/counter", headers=ns("w2"))
    assert [e["namespace"] for e in requests(app, "?namespace=w1")] == ["w1"]
    assert [e["namespace"] for e in requests(app, "?all=1")] == ["w1", "w2"]
    app.delete("/__admin/requests?namespace=w1")
    assert [e["namespace"] for e in requests(app, "?all=1")] == ["w2"]
    app.delete("/__admin/requests?all=1")
    assert requests(app, "?all=1") == []


def test_admin_requests_are_not_journaled(app):
    app.get("/__admin/health")
    app.get("/__admin/clock")
    assert requests(app) == []


def test_journal_ring_keeps_newest(tmp_path):
    from emulators.pytest_plugin import test_app
    from testkit.counter_service import service
    small = test_app(service, tmp_path / "ring.db", journal_size=5)
    for _ in range(70):
        small.get("/counter")
    body = small.get("/__admin/requests").json
    assert body["size"] == 5 and len(body["requests"]) == 5
    seqs = [e["seq"] for e in body["requests"]]
    assert seqs == sorted(seqs) and seqs[-1] == 70


def test_metrics_global_and_per_namespace(app):
    app.get("/counter", headers=ns("w1"))
    app.get("/counter", headers=ns("w2"))
    app.get("/nope", headers=ns("w2"), status=404)
    app.get("/nope", headers=ns("w2"), status=404)
    app.post_json("/__admin/faults?namespace=w1", {"status": 500, "count": 1})
    app.get("/counter", headers=ns("w1"), status=500)
    metrics = app.get("/__admin/metrics").json
    assert metrics["requests"] == 5 and metrics["faults"] == 1
    assert metrics["byOperation"] == {"(unmatched) 404": 2, "getCounter 200": 2,
                                      "getCounter 500": 1}
    assert metrics["unmatched"] == [{"method": "GET", "path": "/nope", "count": 2}]
    assert app.get("/__admin/metrics?namespace=w1").json["requests"] == 2
    app.delete("/__admin/metrics?namespace=w1")
    assert app.get("/__admin/metrics").json["requests"] == 3
    app.delete("/__admin/metrics")
    assert app.get("/__admin/metrics").json["requests"] == 0


def test_bad_or_huge_cursors_are_400_or_empty_never_500(app):
    app.post_json("/items", {"name": "a"})
    for query in ("?limit=%C2%B2", "?after=%D9%A1", "?since=99999999999999999999"):
        res = app.get("/__admin/requests" + query, status=400)
        assert res.json["error"]["type"] == "mockingbird_admin"
    assert requests(app, "?after=99999999999999999999") == []
    assert len(requests(app, "?limit=99999999999999999999")) == 1


def _entry(namespace, n=0):
    return {"namespace": namespace, "method": "GET", "path": f"/x/{n}", "status": 200,
            "durationMs": 1.0}


def test_the_ring_is_trimmed_when_segments_are_drained(tmp_path):
    from emulators.runtime.state.db import Database
    from emulators.runtime.state.journal import Journal
    db = Database(tmp_path / "trim.db")
    journal = Journal(db, "svc", size=400)

    def stored(namespace):
        return db.one("SELECT count(*) FROM journal WHERE namespace=?", (namespace,))[0]

    for n in range(500):
        journal.record(_entry("a", n), 0)
    assert stored("a") == 0  # appended to the segment only: no SQLite row per request
    assert [e["seq"] for e in journal.entries("a")] == list(range(101, 501))
    assert stored("a") == 400  # the drain folded the counts, then trimmed the ring
    for n in range(100):
        journal.record(_entry("b", n), 0)
    metrics = journal.metrics()
    assert metrics["requests"] == 600 and metrics["byOperation"] == {"(unmatched) 200": 600}
    # /x/0 of `a` was only counted (past the ring), /x/499 kept: both under their path
    unmatched = {(u["path"], u["count"]) for u in metrics["unmatched"]}
    assert ("/x/0", 2) in unmatched and ("/x/499", 1) in unmatched  # a's and b's /x/0
    assert stored("a") == 400 and stored("b") == 100


def test_reads_write_no_sqlite_row_and_the_journal_still_shows_them_in_order(app, db):
    from emulators.runtime.state.db import Database
    app.post_json("/items", {"name": "x"})
    requests(app)  # drained
    other = Database(db)  # another worker's connection sees every commit made by this one
    before = other.one("PRAGMA data_version")[0]
    for path in ("/items/1", "/counter", "/items/1", "/nope"):
        app.get(path, status="*")
    assert other.one("PRAGMA data_version")[0] == before
    assert [e["path"] for e in requests(app)] == ["/items", "/items/1", "/counter", "/items/1",
                                                  "/nope"]


def test_entries_of_a_killed_process_and_of_full_segments_all_land_once(tmp_path, monkeypatch):
    import os
    import signal
    import time

    from emulators.runtime.state import segments
    from emulators.runtime.state.db import Database
    from emulators.runtime.state.journal import Journal
    db = Database(tmp_path / "kill.db")
    journal = Journal(db, "svc", size=1000)
    journal.record(_entry("w", -1), 0)
    child = os.fork()
    if child == 0:  # another worker: appends, then dies by SIGKILL with nothing flushed
        for n in range(50):
            journal.record(_entry("w", n), 0)
        os.kill(os.getpid(), signal.SIGKILL)
    os.waitpid(child, 0)
    monkeypatch.setattr(segments, "ROTATE_BYTES", 2000)  # a drain thread every ~20 entries
    for n in range(50, 200):
        journal.record(_entry("w", n), 0)
    deadline = time.monotonic() + 10
    while journal._draining.locked() and time.monotonic() < deadline:
        time.sleep(0.01)
    paths = [e["path"] for e in journal.entries("w")]
    assert sorted(paths, key=lambda p: int(p.rsplit("/", 1)[1])) == \
        [f"/x/{n}" for n in range(-1, 200)]
    assert [e["seq"] for e in journal.entries("w")] == list(range(1, 202))
    journal.entries("w")  # a second drain deletes what the first read whole
    folder = journal._segments.folder
    assert len([name for name in os.listdir(folder) if name.endswith(".log")]) == 1  # ours
    assert journal.metrics()["requests"] == 201


def test_two_workers_folding_metrics_count_every_request_once(tmp_path):
    from emulators.pytest_plugin import test_app
    from testkit.counter_service import service
    db = tmp_path / "fold.db"
    one, two = (test_app(service, db, journal_size=5) for _ in range(2))
    expected = {"w1": 0, "w2": 0}
    for i in range(300):  # past several folds of each worker (every 64 of its own entries)
        app, namespace = (one, two)[i % 2], ("w1", "w2")[i % 3 == 0]
        if i % 7:
            app.get("/counter", headers=ns(namespace))
        else:
            app.get("/items/404", headers=ns(namespace), status=404)
        expected[namespace] += 1
    metrics = one.get("/__admin/metrics").json
    assert metrics == two.get("/__admin/metrics").json
    assert metrics["requests"] == 300
    assert metrics["byOperation"] == {"getCounter 200": 300 - len(range(0, 300, 7)),
                                      "getItem 404": len(range(0, 300, 7))}
    for namespace, count in expected.items():
        assert one.get(f"/__admin/metrics?namespace={namespace}").json["requests"] == count
        seqs = [e["seq"] for e in requests(two, f"?namespace={namespace}")]
        assert len(seqs) == 5 and seqs == sorted(seqs)
    two.delete("/__admin/requests?all=1")  # the journal goes, its counts stay
    assert one.get("/__admin/metrics").json["requests"] == 300
    one.delete("/__admin/metrics?namespace=w1")
    assert two.get("/__admin/metrics").json["requests"] == expected["w2"]
    two.get("/counter", headers=ns("w1"))
    assert one.get("/__admin/metrics?namespace=w1").json["requests"] == 1
