"""Approvals end to end: the relay (watcher and cron, real processes) between the chat (real
gunicorn: post.php, poll.php) and a Hermes that asks before a dangerous command.

Every case runs against our emulator, played by testkit.hermes.driver with the outputs recorded
from the real server (tests/fixtures/hermes_approval_exchanges.json), and, when
HERMES_ORACLE_URL is set, against a real Hermes 0.19.0 Agent API server on loopback. That server
must be set up so that these cases can happen:
- the terminal toolset enabled for its API server platform, and a model that answers a question
  holding `RUN: <command>` with one call of the terminal tool and a tool result with
  `Tool result: <the result>` (any other question with a fixed reply, FAKE_REPLY below);
- a short approval timeout (`approvals.timeout` in its config.yaml, e.g. 10 s), given to the
  tests as HERMES_ORACLE_APPROVAL_TIMEOUT_S (default 10);
- its key in HERMES_ORACLE_KEY if it is not the oracle's default (testkit/hermes/oracle.py);
- no `always` for that command's pattern: `chmod -R 777 <a temporary directory>` is harmless
  and asked about until one allows it for good. Each real case checks that first and fails,
  saying so, when the server runs it without asking.
"""
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from spaces.newos4.app import POLL_PATH, POST_PATH
from spaces.newos4.service import thread_of
from testkit.hermes.driver import FAKE_REPLY, HermesDriver
from testkit.hermes.oracle import real_hermes
from testkit.hermes.proxy import FlakyProxy
from testkit.servers import REPO, Watcher, gunicorn

pytestmark = pytest.mark.gunicorn

RECORDED = json.loads((Path(__file__).resolve().parents[2] / "fixtures"
                       / "hermes_approval_exchanges.json").read_text())
OUTPUTS = {name: RECORDED[name]["run"]["output"] for name in ("approved", "denied", "timed_out")}
MARKER = "Hermes asks before running a command:"
# The emulated Hermes' own approval timeout: Hermes' default, so that on a loaded machine it
# never runs out between a case's steps (three cron runs took 4 s under load), and a short one
# for the cases about it (hermes_times_out_soon).
EMULATOR_APPROVAL_TIMEOUT_S = 60.0
EMULATOR_SHORT_APPROVAL_TIMEOUT_S = 4.0
# The bound for the request to reach the thread in watch mode.
ASK_BOUND_S = 2.0


