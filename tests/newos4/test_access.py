"""Who reaches Hermes (relay/access.py): the Access object on its own, its host commands, and
the gate a relay pass puts in front of every submission (against a scripted Hermes)."""
import dataclasses
import json
import os
import re
import stat
import subprocess
import sys

import pytest

from spaces.newos4.clock import SystemClock
from spaces.newos4.files import Locks
from spaces.newos4.relay.access import (ALPHABET, LET_IN_LINE, NOTICE_MARKER, Access,
                                        AccessRefused, new_code)
from spaces.newos4.relay.modes import CRON_LIVE_MS
from spaces.newos4.relay.passes import Relay
from spaces.newos4.service import ChatService
from testkit import freezing

from .conftest import ChatClient, new_token, thread_for
from .test_relay import ScriptedHermes

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CODE_IN_TEXT = re.compile(r"scripts/chat\.py pairing approve ([A-Z2-9]{8})\n")
THREADS = [thread_for(new_token()) for _ in range(6)]

def access_at(tmp_path, mode="pairing"):
    return Access(tmp_path / "relay" / "access.json", mode=mode, clock=SystemClock())


def code_of(text):
    return CODE_IN_TEXT.search(text).group(1)


def pair(access, thread):
    """What a pass does for a thread not let in: ask for its message, then say it was told."""
    text = access.pairing_message(thread)
    if text is not None:
        access.told(thread)
    return text


def refusal(call, *args):
    with pytest.raises(AccessRefused) as refused:
        call(*args)
    return str(refused.value)


# -- the Access object --------------------------------------------------------------------

def test_codes_are_eight_characters_of_the_unambiguous_alphabet():
    codes = {new_code() for _ in range(500)}
    assert len(codes) == 500
    assert all(len(c) == 8 and set(c) <= set(ALPHABET) for c in codes)
    assert not set("01IO") & set("".join(codes))


def test_a_thread_gets_one_message_with_its_code_and_the_host_command(tmp_path):
    access = access_at(tmp_path)
    text = pair(access, THREADS[0])
    code = code_of(text)
    assert text.startswith(NOTICE_MARKER) and f"```\nscripts/chat.py pairing approve {code}\n```" \
        in text and "one hour" in text
    assert access.pairing_message(THREADS[0]) is None  # further posts: nothing new
    assert not access.admits(THREADS[0])
    assert access.approve(code.lower()) == THREADS[0]
    assert access.admits(THREADS[0]) and access.pairing_message(THREADS[0]) is None
    assert "wrong code" in refusal(access.approve, code)  # a code works once


def test_the_state_file_is_0600_and_holds_no_code(tmp_path):
    access = access_at(tmp_path)
    code = code_of(pair(access, THREADS[0]))
    path = tmp_path / "relay" / "access.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert code not in path.read_text() and THREADS[0] in path.read_text()
    access.allow(THREADS[1])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_message_not_in_the_thread_yet_is_the_same_next_time_and_nothing_is_written(tmp_path):
    """The pass writes the message after the code is saved: a pass that could not write it
    (its question superseded, a thread it cannot write) writes the same one next time, and
    asking again changes no file (a watcher would wake on its own write, in a loop)."""
    access = access_at(tmp_path)
    path = tmp_path / "relay" / "access.json"
    first = access.pairing_message(THREADS[0])
    stamp = path.stat().st_mtime_ns, path.stat().st_ino
    assert access.pairing_message(THREADS[0]) == first
    assert (path.stat().st_mtime_ns, path.stat().st_ino) == stamp
    access.told(THREADS[0])
    assert code_of(first) not in path.read_text()  # only its hash, once it is shown
    assert access.approve(code_of(first)) == THREADS[0]


def test_a_thread_that_takes_short_messages_gets_the_command_alone(tmp_path):
    access = Access(tmp_path / "access.json", mode="pairing", clock=SystemClock(),
                    max_text=100)
    text = pair(access, THREADS[0])
    assert len(text) <= 100 and text == f"{NOTICE_MARKER}\n\nscripts/chat.py pairing approve " \
        f"{text[-8:]}"
    assert access.approve(text[-8:]) == THREADS[0]


