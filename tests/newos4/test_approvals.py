"""Approvals in the conversation, over a scripted Hermes: the request message, the decision,
what other text and silence do, and exactly-once across crashes. The processes against the
emulator and the real server are tests/integration/relay/test_approvals.py."""
import threading
import time

import pytest

from spaces.newos4.relay.approvals import decision_of, request_text
from spaces.newos4.relay.hermes_client import HermesAnswer, HermesUnreachable
from spaces.newos4.relay.passes import Relay
from spaces.newos4.relay.run_events import EventFollowers

from .conftest import ChatClient
from .test_relay import ScriptedHermes

COMMAND = "chmod -R 777 /tmp/x"
MARKER_LINE = "Hermes asks before running a command:"
# The approval.request event as Hermes 0.19.0 sends it (key order included).
REQUEST = {"command": COMMAND, "pattern_key": "world/other-writable permissions",
           "pattern_keys": ["world/other-writable permissions"],
           "description": "world/other-writable permissions", "allow_permanent": True,
           "event": "approval.request", "run_id": "run_1", "timestamp": 1.0,
           "choices": ["once", "session", "always", "deny"]}

CONTRACT_EXAMPLE = """Hermes asks before running a command:

```
chmod -R 777 /tmp/x
```

Why: world/other-writable permissions

Reply with one of these words:
- `once`: allow it this time
- `session`: allow commands like it for the rest of this conversation
- `always`: always allow commands like it
- `deny`: refuse it

Any other reply refuses the command and is sent to Hermes as your next message."""
# What the person is asked by default: `always` is the host's to allow (NEWOS4_RELAY_ALLOW_ALWAYS).
ASKED = CONTRACT_EXAMPLE.replace("- `always`: always allow commands like it\n", "")


class FakeStream:
    """A run's event stream: yields what the script appends until closed."""

    def __init__(self, frames):
        self.frames, self.closed = frames, threading.Event()

    def events(self):
        sent = 0
        while not self.closed.is_set():
            while sent < len(self.frames):
                sent += 1
                yield self.frames[sent - 1]
            time.sleep(0.005)

    def close(self):
        self.closed.set()


class ApprovingHermes(ScriptedHermes):
    """ScriptedHermes with approvals: `wait(run, request)` makes a run ask; `approve` decides."""

    def __init__(self):
        super().__init__()
        self.decisions, self.frames, self.subscriptions = [], {}, []

    def wait(self, run_id, request=REQUEST):
        self.runs[run_id].update(status="waiting_for_approval", last_event="approval.request")
        if request is not None:
            self.frames.setdefault(run_id, []).append({**request, "run_id": run_id})

    def events(self, run_id, *, idle_timeout_s):
        self.subscriptions.append(run_id)
        if self.subscriptions.count(run_id) > 1:
            raise AssertionError(f"{run_id} subscribed twice: Hermes would send nothing")
        return FakeStream(self.frames.setdefault(run_id, []))

    transcript = ()

    def session_messages(self, session_id):
        self.sessions_read = getattr(self, "sessions_read", []) + [session_id]
        return HermesAnswer(200, {}, {"object": "list", "session_id": session_id,
                                      "data": list(self.transcript)})

    def approve(self, run_id, choice):
        self.decisions.append((run_id, choice))
        run = self.runs.get(run_id)
        if run is None:
            return HermesAnswer(404, {}, {"error": {"code": "run_not_found", "message": "x"}})
        if run["status"] != "waiting_for_approval":
            return HermesAnswer(409, {}, {"error": {"code": "approval_not_pending",
                                                    "message": "no pending approval"}})
        run.update(status="running", last_event="approval.responded")
        return HermesAnswer(200, {}, {"object": "hermes.run.approval_response",
                                      "run_id": run_id, "choice": choice, "resolved": 1})


@pytest.fixture
def hermes():
    return ApprovingHermes()


def passes(service, hermes):
    """A function that runs one cron-mode pass and returns its log lines."""
    def run():
        lines = []
        Relay(service, hermes, log=lambda line, problem: lines.append(line)).run()
        return lines
    return run


@pytest.fixture
def relay(service, hermes):
    """One cron-mode pass over this module's (or the importing module's) `hermes`."""
    return passes(service, hermes)


def texts(service, thread):
    return [(m["author"], m["text"]) for m in service.history(thread)]


def test_the_request_message_is_the_contract_layout():
    assert request_text(REQUEST) == CONTRACT_EXAMPLE


@pytest.mark.parametrize("flags,choices", [
    ({"choices": ["once", "session", "deny"]}, ["once", "session", "deny"]),
    ({"choices": ["once", "deny"]}, ["once", "deny"]),
])
def test_the_choices_are_hermes_own_in_its_order(flags, choices):
    lines = [line for line in request_text({**REQUEST, **flags}).splitlines()
             if line.startswith("- `")]
    assert [line.split("`")[1] for line in lines] == choices


def test_a_command_with_backticks_gets_a_longer_fence_and_stays_exact():
    command = "echo ```x``` `y`"
    text = request_text({**REQUEST, "command": command})
    assert "\n````\necho ```x``` `y`\n````\n" in text


