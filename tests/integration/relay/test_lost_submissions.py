"""A submission whose answer is lost while Hermes "is down", to a Hermes that ignores
Idempotency-Key as 0.19.0 does (the emulator's preset hermes_run_keys_ignored): cron between
the chat (real gunicorn) and the emulator behind testkit.hermes.proxy, settled from the session
transcript. A question that started a run is answered once and never submitted again, even
while its run works past the grace period; one that never reached Hermes is submitted once,
after the grace period. The same when the relay's own state is lost (removed, cut short, or
put back from before), against the emulator and, with HERMES_ORACLE_URL, a real Hermes 0.19.0.
"""
import re
import secrets
import time
from pathlib import Path

import pytest

from spaces.newos4.relay.lost_runs import FOUND_RUN
from spaces.newos4.service import thread_of
from testkit.hermes.driver import FAKE_REPLY
from testkit.hermes.proxy import FlakyProxy

from .test_approvals import chat, hermes, site  # noqa: F401

pytestmark = pytest.mark.gunicorn
EMULATOR = pytest.mark.parametrize("hermes", ["emulator"], indirect=True)

GRACE_S = 2


@pytest.fixture
def forgetful(chat):
    """The chat's relay in front of an emulator that ignores Idempotency-Key, with a short
    transcript grace period; yields (chat, proxy, proxy URL)."""
    admin = chat.http.post(chat.hermes_url + "/__admin/faults",
                           json={"preset": "hermes_run_keys_ignored"}, timeout=10)
    assert admin.status_code == 201, admin.text
    assert "idempotency" not in chat.http.get(chat.hermes_url + "/v1/capabilities",
                                              timeout=10).json()
    chat.env["NEWOS4_RELAY_TRANSCRIPT_GRACE_S"] = str(GRACE_S)
    proxy = FlakyProxy(chat.hermes_url)
    with proxy.serving() as url:
        chat.env["HERMES_API_URL"] = url
        yield chat, proxy


def run_of(chat, question):
    """The emulator's run (id, status) for `question`, or None."""
    admin = chat.hermes_url + "/__admin/state/hermes-"
    owners = chat.http.get(admin + "owners?limit=200", timeout=10).json()["records"]
    runs = {r["id"]: r["value"] for r in chat.http.get(admin + "runs?limit=200",
                                                       timeout=10).json()["records"]}
    found = [r["id"] for r in owners if r["value"].get("input") == question]
    assert len(found) <= 1, found
    return (found[0], runs[found[0]]["status"]) if found else None


def observe(chat, run_id, **body):
    answer = chat.http.post(f"{chat.hermes_url}/__admin/hermes/runs/{run_id}/observe",
                            json=body, timeout=10)
    assert answer.status_code == 200, answer.text


@EMULATOR
def test_a_run_started_by_a_cut_submission_is_answered_once_and_never_submitted_again(
        forgetful):
    chat, proxy = forgetful
    chat.driver.hold.set()  # the agent is slow: the test says when the run moves
    question = f"what is new, {secrets.token_hex(4)}?"
    proxy.drop_next_submission = True
    chat.post(question)
    chat.cron()
    assert proxy.dropped == 1 and "may have started a run" in chat.cron_out, chat.logs()
    run_id, status = run_of(chat, question)
    assert status == "queued"
    proxy.down = True  # Hermes restarts behind its proxy
    observe(chat, run_id, status="running")  # its agent starts: the input is in the session
    chat.cron()
    assert proxy.cut >= 1 and chat.runs_of(question) == 1
    proxy.down = False
    deadline = time.monotonic() + GRACE_S + 1.5
    while time.monotonic() < deadline:  # past the grace period, the run still working
        chat.cron()
    assert chat.runs_of(question) == 1 and run_of(chat, question) == (run_id, "running")
    assert [a for a, _ in chat.transcript()] == ["operator"], chat.logs()
    observe(chat, run_id, status="completed", output=FAKE_REPLY)
    chat.cron_until(("hermes", FAKE_REPLY), timeout=30)
    chat.cron()
    assert chat.transcript() == [("operator", question), ("hermes", FAKE_REPLY)]
    assert chat.runs_of(question) == 1
    assert FOUND_RUN in chat.logs() and " submitted run=" not in chat.logs()


