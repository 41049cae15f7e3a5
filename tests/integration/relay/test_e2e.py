"""The relay end to end: gunicorn serves chat and the mounted Hermes emulator; cron/relay.py
runs as a real process; the test plays the agent with the emulator's observe control."""
import concurrent.futures
import json
import os
import secrets
import subprocess
import sys
import time

import pytest
import requests

from spaces.newos4.app import POLL_PATH, POST_PATH
from testkit.servers import REPO, gunicorn

pytestmark = pytest.mark.gunicorn


@pytest.fixture(scope="module")
def monolith(tmp_path_factory):
    root = tmp_path_factory.mktemp("relay-e2e")
    env = {"NEWOS4_DATA_DIR": str(root / "data"), "EMULATORS_DB": str(root / "emu.sqlite3")}
    with gunicorn(env=env, workers=3, threads=4) as url:
        yield {"url": url, "hermes": url + "/emulators/hermes", "data": root / "data",
               "root": root}


class Scenario:
    """One isolated conversation: its own data dir and its own emulator namespace."""

    def __init__(self, monolith, name):
        self.url = monolith["url"]
        self.namespace = f"{name}-{secrets.token_hex(3)}"
        self.data = monolith["root"] / self.namespace
        # The relay talks to Hermes through the path carrier, so each test has its own runs.
        self.hermes = f"{monolith['hermes']}/__admin/ns/{self.namespace}"
        self.admin = f"{monolith['hermes']}/__admin"
        self.token = secrets.token_hex(32)
        self.env = {**os.environ, "NEWOS4_DATA_DIR": str(self.data),
                    "HERMES_API_URL": self.hermes}

    def say(self, text):
        # The browser side writes through post.php of a server sharing this data dir.
        from spaces.newos4.service import ChatService, thread_of
        from spaces.newos4.settings import Settings
        service = ChatService(Settings(data_dir=self.data))
        return service.post(thread_of(self.token), text, "operator", "203.0.113.1")

    @property
    def thread(self):
        from spaces.newos4.service import thread_of
        return thread_of(self.token)

    def relay(self, *args, env=None):
        return subprocess.run([sys.executable, "cron/relay.py", *args], cwd=REPO,
                              env={**self.env, **(env or {})}, capture_output=True, text=True,
                              timeout=120)

    def state(self):
        path = self.data / "relay" / "state.json"
        return json.loads(path.read_text())["threads"] if path.exists() else {}

    def run_id(self):
        return self.state()[self.thread]["run_id"]

    def admin_post(self, path, body):
        answer = requests.post(f"{self.admin}{path}", json=body, timeout=10,
                               headers={"x-mockingbird-namespace": self.namespace})
        assert answer.status_code < 300, answer.text
        return answer.json()

    def observe(self, run_id, **body):
        return self.admin_post(f"/hermes/runs/{run_id}/observe", body)

    def runs_created(self):
        journal = requests.get(f"{self.admin}/requests", timeout=10,
                               headers={"x-mockingbird-namespace": self.namespace}).json()
        return [r for r in journal["requests"]
                if r.get("operationId") == "RunCreate" and r["status"] == 202]

    def messages(self):
        from spaces.newos4.service import ChatService
        from spaces.newos4.settings import Settings
        return ChatService(Settings(data_dir=self.data)).history(self.thread)


