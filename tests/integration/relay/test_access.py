"""Who reaches Hermes, end to end: the chat (real gunicorn: post.php, poll.php), the watcher
(`cron/relay.py --watch`) in pairing mode, the host's `scripts/chat.py pairing ...`, and Hermes.

Every case runs against our emulator (played by testkit.hermes.driver as the real server
behaves; its journal shows what reached it) and, when HERMES_ORACLE_URL is set, against a real
Hermes 0.19.0 server set up as tests/integration/relay/test_approvals.py says. There the fake
model's request log (HERMES_ORACLE_LLM_LOG, by default where `start_oracle.sh` writes it) proves
what reached the model. Each question carries a marker of its own, so a case only looks for
its own text in the log.
"""
import json
import os
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from spaces.newos4.relay.access import LET_IN_LINE, NOTICE_MARKER
from spaces.newos4.service import thread_of
from testkit.hermes.driver import FAKE_REPLY, HermesDriver
from testkit.hermes.oracle import real_hermes
from testkit.servers import REPO, Watcher, gunicorn

from .test_approvals import OUTPUTS, Chat

pytestmark = pytest.mark.gunicorn

CODE_IN_TEXT = re.compile(r"scripts/chat\.py pairing approve ([A-Z2-9]{8})\n")
DEFAULT_LLM_LOG = "/tmp/hermes-oracle/run/fake_llm_requests.jsonl"
# How long a case waits to be sure nothing more comes (the watcher ticks every 0.1 s).
QUIET_S = 1.5


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("access")
    env = {"NEWOS4_DATA_DIR": str(root / "data"), "EMULATORS_DB": str(root / "emu.sqlite3"),
           "NEWOS4_RATE_IP": "100000"}
    with gunicorn(env=env, workers=2, threads=4) as url:
        yield {"url": url, "data": root / "data", "hermes": url + "/emulators/hermes"}


class Hermes:
    """What reached Hermes: the emulator's journal and runs, or the real server's model log."""

    def __init__(self, url, key, llm_log=None):
        self.url, self.key, self.llm_log = url, key, llm_log

    def saw(self, text):
        """True when `text` reached Hermes (emulator) or its model (real server)."""
        if self.llm_log is not None:
            path = Path(self.llm_log)
            return path.exists() and text in path.read_text(errors="replace")
        seen = [requests.get(f"{self.url}/__admin/requests?limit=1000", timeout=10).json()]
        seen += [requests.get(f"{self.url}/__admin/state/{records}?limit=200", timeout=10).json()
                 for records in ("hermes-owners", "hermes-runs")]  # each run's input
        return text in json.dumps(seen)


@pytest.fixture(scope="module", params=["emulator", "real"])
def hermes(request, site):
    if request.param == "real":
        url, key = real_hermes()
        yield Hermes(url, key, os.environ.get("HERMES_ORACLE_LLM_LOG", DEFAULT_LLM_LOG))
        return
    with HermesDriver(site["hermes"], OUTPUTS):
        yield Hermes(site["hermes"], "")


@pytest.fixture(scope="module")
def watcher(site, hermes, tmp_path_factory):
    """One watcher in pairing mode for every case of a Hermes (the cases use new threads)."""
    env = {**os.environ, "NEWOS4_DATA_DIR": str(site["data"]), "HERMES_API_URL": hermes.url,
           "HERMES_API_KEY": hermes.key, "NEWOS4_RELAY_ACCESS": "pairing"}
    process = Watcher(env, tmp_path_factory.mktemp("watch"))
    process.env = env
    yield process
    process.kill()


@pytest.fixture
def person(site, watcher, hermes, tmp_path):
    """A browser of its own; every pending code or let-in thread is forgotten afterwards."""
    yield Person(site, watcher, hermes, tmp_path)
    (site["data"] / "relay" / "access.json").unlink(missing_ok=True)


class Person(Chat):
    """One browser's conversation beside the module's watcher, and the host's pairing command."""

    def __init__(self, site, watcher, hermes, tmp_path):
        super().__init__({**site, "data": str(site["data"])}, hermes.url, hermes.key, None,
                         tmp_path)
        self.watcher, self.hermes = watcher, hermes
        self.watchers = [watcher]  # whose log a failed wait shows
        self.thread = thread_of(self.token)
        self.marker = secrets.token_hex(6)

    def wait_notice(self):
        return self.wait_for("the access notice", lambda ms: ms[-1]["author"] == "hermes"
                             and ms[-1]["text"].startswith(NOTICE_MARKER),
                             20)["messages"][-1]["text"]

    def wait_answer(self, text=FAKE_REPLY):
        return super().wait_answer(text, timeout=20)["messages"]

    def pairing(self, *args):
        return subprocess.run([sys.executable, "scripts/chat.py", "pairing", *args], cwd=REPO,
                              env=self.watcher.env, capture_output=True, text=True, timeout=30)

    def authors(self):
        return [m["author"] for m in self.messages()["messages"]]


