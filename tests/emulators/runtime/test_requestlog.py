"""The request log sink (`Settings.on_log`): pretty and json lines, redaction, a failing sink."""
import io
import json
import logging

import pytest

from emulators.runtime import requestlog
from emulators.pytest_plugin import test_app
from tests.emulators.runtime.conftest import ns
from testkit.counter_service import service

BASE = {"service": "github", "namespace": "default", "method": "GET", "path": "/repos/o/r",
        "operationId": "repos/get", "unmatched": False, "status": 200, "durationMs": 3.0}


@pytest.mark.parametrize("changes, line", [
    ({}, "github GET /repos/o/r 200 repos/get 3ms"),
    ({"durationMs": 12.34, "namespace": "w1"}, "github GET /repos/o/r 200 repos/get 12.34ms [w1]"),
    ({"operationId": None, "unmatched": True, "status": 404},
     "github GET /repos/o/r 404 UNMATCHED 3ms"),
    ({"operationId": None, "unmatched": False}, "github GET /repos/o/r 200 - 3ms"),
    ({"status": 0, "faultId": "fault_2"}, "github GET /repos/o/r 0 repos/get 3ms fault=fault_2"),
    ({"adopted": True, "status": 201}, "github GET /repos/o/r 201 repos/get 3ms adopted"),
    ({"status": 415, "request": {"contentType": "text/plain", "bodyBytes": 12,
                                 "transferEncoding": None}},
     "github GET /repos/o/r 415 repos/get 3ms received=12B ct=text/plain"),
    ({"status": 400, "request": {"contentType": None, "bodyBytes": None,
                                 "transferEncoding": "chunked"}},
     "github GET /repos/o/r 400 repos/get 3ms received=? ct=- te=chunked"),
    ({"status": 422, "issues": [{"path": "title", "message": "required", "kind": "missing"},
                                {"path": ["head", 0], "message": "bad", "kind": "type"},
                                {"path": "", "message": "x", "kind": "shape"},
                                {"path": "base", "message": "y", "kind": "missing"},
                                {"path": "body", "message": "z", "kind": "type"}]},
     "github GET /repos/o/r 422 repos/get 3ms issues=title:missing,head.0:type,$:shape(+2)"),
    ({"namespace": "w2", "faultId": "f", "adopted": True, "status": 400,
      "request": {"contentType": "application/json", "bodyBytes": 2, "transferEncoding": None},
      "issues": [{"path": "a", "message": "m", "kind": "k"}]},
     "github GET /repos/o/r 400 repos/get 3ms [w2] fault=f adopted received=2B"
     " ct=application/json issues=a:k"),
])
def test_pretty_line(changes, line):
    entry = {**BASE, **changes}
    entry = {k: v for k, v in entry.items() if v is not None}
    assert requestlog.pretty(entry) == line


def test_sink_modes_write_whole_lines_and_reject_others():
    out = io.StringIO()
    requestlog.sink("pretty", out)(BASE)
    requestlog.sink("json", out)(BASE)
    first, second = out.getvalue().splitlines()
    assert first == "github GET /repos/o/r 200 repos/get 3ms"
    assert json.loads(second) == BASE
    assert requestlog.sink("off") is None
    with pytest.raises(ValueError, match=r"^--log must be pretty, json or off \(got loud\)$"):
        requestlog.sink("loud")


def test_runtime_hands_each_vendor_request_to_the_sink_without_secrets(db):
    seen = []
    app = test_app(service, db, on_log=seen.append)
    app.post_json("/items?token=QUERYSECRET", {"name": "PROMPT TEXT SECRET"},
                  headers={"Authorization": "Bearer BEARERSECRET", **ns("w1")})
    app.get("/items/9?access_token=QUERYSECRET2", status=404)
    app.get("/__admin/health")
    app.get("/__admin/requests")
    assert [(e["method"], e["path"], e["status"], e["namespace"]) for e in seen] == [
        ("POST", "/items", 201, "w1"), ("GET", "/items/9", 404, "default")]
    assert seen[0]["ids"] == {"itemId": 1} and "at" not in seen[0] and "seq" not in seen[0]
    assert seen[1]["request"] == {"contentType": None, "bodyBytes": None,
                                  "transferEncoding": None}
    text = "\n".join(requestlog.as_json(e) + requestlog.pretty(e) for e in seen)
    for secret in ("QUERYSECRET", "PROMPT TEXT", "BEARERSECRET", "token"):
        assert secret not in text
    journal = app.get("/__admin/requests?all=1").json["requests"]
    assert [{k: v for k, v in e.items() if k not in ("at", "seq")} for e in journal] == seen


def test_fault_and_drop_entries_reach_the_sink(db):
    from emulators.runtime import DroppedByFault
    seen = []
    app = test_app(service, db, on_log=seen.append)
    app.post_json("/__admin/faults", {"id": "down", "operationId": "getCounter", "status": 503,
                                      "count": 1})
    app.post_json("/__admin/faults", {"id": "gone", "operationId": "getInfo", "drop": True,
                                      "count": 1})
    app.get("/counter", status=503)
    with pytest.raises(DroppedByFault):
        app.get("/info")
    assert [(e["status"], e["faultId"]) for e in seen] == [(503, "down"), (0, "gone")]


def test_a_failing_sink_is_logged_and_never_breaks_the_request(db, caplog):
    def broken(entry):
        entry["status"] = 999  # a copy: the runtime's own entry stays intact
        raise RuntimeError("sink exploded")
    app = test_app(service, db, on_log=broken)
    with caplog.at_level(logging.ERROR, logger="emulators"):
        assert app.post("/counter").json["value"] == 1
        assert app.get("/counter").json == {"value": 1}
    assert [r.exc_info[1].args[0] for r in caplog.records] == ["sink exploded"] * 2
    journal = app.get("/__admin/requests").json["requests"]
    assert [e["status"] for e in journal] == [200, 200]
    assert "x-mockingbird-checkpoint" in app.post("/counter").headers


def test_no_sink_means_no_sink_call():
    assert requestlog.guarded_sink(None) is None


def test_the_sink_runs_after_the_commit_so_it_never_holds_the_write_lock(tmp_path):
    import sqlite3
    path = tmp_path / "lock.db"
    seen = []

    def sink(entry):
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # raises "database is locked" while a writer holds it
        other.execute("ROLLBACK")
        seen.append((entry["method"], entry["status"]))

    app = test_app(service, path, on_log=sink)
    app.post_json("/items", {"name": "x"}, status=201)
    app.get("/counter")
    assert seen == [("POST", 201), ("GET", 200)]