@EMULATOR
def test_a_submission_that_never_reached_hermes_is_submitted_once_after_the_grace_period(
        forgetful):
    chat, proxy = forgetful
    question = f"anything else, {secrets.token_hex(4)}?"
    proxy.down = True
    chat.post(question)
    chat.cron()
    assert proxy.cut >= 1 and "may have started a run" in chat.cron_out, chat.logs()
    proxy.down = False
    chat.cron_until(("hermes", FAKE_REPLY), timeout=30)
    chat.cron()
    time.sleep(0.3)
    assert chat.transcript() == [("operator", question), ("hermes", FAKE_REPLY)]
    assert chat.runs_of(question) == 1
    waited = re.findall(r"not in Hermes' session transcript (\d+\.\d)s after the submission",
                        chat.logs())
    assert len(waited) == 1 and float(waited[0]) >= GRACE_S, chat.logs()
    assert chat.logs().count(" submitted run=") == 1


def recorded(chat, question):
    """Whether Hermes' transcript holds `question` yet (no session yet: not)."""
    session = chat.http.get(f"{chat.hermes_url}/api/sessions/newos4-{thread_of(chat.token)}"
                            "/messages", headers={"Authorization": f"Bearer {chat.key}"},
                            timeout=10)
    return session.status_code == 200 and chat.runs_of(question) > 0


def state_file(chat):
    return Path(chat.site["data"]) / "relay" / "state.json"


def lose_the_state(chat, how, backup):
    """The relay's memory of its submissions goes: the file removed, cut short, or put back
    as a backup taken before the question was in it."""
    path = state_file(chat)
    if how == "removed":
        path.unlink()
        return "is missing, though a relay ran here"
    if how == "put_back":
        path.write_bytes(backup)
        return "kept as state.json.older-"
    path.write_bytes(path.read_bytes()[:40])
    return "kept as state.json.corrupt-"


LOST = ["removed", "cut_short", "put_back"]


@EMULATOR
@pytest.mark.parametrize("how", LOST)
def test_a_question_submitted_before_the_relay_state_was_lost_is_never_submitted_again(
        forgetful, how):
    chat, proxy = forgetful
    chat.driver.hold.set()
    chat.cron()
    backup = state_file(chat).read_bytes()
    question = f"still there, {secrets.token_hex(4)}?"
    chat.post(question)
    chat.cron()
    run_id, status = run_of(chat, question)
    assert " submitted run=" in chat.cron_out and status == "queued"
    observe(chat, run_id, status="running")  # its agent starts: the input is in the session
    said = lose_the_state(chat, how, backup)
    deadline = time.monotonic() + GRACE_S + 1.5
    while time.monotonic() < deadline:  # past the grace period, the run still working
        chat.cron()
    assert said in chat.cron_out and "Traceback" not in chat.cron_out, chat.logs()
    assert chat.runs_of(question) == 1 and run_of(chat, question) == (run_id, "running")
    assert [a for a, _ in chat.transcript()] == ["operator"]
    observe(chat, run_id, status="completed", output=FAKE_REPLY)
    chat.cron_until(("hermes", FAKE_REPLY), timeout=30)
    chat.cron()
    assert chat.transcript() == [("operator", question), ("hermes", FAKE_REPLY)]
    assert chat.runs_of(question) == 1 and FOUND_RUN in chat.logs()
    assert chat.logs().count(" submitted run=") == 1


@pytest.mark.parametrize("hermes", ["real"], indirect=True)
@pytest.mark.parametrize("how", LOST)
def test_the_real_hermes_runs_a_question_once_when_the_relay_state_is_lost(chat, how):
    """Hermes 0.19.0 ignores Idempotency-Key; its transcript holds the run's input while the
    run works (the fake model answers a question holding SLOW after 8 s) and its answer after."""
    chat.env["NEWOS4_RELAY_TRANSCRIPT_GRACE_S"] = str(GRACE_S)
    chat.cron()
    backup = state_file(chat).read_bytes()
    question = f"SLOW: still there, {secrets.token_hex(4)}?"
    chat.post(question)
    chat.cron()
    assert " submitted run=" in chat.cron_out, chat.logs()
    deadline = time.monotonic() + 30
    while not recorded(chat, question):
        assert time.monotonic() < deadline, "the run's input never reached the transcript"
        time.sleep(0.1)
    said = lose_the_state(chat, how, backup)
    deadline = time.monotonic() + GRACE_S + 1.5
    while time.monotonic() < deadline:
        chat.cron()
    assert said in chat.cron_out and chat.runs_of(question) == 1, chat.logs()
    chat.cron_until(("hermes", FAKE_REPLY), timeout=60)
    chat.cron()
    assert chat.transcript() == [("operator", question), ("hermes", FAKE_REPLY)]
    assert chat.runs_of(question) == 1 and FOUND_RUN in chat.logs()
    assert chat.logs().count(" submitted run=") == 1
