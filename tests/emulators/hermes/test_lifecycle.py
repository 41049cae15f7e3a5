"""Observe, restart, retention, sweep and presets."""
import pytest
import webtest

from emulators.hermes.app import create_service
from emulators.hermes.settings import HermesSettings
from emulators.runtime import DroppedByFault
from emulators.runtime.app import Runtime
from emulators.runtime.settings import Settings

from .conftest import FIRST_RUN, SECOND_RUN, T0, T0_S, HermesClient

INTERRUPTED = "The gateway restarted before this run settled."


def test_observe_completed_fills_defaults(client):
    run_id = client.submit().json["run_id"]
    client.advance(250)
    res = client.observe(run_id, {"status": "completed"})
    assert res.status_int == 200
    assert res.json == {"object": "hermes.run", "run_id": run_id, "status": "completed",
                        "updated_at": T0_S + 0.25, "created_at": T0_S, "session_id": run_id,
                        "model": "hermes-agent", "last_event": "run.completed", "output": "",
                        "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}}
    assert client.run(run_id).json == res.json


def test_observe_failed_and_interrupted_default_errors(client):
    a, b = client.submit().json["run_id"], client.submit().json["run_id"]
    assert client.observe(a, {"status": "failed"}).json["error"] == "agent run failed"
    assert client.observe(b, {"status": "interrupted"}).json["error"] == INTERRUPTED


def test_terminal_runs_cannot_change(client):
    run_id = client.submit().json["run_id"]
    client.observe(run_id, {"status": "cancelled"}, status=200)
    res = client.observe(run_id, {"status": "running"})
    assert res.status_int == 409
    assert res.json == {"error": {"message": "observe: terminal runs cannot be changed",
                                  "type": "invalid_request_error", "param": None,
                                  "code": "mock_terminal_run"}}
    # validation errors are reported before the 409
    assert client.observe(run_id, {"status": "bogus"}).status_int == 400


@pytest.mark.parametrize("body,message", [
    ({"status": "bogus"}, "expected a supported status"),
    ([], "expected a supported status"),
    ({"status": "running", "x": 1}, "unsupported field"),
    ({"status": "running", "last_event": 1}, "last_event must be a string"),
    ({"status": "completed", "output": None}, "output must be a string"),
    ({"status": "running", "output": "x"}, "result fields require completed status"),
    ({"status": "running", "pending_steer": "x"}, "result fields require completed status"),
    ({"status": "completed", "error": "x"}, "error requires failed or interrupted status"),
    ({"status": "running", "approval": {}}, "approval requires waiting_for_approval and an object"),
    ({"status": "waiting_for_approval", "approval": []},
     "approval requires waiting_for_approval and an object"),
    ({"status": "running", "approval_timeout_s": 5},
     "approval_timeout_s requires waiting_for_approval and a positive number"),
    ({"status": "waiting_for_approval", "approval_timeout_s": 0},
     "approval_timeout_s requires waiting_for_approval and a positive number"),
    ({"status": "waiting_for_approval", "approval_timeout_s": True},
     "approval_timeout_s requires waiting_for_approval and a positive number"),
    ({"status": "completed", "usage": {"input_tokens": 1, "output_tokens": 1}},
     "usage requires three nonnegative token counts"),
    ({"status": "completed",
      "usage": {"input_tokens": True, "output_tokens": 1, "total_tokens": 2}},
     "usage requires three nonnegative token counts"),
    ({"status": "completed", "usage": {"input_tokens": -1, "output_tokens": 1, "total_tokens": 2}},
     "usage requires three nonnegative token counts"),
    ({"status": "running", "events": [{"event": "run.completed"}]},
     "events must be objects whose event is one of message.delta, reasoning.available,"
     " tool.started, tool.completed, subagent.start, subagent.complete"),
])
def test_observe_validation(client, body, message):
    run_id = client.submit().json["run_id"]
    res = client.observe(run_id, body)
    assert res.status_int == 400
    assert res.json == {"error": {"message": "observe: " + message,
                                  "type": "invalid_request_error", "param": None, "code": None}}
    assert client.run(run_id).json["status"] == "queued"


def test_observe_unknown_run_is_404_envelope(client):
    res = client.observe("run_x", {"status": "running"})
    assert res.status_int == 404 and res.json["error"]["code"] == "run_not_found"


def test_usage_integral_floats_are_accepted_as_ints(client):
    run_id = client.submit().json["run_id"]
    usage = {"input_tokens": 2.0, "output_tokens": 3, "total_tokens": 5}
    assert client.observe(run_id, {"status": "completed", "usage": usage}).json["usage"] == {
        "input_tokens": 2, "output_tokens": 3, "total_tokens": 5}


def test_last_event_rules(client):
    run_id = client.submit().json["run_id"]
    client.stop(run_id)
    assert client.observe(run_id, {"status": "running"}).json["last_event"] == "run.stopping"
    waiting = client.observe(run_id, {"status": "waiting_for_approval",
                                      "approval": {"command": "rm"}})
    assert waiting.json["last_event"] == "approval.request"
    assert "approval" not in waiting.json  # the command is only in the event stream
    back = client.observe(run_id, {"status": "running", "last_event": "tool.started"}).json
    assert back["last_event"] == "tool.started" and "approval" not in back


def test_same_status_progress_is_not_persisted_durably(client):
    run_id = client.submit(key="k").json["run_id"]
    client.observe(run_id, {"status": "running"}, status=200)
    client.observe(run_id, {"status": "running", "last_event": "tool.started"}, status=200)
    client.admin("/hermes/restart", {"owner": "alive"}, status=200)
    record = client.run(run_id).json
    assert record["status"] == "running" and "last_event" not in record


def test_restart_stale_interrupts_unfinished_keyed_runs_lazily(client):
    keyed = client.submit(key="k").json["run_id"]
    done = client.submit(key="k2").json["run_id"]
    client.observe(done, {"status": "completed", "output": "ok"}, status=200)
    keyless = client.submit().json["run_id"]
    client.observe(keyed, {"status": "waiting_for_approval", "approval": {"a": 1}}, status=200)
    res = client.admin("/hermes/restart", {"owner": "stale"})
    assert res.json == {"owner": "stale", "retained": 2, "discarded": 1, "simulated": True}
    assert client.run(keyless).status_int == 404
    client.advance(7000)
    record = client.run(keyed).json
    assert record["status"] == "interrupted" and record["error"] == INTERRUPTED
    assert record["last_event"] == "run.interrupted" and "approval" not in record
    assert record["created_at"] == T0_S and record["updated_at"] == T0_S + 7
    assert client.run(done).json["output"] == "ok"
    client.advance(1000)
    assert client.submit(key="k").json == {"run_id": keyed, "status": "interrupted",
                                           "replayed": True}
    assert client.stop(keyed).json == record
    assert client.observe(keyed, {"status": "running"}).status_int == 409


def test_restart_alive_keeps_records_but_stop_is_409(client):
    run_id = client.submit(key="k").json["run_id"]
    client.observe(run_id, {"status": "running"}, status=200)
    client.admin("/hermes/restart", {"owner": "alive"}, status=200)
    assert client.run(run_id).json["status"] == "running"
    res = client.stop(run_id)
    assert res.status_int == 409
    assert res.json["error"] == {"message": f"Run is not active in this gateway process: {run_id}",
                                 "type": "invalid_request_error", "param": None,
                                 "code": "run_not_active"}
    client.observe(run_id, {"status": "completed"}, status=200)
    assert client.stop(run_id).json["status"] == "completed"
    fresh = client.submit(key="new").json["run_id"]
    assert client.stop(fresh).json == {"run_id": fresh, "status": "stopping"}


@pytest.mark.parametrize("body", [{"owner": "unknown"}, {"owner": ["alive"]},
                                  {"owner": "alive", "x": 1}, {}, None])
def test_restart_validation(client, body):
    res = client.app.post("/__admin/hermes/restart", b"" if body is None else
                          __import__("json").dumps(body).encode(), status="*")
    assert res.status_int == 400
    assert res.json["error"]["message"] == "restart: owner must be explicitly stale or alive"


def test_cache_eviction_follows_sweep_ticks(client):
    run_id = client.submit().json["run_id"]  # schedule anchored at T0+60 s
    client.observe(run_id, {"status": "completed"}, status=200)
    client.clock(set=T0 + 3_600_001)
    assert client.run(run_id).status_int == 200  # tick at T0+3600 s: age exactly 3600 survives
    client.clock(set=T0 + 3_660_000)
    assert client.run(run_id).status_int == 404


def test_interrupted_and_unfinished_runs_are_never_evicted(client):
    a, b = client.submit().json["run_id"], client.submit().json["run_id"]
    client.observe(a, {"status": "interrupted"}, status=200)
    client.clock(set=T0 + 10 * 3_600_000)
    assert client.run(a).status_int == 200 and client.run(b).status_int == 200


def test_keyed_terminal_run_hydrates_after_cache_eviction(client):
    run_id = client.submit(key="k").json["run_id"]
    client.observe(run_id, {"status": "completed", "output": "kept"}, status=200)
    client.clock(set=T0 + 2 * 3_600_000)
    assert client.admin("/hermes/sweep").json == {"cacheRemoved": 1, "simulated": True}
    assert client.run(run_id).json["output"] == "kept"


def test_sweep_control_counts_only_old_settled_runs(client):
    a, b = client.submit().json["run_id"], client.submit().json["run_id"]
    client.observe(a, {"status": "failed"}, status=200)
    client.advance(3_600_000)
    assert client.admin("/hermes/sweep").json["cacheRemoved"] == 0
    client.advance(1)
    assert client.admin("/hermes/sweep").json["cacheRemoved"] == 1
    assert client.run(b).status_int == 200


def test_throttled_preset_429_for_new_runs_but_replays_succeed(client):
    run_id = client.submit(key="k").json["run_id"]
    client.preset("hermes_throttled")
    assert client.submit(key="k").json == {"run_id": run_id, "status": "queued", "replayed": True}
    client.preset("hermes_throttled")
    res = client.submit(key="new")
    assert res.status_int == 429 and res.headers["Retry-After"] == "1"
    assert res.json == {"error": {"message": "Too many concurrent runs (max 10)",
                                  "type": "rate_limit_error", "param": None,
                                  "code": "rate_limit_exceeded"}}
    assert client.submit(key="new").status_int == 202


def test_draining_preset_is_503_before_anything(client):
    client.preset("hermes_draining")
    res = client.submit(raw=b"{")
    assert res.status_int == 503 and res.headers["Retry-After"] == "1"
    assert res.json == {"error": {"message": "Gateway is draining existing work; retry shortly.",
                                  "type": "invalid_request_error", "param": None,
                                  "code": "gateway_draining"}}
    assert client.submit().json["run_id"].startswith("run_")


def test_accepted_drop_commits_the_run_then_loses_the_answer(client, app):
    client.preset("hermes_submit_accepted_drop")
    with pytest.raises(DroppedByFault):
        client.submit(key="lost")
    res = client.submit(key="lost")
    assert res.json["replayed"] is True and res.json["status"] == "queued"
    journal = app.get("/__admin/requests").json["requests"]
    dropped = [e for e in journal if e["status"] == 0]
    assert dropped and dropped[0]["accepted"] is True and dropped[0]["checkpoint"].startswith("cp_")
    assert dropped[0]["faultId"] == "hermes_submit_accepted_drop"


def test_poll_timeout_preset_delays_one_poll(client):
    import time
    run_id = client.submit().json["run_id"]
    client.preset("hermes_poll_timeout")
    started = time.monotonic()
    assert client.run(run_id).status_int == 200
    assert time.monotonic() - started >= 0.95
    started = time.monotonic()
    client.run(run_id)
    assert time.monotonic() - started < 0.5


def test_keys_ignored_preset_is_hermes_0_19_every_submission_a_new_run(client, app):
    assert app.get("/v1/capabilities").json["idempotency"]["supported"] is True
    client.preset("hermes_run_keys_ignored")
    first = client.submit(key="same")
    again = client.submit(key="same")
    assert first.json == {"run_id": FIRST_RUN, "status": "started"}  # as 0.19.0 answers
    assert again.json == {"run_id": SECOND_RUN, "status": "started"}
    assert "Idempotency-Replayed" not in again.headers
    assert client.submit(key="a b").status_int == 202  # the header is never read
    assert client.submit({"input": "other"}, key="same").status_int == 202  # no conflict
    assert "idempotency" not in app.get("/v1/capabilities").json
    # the /p/{profile}/ mirrors are the same release
    mirrored = [app.post_json("/p/work/v1/runs", {"input": "x"}, headers={"Idempotency-Key": "m"},
                              status=202).json for _ in range(2)]
    assert mirrored[0]["run_id"] != mirrored[1]["run_id"] and "replayed" not in mirrored[1]
    assert "idempotency" not in app.get("/p/work/v1/capabilities").json
    app.delete("/__admin/faults", status="*")
    assert client.submit(key="same").json["replayed"] is False
    assert client.submit(key="same").json["replayed"] is True
    assert app.get("/v1/capabilities").json["idempotency"]["supported"] is True


def test_release_preset_answers_steer_as_the_unknown_path_0_19_has_there(tmp_path):
    key = "preset-key-0123456789abcdef"
    auth = {"Authorization": f"Bearer {key}"}
    runtime = Runtime(create_service(HermesSettings(api_key=key)),
                      Settings(db=str(tmp_path / "e.sqlite3")))
    app = webtest.TestApp(runtime)
    client = HermesClient(app)
    client.headers = auth
    run_id = client.submit().json["run_id"]
    client.observe(run_id, {"status": "running"})
    client.preset("hermes_run_keys_ignored")

    def answer(method, path, headers):
        res = app.request(path, method=method, headers=headers, body=b'{"text": "x"}',
                          expect_errors=True)
        return res.status, res.body, sorted((name, value) for name, value in res.headerlist
                                            if not name.lower().startswith("x-mockingbird"))
    unknown = answer("POST", "/v1/runs-does-not-exist", auth)
    assert unknown[:2] == ("404 Not Found", b"404: Not Found")
    steer = f"/v1/runs/{run_id}/steer"
    for method, path, headers in [("POST", steer, auth), ("POST", steer, {}),  # before auth
                                  ("GET", steer, auth), ("POST", "/p/work" + steer, auth)]:
        assert answer(method, path, headers) == unknown, (method, path)
    for path in ("/v1/capabilities", "/p/work/v1/capabilities"):
        capabilities = app.get(path, headers=auth).json
        assert "run_steer" not in capabilities["features"]
        assert "run_steer" not in capabilities["endpoints"]

    app.delete("/__admin/faults", status="*")
    assert client.steer(run_id, {"text": "x"}).json["accepted"] is True
    assert app.get("/v1/capabilities", headers=auth).json["features"]["run_steer"] is True
