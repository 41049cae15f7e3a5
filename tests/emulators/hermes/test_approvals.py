"""Approvals in runs as a client rehearses them: scripted on the admin plane, no model anywhere.

real_server/test_approvals.py checks the same behaviour against recordings of the real server; these
tests pin down each rule on its own (timeouts on the emulator clock, the gated tool call, the
second subscriber) and walk one whole run the way a client such as our relay sees it.
"""
import json
import threading
import time

import pytest
import requests

from emulators.hermes import serve
from emulators.hermes.runs.approvals import guard_payload, tool_result
from emulators.hermes.settings import HermesSettings

from .conftest import T0_S
from .real_server.record_approvals import hang_up
from .test_events import events, frames

pytestmark = pytest.mark.timeout(60)
COMMAND = "chmod -R 777 /tmp/x"
WHY = "world/other-writable permissions"
ASKING = {"status": "waiting_for_approval",
          "events": [{"event": "tool.started", "tool": "terminal", "preview": COMMAND}],
          "approval": {"command": COMMAND, "description": WHY}}


class EventReader:
    """Read a run's event stream in a thread, frame by frame, as a client would (keepalive
    comments counted apart)."""

    def __init__(self, url, run_id):
        self.response = requests.get(f"{url}/v1/runs/{run_id}/events", stream=True,
                                     timeout=(5, 60))
        self.frames, self.keepalives, self.ended = [], 0, threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        pending = ""
        try:
            while chunk := self.response.raw.read1(65536):
                pending += chunk.decode()
                *blocks, pending = pending.split("\n\n")
                self.keepalives += blocks.count(": keepalive")
                self.frames += [json.loads(block[6:]) if block.startswith("data: ") else block
                                for block in blocks if block != ": keepalive"]
        except (requests.RequestException, OSError, AttributeError, ValueError):
            pass
        self.ended.set()

    def wait_for(self, predicate, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(predicate(frame) for frame in self.frames):
                return list(self.frames)
            time.sleep(0.02)
        raise AssertionError(f"not seen in {timeout} s; got {self.frames!r}")

    def hang_up(self):
        """Leave at once, as a client with its own deadline does."""
        hang_up(self.response)


def event_named(name):
    return lambda frame: isinstance(frame, dict) and frame["event"] == name


@pytest.fixture
def hermes(tmp_path):
    settings = HermesSettings(keepalive_s=0.5, poll_s=0.02, events_wait_s=0.2)
    with serve(settings, db=str(tmp_path / "e.sqlite3")) as server:
        yield server.url


def test_a_whole_run_through_approval_scripted_on_the_admin_plane(hermes):
    admin = f"{hermes}/__admin/hermes/runs"
    run_id = requests.post(f"{hermes}/v1/runs", json={"input": f"RUN: {COMMAND}"}).json()["run_id"]
    reader = EventReader(hermes, run_id)
    # The "model" calls the terminal tool and Hermes' guard asks about the command.
    assert requests.post(f"{admin}/{run_id}/observe", json=ASKING).status_code == 200
    asked = reader.wait_for(event_named("approval.request"))
    assert [frame["event"] for frame in asked] == ["tool.started", "approval.request"]
    assert asked[1]["command"] == COMMAND and asked[1]["description"] == WHY
    assert asked[1]["choices"] == ["once", "session", "always", "deny"]
    run = requests.get(f"{hermes}/v1/runs/{run_id}").json()
    assert run["status"] == "waiting_for_approval" and run["last_event"] == "approval.request"
    assert not {"approval", "command", "choices"} & set(run)  # only the stream says what
    decided = requests.post(f"{hermes}/v1/runs/{run_id}/approval", json={"choice": "once"})
    assert decided.json() == {"object": "hermes.run.approval_response", "run_id": run_id,
                              "choice": "once", "resolved": 1}
    reader.wait_for(event_named("tool.completed"))
    answer = "Tool result: " + tool_result("approved", WHY)
    requests.post(f"{admin}/{run_id}/observe", json={
        "status": "running", "events": [{"event": "message.delta", "delta": answer}]})
    requests.post(f"{admin}/{run_id}/observe", json={"status": "completed", "output": answer})
    assert reader.ended.wait(10)
    assert [frame if isinstance(frame, str) else frame["event"] for frame in reader.frames] == [
        "tool.started", "approval.request", "approval.responded", "tool.completed",
        "message.delta", "run.completed", ": stream closed"]
    assert reader.frames[3]["error"] is False and reader.frames[3]["tool"] == "terminal"
    done = requests.get(f"{hermes}/v1/runs/{run_id}").json()
    assert done["status"] == "completed" and done["output"] == answer


def test_nobody_deciding_denies_on_the_emulator_clock(client):
    run_id = client.submit().json["run_id"]
    client.observe(run_id, {**ASKING, "approval_timeout_s": 30}, status=200)
    client.advance(29_999)
    assert client.run(run_id).json["last_event"] == "approval.request"
    client.advance(1)
    run = client.run(run_id).json
    # Hermes denies by itself, says nothing about it, and the tool call ends with an error;
    # the run waits for the model's answer in the same status.
    assert (run["status"], run["last_event"]) == ("waiting_for_approval", "tool.completed")
    assert run["updated_at"] == T0_S + 30
    res = client.approval(run_id, {"choice": "once"})
    assert res.status_int == 409 and res.json["error"]["code"] == "approval_not_pending"
    client.observe(run_id, {"status": "completed", "output": tool_result("timed_out")},
                   status=200)
    body = frames(events(client, run_id).text)
    assert [item[1]["event"] for item in body if item[0] == "data"] == [
        "tool.started", "approval.request", "tool.completed", "run.completed"]
    assert body[2][1] == {"event": "tool.completed", "run_id": run_id, "timestamp": T0_S + 30,
                          "tool": "terminal", "duration": 30.0, "error": True}
    res = client.approval(run_id, {"choice": "once"})
    assert res.status_int == 409 and res.json["error"]["code"] == "approval_not_active"


def test_the_default_approval_timeout_is_hermes_60_seconds(client):
    run_id = client.submit().json["run_id"]
    client.observe(run_id, ASKING, status=200)
    client.advance(59_000)
    assert client.run(run_id).json["last_event"] == "approval.request"
    client.advance(1_000)
    assert client.run(run_id).json["last_event"] == "tool.completed"


@pytest.mark.parametrize("choice,error", [("once", False), ("session", False),
                                          ("always", False), ("deny", True)])
def test_a_decision_ends_the_gated_tool_call(client, choice, error):
    run_id = client.submit().json["run_id"]
    client.observe(run_id, ASKING, status=200)
    client.advance(1_500)
    client.approval(run_id, {"choice": choice})
    run = client.run(run_id).json
    assert (run["status"], run["last_event"]) == ("running", "tool.completed")
    client.observe(run_id, {"status": "completed"}, status=200)
    body = [item[1] for item in frames(events(client, run_id).text) if item[0] == "data"]
    assert body[2:4] == [
        {"event": "approval.responded", "run_id": run_id, "timestamp": T0_S + 1.5,
         "choice": choice, "resolved": 1},
        {"event": "tool.completed", "run_id": run_id, "timestamp": T0_S + 1.5,
         "tool": "terminal", "duration": 1.5, "error": error}]


def test_without_an_open_tool_call_a_decision_completes_nothing(client):
    run_id = client.submit().json["run_id"]
    client.observe(run_id, {"status": "waiting_for_approval", "approval": {"command": "x"}},
                   status=200)
    client.approval(run_id, {"choice": "deny"})
    assert client.run(run_id).json["last_event"] == "approval.responded"


def test_a_second_approval_in_the_same_run_is_asked_and_decided(client):
    run_id = client.submit().json["run_id"]
    client.observe(run_id, ASKING, status=200)
    client.approval(run_id, {"choice": "once"})
    client.observe(run_id, {**ASKING, "approval": {"command": "rm -rf /tmp/y",
                                                   "description": "recursive delete"}},
                   status=200)
    res = client.approval(run_id, {"choice": "deny"})
    assert res.status_int == 200 and res.json["choice"] == "deny"
    client.observe(run_id, {"status": "completed"}, status=200)
    body = [item[1] for item in frames(events(client, run_id).text) if item[0] == "data"]
    asked = [event["command"] for event in body if event["event"] == "approval.request"]
    assert asked == [COMMAND, "rm -rf /tmp/y"]


def test_a_stop_while_waiting_withdraws_the_approval(client):
    run_id = client.submit().json["run_id"]
    client.observe(run_id, ASKING, status=200)
    client.stop(run_id, status=200)
    res = client.approval(run_id, {"choice": "once"})
    assert res.status_int == 409 and res.json["error"]["code"] == "approval_not_pending"


def test_the_guard_payload_comes_first_in_its_own_order():
    assert list(guard_payload({"smart_denied": True, "description": "d", "command": "c"})) == [
        "command", "pattern_key", "pattern_keys", "description", "allow_permanent",
        "smart_denied"]
    assert guard_payload({"command": "c", "pattern_key": "k", "description": "d",
                          "allow_permanent": False}) == {
        "command": "c", "pattern_key": "k", "pattern_keys": ["k"], "description": "d",
        "allow_permanent": False}


def test_a_second_subscriber_hears_only_keepalives_while_the_first_holds_the_stream(hermes):
    admin = f"{hermes}/__admin/hermes/runs"
    run_id = requests.post(f"{hermes}/v1/runs", json={"input": "x"}).json()["run_id"]
    first = EventReader(hermes, run_id)
    requests.post(f"{admin}/{run_id}/observe", json=ASKING)
    first.wait_for(event_named("approval.request"))
    first.hang_up()
    second = EventReader(hermes, run_id)
    assert second.response.status_code == 200
    requests.post(f"{hermes}/v1/runs/{run_id}/approval", json={"choice": "once"})
    requests.post(f"{admin}/{run_id}/observe", json={"status": "completed", "output": "done"})
    time.sleep(1.5)  # three keepalive periods
    assert second.frames == [] and second.keepalives >= 2
    assert not second.ended.is_set()  # upstream never closes it either
    second.hang_up()
    # Once the first subscriber's handler has noticed its client left, the buffer is gone.
    gone = requests.get(f"{hermes}/v1/runs/{run_id}/events", timeout=10)
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "run_not_found"