def test_a_code_expires_after_an_hour_and_the_next_message_gets_a_new_one(tmp_path):
    access = access_at(tmp_path)
    with freezing.frozen("2026-12-02 07:00:00") as frozen:
        code = code_of(pair(access, THREADS[0]))
        frozen.tick(3599)
        assert pair(access, THREADS[0]) is None
        frozen.tick(1)
        assert "wrong code" in refusal(access.approve, code)
        fresh = code_of(pair(access, THREADS[0]))
        assert access.approve(fresh) == THREADS[0]


def test_at_most_three_pending_and_the_fourth_is_told_to_try_later_once(tmp_path):
    access = access_at(tmp_path)
    with freezing.frozen("2026-12-02 07:00:00") as frozen:
        for thread in THREADS[:3]:
            code_of(pair(access, thread))
            frozen.tick(600)
        busy = pair(access, THREADS[3])
        assert busy.startswith(NOTICE_MARKER) and "about 30 minute(s)" in busy
        assert not CODE_IN_TEXT.search(busy) and not re.search(r"`[A-Z2-9]{8}`", busy)
        assert f"scripts/chat.py pairing allow {THREADS[3]}" in busy
        assert pair(access, THREADS[3]) is None  # one "try again later", not one per post
        assert len(access.listing()["pending"]) == 3
        frozen.tick(1800)  # the first code expired: a code is free
        assert code_of(pair(access, THREADS[3]))


def test_five_wrong_codes_lock_approval_for_an_hour(tmp_path):
    access = access_at(tmp_path)
    with freezing.frozen("2026-12-02 07:00:00") as frozen:
        code = code_of(pair(access, THREADS[0]))
        lines = [refusal(access.approve, "ABCDEFGH") for _ in range(5)]
        assert "4 more wrong code(s)" in lines[0] and "1 more wrong code(s)" in lines[3]
        assert "approval is now locked until 08:00 UTC" in lines[4]
        assert all("\n" not in line and code not in line for line in lines)
        locked = refusal(access.approve, code)  # even the right code
        assert locked.startswith("approval is locked until 08:00 UTC")
        assert access.listing()["locked_until_ms"]
        other = pair(access, THREADS[1])  # no new codes while locked
        assert "about 60 minute(s)" in other and not CODE_IN_TEXT.search(other)
        frozen.tick(3600)  # the lock is over (and the code, an hour old, expired with it)
        assert access.approve(code_of(pair(access, THREADS[1]))) == THREADS[1]


def test_a_right_code_resets_the_count_of_wrong_ones(tmp_path):
    access = access_at(tmp_path)
    code = code_of(pair(access, THREADS[0]))
    for _ in range(4):
        refusal(access.approve, "ABCDEFGH")
    access.approve(code)
    assert access.listing()["wrong_codes"] == 0
    assert "4 more" in refusal(access.approve, "ABCDEFGH")


def test_a_malformed_code_is_refused_and_not_counted(tmp_path):
    access = access_at(tmp_path)
    assert refusal(access.approve, "O0I1-xyz").startswith("not a pairing code: a code is 8 ")
    assert access.listing()["wrong_codes"] == 0


def test_allow_works_when_strangers_hold_every_code_and_approval_is_locked(tmp_path):
    access = access_at(tmp_path)
    for thread in THREADS[:3]:
        pair(access, thread)
    for _ in range(5):
        refusal(access.approve, "ABCDEFGH")
    assert access.allow(THREADS[4]) is True and access.admits(THREADS[4])
    assert access.allow(THREADS[4]) is False
    assert access.releases() == [THREADS[4]]
    assert "16 lowercase hex" in refusal(access.allow, "../../etc")


def test_revoke_lets_a_thread_in_no_more_and_cancels_its_code(tmp_path):
    access = access_at(tmp_path)
    access.allow(THREADS[0])
    pair(access, THREADS[1])
    assert access.revoke(THREADS[0]) == (True, False)
    assert access.revoke(THREADS[1]) == (False, True)
    assert not access.admits(THREADS[0])
    assert "nothing to revoke" in refusal(access.revoke, THREADS[0])
    assert code_of(pair(access, THREADS[0]))  # its next message pairs again