def test_without_details_it_asks_anyway_with_what_is_known():
    text = request_text(None)
    assert "```\n(Hermes did not say which command)\n```" in text
    assert "Why: (not given)" in text
    assert [line.split("`")[1] for line in text.splitlines() if line.startswith("- `")] == \
        ["once", "deny"]


@pytest.mark.parametrize("reply,choice", [
    ("once", "once"), ("  Once \n", "once"), ("APPROVE", "once"), ("yes", "once"),
    ("no", "deny"), ("Deny", "deny"), ("session", "session"),
    ("always", None), ("yes please", None), ("once.", None), ("", None),
])
def test_a_decision_is_an_offered_word_or_an_alias(reply, choice):
    assert decision_of(reply, ["once", "session", "deny"]) == choice


def test_cron_asks_once_then_sends_the_decision_then_delivers(client, service, hermes, relay):
    client.say(f"RUN: {COMMAND}")
    relay()
    hermes.wait("run_1")
    lines = relay()
    assert texts(service, client.thread)[-1] == ("hermes", ASKED)
    assert any("waits for approval of 'chmod -R 777 /tmp/x': asked" in line for line in lines)
    assert client.poll().json["awaiting"] is False
    relay()
    assert len(service.history(client.thread)) == 2  # asked once
    client.say("  Yes ")
    lines = relay()
    assert hermes.decisions == [("run_1", "once")]
    assert any("approval answered 'once'" in line for line in lines)
    hermes.runs["run_1"].update(status="completed", output="Tool result: done")
    relay()
    assert [t for _, t in texts(service, client.thread)][2:] == ["  Yes ", "Tool result: done"]
    assert len(hermes.submits) == 1 and hermes.subscriptions == ["run_1"]


def test_other_text_denies_stops_and_becomes_the_next_question(client, service, hermes, relay):
    client.say(f"RUN: {COMMAND}")
    relay()
    hermes.wait("run_1")
    relay()
    client.say("what would that do?")
    lines = relay()
    assert hermes.decisions == [("run_1", "deny")] and hermes.stops == ["run_1"]
    assert any("denied the command and stopped the run" in line for line in lines)
    body, _ = hermes.submits[-1]
    assert len(hermes.submits) == 2 and body["input"] == "what would that do?"
    assert body["conversation_history"][-1] == {"role": "assistant", "content": ASKED}


def test_nobody_answers_hermes_denies_itself_and_the_thread_goes_on(
        client, service, hermes, relay):
    client.say(f"RUN: {COMMAND}")
    relay()
    hermes.wait("run_1")
    relay()
    hermes.runs["run_1"].update(status="completed", output="Tool result: BLOCKED: timed out")
    lines = relay()
    assert texts(service, client.thread)[-1] == ("hermes", "Tool result: BLOCKED: timed out")
    assert any("went unanswered" in line for line in lines)
    client.say("ok, never mind")
    relay()
    assert hermes.submits[-1][0]["input"] == "ok, never mind" and hermes.decisions == []


def test_a_decision_after_hermes_timed_out_is_ordinary_text(client, service, hermes, relay):
    client.say(f"RUN: {COMMAND}")
    relay()
    hermes.wait("run_1")
    relay()
    hermes.runs["run_1"].update(status="completed", output="Tool result: BLOCKED: timed out")
    client.say("once")
    lines = relay()
    assert any("came after Hermes had settled" in line for line in lines)
    assert hermes.submits[-1][0]["input"] == "once" and len(hermes.submits) == 2


def test_a_crash_after_asking_before_saving_asks_no_second_time(
        client, service, hermes, relay, settings):
    client.say(f"RUN: {COMMAND}")
    relay()
    hermes.wait("run_1")
    state_path = settings.data_dir / "relay" / "state.json"
    saved = [(path, path.read_bytes())
             for path in (state_path, state_path.with_name("saves.json"))]
    relay()
    for path, content in saved:  # as if the pass died between the message and the save
        path.write_bytes(content)
    lines = relay()
    assert [a for a, _ in texts(service, client.thread)] == ["operator", "hermes"]
    assert any("already asked (found in the thread)" in line for line in lines)
    client.say("deny")
    relay()
    assert hermes.decisions == [("run_1", "deny")]


def test_the_relay_timeout_does_not_fire_while_the_person_decides(make_app, hermes, clock):
    testapp, service = make_app(relay_run_timeout_s=60)
    client = ChatClient(testapp)
    client.say(f"RUN: {COMMAND}")
    Relay(service, hermes, log=lambda *a: None).run()
    hermes.wait("run_1")
    Relay(service, hermes, log=lambda *a: None).run()
    clock.advance(120_000)
    Relay(service, hermes, log=lambda *a: None).run()
    assert hermes.stops == []
    client.say("once")
    Relay(service, hermes, log=lambda *a: None).run()
    clock.advance(30_000)  # the clock restarted at the decision
    Relay(service, hermes, log=lambda *a: None).run()
    assert hermes.stops == [] and hermes.decisions == [("run_1", "once")]


