"""Who decides, end to end: the watcher (and cron) between the chat (real gunicorn) and a Hermes
that asks before a dangerous command, the emulator always and, opt-in (HERMES_ORACLE_URL), the
real Hermes 0.19.0 server (set up as tests/integration/relay/test_approvals.py says).

The in-page AI's `always` runs nothing; `always` is not offered by default; the host's
`scripts/chat.py approve` runs the command; a word sent before Hermes asked is not a decision;
a question whose submission was cut while Hermes was down is answered once when it is back.
"""
import secrets
import signal
import subprocess
import sys
import time

import pytest

from spaces.newos4.app import POST_PATH
from spaces.newos4.relay.approvals import host_line
from spaces.newos4.service import thread_of
from testkit.hermes.driver import FAKE_REPLY
from testkit.hermes.proxy import FlakyProxy
from testkit.servers import REPO

from .test_approvals import (OUTPUTS, assert_asks, chat, hermes, one_run_per_question,  # noqa: F401
                             site, tell_the_driver)

pytestmark = pytest.mark.gunicorn


def ran(chat):
    """Whether the command ran: the real chmod's effect, or what the emulator's driver did."""
    if chat.driver is not None:
        return "approved" in chat.driver.settled.values()
    return chat.target.stat().st_mode & 0o777 == 0o777


def host(chat, *argv):
    return subprocess.run([sys.executable, "scripts/chat.py", *argv], cwd=REPO, env=chat.env,
                          capture_output=True, text=True, timeout=60)


def test_the_in_page_ais_always_runs_nothing_and_the_person_still_decides(chat):
    chat.watch()
    chat.post(f"RUN: {chat.command}")
    assert_asks(chat.wait_request(), chat.command)
    run_id = chat.run_id()
    answer = chat.http.post(chat.site["url"] + POST_PATH,
                            json={"text": "always", "kind": "agent"},
                            headers={"X-Chat-Token": chat.token}, timeout=10)
    assert answer.status_code == 201
    chat.wait_log("are not a decision")
    time.sleep(1)  # a few more passes: still nothing sent
    assert chat.run_status(run_id) == "waiting_for_approval" and not ran(chat)
    assert "approval answered" not in chat.logs()
    chat.post("deny")
    chat.wait_answer(OUTPUTS["denied"])
    assert not ran(chat)
    one_run_per_question(chat, 1)


def test_always_is_not_offered_by_default_and_typed_it_refuses(chat):
    chat.watch()
    chat.post(f"RUN: {chat.command}")
    request = chat.wait_request()
    assert "`always`" not in request["text"]
    chat.post("always")
    chat.wait_answer(FAKE_REPLY)  # refused, then sent on as an ordinary question
    assert not ran(chat)
    chat.wait_log("denied the command and stopped the run")


def test_the_host_approves_from_the_command_line_and_the_command_runs(chat):
    # `always` from the host changes the real server for good: its opt-in run uses `once`.
    choice = "always" if chat.driver is not None else "once"
    chat.watch()
    chat.post(f"RUN: {chat.command}")
    chat.wait_request()
    listed = host(chat, "approvals")
    assert listed.returncode == 0, listed.stderr
    thread = thread_of(chat.token)
    assert listed.stdout.startswith(f"{thread}  asked ") and \
        "choices once/session/always/deny (the person: once/session/deny)" in listed.stdout
    assert f"    command: {chat.command}\n" in listed.stdout
    decided = host(chat, "approve", thread, choice)
    assert decided.returncode == 0, decided.stderr
    chat.wait_answer(OUTPUTS["approved"])
    assert ran(chat)
    texts = [t for _, t in chat.transcript()]
    assert texts[2:] == [host_line(choice), OUTPUTS["approved"]]
    assert [a for a, _ in chat.transcript()] == ["operator", "hermes", "hermes", "hermes"]
    chat.cron()  # cron beside the watcher: nothing twice
    time.sleep(0.5)
    assert len(chat.transcript()) == 4
    again = host(chat, "approve", thread, choice)
    assert again.returncode == 1 and "no approval request waiting" in again.stderr
    one_run_per_question(chat, 1)


def test_the_hosts_decision_while_the_watcher_is_down_is_sent_once_by_cron_beside_it(chat):
    tell_the_driver(chat, "once")
    first = chat.watch()
    chat.post(f"RUN: {chat.command}")
    chat.wait_request()
    first.stop(signal.SIGKILL)
    assert host(chat, "approve", thread_of(chat.token), "once").returncode == 0
    assert chat.cron().returncode == 0, chat.logs()  # sends it and tells the thread
    chat.watch()
    chat.wait_answer(OUTPUTS["approved"])
    chat.cron()
    time.sleep(0.5)
    texts = [t for _, t in chat.transcript()]
    assert texts[2:] == [host_line("once"), OUTPUTS["approved"]] and ran(chat)
    assert chat.logs().count("approval answered 'once' by the host") == 1
    one_run_per_question(chat, 1)


def test_a_word_sent_before_hermes_asked_is_not_a_decision(chat):
    if chat.driver is not None:
        chat.driver.hold.set()  # the run has not asked yet
    chat.watch()
    chat.post(f"RUN: {chat.command}")
    deadline = time.monotonic() + 30
    while not any(e.get("run_id") for e in chat.state().values()):
        assert time.monotonic() < deadline, chat.logs()
        time.sleep(0.01)
    chat.post("once")  # Hermes takes a while to ask: this is before
    if chat.driver is not None:
        time.sleep(0.5)
        chat.driver.hold.clear()
    # "once" supersedes the run and is the next question, answered as any other (the real
    # test model sees the earlier RUN: line in it and asks again: nobody answers that).
    chat.wait_for("the answer to the early word", lambda ms: len(ms) >= 3 and ms[1]["text"] ==
                  "once" and ms[-1]["author"] == "hermes" and not ms[-1]["text"].startswith(
                      "Hermes asks"), chat.approval_timeout_s + 30)
    assert not ran(chat) and "approval answered" not in chat.logs(), chat.logs()
    assert "superseding" in chat.logs()


def test_a_question_cut_while_hermes_was_down_is_answered_once_when_it_is_back(chat):
    proxy = FlakyProxy(chat.hermes_url)
    question = f"what is new, {secrets.token_hex(4)}?"
    with proxy.serving() as proxy_url:
        chat.env["HERMES_API_URL"] = proxy_url
        proxy.down = True
        chat.post(question)
        chat.cron()
        assert proxy.cut >= 1 and "may have started a run" in chat.cron_out, chat.logs()
        chat.cron()  # still down: nothing settled, nothing sent twice
        proxy.down = False
        # The real server: settled after the transcript's grace period.
        chat.cron_until(("hermes", FAKE_REPLY), timeout=60)
    assert chat.runs_of(question) == 1
    assert [a for a, _ in chat.transcript()] == ["operator", "hermes"]