def test_allowlist_mode_tells_once_with_no_code(tmp_path):
    access = access_at(tmp_path, "allowlist")
    text = pair(access, THREADS[0])
    assert text.startswith(NOTICE_MARKER) and f"scripts/chat.py pairing allow {THREADS[0]}" \
        in text and not CODE_IN_TEXT.search(text)
    assert pair(access, THREADS[0]) is None
    assert access.listing()["pending"] == []
    access.allow(THREADS[0])
    assert access.admits(THREADS[0])


def test_open_mode_admits_every_thread_and_reads_no_state(tmp_path):
    (tmp_path / "relay").mkdir()
    (tmp_path / "relay" / "access.json").write_text("{not json")
    access = access_at(tmp_path, "open")
    assert access.admits(THREADS[0]) and access.pairing_message(THREADS[0]) is None
    assert access.problem() is None


@pytest.mark.parametrize("content", ["{not json", '{"pending": []}', json.dumps(
    {"pending": {}, "allowed": {"../x": {}}, "refused": {}, "failures": 0,
     "locked_until_ms": 0})])
def test_an_unreadable_state_lets_nobody_in_and_is_named(tmp_path, content):
    access = access_at(tmp_path)
    access.allow(THREADS[0])
    (tmp_path / "relay" / "access.json").write_text(content)
    assert not access.admits(THREADS[0]) and access.pairing_message(THREADS[1]) is None
    assert "cannot be read" in access.problem() and "no conversation reaches Hermes" \
        in access.problem()
    assert "cannot be read" in refusal(access.allow, THREADS[1])
    assert (tmp_path / "relay" / "access.json").read_text() == content  # left for the host


# -- the host commands --------------------------------------------------------------------

def chat(data_dir, *args, mode="pairing"):
    env = {**os.environ, "NEWOS4_DATA_DIR": str(data_dir), "NEWOS4_RELAY_ACCESS": mode}
    return subprocess.run([sys.executable, "scripts/chat.py", "pairing", *args], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=30)


def test_the_commands_list_approve_allow_revoke_and_refuse_in_one_line(tmp_path):
    data = tmp_path / "data"
    access = Access(data / "relay" / "access.json", mode="pairing", clock=SystemClock())
    code = code_of(pair(access, THREADS[0]))
    listed = chat(data, "list")  # a loaded machine may take a few seconds to start it
    assert listed.returncode == 0 and re.search(
        rf"  {THREADS[0]}  given [0-9] s ago, expires in 59 min", listed.stdout)
    assert code not in listed.stdout
    wrong = chat(data, "approve", "ABCDEFGH")
    assert wrong.returncode == 1 and wrong.stdout == ""
    assert wrong.stderr.startswith("chat.py: wrong code") and wrong.stderr.count("\n") == 1
    done = chat(data, "approve", code)
    assert done.returncode == 0 and done.stdout.startswith(f"let in thread {THREADS[0]}")
    assert chat(data, "allow", THREADS[1]).stdout.startswith(f"let in thread {THREADS[1]} (no ")
    shown = json.loads(chat(data, "list", "--json").stdout)
    assert [a["thread"] for a in shown["allowed"]] == THREADS[:2]
    assert [a["by"] for a in shown["allowed"]] == ["code", "allow"]
    assert chat(data, "revoke", THREADS[1]).returncode == 0
    again = chat(data, "revoke", THREADS[1])
    assert again.returncode == 1 and again.stderr.count("\n") == 1
    assert chat(data, "allow", "nope").returncode == 1
    assert "NEWOS4_RELAY_ACCESS: expected one of pairing, allowlist, open, got 'opne'" in \
        chat(data, "list", mode="opne").stderr


def test_the_pairing_help_says_how_a_person_gets_in():
    helped = chat("/nonexistent", "--help")
    for words in ("one-time code", "NEWOS4_RELAY_ACCESS", "approve", "allow", "revoke",
                  "exit status", "0600"):
        assert words in helped.stdout


