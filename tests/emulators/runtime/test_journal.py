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
    from emulators.runtime.testing import test_app
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


def test_journal_ring_trims_in_batches_of_a_quarter_ring(tmp_path):
    from emulators.runtime.db import Database
    from emulators.runtime.journal import Journal
    db = Database(tmp_path / "trim.db")
    journal = Journal(db, "svc", size=400)
    assert journal.trim_every == 100 and Journal(db, "svc", size=5).trim_every == 64

    def add(namespace, n):
        for _ in range(n):
            with db.transaction() as conn:
                journal.record(conn, {"namespace": namespace, "method": "GET", "path": "/x",
                                      "status": 200, "durationMs": 1.0}, 0)

    def stored(namespace):
        return db.one("SELECT count(*) FROM journal WHERE namespace=?", (namespace,))[0]

    add("a", 499)
    assert stored("a") == 499  # no trim yet: rows past the ring are kept, never read
    assert [e["seq"] for e in journal.entries("a")] == list(range(100, 500))
    add("a", 1)  # seq 500: the trim keeps the newest 400
    assert stored("a") == 400
    assert [e["seq"] for e in journal.entries("a")] == list(range(101, 501))
    add("b", 100)  # seq 600 trims b's ring (under size: nothing) and leaves a alone
    assert stored("a") == 400 and stored("b") == 100
    assert journal.metrics()["requests"] == 600


def test_two_workers_folding_metrics_count_every_request_once(tmp_path):
    from emulators.runtime.testing import test_app
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
