"""Relay logic against a scripted Hermes: the decisions, without processes or sockets."""
import pytest

from spaces.newos4.relay.hermes_client import HermesAnswer, HermesUnreachable
from spaces.newos4.relay.answers import answer_parts
from spaces.newos4.relay.passes import Relay
from spaces.newos4.relay.polling import RunPoller

from .conftest import ChatClient


@pytest.mark.parametrize("text,limit,parts", [
    ("short", 10, ["short"]),
    ("aaaa bbbb cccc", 10, ["aaaa bbbb ", "cccc"]),
    ("aa\nbb cc\n\ndd ee", 12, ["aa\nbb cc\n\n", "dd ee"]),
    ("x" * 25, 10, ["x" * 10, "x" * 10, "x" * 5]),
    ("😀" * 5, 2, ["😀😀", "😀😀", "😀"]),
])
def test_split_text_prefers_paragraphs_then_lines_then_spaces(text, limit, parts):
    assert answer_parts(text, limit) == parts
    assert "".join(parts) == text


class ScriptedHermes:
    """Answers from a script; records what the relay sent."""

    def __init__(self):
        self.submits, self.stops, self.runs = [], [], {}
        self.next_submit = []

    def submit_run(self, body, *, idempotency_key):
        self.submits.append((body, idempotency_key))
        if self.next_submit:
            outcome = self.next_submit.pop(0)
            if isinstance(outcome, Exception):
                raise outcome
            return outcome
        run_id = f"run_{len(self.runs) + 1}"
        self.runs[run_id] = {"run_id": run_id, "status": "queued"}
        return HermesAnswer(202, {}, {"run_id": run_id, "status": "started", "replayed": False})

    def get_run(self, run_id):
        if run_id not in self.runs:
            return HermesAnswer(404, {}, {"error": {"code": "run_not_found", "message": "x"}})
        return HermesAnswer(200, {}, self.runs[run_id])

    def stop_run(self, run_id):
        self.stops.append(run_id)
        return HermesAnswer(200, {}, {"run_id": run_id, "status": "stopping"})

    idempotent = True  # like the emulator and newer Hermes builds; 0.19.0 ignores the key

    def honours_idempotency_keys(self):
        return self.idempotent

    def events(self, run_id, *, idle_timeout_s):
        return None  # no event stream: approvals are asked without details


@pytest.fixture
def hermes():
    return ScriptedHermes()


@pytest.fixture
def relay(service, hermes):
    lines = []

    def run():
        lines.clear()
        Relay(service, hermes, log=lambda line, problem: lines.append(line)).run()
        return lines
    return run


def test_history_roles_and_session_follow_the_thread(client, service, hermes, relay, clock):
    client.say("q1")
    clock.advance(1)
    service.reply(client.thread, "a1")
    clock.advance(1)
    client.say("q2", kind="agent")
    relay()
    body, key = hermes.submits[0]
    assert body == {"input": "q2", "session_id": f"newos4-{client.thread}",
                    "conversation_history": [{"role": "user", "content": "q1"},
                                             {"role": "assistant", "content": "a1"}]}
    assert key.startswith(f"newos4-{client.thread}-MSG-") and key.endswith("-0")


def test_a_crash_between_submit_and_record_replays_the_same_key(client, hermes, relay):
    client.say("q")
    hermes.next_submit = [HermesUnreachable("reset"), HermesUnreachable("reset")]
    relay()
    relay()
    keys = [key for _, key in hermes.submits]
    assert len(keys) == 3 and len(set(keys)) == 1


def test_after_max_attempts_the_thread_waits_and_it_is_said_loudly(make_app, hermes, clock):
    testapp, service = make_app(relay_max_attempts=2)
    client = ChatClient(testapp)
    client.say("q")
    lines = []
    run = lambda: Relay(service, hermes,  # noqa: E731
                        log=lambda line, problem: lines.append(line)).run()
    for _ in range(2):
        run()
        hermes.runs[f"run_{len(hermes.runs)}"]["status"] = "failed"
        run()
        clock.advance(3_600_000)
    assert any("GAVE UP" in line for line in lines)
    lines.clear()
    assert run() == 0 and any("gave up after 2 attempts" in line for line in lines)
    assert len(hermes.submits) == 2
    client.say("new question resets the count")
    run()
    assert len(hermes.submits) == 3