def test_a_question_reaches_hermes_and_the_answer_reaches_the_browser(monolith):
    token = secrets.token_hex(32)
    chat = Scenario(monolith, "e2e")
    chat.data = monolith["data"]  # the browser posts through the served post.php
    chat.env["NEWOS4_DATA_DIR"] = str(chat.data)
    chat.token = token
    posted = requests.post(monolith["url"] + POST_PATH, json={"text": "What is 6 x 7?"},
                           headers={"X-Chat-Token": token}, timeout=10)
    assert posted.status_code == 201
    first = chat.relay()
    assert first.returncode == 0, first.stdout + first.stderr
    assert "submitted run=" in first.stdout
    run_id = chat.run_id()
    run = requests.get(f"{chat.hermes}/v1/runs/{run_id}", timeout=10).json()
    assert run["status"] == "queued" and run["session_id"] == f"newos4-{chat.thread}"

    waiting = chat.relay()  # the run is still queued: nothing to write
    assert waiting.returncode == 0 and chat.messages()[-1]["author"] == "operator"

    chat.observe(run_id, status="completed", output="42.")
    done = chat.relay()
    assert done.returncode == 0, done.stderr
    assert f"run={run_id} delivered" in done.stdout
    body = requests.get(monolith["url"] + POLL_PATH, headers={"X-Chat-Token": token},
                        timeout=10).json()
    assert body["awaiting"] is False
    assert [(m["author"], m["text"]) for m in body["messages"]] == [
        ("operator", "What is 6 x 7?"), ("hermes", "42.")]
    assert chat.state() == {}
    again = chat.relay()
    assert again.returncode == 0 and len(chat.messages()) == 2
    assert len(chat.runs_created()) == 1


def test_history_goes_along_with_the_question(monolith):
    chat = Scenario(monolith, "history")
    chat.say("first question")
    chat.relay()
    chat.observe(chat.run_id(), status="completed", output="first answer")
    chat.relay()
    chat.say("second question")
    chat.relay()
    run_id = chat.run_id()
    assert run_id != chat.runs_created()[0].get("ids", {}).get("runId", "")
    chat.observe(run_id, status="completed", output="second answer")
    chat.relay()
    assert [m["text"] for m in chat.messages()] == [
        "first question", "first answer", "second question", "second answer"]


def test_a_dropped_submit_response_is_recovered_by_replay_without_a_second_run(monolith):
    chat = Scenario(monolith, "drop")
    chat.say("are you there?")
    chat.admin_post("/faults", {"preset": "hermes_submit_accepted_drop"})
    result = chat.relay()
    assert result.returncode == 0, result.stderr  # recovered at once: nothing needs a look
    assert "got no answer" in result.stdout and "replaying with the same key" in result.stdout
    assert "(replayed)" in result.stdout
    assert len(chat.runs_created()) == 1
    chat.observe(chat.run_id(), status="completed", output="yes")
    assert chat.relay().returncode == 0
    assert [m["text"] for m in chat.messages()] == ["are you there?", "yes"]


@pytest.mark.parametrize("preset", ["hermes_throttled", "hermes_draining"])
def test_throttled_and_draining_gateways_are_retried_after_retry_after(monolith, preset):
    chat = Scenario(monolith, preset.split("_")[1])
    chat.say("hello?")
    chat.admin_post("/faults", {"preset": preset})
    busy = chat.relay()
    assert busy.returncode == 0 and "retry after 1s with a fresh key" in busy.stdout
    entry = chat.state()[chat.thread]
    assert entry["run_id"] is None and entry["generation"] == 1
    assert chat.runs_created() == []
    time.sleep(1.1)
    retried = chat.relay()
    assert "submitted run=" in retried.stdout
    assert len(chat.runs_created()) == 1


def test_a_failed_run_is_retried_with_a_new_key_and_then_answered(monolith):
    chat = Scenario(monolith, "fail")
    chat.say("please try")
    chat.relay()
    first_run = chat.run_id()
    first_key = chat.state()[chat.thread]["key"]
    chat.observe(first_run, status="failed", error="model overloaded")
    failed = chat.relay()
    assert failed.returncode == 1 and "model overloaded" in failed.stderr
    entry = chat.state()[chat.thread]
    assert entry["attempts"] == 1 and entry["run_id"] is None
    # Move the retry time into the past instead of waiting a minute.
    state_path = chat.data / "relay" / "state.json"
    state = json.loads(state_path.read_text())
    state["threads"][chat.thread]["next_ms"] = 0
    state_path.write_text(json.dumps(state))
    chat.relay()
    second = chat.state()[chat.thread]
    assert second["run_id"] != first_run and second["key"] != first_key
    chat.observe(second["run_id"], status="completed", output="second time lucky")
    chat.relay()
    assert chat.messages()[-1]["text"] == "second time lucky"