def test_a_strangers_question_never_reaches_hermes(person):
    person.post(f"RUN: chmod -R 777 /tmp/{person.marker}")
    notice = person.wait_notice()
    code = CODE_IN_TEXT.search(notice).group(1)
    person.post("once")
    person.post(f"always {person.marker}")
    time.sleep(QUIET_S)
    assert person.authors() == ["operator", "hermes", "operator", "operator"]
    assert not person.hermes.saw(person.marker) and not person.hermes.saw(person.thread)
    assert code not in person.watcher.stdout() + person.watcher.stderr()
    assert f"thread={person.thread} is not let in" in person.watcher.stdout()


def test_once_approved_the_waiting_question_is_answered_without_sending_it_again(person):
    person.post(f"hello {person.marker}")
    code = CODE_IN_TEXT.search(person.wait_notice()).group(1)
    started = time.monotonic()
    approved = person.pairing("approve", code)
    returned = time.monotonic()
    assert approved.returncode == 0, approved.stderr
    person.wait_answer()
    seen = time.monotonic()
    assert [(m["author"], m["text"]) for m in person.messages()["messages"]][2:] == [
        ("hermes", LET_IN_LINE), ("hermes", FAKE_REPLY)]  # told it is let in, then answered
    assert person.hermes.saw(person.marker)
    # Printed, not asserted (timings belong in benchmarks); the answer arriving within the wait
    # at all shows the watcher woke: unwoken, its next pass would be 30 s away.
    print(f"pairing approve -> answer in poll.php: {seen - started:.2f} s from the command's "
          f"start, {seen - returned:.2f} s after it returned")
    person.post(f"and again {person.marker}")
    assert person.wait_answer()[-2]["text"] == f"and again {person.marker}"
    assert not person.hermes.saw(LET_IN_LINE)  # nor in the history of the next question


def test_five_wrong_codes_lock_approval_and_allow_still_lets_in(person):
    person.post(f"let me in {person.marker}")
    code = CODE_IN_TEXT.search(person.wait_notice()).group(1)
    wrong = "".join(sorted(set("ABCDEFGHJK") - set(code)))[:8].ljust(8, "Z")
    refusals = [person.pairing("approve", wrong) for _ in range(5)]
    assert [r.returncode for r in refusals] == [1] * 5
    assert all(r.stderr.count("\n") == 1 and r.stderr.startswith("chat.py: wrong code")
               for r in refusals)
    locked = person.pairing("approve", code)
    assert locked.returncode == 1 and "approval is locked until" in locked.stderr
    time.sleep(QUIET_S)
    assert not person.hermes.saw(person.marker)
    assert person.pairing("allow", person.thread).returncode == 0
    person.wait_answer()
    assert person.hermes.saw(person.marker)


def test_allow_before_the_first_message_and_revoke_after(person):
    assert person.pairing("allow", person.thread).returncode == 0
    person.post(f"first {person.marker}")
    person.wait_answer()
    assert person.authors() == ["operator", "hermes"]
    listed = person.pairing("list").stdout
    assert f"  {person.thread}  since " in listed and "(by name)" in listed
    assert person.pairing("revoke", person.thread).returncode == 0
    late = secrets.token_hex(6)
    person.post(f"second {late}")
    notice = person.wait_notice()
    assert CODE_IN_TEXT.search(notice)
    time.sleep(QUIET_S)
    assert not person.hermes.saw(late) and person.authors() == ["operator", "hermes"] * 2


def test_cron_with_another_access_mode_beside_the_watcher_relays_nothing(person):
    person.post(f"hello {person.marker}")
    person.wait_notice()
    modes = person.site["data"] + "/relay/modes.json"
    try:
        assert person.env["NEWOS4_RELAY_ACCESS"] == "open"  # the watcher's is pairing
        cron = person.cron()
        assert cron.returncode == 1 and "NEWOS4_RELAY_ACCESS=open here, but the running " \
            "watcher relays with NEWOS4_RELAY_ACCESS=pairing" in cron.stderr, cron.stderr
        time.sleep(QUIET_S)
        assert not person.hermes.saw(person.marker)
        assert "but cron relays with NEWOS4_RELAY_ACCESS=open" in person.watcher.stderr()
    finally:
        Path(modes).unlink(missing_ok=True)  # the module's other cases: cron never ran