def test_the_watcher_asks_a_second_approval_in_the_same_run_with_its_details(
        client, service, hermes):
    followers = EventFollowers(hermes)
    try:
        def watch_pass():
            Relay(service, hermes, log=lambda *a: None, events=followers).run()
        client.say(f"RUN: {COMMAND}")
        watch_pass()  # submits and subscribes
        hermes.wait("run_1")
        followers.get("run_1").got_request.wait(2)
        watch_pass()
        client.say("session")
        watch_pass()
        second = {**REQUEST, "command": "rm -rf /tmp/x", "description": "recursive delete",
                  "choices": ["once", "deny"]}
        hermes.wait("run_1", second)
        deadline = time.monotonic() + 2
        while len(followers.get("run_1").requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        watch_pass()
        assert texts(service, client.thread)[-1] == ("hermes", request_text(second))
        client.say("no")
        watch_pass()
        assert hermes.decisions == [("run_1", "session"), ("run_1", "deny")]
        assert hermes.subscriptions == ["run_1"]
    finally:
        followers.close()


def test_a_watcher_without_the_runs_events_asks_without_details(client, service, hermes):
    client.say(f"RUN: {COMMAND}")
    Relay(service, hermes, log=lambda *a: None).run()  # cron submitted it
    hermes.runs["run_1"]["status"] = "waiting_for_approval"
    service_state = service.settings.data_dir / "relay" / "state.json"
    text = service_state.read_text().replace('"question"', '"events": "watch",\n"question"', 1)
    service_state.write_text(text)  # a watcher before a restart had subscribed
    followers = EventFollowers(hermes)
    try:
        Relay(service, hermes, log=lambda *a: None, events=followers).run()
    finally:
        followers.close()
    assert texts(service, client.thread)[-1] == ("hermes", request_text(None))
    assert hermes.subscriptions == []


def test_a_possibly_started_run_is_not_resubmitted_to_a_hermes_ignoring_keys(
        client, hermes, relay):
    hermes.idempotent = False
    client.say("q")
    hermes.next_submit = [HermesUnreachable("read timed out")]
    lines = relay()
    assert len(hermes.submits) == 1
    assert any("from its session transcript), never submitted twice" in line for line in lines)
    relay()
    assert len(hermes.submits) == 1
    client.say("q again")
    relay()
    assert len(hermes.submits) == 2 and hermes.submits[-1][0]["input"] == "q again"


def turn(question, answer, at):
    """A run's turn as Hermes 0.19.0 records it in the session when the run ends."""
    return [{"role": "user", "content": question, "timestamp": at, "finish_reason": None},
            {"role": "assistant", "content": "", "timestamp": at, "finish_reason": "tool_calls"},
            {"role": "tool", "content": "{}", "timestamp": at, "finish_reason": None},
            {"role": "assistant", "content": answer, "timestamp": at, "finish_reason": "stop"}]


def test_the_answer_of_a_run_whose_submission_got_no_answer_is_found_and_delivered(
        client, service, hermes, relay, clock):
    hermes.idempotent = False
    client.say("same words")
    relay()
    hermes.runs["run_1"].update(status="completed", output="first answer")
    relay()
    clock.advance(5_000)
    client.say("same words")
    hermes.next_submit = [HermesUnreachable("reset after sending")]
    relay()
    earlier = turn("same words", "first answer", (clock.now_ms() - 5_000) / 1000)
    hermes.transcript = earlier  # the lost run has not finished: nothing new in the transcript
    relay()
    assert texts(service, client.thread)[-1] == ("operator", "same words")
    clock.advance(2_000)
    hermes.transcript = earlier + turn("same words", "second answer", clock.now_ms() / 1000)
    lines = relay()
    assert texts(service, client.thread)[-1] == ("hermes", "second answer")
    assert any("found in the session transcript" in line and "delivered" in line
               for line in lines)
    relay()
    assert len(hermes.submits) == 2 and hermes.sessions_read == [f"newos4-{client.thread}"] * 2


def test_a_refused_connection_is_resubmitted_even_to_a_hermes_ignoring_keys(
        client, hermes, relay):
    hermes.idempotent = False
    client.say("q")
    hermes.next_submit = [HermesUnreachable("refused", sent=False)] * 2
    relay()
    relay()
    assert len(hermes.submits) == 3


def test_a_command_too_long_for_one_message_is_cut_and_says_so(make_app, hermes):
    testapp, service = make_app(max_text=1000)
    client = ChatClient(testapp)

    def relay():
        Relay(service, hermes, log=lambda *a: None).run()
    command = "chmod -R 777 /tmp/" + "x" * 900
    client.say(f"RUN: {command}")
    relay()
    hermes.wait("run_1", {**REQUEST, "command": command})
    relay()
    author, text = texts(service, client.thread)[-1]
    assert author == "hermes" and len(text) == service.settings.max_text
    assert text.startswith(f"{MARKER_LINE}\n\n```\nchmod -R 777 /tmp/xxx")
    assert f"(cut: the command is {len(command)} characters long)" in text
    client.say("once")
    relay()
    assert hermes.decisions == [("run_1", "once")]
