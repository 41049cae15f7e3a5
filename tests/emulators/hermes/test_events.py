"""Events (SSE), approval and steer, in-process."""
import json

import pytest

from .conftest import T0_S

# A stream that never ends would otherwise hang the suite until the global timeout.
pytestmark = pytest.mark.timeout(30)


def frames(text):
    """Split an SSE body into ("data", payload) and ("comment", text) items."""
    items = []
    for block in text.split("\n\n"):
        if block.startswith("data: "):
            items.append(("data", json.loads(block[len("data: "):])))
        elif block.startswith(": "):
            items.append(("comment", block[2:]))
    return items


def events(client, run_id, status=200):
    res = client.app.get(f"/v1/runs/{run_id}/events", headers=client._h(None), status=status)
    return res


def test_late_subscriber_replays_the_whole_buffer_then_stream_closes(client):
    run_id = client.submit().json["run_id"]
    client.observe(run_id, {"status": "running", "events": [
        {"event": "message.delta", "delta": "Hel"}, {"event": "message.delta", "delta": "lo"},
        {"event": "tool.started", "tool": "terminal", "preview": "ls"},
        {"event": "tool.completed", "tool": "terminal", "duration": 0.12345}]}, status=200)
    client.advance(500)
    client.observe(run_id, {"status": "completed", "output": "Hello",
                            "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}},
                   status=200)
    res = events(client, run_id)
    assert res.content_type == "text/event-stream"
    assert res.headers["Cache-Control"] == "no-cache"
    assert res.headers["X-Accel-Buffering"] == "no"
    assert res.text.startswith(
        'data: {"event": "message.delta", "run_id": "%s", "timestamp": ' % run_id)
    assert frames(res.text) == [
        ("data", {"event": "message.delta", "run_id": run_id, "timestamp": T0_S, "delta": "Hel"}),
        ("data", {"event": "message.delta", "run_id": run_id, "timestamp": T0_S, "delta": "lo"}),
        ("data", {"event": "tool.started", "run_id": run_id, "timestamp": T0_S,
                  "tool": "terminal", "preview": "ls"}),
        ("data", {"event": "tool.completed", "run_id": run_id, "timestamp": T0_S,
                  "tool": "terminal", "duration": 0.123, "error": False}),
        ("data", {"event": "run.completed", "run_id": run_id, "timestamp": T0_S + 0.5,
                  "output": "Hello",
                  "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}}),
        ("comment", "stream closed")]


def test_tool_progress_sets_last_event(client):
    run_id = client.submit().json["run_id"]
    record = client.observe(run_id, {"status": "running", "events": [
        {"event": "tool.started", "tool": "t"}, {"event": "message.delta", "delta": "x"}]}).json
    assert record["last_event"] == "tool.started"


def test_consumed_stream_is_gone_afterwards(client):
    run_id = client.submit().json["run_id"]
    client.observe(run_id, {"status": "failed", "error": "boom"}, status=200)
    body = frames(events(client, run_id).text)
    assert body == [("data", {"event": "run.failed", "run_id": run_id, "timestamp": T0_S,
                              "error": "boom"}), ("comment", "stream closed")]
    assert events(client, run_id, status=404).json["error"]["code"] == "run_not_found"


def test_events_of_unknown_or_foreign_run_are_404(client):
    assert events(client, "run_nope", status=404).json["error"]["message"] == (
        "Run not found: run_nope")
    run_id = client.submit().json["run_id"]
    client.admin("/hermes/scope", {"profile": "p", "identity": "i"}, status=200)
    events(client, run_id, status=404)


def test_cancelled_after_stop_ends_the_stream(client):
    run_id = client.submit().json["run_id"]
    client.observe(run_id, {"status": "running", "events": [
        {"event": "message.delta", "delta": "partial"}]}, status=200)
    client.stop(run_id)
    client.observe(run_id, {"status": "cancelled"}, status=200)
    items = frames(events(client, run_id).text)
    assert [f[1]["event"] if f[0] == "data" else f[1] for f in items] == [
        "message.delta", "run.cancelled", "stream closed"]


def test_buffer_expires_after_five_minutes_unread(client):
    run_id = client.submit().json["run_id"]
    client.observe(run_id, {"status": "completed"}, status=200)
    client.advance(300_001)
    events(client, run_id, status=404)
    assert client.run(run_id).status_int == 200


def test_restart_drops_live_transports(client):
    run_id = client.submit(key="k").json["run_id"]
    client.admin("/hermes/restart", {"owner": "alive"}, status=200)
    events(client, run_id, status=404)


def test_approval_flow(client):
    run_id = client.submit().json["run_id"]
    client.observe(run_id, {"status": "waiting_for_approval",
                            "approval": {"command": "rm -rf /tmp/x", "allow_permanent": False}},
                   status=200)
    res = client.approval(run_id, {"choice": "  Approve "})
    assert res.status_int == 200
    assert res.json == {"object": "hermes.run.approval_response", "run_id": run_id,
                        "choice": "once", "resolved": 1}
    record = client.run(run_id).json
    assert record["status"] == "running" and record["last_event"] == "approval.responded"
    assert "approval" not in record
    again = client.approval(run_id, {"choice": "once"})
    assert again.json["error"]["code"] == "approval_not_pending"
    client.observe(run_id, {"status": "completed"}, status=200)
    body = frames(events(client, run_id).text)
    assert list(body[0][1]) == ["command", "pattern_key", "pattern_keys", "description",
                                "allow_permanent", "event", "run_id", "timestamp", "choices"]
    assert body[:2] == [
        ("data", {"command": "rm -rf /tmp/x", "pattern_key": "", "pattern_keys": [""],
                  "description": "", "allow_permanent": False,
                  "event": "approval.request", "run_id": run_id, "timestamp": T0_S,
                  "choices": ["once", "session", "deny"]}),
        ("data", {"event": "approval.responded", "run_id": run_id, "timestamp": T0_S,
                  "choice": "once", "resolved": 1})]


@pytest.mark.parametrize("approval,choices", [
    ({}, ["once", "session", "always", "deny"]),
    ({"allow_permanent": False}, ["once", "session", "deny"]),
    ({"allow_permanent": 0}, ["once", "session", "always", "deny"]),  # only false removes it
    ({"smart_denied": True}, ["once", "deny"]),
    ({"smart_denied": True, "allow_permanent": False}, ["once", "deny"]),
    ({"smart_denied": 0, "allow_permanent": False}, ["once", "session", "deny"]),
    ({"allow_session": False}, ["once", "session", "always", "deny"]),  # newer than 0.19.0
])
def test_approval_choices_follow_the_flags(client, approval, choices):
    run_id = client.submit().json["run_id"]
    client.observe(run_id, {"status": "waiting_for_approval", "approval": approval}, status=200)
    client.observe(run_id, {"status": "cancelled"}, status=200)
    assert frames(events(client, run_id).text)[0][1]["choices"] == choices


def test_approval_errors_in_upstream_order(client):
    assert client.approval("run_nope", b"{").json["error"]["code"] == "run_not_found"
    run_id = client.submit().json["run_id"]
    res = client.approval(run_id, b"{")
    assert res.status_int == 400 and res.json["error"]["message"] == "Invalid JSON"
    res = client.approval(run_id, {"choice": "maybe"})
    assert res.status_int == 400
    assert res.json["error"] == {
        "message": "Invalid approval choice; expected one of: once, session, always, deny",
        "type": "invalid_request_error", "param": None, "code": "invalid_approval_choice"}
    res = client.approval(run_id, {"choice": "deny"})
    assert res.status_int == 409
    assert res.json["error"]["message"] == f"Run has no pending approval: {run_id}"
    client.observe(run_id, {"status": "completed"}, status=200)
    res = client.approval(run_id, {"choice": "deny"})
    assert res.status_int == 409
    assert res.json["error"] == {"message": f"Run has no active approval session: {run_id}",
                                 "type": "invalid_request_error", "param": None,
                                 "code": "approval_not_active"}


def test_approval_ignores_request_id_as_0_19_0_does(client):
    run_id = client.submit().json["run_id"]
    client.observe(run_id, {"status": "waiting_for_approval", "approval": {"command": "rm"}},
                   status=200)
    res = client.approval(run_id, {"choice": "always", "request_id": " ", "all": "yes"})
    assert res.json == {"object": "hermes.run.approval_response", "run_id": run_id,
                        "choice": "always", "resolved": 1}


def test_steer_only_while_running(client):
    run_id = client.submit().json["run_id"]
    res = client.steer(run_id, {"input": "go left"})
    assert res.status_int == 409
    assert res.json["error"] == {
        "message": f"Run is not currently accepting steer input: {run_id}",
        "type": "invalid_request_error", "param": None, "code": "run_not_accepting_steer"}
    client.observe(run_id, {"status": "running"}, status=200)
    res = client.steer(run_id, {"message": "  "})
    assert res.status_int == 400 and res.json["error"]["code"] == "invalid_steer_input"
    assert client.steer(run_id, b"nope").json["error"]["message"] == "Invalid JSON in request body"
    res = client.steer(run_id, {"text": "go left"})
    assert res.json == {"object": "hermes.run.steer", "run_id": run_id, "accepted": True}
    assert client.run(run_id).json["last_event"] == "run.steered"
    done = client.observe(run_id, {"status": "completed", "output": "ok"}).json
    assert done["pending_steer"] == "go left"
    body = frames(events(client, run_id).text)
    assert body[0][1] == {"event": "run.steered", "run_id": run_id, "timestamp": T0_S,
                          "accepted": True}
    assert body[1][1]["pending_steer"] == "go left"


def test_steer_delivered_after_a_tool_call_is_not_pending(client):
    run_id = client.submit().json["run_id"]
    client.observe(run_id, {"status": "running"}, status=200)
    client.steer(run_id, {"input": [{"type": "text", "text": "use grep"}]})
    client.observe(run_id, {"status": "running", "events": [
        {"event": "tool.completed", "tool": "grep"}]}, status=200)
    assert "pending_steer" not in client.observe(run_id, {"status": "completed"}).json


def test_steer_on_foreign_owner_after_restart_is_409(client):
    run_id = client.submit(key="k").json["run_id"]
    client.observe(run_id, {"status": "running"}, status=200)
    client.admin("/hermes/restart", {"owner": "alive"}, status=200)
    assert client.steer(run_id, {"input": "x"}).status_int == 409
    res = client.approval(run_id, {"choice": "once"})
    assert res.json["error"]["code"] == "approval_not_active"