def test_two_relays_started_at_once_make_one_run_and_one_reply(monolith):
    chat = Scenario(monolith, "twice")
    chat.say("only once please")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: chat.relay(), range(2)))
    assert all(r.returncode == 0 for r in results)
    assert len(chat.runs_created()) == 1
    chat.observe(chat.run_id(), status="completed", output="once")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda _: chat.relay(), range(2)))
    assert [m["text"] for m in chat.messages()] == ["only once please", "once"]


def test_a_new_message_while_a_run_is_pending_supersedes_it(monolith):
    chat = Scenario(monolith, "newer")
    chat.say("first thought")
    chat.relay()
    stale_run = chat.run_id()
    chat.say("actually, a better question")
    chat.relay()
    fresh_run = chat.run_id()
    assert fresh_run != stale_run
    stale = requests.get(f"{chat.hermes}/v1/runs/{stale_run}", timeout=10).json()
    assert stale["status"] == "stopping"  # the superseded run was asked to stop
    chat.observe(fresh_run, status="completed", output="answer to both")
    chat.relay()
    assert [m["text"] for m in chat.messages()] == [
        "first thought", "actually, a better question", "answer to both"]


def test_a_long_answer_is_split_never_cut(monolith):
    chat = Scenario(monolith, "long")
    chat.say("tell me everything")
    chat.relay()
    answer = ("word " * 1000 + "\n\n") * 2  # 10002 characters
    chat.observe(chat.run_id(), status="completed", output=answer)
    done = chat.relay()
    # 5000 chars, a paragraph break, 5000 chars: cut at a space, then at the paragraph break
    assert "in 4 parts (over 4000 chars)" in done.stdout
    parts = [m["text"] for m in chat.messages()[1:]]
    assert "".join(parts) == answer and all(len(p) <= 4000 for p in parts)


def test_an_unreachable_gateway_is_a_problem_and_loses_nothing(tmp_path):
    chat = Scenario({"url": "", "hermes": "http://127.0.0.1:9", "root": tmp_path}, "down")
    chat.say("anyone?")
    down = chat.relay()
    assert down.returncode == 1
    assert down.stderr.startswith("relay: PROBLEM Hermes is unreachable at http://127.0.0.1:9")
    entry = chat.state()[chat.thread]
    assert entry["run_id"] is None and entry["key"].startswith(f"newos4-{chat.thread}-MSG-")
    assert chat.messages()[-1]["text"] == "anyone?"


def test_the_relay_authenticates_with_the_gateway_key(tmp_path):
    env = {"NEWOS4_DATA_DIR": str(tmp_path / "data"), "EMULATORS_DB": str(tmp_path / "e.db"),
           "HERMES_EMULATOR_API_KEY": "gateway-secret"}
    with gunicorn(env=env, workers=2) as url:
        chat = Scenario({"url": url, "hermes": url + "/emulators/hermes", "root": tmp_path},
                        "auth")
        chat.say("knock knock")
        refused = chat.relay(env={"HERMES_API_KEY": "wrong"})
        assert refused.returncode == 1
        assert "submit refused: invalid_api_key: Invalid API key" in refused.stderr
        assert chat.runs_created() == []
        state_path = chat.data / "relay" / "state.json"
        state = json.loads(state_path.read_text())
        state["threads"][chat.thread]["next_ms"] = 0  # skip the backoff instead of waiting
        state_path.write_text(json.dumps(state))
        accepted = chat.relay(env={"HERMES_API_KEY": "gateway-secret"})
        assert accepted.returncode == 0 and "submitted run=" in accepted.stdout
        assert len(chat.runs_created()) == 1
