"""The host side's state files edited by hand (relay/access.json, relay/state.json and its
count of saves, relay/modes.json): each bad edit is one line naming the file and the field, and
a closed door: nobody let in on an access state that cannot be read, no question submitted
twice, nothing written over a file that cannot be read. Driven through the programs' own entry
points (the relay's and chat.py's `main`), the watcher's ticks, and once each as real
processes."""
import dataclasses
import io
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spaces.newos4 import cli as chat_cli
from spaces.newos4.clock import SystemClock
from spaces.newos4.relay import cli as relay_cli
from spaces.newos4.relay.access import Access
from spaces.newos4.relay.hermes_client import HermesClient
from spaces.newos4.relay.records import RelayRecord
from spaces.newos4.relay.schemas import RECORD
from spaces.newos4.relay.state import RelayState
from spaces.newos4.relay.watch import MAX_BACKOFF_S, Watcher
from spaces.newos4.service import ChatService
from spaces.newos4.settings import Settings
from testkit.hermes.stub import HermesStub

from .test_watch import Ticks

REPO = Path(__file__).resolve().parents[2]
LET_IN, STRANGER, LATER = "00000000000000a1", "00000000000000b2", "00000000000000c3"
GRACE_S = 1


def cut(raw):
    return raw[:len(raw) // 2]


def on_bytes(change):
    """An edit of the file's bytes (the others edit its JSON)."""
    change.on_bytes = True
    return change


# Each edit: (what it does to the file's JSON, or to its bytes, or None: a folder in its
# place; the field the line must name, or None when the whole file is unreadable).
ACCESS_EDITS = {
    "wrong_type": (lambda doc: {**doc, "failures": "0"}, 'field "failures": not a whole number'),
    "missing_field": (lambda doc: {k: v for k, v in doc.items() if k != "refused"},
                      'field "refused": missing'),
    "unknown_field": (lambda doc: {**doc, "admin": True}, 'field "admin": unknown field'),
    "etc_let_in": (lambda doc: {**doc, "allowed": {**doc["allowed"], "../../etc": {
        "since_ms": 1, "by": "allow", "release": True}}},
        'field "allowed": not a thread name (16 lowercase hex digits): "../../etc"'),
    "truncated": (on_bytes(cut), "not JSON, or cut short"),
    "not_json": (on_bytes(lambda raw: b"let everyone in"), "not JSON, or cut short"),
    "empty": (on_bytes(lambda raw: b""), "empty (0 bytes)"),
    "folder": (None, "cannot be read: it is a folder, not a file"),
}
STATE_EDITS = {
    "wrong_type": (lambda doc: _record(doc, attempts="many"),
                   f'field "threads.{LET_IN}.attempts": not a whole number: "many"'),
    "missing_field": (lambda doc: _record(doc, question=...),
                      f'field "threads.{LET_IN}.question": missing'),
    "unknown_field": (lambda doc: _record(doc, extra=1),
                      f'field "threads.{LET_IN}.extra": unknown field'),
    "etc_thread": (lambda doc: {**doc, "threads": {"../../etc": doc["threads"][LET_IN]}},
                   'field "threads": not a thread name (16 lowercase hex digits): "../../etc"'),
    "truncated": (on_bytes(cut), "not JSON, or cut short"),
    "not_json": (on_bytes(lambda raw: b"{threads}"), "not JSON, or cut short"),
    "empty": (on_bytes(lambda raw: b""), "empty (0 bytes)"),
    "folder": (None, "cannot be read (Is a directory)"),
}
MODES_EDITS = {
    "wrong_type": (lambda doc: {"cron": {"mode": "pairing", "ms": "now"}},
                   'field "cron.ms": not a whole number: "now"'),
    "missing_field": (lambda doc: {"cron": {"mode": "pairing"}}, 'field "cron.ms": missing'),
    "unknown_field": (lambda doc: {**doc, "sweep": {}}, 'field "sweep": unknown field'),
    "bad_mode": (lambda doc: {"cron": {"mode": "opne", "ms": 1}},
                 'field "cron.mode": not one of pairing/allowlist/open: "opne"'),
    "truncated": (on_bytes(cut), "not JSON, or cut short"),
    "not_json": (on_bytes(lambda raw: b"cron=open"), "not JSON, or cut short"),
    "empty": (on_bytes(lambda raw: b""), "empty (0 bytes)"),
    "folder": (None, "cannot be read (Is a directory)"),
}


def _record(doc, **changes):
    record = {k: v for k, v in doc["threads"][LET_IN].items() if changes.get(k) is not ...}
    record.update({k: v for k, v in changes.items() if v is not ...})
    return {**doc, "threads": {LET_IN: record}}


def edit(path, how):
    """Apply an edit of the tables above to `path`; return its bytes (None: a folder)."""
    if how is None:
        path.unlink()
        path.mkdir()
        return None
    raw = path.read_bytes()
    changed = how(raw) if getattr(how, "on_bytes", False) else \
        json.dumps(how(json.loads(raw))).encode()
    path.write_bytes(changed)
    return changed


def as_on_disk(path):
    return None if path.is_dir() else path.read_bytes()


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A data folder, a scripted Hermes and the environment the host's programs read."""
    data = tmp_path / "data"
    service = ChatService(Settings(data_dir=data))
    with HermesStub().serving() as hermes:
        for name, value in {"NEWOS4_DATA_DIR": str(data), "HERMES_API_URL": hermes.url,
                            "NEWOS4_RELAY_ACCESS": "pairing",
                            "NEWOS4_RELAY_TRANSCRIPT_GRACE_S": str(GRACE_S)}.items():
            monkeypatch.setenv(name, value)
        service.hermes, service.data = hermes, data
        yield service


def relay(capsys):
    """One cron run through the relay's command line: (status, stdout lines, stderr lines)."""
    capsys.readouterr()
    status = relay_cli.main([])
    out, err = capsys.readouterr()
    return status, out.splitlines(), err.splitlines()


def chat(*args):
    """scripts/chat.py through its command line: (status, stdout, stderr lines)."""
    out, err = io.StringIO(), io.StringIO()
    status = chat_cli.main(list(args), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue().splitlines()


def questions(host):
    return [body["input"] for body, _ in host.hermes.submits]


# -- relay/access.json ----------------------------------------------------------------------

@pytest.fixture
def access_json(host, capsys):
    """A thread let in (its question waits) and a stranger's (told its code): access.json."""
    Access(host.data / "relay" / "access.json", mode="pairing", clock=SystemClock()) \
        .allow(LET_IN)
    host.post(STRANGER, "let me in", "operator", "198.51.100.2")
    assert relay(capsys)[0] == 0
    told = host.history(STRANGER)
    assert [m["author"] for m in told] == ["operator", "hermes"]
    host.post(LET_IN, "question?", "operator", "198.51.100.1")
    return host.data / "relay" / "access.json"


@pytest.mark.parametrize("kind", ACCESS_EDITS)
def test_a_bad_access_state_lets_nobody_in_and_says_where_in_one_line(
        host, access_json, capsys, kind):
    how, said = ACCESS_EDITS[kind]
    bad = edit(access_json, how)
    told = host.history(STRANGER)
    host.post(STRANGER, "and now?", "operator", "198.51.100.2")
    status, out, err = relay(capsys)
    assert status == 1 and len(err) == 1, err
    assert err[0].startswith(f"relay: PROBLEM access state {access_json} cannot be read: ")
    assert said in err[0] and "no conversation reaches Hermes until it is repaired" in err[0]
    assert questions(host) == []  # not even the thread let in before
    assert host.history(STRANGER)[:len(told)] == told and len(host.history(STRANGER)) == 3
    for args in (["list"], ["allow", STRANGER], ["revoke", LET_IN], ["approve", "ABCDEFGH"]):
        status, stdout, lines = chat("pairing", *args)
        assert (status, stdout) == (1, "") and len(lines) == 1, (args, lines)
        assert lines[0].startswith("chat.py: access state ") and said in lines[0]
    assert as_on_disk(access_json) == bad  # left for the host to repair, never replaced


def test_an_access_state_others_may_read_is_narrowed_and_said_once(host, access_json, capsys):
    os.chmod(access_json, 0o644)
    status, out, err = relay(capsys)
    assert status == 1 and err == [
        f"relay: PROBLEM access state {access_json} had mode 0644, which lets other users read "
        "or change it: narrowed to 0600; check who is let in (scripts/chat.py pairing list)"]
    assert stat.S_IMODE(access_json.stat().st_mode) == 0o600
    assert questions(host) == ["question?"]  # what it says still holds: it was only readable
    os.chmod(access_json, 0o660)
    status, listed, lines = chat("pairing", "list")
    assert status == 0 and LET_IN in listed and len(lines) == 1 and "had mode 0660" in lines[0]
    assert stat.S_IMODE(access_json.stat().st_mode) == 0o600
    assert relay(capsys)[2] == []


def test_an_access_state_that_cannot_be_narrowed_lets_nobody_in(
        host, access_json, capsys, monkeypatch):
    """A 0644 state the relay's user does not own (root wrote it by hand): chmod refused."""
    os.chmod(access_json, 0o644)

    def not_the_owner(fd, mode):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(os, "fchmod", not_the_owner)
    status, out, err = relay(capsys)
    assert status == 1 and err == [
        f"relay: PROBLEM access state {access_json} cannot be read: its mode 0644 lets other "
        "users read or change it, and it cannot be narrowed (Operation not permitted); no "
        "conversation reaches Hermes until it is repaired: `chmod 600 "
        f"{access_json}` as its owner"]
    assert questions(host) == [] and stat.S_IMODE(access_json.stat().st_mode) == 0o644


# -- relay/state.json -----------------------------------------------------------------------

@pytest.fixture
def state_json(host, capsys, monkeypatch):
    """A question submitted and its run working, in open mode: relay/state.json."""
    monkeypatch.setenv("NEWOS4_RELAY_ACCESS", "open")
    host.post(LET_IN, "question?", "operator", "198.51.100.1")
    assert relay(capsys)[0] == 0 and questions(host) == ["question?"]
    return host.data / "relay" / "state.json"


@pytest.mark.parametrize("kind", STATE_EDITS)
def test_a_bad_relay_state_is_one_line_and_submits_nothing_twice(host, state_json, capsys, kind):
    how, said = STATE_EDITS[kind]
    bad = edit(state_json, how)
    host.post(STRANGER, "new question?", "operator", "198.51.100.2")  # after the edit
    for args in (["approvals"], ["approve", LET_IN, "once"]):
        status, stdout, lines = chat(*args)
        assert (status, stdout) == (1, "") and len(lines) == 1, (args, lines)
        assert lines[0].startswith(f"chat.py: relay state {state_json}") and said in lines[0]
    assert as_on_disk(state_json) == bad  # the host's commands repair nothing
    status, out, err = relay(capsys)
    assert status == 1 and len(err) == 1 and said in err[0], err
    assert err[0].startswith(f"relay: PROBLEM relay state {state_json}")
    # Both questions are older than the loss: either may have been submitted by the state
    # that is gone, so neither goes before Hermes' transcript says it was not.
    assert questions(host) == ["question?"]
    if bad is None:  # nothing relayed, nothing written over it, until it is repaired
        assert "nothing is relayed until it is repaired" in err[0] and state_json.is_dir()
        assert relay(capsys)[2] == err  # the next run says the same, nothing more
        return
    kept = list(state_json.parent.glob("state.json.corrupt-*"))
    assert [p.read_bytes() for p in kept] == [bad] and f"kept as {kept[0].name}" in err[0]
    assert "never submitted twice" in err[0]
    host.post(LATER, "after?", "operator", "198.51.100.3")  # newer than the loss: at once
    assert relay(capsys)[0] == 0 and questions(host) == ["question?", "after?"]
    time.sleep(GRACE_S + 0.1)  # the stub keeps no transcript: no run is found for either
    relay(capsys)
    assert sorted(questions(host)[2:]) == ["new question?", "question?"]
    relay(capsys)
    assert len(questions(host)) == 4


def test_a_host_decision_that_does_not_fit_decides_nothing_and_the_record_holds(
        host, state_json, capsys):
    doc = json.loads(state_json.read_text())
    doc["threads"][LET_IN]["host"] = {"choice": "always!", "request": "MSG-x", "ms": 1}
    state_json.write_text(json.dumps(doc))
    status, out, err = relay(capsys)
    assert len(err) == 1 and "that host decision decides nothing" in err[0]
    assert f'field "threads.{LET_IN}.host.choice"' in err[0]
    record = RelayState.read(state_json).threads[LET_IN]
    assert record.host is None and record.run_id == "run_1" and questions(host) == ["question?"]


def test_a_relay_state_gone_after_a_relay_ran_submits_nothing_twice(host, state_json, capsys):
    state_json.unlink()
    status, out, err = relay(capsys)
    assert status == 1 and err == [
        f"relay: PROBLEM relay state {state_json} is missing, though a relay ran here "
        "(relay/modes.json): started over; the questions waiting from before are settled from "
        "Hermes' session transcripts, never submitted twice"]
    assert questions(host) == ["question?"]
    host.post(STRANGER, "new question?", "operator", "198.51.100.2")
    relay(capsys)
    assert questions(host) == ["question?", "new question?"]  # a question after: at once


def put_back(state_json):
    """relay/state.json as a backup taken before the question was submitted holds it."""
    doc = json.loads(state_json.read_text())
    state_json.write_text(json.dumps({**doc, "saves": doc["saves"] - 1, "threads": {}}))
    return "is older than the relay last saved it"


def saves_removed(state_json):
    state_json.with_name("saves.json").unlink()
    return "relay/saves.json, which counts them, is missing or unfit"


def saves_unfit(state_json):
    state_json.with_name("saves.json").write_text('{"saves": -1}')
    return "relay/saves.json, which counts them, is missing or unfit"


@pytest.mark.parametrize("older", [put_back, saves_removed, saves_unfit])
def test_a_relay_state_older_than_the_relay_saved_submits_nothing_twice(
        host, state_json, capsys, older):
    """It may lack submissions made since: kept aside, and the relay starts over as for a lost
    one; the host's commands decide nothing on it meanwhile."""
    said = older(state_json)
    bad = state_json.read_bytes()
    status, stdout, lines = chat("approve", LET_IN, "once")
    assert (status, stdout) == (1, "") and len(lines) == 1 and said in lines[0], lines
    status, out, err = relay(capsys)
    assert status == 1 and len(err) == 1 and said in err[0], err
    kept = list(state_json.parent.glob("state.json.older-*"))
    assert [p.read_bytes() for p in kept] == [bad] and f"kept as {kept[0].name}" in err[0]
    assert questions(host) == ["question?"]  # not again before Hermes' transcript is read
    assert relay(capsys)[2] == []  # said once: the state the relay started is its own
    host.post(LATER, "after?", "operator", "198.51.100.3")  # newer than the loss: at once
    relay(capsys)
    assert questions(host) == ["question?", "after?"]


def test_a_count_of_saves_that_cannot_be_read_stops_the_relay_in_one_line(
        host, state_json, capsys):
    saves = state_json.with_name("saves.json")
    saves.unlink()
    saves.mkdir()
    before = state_json.read_bytes()
    status, out, err = relay(capsys)
    assert status == 1 and len(err) == 1, err
    assert err[0].startswith(f"relay: PROBLEM relay state {saves} cannot be read")
    assert "nothing is relayed until it is repaired" in err[0]
    assert state_json.read_bytes() == before and saves.is_dir()  # nothing written over
    host.post(LATER, "after?", "operator", "198.51.100.3")
    assert relay(capsys)[2] == err and questions(host) == ["question?"]
    saves.rmdir()  # moved away: the saved state counts as older, and the relay starts over
    status, out, err = relay(capsys)  # both questions wait for Hermes' transcript first
    assert "kept as state.json.older-" in err[0] and questions(host) == ["question?"]


def test_a_first_relay_run_submits_at_once(host, capsys, monkeypatch):
    monkeypatch.setenv("NEWOS4_RELAY_ACCESS", "open")
    host.post(LET_IN, "question?", "operator", "198.51.100.1")
    assert relay(capsys)[0] == 0 and questions(host) == ["question?"]
    assert RelayState.read(host.data / "relay" / "state.json").since_ms == 0


# -- relay/modes.json -----------------------------------------------------------------------

@pytest.mark.parametrize("kind", MODES_EDITS)
def test_a_bad_modes_file_relays_nothing_until_both_say_their_mode(
        host, capsys, monkeypatch, kind):
    monkeypatch.setenv("NEWOS4_RELAY_ACCESS", "open")
    assert relay(capsys)[0] == 0
    modes = host.data / "relay" / "modes.json"
    how, said = MODES_EDITS[kind]
    bad = edit(modes, how)
    host.post(LET_IN, "question?", "operator", "198.51.100.1")
    status, out, err = relay(capsys)
    assert status == 1 and len(err) == 1 and said in err[0], err
    assert err[0].startswith(f"relay: PROBLEM relay modes {modes} cannot be read")
    assert questions(host) == []
    if bad is None:
        assert modes.is_dir() and relay(capsys)[2] == err and questions(host) == []
        return
    assert [p.read_bytes() for p in modes.parent.glob("modes.json.corrupt-*")] == [bad]
    assert relay(capsys)[0] == 0 and questions(host) == ["question?"]


# -- the watcher ----------------------------------------------------------------------------

@pytest.mark.parametrize("broken", ["access.json", "state.json"])
def test_the_watcher_says_a_bad_state_once_backs_off_and_relays_once_repaired(
        host, access_json, broken):
    ticks, lines = Ticks(), []
    service = ChatService(Settings.from_env(os.environ))
    watcher = Watcher(service, HermesClient(host.hermes.url),
                      log=lambda line, problem: lines.append(line),
                      monotonic=ticks.monotonic, wall_ns=ticks.wall_ns)
    path = host.data / "relay" / broken
    if broken == "state.json":
        path.unlink()
        path.mkdir()
    else:
        path.write_text("{}")
    minutes = 5
    for _ in range(int(minutes * 60 / watcher.tick_s)):
        watcher.step()
        ticks.now += watcher.tick_s
    assert len(lines) == 1 and broken in lines[0] and "Traceback" not in lines[0], lines
    # Backing off to one pass every MAX_BACKOFF_S, not one per tick (3000 ticks).
    assert watcher.passes <= minutes * 60 / MAX_BACKOFF_S + 8, watcher.passes
    assert questions(host) == []
    if broken == "state.json":  # moved away: its questions are settled from the transcript
        path.rmdir()
    else:
        path.unlink()
        Access.for_settings(service.settings, service.clock).allow(LET_IN)
    watcher.step()
    if broken == "state.json":
        assert questions(host) == []
        time.sleep(GRACE_S + 0.1)
    for _ in range(3):
        ticks.now += watcher.poll_s
        watcher.step()
    assert questions(host) == ["question?"], lines


def test_the_watcher_process_says_a_bad_access_state_once_and_stops_cleanly(host, access_json):
    access_json.write_text('{"pending": {}}')
    process = subprocess.Popen([sys.executable, "cron/relay.py", "--watch"], cwd=REPO,
                               env=dict(os.environ), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(4)
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0 and "Traceback" not in err
    problems = [line for line in err.splitlines() if "PROBLEM" in line]
    assert len(problems) == 1 and 'field "allowed": missing' in problems[0], err
    assert questions(host) == []


def test_the_relay_process_refuses_a_bad_access_state_without_a_traceback(host, access_json):
    access_json.write_text('{"pending": {}, "allowed": {"../../etc": {}}}')
    done = subprocess.run([sys.executable, "cron/relay.py"], cwd=REPO, env=dict(os.environ),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "Traceback" not in \
        done.stderr and "not a thread name" in done.stderr
    done = subprocess.run([sys.executable, "scripts/chat.py", "pairing", "allow", LET_IN],
                          cwd=REPO, env=dict(os.environ), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "Traceback" not in \
        done.stderr and done.stderr.startswith("chat.py: access state ")
    assert questions(host) == []


def test_a_record_names_every_field_it_holds():
    """The schema and the record agree: a field the pass writes is one the file keeps."""
    assert set(RECORD.fields) == {f.name for f in dataclasses.fields(RelayRecord)}