def test_two_processes_approving_one_code_let_it_in_once(tmp_path):
    data = tmp_path / "data"
    access = Access(data / "relay" / "access.json", mode="pairing", clock=SystemClock())
    code = code_of(pair(access, THREADS[0]))
    env = {**os.environ, "NEWOS4_DATA_DIR": str(data), "NEWOS4_RELAY_ACCESS": "pairing"}
    procs = [subprocess.Popen([sys.executable, "scripts/chat.py", "pairing", "approve", code],
                              cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    statuses = sorted(p.wait(timeout=30) for p in procs)
    assert statuses == [0, 1]
    assert access.admits(THREADS[0]) and access.listing()["wrong_codes"] == 1


# -- the gate in front of every submission --------------------------------------------------

@pytest.fixture
def gated(make_app, settings, clock):
    """A chat app and a relay pass in pairing mode over one scripted Hermes."""
    testapp, service = make_app(relay_access="pairing")
    hermes, lines = ScriptedHermes(), []

    def run():
        lines.clear()
        Relay(service, hermes, log=lambda line, problem: lines.append(line)).run()
        return lines
    access = Access.for_settings(dataclasses.replace(settings, relay_access="pairing"), clock)
    return testapp, service, hermes, run, access


def test_a_strangers_question_never_reaches_hermes(gated):
    testapp, service, hermes, run, access = gated
    stranger = ChatClient(testapp)
    stranger.say("rm -rf / please")
    logged = run()
    messages = service.history(stranger.thread)
    assert [m["author"] for m in messages] == ["operator", "hermes"]
    code = code_of(messages[1]["text"])
    assert hermes.submits == [] and not any(code in line for line in logged)
    stranger.say("hello?")
    stranger.say("approve")
    run()
    run()
    assert hermes.submits == [] and len(service.history(stranger.thread)) == 4
    assert stranger.poll().json["awaiting"]  # its newer messages wait: nothing answers them


def test_once_let_in_the_waiting_question_goes_and_is_answered_after_the_notice(gated):
    testapp, service, hermes, run, access = gated
    person = ChatClient(testapp)
    person.say("earlier")
    run()
    notice = service.history(person.thread)[-1]
    access.approve(code_of(notice["text"]))
    run()
    assert len(hermes.submits) == 1
    body, _ = hermes.submits[0]
    assert body["input"] == "earlier" and body["conversation_history"] == []
    hermes.runs["run_1"].update(status="completed", output="the answer")
    run()
    messages = service.history(person.thread)
    assert [(m["author"], m["text"]) for m in messages[1:]] == [
        ("hermes", notice["text"]), ("hermes", LET_IN_LINE), ("hermes", "the answer")]
    assert not person.poll().json["awaiting"]
    run()
    assert access.releases() == [] and len(hermes.submits) == 1


def test_the_thread_is_told_once_it_is_let_in_and_that_line_never_reaches_hermes(gated):
    testapp, service, hermes, run, access = gated
    person = ChatClient(testapp)
    person.say("first")
    run()
    person.say("second")  # written while it waits: the question, answered after the line
    access.approve(code_of(service.history(person.thread)[1]["text"]))
    run()
    run()  # a pass that finds the line already there writes no second one
    assert [(m["author"], m["text"]) for m in service.history(person.thread)][2:] == [
        ("operator", "second"), ("hermes", LET_IN_LINE)]
    assert [body["input"] for body, _ in hermes.submits] == ["second"]
    hermes.runs["run_1"].update(status="completed", output="the answer")
    run()
    # The person's own words, even the relay's line typed by hand, are the conversation.
    person.say(LET_IN_LINE)
    run()
    body, _ = hermes.submits[-1]
    assert body["input"] == LET_IN_LINE and body["conversation_history"] == [
        {"role": "user", "content": "first"}, {"role": "user", "content": "second"},
        {"role": "assistant", "content": "the answer"}]
    assert [m["text"] for m in service.history(person.thread)].count(LET_IN_LINE) == 2


def test_a_newer_message_after_the_notice_is_the_question_and_the_notice_stays_out(gated):
    testapp, service, hermes, run, access = gated
    person = ChatClient(testapp)
    person.say("first")
    run()
    person.say("second")
    run()
    access.allow(person.thread)
    run()
    body, _ = hermes.submits[0]
    assert body["input"] == "second"
    assert body["conversation_history"] == [{"role": "user", "content": "first"}]


def test_revoking_a_thread_stops_its_run_and_sends_nothing_more(gated):
    testapp, service, hermes, run, access = gated
    person = ChatClient(testapp)
    access.allow(person.thread)
    person.say("q")
    run()
    assert len(hermes.submits) == 1
    access.revoke(person.thread)
    logged = run()
    assert hermes.stops == ["run_1"] and any("no longer let in" in line for line in logged)
    assert code_of(service.history(person.thread)[-1]["text"])  # it pairs again
    person.say("once")
    run()
    assert len(hermes.submits) == 1 and hermes.stops == ["run_1"]


def test_an_unreadable_access_state_sends_and_tells_nothing(gated, settings):
    testapp, service, hermes, run, access = gated
    access.allow(THREADS[0])
    (settings.data_dir / "relay" / "access.json").write_text("[]")
    person = ChatClient(testapp)
    person.say("q")
    logged = run()
    assert hermes.submits == [] and len(service.history(person.thread)) == 1
    assert any("PROBLEM access state" in line for line in logged)


def test_open_mode_relays_every_thread_as_before(make_app):
    testapp, service = make_app(relay_access="open")
    hermes = ScriptedHermes()
    ChatClient(testapp).say("q")
    Relay(ChatService(service.settings, clock=service.clock), hermes,
          log=lambda line, problem: None).run()
    assert len(hermes.submits) == 1


def test_a_command_run_as_root_leaves_the_files_to_the_data_folders_owner(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root can give files away")
    data = tmp_path / "data"
    data.mkdir()
    os.chown(data, 65534, 65534)  # the relay's user (nobody here)
    access = Access(data / "relay" / "access.json", mode="pairing", clock=SystemClock())
    access.allow(THREADS[0])
    for path in ("relay", "relay/access.json", "relay/access.json.lock"):
        assert (data / path).stat().st_uid == 65534, path
    assert stat.S_IMODE((data / "relay" / "access.json").stat().st_mode) == 0o600


def relay_cli(data_dir, mode):
    env = {**os.environ, "NEWOS4_DATA_DIR": str(data_dir), "NEWOS4_RELAY_ACCESS": mode,
           "HERMES_API_URL": "http://127.0.0.1:9"}  # nothing waits: never contacted
    return subprocess.run([sys.executable, "cron/relay.py"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=30)


def test_the_relay_says_at_start_when_it_is_open_and_refuses_a_bad_mode(tmp_path):
    opened = relay_cli(tmp_path / "data", "open")
    said = [line for line in opened.stdout.splitlines() if "NEWOS4_RELAY_ACCESS" in line]
    assert opened.returncode == 0 and said == [
        "relay: NEWOS4_RELAY_ACCESS=open: anyone who can reach the chat page reaches Hermes "
        "(and the tools it runs on this host)"]
    paired = relay_cli(tmp_path / "data", "pairing")
    assert paired.returncode == 0 and "NEWOS4_RELAY_ACCESS" not in paired.stdout
    bad = relay_cli(tmp_path / "data", "Open ")
    assert bad.returncode == 1 and bad.stderr == "relay: NEWOS4_RELAY_ACCESS: expected one of " \
        "pairing, allowlist, open, got 'Open '\n"


def test_a_released_thread_that_cannot_be_read_is_skipped_and_the_others_go(gated, settings):
    testapp, service, hermes, run, access = gated
    broken, person = ChatClient(testapp), ChatClient(testapp)
    broken.say("q")
    run()
    access.allow(broken.thread)
    (settings.chat_dir / f"{broken.thread}.json").write_text("{not json")
    access.allow(person.thread)
    person.say("mine")
    logged = run()
    assert [body["input"] for body, _ in hermes.submits] == ["mine"]
    assert any(f"thread={broken.thread} skipped" in line for line in logged)


# -- cron and the watcher must relay with one policy ----------------------------------------

class NoEvents:
    """A watcher's run subscriptions that never hear anything (what makes a pass the watcher's)."""

    def follow(self, run_id):
        return None

    def get(self, run_id):
        return None


@pytest.fixture
def two_relays(make_app, settings, clock):
    """A chat app and `relay(kind, mode)`: one pass of cron or of the watcher over one scripted
    Hermes; `watching` holds the watcher's lock as a running watcher does."""
    testapp, _ = make_app(relay_access="pairing")
    hermes, lines = ScriptedHermes(), []

    def relay(kind, mode):
        lines.clear()
        service = ChatService(dataclasses.replace(settings, relay_access=mode), clock=clock)
        Relay(service, hermes, log=lambda line, problem: lines.append((line, problem)),
              events=NoEvents() if kind == "watch" else None).run()
        return lines
    watch_lock = settings.data_dir / "relay" / "watch.lock"
    watch_lock.parent.mkdir(parents=True, exist_ok=True)
    return testapp, hermes, relay, Locks(0), watch_lock


def conflicts(lines):
    return [line for line, problem in lines if problem and "must use the same value" in line]


def test_cron_open_beside_a_pairing_watcher_lets_no_stranger_reach_hermes(two_relays, clock):
    testapp, hermes, relay, locks, watch_lock = two_relays
    stranger = ChatClient(testapp)
    stranger.say("rm -rf / please")
    with locks(watch_lock):  # the watcher runs
        relay("watch", "pairing")  # told the stranger its code
        told = len(stranger.poll().json["messages"])
        stranger.say("and now?")
        [line] = conflicts(relay("cron", "open"))
        assert line == ("relay: PROBLEM NEWOS4_RELAY_ACCESS=open here, but the running watcher "
                        "relays with NEWOS4_RELAY_ACCESS=pairing: cron and the watcher must use "
                        "the same value (set it in both the crontab and the watcher's "
                        "environment, or in neither); nothing is relayed until they agree")
        assert hermes.submits == []
        # The watcher refuses too while cron's differing record is fresh.
        assert conflicts(relay("watch", "pairing")) == [
            "relay: PROBLEM NEWOS4_RELAY_ACCESS=pairing here, but cron relays with "
            "NEWOS4_RELAY_ACCESS=open (its last run is in relay/modes.json): cron and the "
            "watcher must use the same value (set it in both the crontab and the watcher's "
            "environment, or in neither); nothing is relayed until they agree"]
        assert hermes.submits == [] and len(stranger.poll().json["messages"]) == told + 1
        assert conflicts(relay("cron", "pairing")) == []  # the crontab fixed: both relay again
        assert conflicts(relay("watch", "pairing")) == []
    assert hermes.submits == []


def test_a_pairing_cron_beside_an_open_watcher_neither_relays_nor_stops_its_runs(two_relays):
    testapp, hermes, relay, locks, watch_lock = two_relays
    person = ChatClient(testapp)
    person.say("q")
    with locks(watch_lock):
        relay("watch", "open")
        assert len(hermes.submits) == 1
        assert conflicts(relay("cron", "pairing"))
        assert hermes.stops == [] and len(person.poll().json["messages"]) == 1  # no code written
        person.say("more")
        assert conflicts(relay("watch", "open"))
        assert len(hermes.submits) == 1


def test_cron_alone_relays_with_its_own_mode_once_the_watcher_is_gone(two_relays):
    testapp, hermes, relay, locks, watch_lock = two_relays
    with locks(watch_lock):
        relay("watch", "pairing")
    ChatClient(testapp).say("q")
    assert conflicts(relay("cron", "open")) == [] and len(hermes.submits) == 1


def test_a_cron_record_older_than_a_few_minutes_holds_no_watcher_back(two_relays, clock):
    testapp, hermes, relay, locks, watch_lock = two_relays
    relay("cron", "pairing")
    ChatClient(testapp).say("q")
    clock.advance(CRON_LIVE_MS - 1000)
    assert conflicts(relay("watch", "open"))
    clock.advance(1000)  # the crontab line went away (or became --sweep-only)
    assert conflicts(relay("watch", "open")) == [] and len(hermes.submits) == 1