class Chat:
    """The browser's side of one conversation, and the relay's processes beside it."""

    def __init__(self, site, hermes_url, key, approval_timeout_s, tmp_path):
        self.site, self.hermes_url, self.key = site, hermes_url, key
        self.approval_timeout_s = approval_timeout_s
        self.root = tmp_path
        self.token = secrets.token_hex(32)
        self.http = requests.Session()
        self.env = {**os.environ, "NEWOS4_DATA_DIR": site["data"], "HERMES_API_URL": hermes_url,
                    "HERMES_API_KEY": key, "NEWOS4_RELAY_ACCESS": "open"}
        self.target = tmp_path / "target"
        self.target.mkdir(exist_ok=True)
        self.command = f"chmod -R 777 {self.target}"
        self.watchers = []
        self.cron_out = ""

    def post(self, text):
        answer = self.http.post(self.site["url"] + POST_PATH, json={"text": text},
                                headers={"X-Chat-Token": self.token}, timeout=10)
        assert answer.status_code == 201, answer.text
        return answer.json()

    def messages(self):
        answer = self.http.get(self.site["url"] + POLL_PATH, timeout=10,
                               headers={"X-Chat-Token": self.token})
        assert answer.status_code == 200, answer.text
        return answer.json()

    def wait_for(self, what, predicate, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            poll = self.messages()
            if predicate(poll["messages"]):
                return poll
            time.sleep(0.02)
        raise AssertionError(f"{what} not visible within {timeout}s: {self.messages()}\n"
                             f"{self.logs()}")

    def wait_request(self, count=1, timeout=30):
        return self.wait_for(f"approval request {count}", lambda ms: sum(
            m["author"] == "hermes" and m["text"].startswith(MARKER) for m in ms) >= count
            and ms[-1]["author"] == "hermes", timeout)["messages"][-1]

    def wait_answer(self, text, timeout=30):
        return self.wait_for(f"answer {text[:40]!r}", lambda ms: ms and ms[-1]["author"] ==
                             "hermes" and ms[-1]["text"] == text, timeout)

    def watch(self):
        watcher = Watcher(self.env, self.root, f"watch{len(self.watchers)}")
        self.watchers.append(watcher)
        return watcher

    def cron(self):
        result = subprocess.run([sys.executable, "cron/relay.py"], cwd=REPO, env=self.env,
                                capture_output=True, text=True, timeout=120)
        self.cron_out += result.stdout + result.stderr
        return result

    def wait_log(self, text, timeout=5):
        deadline = time.monotonic() + timeout
        while text not in self.logs():
            assert time.monotonic() < deadline, f"{text!r} not logged:\n{self.logs()}"
            time.sleep(0.05)

    def logs(self):
        return "".join(w.stdout() + w.stderr() for w in self.watchers) + self.cron_out

    def state(self):
        path = Path(self.site["data"]) / "relay" / "state.json"
        return json.loads(path.read_text())["threads"] if path.exists() else {}

    def run_id(self):
        return self.state()[thread_of(self.token)]["run_id"]

    def run_status(self, run_id):
        answer = self.http.get(f"{self.hermes_url}/v1/runs/{run_id}", timeout=10,
                               headers={"Authorization": f"Bearer {self.key}"})
        return answer.json().get("status")

    def wait_status(self, run_id, status, timeout=30):
        deadline = time.monotonic() + timeout
        while (now := self.run_status(run_id)) != status:
            assert time.monotonic() < deadline, f"run {run_id} still {now}, not {status}"
            time.sleep(0.05)
        return time.monotonic()

    def transcript(self):
        return [(m["author"], m["text"]) for m in self.messages()["messages"]]

    def cron_until(self, last, timeout):
        """Run cron every half second until the thread's last message is `last`."""
        deadline = time.monotonic() + timeout
        while self.transcript()[-1] != last:
            assert time.monotonic() < deadline, self.logs()
            time.sleep(0.3)
            self.cron()

    def runs_of(self, question):
        """How many runs Hermes' session transcript shows for `question` (its input rows)."""
        session = self.http.get(f"{self.hermes_url}/api/sessions/newos4-{thread_of(self.token)}"
                                "/messages", headers={"Authorization": f"Bearer {self.key}"},
                                timeout=10).json()["data"]
        return sum(m["role"] == "user" and m["content"] == question for m in session)

    def close(self):
        for watcher in self.watchers:
            watcher.kill()


@pytest.fixture
def site(tmp_path):
    """A chat server per test: against the real Hermes a conversation can still be in flight
    when its test ends (waiting for Hermes' own approval timeout), and the next test's relay
    passes would meet it in a shared data dir."""
    root = tmp_path
    env = {"NEWOS4_DATA_DIR": str(root / "data"), "EMULATORS_DB": str(root / "emu.sqlite3"),
           "NEWOS4_RATE_IP": "100000"}
    with gunicorn(env=env, workers=2, threads=4) as url:
        yield {"url": url, "data": str(root / "data"), "hermes": url + "/emulators/hermes"}


@pytest.fixture(params=["emulator", "real"])
def hermes(request):
    """(Hermes URL, key, approval timeout, driver or None) for the emulator or the real one.
    A skipped real case starts no chat server (the site is asked for after the skip)."""
    if request.param == "real":
        url, key = real_hermes()
        request.getfixturevalue("site")
        yield url, key, float(os.environ.get("HERMES_ORACLE_APPROVAL_TIMEOUT_S", "10")), None
        return
    site = request.getfixturevalue("site")
    with HermesDriver(site["hermes"], OUTPUTS,
                      approval_timeout_s=EMULATOR_APPROVAL_TIMEOUT_S) as driver:
        yield site["hermes"], "", EMULATOR_APPROVAL_TIMEOUT_S, driver


@pytest.fixture
def chat(hermes, site, tmp_path):
    url, key, timeout_s, driver = hermes
    conversation = Chat(site, url, key, timeout_s, tmp_path)
    conversation.driver = driver
    yield conversation
    conversation.close()


def assert_asks(message, command):
    """The request names the command exactly, Hermes' reason, and Hermes' choices but
    `always` (the host's to allow, NEWOS4_RELAY_ALLOW_ALWAYS)."""
    assert message["text"].startswith(MARKER + "\n\n```\n" + command + "\n```\n\n")
    assert "Why: world/other-writable permissions\n" in message["text"]
    words = [line.split("`")[1] for line in message["text"].splitlines()
             if line.startswith("- `")]
    assert words == ["once", "session", "deny"]


def asked_once_each(chat, requests, messages):
    """The thread holds `messages` messages, `requests` of them approval requests."""
    texts = [t for _, t in chat.transcript()]
    assert sum(t.startswith(MARKER) for t in texts) == requests and len(texts) == messages, texts
    return texts


def one_run_per_question(chat, questions):
    submitted = [line for line in chat.logs().splitlines() if " submitted run=" in line]
    assert len(submitted) == questions, chat.logs()


@pytest.mark.parametrize("reply,outcome", [("once", "approved"), ("  Deny ", "denied"),
                                           ("YES", "approved")])
def test_the_watcher_asks_and_the_reply_decides(chat, reply, outcome):
    chat.watch()
    chat.post(f"RUN: {chat.command}")
    request = chat.wait_request()
    assert_asks(request, chat.command)
    assert chat.messages()["awaiting"] is False
    chat.post(reply)
    chat.wait_answer(OUTPUTS[outcome])
    assert [a for a, _ in chat.transcript()] == ["operator", "hermes", "operator", "hermes"]
    one_run_per_question(chat, 1)
    chat.wait_log("approval answered")


def test_the_request_reaches_the_thread_within_two_seconds_of_the_run_waiting(chat):
    chat.watch()
    chat.post(f"RUN: {chat.command}")
    deadline = time.monotonic() + 30
    while not chat.state() or not next(iter(chat.state().values())).get("run_id"):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    waiting = chat.wait_status(chat.run_id(), "waiting_for_approval")
    chat.wait_request(timeout=10)
    assert time.monotonic() - waiting < ASK_BOUND_S
    chat.post("deny")
    chat.wait_answer(OUTPUTS["denied"])


def test_other_text_refuses_the_command_and_is_the_next_question(chat):
    chat.watch()
    chat.post(f"RUN: {chat.command}")
    chat.wait_request()
    run_id = chat.run_id()
    chat.post("what would that change?")
    chat.wait_answer(FAKE_REPLY)
    assert chat.transcript()[2:] == [("operator", "what would that change?"),
                                     ("hermes", FAKE_REPLY)]
    assert chat.run_status(run_id) in ("cancelled", "completed")
    chat.wait_log("denied the command and stopped the run")
    one_run_per_question(chat, 2)


def hermes_times_out_soon(chat):
    """For a case about Hermes' own approval timeout: the emulated one is short (before the
    run asks; the real server's is its config's)."""
    if chat.driver is not None:
        chat.driver.approval_timeout_s = EMULATOR_SHORT_APPROVAL_TIMEOUT_S
        chat.approval_timeout_s = EMULATOR_SHORT_APPROVAL_TIMEOUT_S


def test_nobody_answers_hermes_denies_by_itself_and_the_thread_goes_on(chat):
    hermes_times_out_soon(chat)
    chat.watch()
    chat.post(f"RUN: {chat.command}")
    chat.wait_request()
    chat.wait_answer(OUTPUTS["timed_out"], timeout=chat.approval_timeout_s + 15)
    chat.wait_log("went unanswered")
    chat.post("all right, never mind")
    chat.wait_answer(FAKE_REPLY)
    one_run_per_question(chat, 2)


def tell_the_driver(chat, choice):
    """The emulator loses a run's events with their subscriber (as Hermes does): when the test
    lets go of the stream (cron, a restart), the driver playing Hermes is told the decision."""
    if chat.driver is not None:
        chat.driver.choice_of = lambda run_id, n: choice


def test_a_reply_while_the_watcher_is_down_is_routed_and_nothing_is_asked_twice(chat):
    tell_the_driver(chat, "once")
    first = chat.watch()
    chat.post(f"RUN: {chat.command}")
    chat.wait_request()
    first.stop(signal.SIGKILL)
    chat.post("once")
    assert chat.cron().returncode == 0, chat.logs()  # cron beside: routes the reply
    chat.watch()
    chat.wait_answer(OUTPUTS["approved"])
    chat.cron()
    time.sleep(1)
    texts = asked_once_each(chat, 1, 4)
    assert texts[-1] == OUTPUTS["approved"]
    one_run_per_question(chat, 1)


def test_a_restart_while_pending_asks_once_and_the_next_start_routes_the_reply(chat):
    tell_the_driver(chat, "deny")
    first = chat.watch()
    chat.post(f"RUN: {chat.command}")
    chat.wait_request()
    status, _ = first.stop(signal.SIGTERM)
    assert status == 0
    chat.watch()
    time.sleep(1)  # the new watcher's passes find the request already asked
    chat.post("no")
    chat.wait_answer(OUTPUTS["denied"])
    asked_once_each(chat, 1, 4)
    one_run_per_question(chat, 1)


def test_cron_alone_asks_with_the_details_and_routes_the_decision(chat):
    tell_the_driver(chat, "deny")
    chat.post(f"RUN: {chat.command}")
    chat.cron()
    run_id = chat.run_id()
    chat.wait_status(run_id, "waiting_for_approval")
    chat.cron()
    assert_asks(chat.wait_request(timeout=1), chat.command)
    chat.cron()
    chat.post("No")
    chat.cron()
    chat.wait_status(run_id, "completed")
    chat.cron()
    chat.wait_answer(OUTPUTS["denied"], timeout=1)
    asked_once_each(chat, 1, 4)
    one_run_per_question(chat, 1)


def test_a_word_sent_after_hermes_timed_out_is_an_ordinary_message(chat):
    hermes_times_out_soon(chat)
    chat.post(f"RUN: {chat.command}")
    chat.cron()
    run_id = chat.run_id()
    chat.wait_status(run_id, "waiting_for_approval")
    chat.cron()
    chat.wait_request(timeout=1)
    chat.wait_status(run_id, "completed", timeout=chat.approval_timeout_s + 15)
    chat.post("once")  # before any relay saw the run end
    chat.cron()
    assert "came after Hermes had settled" in chat.logs()
    run_id = chat.run_id()
    chat.wait_status(run_id, "completed")
    chat.cron()
    chat.wait_answer(FAKE_REPLY, timeout=1)
    one_run_per_question(chat, 2)


def test_a_second_approval_in_the_same_run_is_asked_with_its_details(chat):
    if chat.driver is None:
        pytest.skip("the real server's test model makes one tool call per question")
    second = f"chmod -R 777 {chat.target}/inner"
    chat.watch()
    chat.post(f"RUN: {chat.command}\nRUN: {second}")
    chat.wait_request()
    chat.post("session")
    assert_asks(chat.wait_request(count=2), second)
    chat.post("once")
    chat.wait_answer(OUTPUTS["approved"])
    asked_once_each(chat, 2, 6)
    one_run_per_question(chat, 1)


def test_cron_beside_the_watcher_asks_nothing_twice_and_takes_no_stream(chat):
    stop = threading.Event()

    def cron_every_300_ms():
        while not stop.wait(0.3):
            chat.cron()
    beside = threading.Thread(target=cron_every_300_ms, daemon=True)
    chat.watch()
    beside.start()
    try:
        chat.post(f"RUN: {chat.command}")
        assert_asks(chat.wait_request(), chat.command)  # with details: the watcher's stream
        time.sleep(1)
        chat.post("once")
        chat.wait_answer(OUTPUTS["approved"])
        time.sleep(1)
    finally:
        stop.set()
        beside.join(30)
    asked_once_each(chat, 1, 4)
    one_run_per_question(chat, 1)


def test_a_restart_before_the_request_asks_without_details_and_the_reply_decides(chat):
    """The stopped watcher had taken the run's events; Hermes gives them to nobody else."""
    tell_the_driver(chat, "once")
    if chat.driver is not None:
        chat.driver.hold.set()
    first = chat.watch()
    chat.post(f"RUN: {chat.command}")
    deadline = time.monotonic() + 10
    while not any(e.get("events") for e in chat.state().values()):
        assert time.monotonic() < deadline, "the watcher did not subscribe"
        time.sleep(0.01)
    first.stop(signal.SIGKILL)
    assert chat.run_status(chat.run_id()) in ("queued", "running"), "asked before the restart"
    chat.watch()
    if chat.driver is not None:
        chat.driver.hold.clear()
    request = chat.wait_request()
    assert "```\n(Hermes did not say which command)\n```" in request["text"]
    assert "Why: (not given)" in request["text"]
    chat.post("once")
    chat.wait_answer(OUTPUTS["approved"])
    one_run_per_question(chat, 1)


def test_a_submission_whose_answer_is_lost_makes_one_run_and_its_answer_arrives(chat):
    """Hermes 0.19.0 ignores Idempotency-Key: the relay must not submit again, and finds the
    answer in Hermes' session transcript; the emulator replays the run for the same key."""
    proxy = FlakyProxy(chat.hermes_url)
    proxy.drop_next_submission = True
    question = f"what is new, {secrets.token_hex(4)}?"
    with proxy.serving() as proxy_url:
        chat.env["HERMES_API_URL"] = proxy_url
        chat.post(question)
        chat.cron()
        assert proxy.dropped == 1 and "no answer" in chat.cron_out, chat.logs()
        chat.cron_until(("hermes", FAKE_REPLY), timeout=30)
    assert chat.runs_of(question) == 1
    assert [a for a, _ in chat.transcript()] == ["operator", "hermes"]