def test_max_in_flight_limits_new_submissions(make_app, hermes):
    testapp, service = make_app(relay_max_in_flight=2)
    for i in range(3):
        ChatClient(testapp).say(f"q{i}")
    Relay(service, hermes, log=lambda *a: None).run()
    assert len(hermes.submits) == 2


def test_a_reply_written_by_hand_wins_over_the_run(client, service, hermes, relay):
    client.say("q")
    relay()
    service.reply(client.thread, "answered by a human")
    hermes.runs["run_1"].update(status="completed", output="late machine answer")
    relay()
    assert [m["text"] for m in service.history(client.thread)] == ["q", "answered by a human"]
    assert hermes.stops == ["run_1"]


def test_delivery_is_exactly_once_even_if_the_state_was_not_saved(client, service, hermes):
    client.say("q")
    Relay(service, hermes, log=lambda *a: None).run()
    question = service.history(client.thread)[0]["id"]
    assert service.deliver(client.thread, question, ["a", "b"]) == "delivered"
    assert service.deliver(client.thread, question, ["a", "b"]) == "already delivered"
    assert service.deliver(client.thread, question, ["other"]) == "answered"
    assert [m["text"] for m in service.history(client.thread)] == ["q", "a", "b"]


def test_an_empty_completed_output_counts_as_a_failure(client, hermes, relay):
    client.say("q")
    relay()
    hermes.runs["run_1"].update(status="completed", output="")
    lines = relay()
    assert any("completed with no output" in line for line in lines)


def test_a_run_pending_too_long_is_stopped_and_retried(make_app, hermes, clock):
    testapp, service = make_app(relay_run_timeout_s=60)
    ChatClient(testapp).say("q")
    Relay(service, hermes, log=lambda *a: None).run()
    clock.advance(61_000)
    Relay(service, hermes, log=lambda *a: None).run()
    assert hermes.stops == ["run_1"]


def test_runs_in_flight_are_polled_at_once_not_one_after_another(make_app, hermes):
    import threading
    testapp, service = make_app(relay_max_in_flight=3)
    clients = [ChatClient(testapp) for _ in range(3)]
    for n, client in enumerate(clients):
        client.say(f"q{n}")
    Relay(service, hermes, log=lambda *a: None).run()
    together = threading.Barrier(3, timeout=5)  # breaks unless all three polls wait at once
    answer = hermes.get_run

    def get_run(run_id):
        together.wait()
        return answer(run_id)
    hermes.get_run = get_run
    for run in hermes.runs.values():
        run.update(status="completed", output=f"answer {run['run_id']}")
    Relay(service, hermes, log=lambda *a: None).run()
    assert [service.history(c.thread)[-1]["author"] for c in clients] == ["hermes"] * 3


def test_a_hanging_poll_is_waited_for_briefly_and_never_asked_twice_at_once():
    import threading
    release, asked = threading.Event(), []

    class SlowForOne:
        def get_run(self, run_id):
            asked.append(run_id)
            if run_id == "run_slow":
                release.wait(10)
            return HermesAnswer(200, {}, {"run_id": run_id, "status": "running"})

    poller = RunPoller(SlowForOne(), threads=4)
    try:
        for _ in range(3):
            answered = poller.poll(["run_slow", "run_quick"], wait_s=0.05)
            assert list(answered) == ["run_quick"]
        release.set()
        assert poller.poll(["run_slow"], wait_s=5)["run_slow"].body["status"] == "running"
        assert asked.count("run_slow") == 1 and asked.count("run_quick") == 3
    finally:
        release.set()
        poller.close()
