"""Who decides an approval, over a scripted Hermes: only the person (an `operator` message after
the request), never the in-page AI; `always` only when the host allows it; and the host itself
from the command line, exactly once across crashes."""
import io
import json

import pytest

from spaces.newos4 import cli
from spaces.newos4.relay.approvals import (NotPending, host_line, pending,
                                           record_host_decision, request_text)
from spaces.newos4.relay.state import RelayState, state_path

from .conftest import ChatClient
from .test_approvals import (ASKED, COMMAND, REQUEST, ApprovingHermes, passes,  # noqa: F401
                             relay, texts)


@pytest.fixture
def hermes():
    return ApprovingHermes()


def asked(client, service, hermes, relay):
    """A question whose run waits for approval, and the person asked (cron)."""
    client.say(f"RUN: {COMMAND}")
    relay()
    hermes.wait("run_1")
    relay()
    assert texts(service, client.thread)[-1][1].startswith("Hermes asks")


@pytest.mark.parametrize("word", ["always", "once", "yes", "deny"])
def test_an_agent_message_is_never_a_decision_and_the_request_waits(
        client, service, hermes, relay, word):
    asked(client, service, hermes, relay)
    client.say(word, kind="agent")
    lines = relay()
    assert hermes.decisions == [] and hermes.stops == []
    assert any("are not a decision" in line for line in lines)
    assert not any("are not a decision" in line for line in relay())  # said once
    client.say("once")  # the person decides, after the agent wrote
    relay()
    assert hermes.decisions == [("run_1", "once")] and len(hermes.submits) == 1


def test_always_is_not_offered_by_default_and_typed_it_refuses_the_command(
        client, service, hermes, relay):
    asked(client, service, hermes, relay)
    assert texts(service, client.thread)[-1] == ("hermes", ASKED)
    client.say("always")
    lines = relay()
    assert hermes.decisions == [("run_1", "deny")] and hermes.stops == ["run_1"]
    assert any("is not one of once/session/deny" in line for line in lines)
    assert hermes.submits[-1][0]["input"] == "always"  # sent on as the next question


def test_with_allow_always_the_person_is_offered_always_and_it_decides(make_app, hermes):
    testapp, service = make_app(relay_allow_always=True)
    client = ChatClient(testapp)
    relay = passes(service, hermes)
    asked(client, service, hermes, relay)
    assert texts(service, client.thread)[-1] == ("hermes", request_text(REQUEST))
    client.say("Always")
    relay()
    assert hermes.decisions == [("run_1", "always")]


def test_a_word_written_before_hermes_asked_is_an_ordinary_message(
        client, service, hermes, relay):
    client.say(f"RUN: {COMMAND}")
    relay()
    client.say("once")  # the run has not asked yet
    hermes.wait("run_1")
    relay()
    assert not any(t.startswith("Hermes asks") for _, t in texts(service, client.thread))
    relay()
    assert hermes.decisions == [] and hermes.stops == ["run_1"]
    assert hermes.submits[-1][0]["input"] == "once" and len(hermes.submits) == 2


def chat_py(settings, *argv):
    """(exit status, stdout, stderr) of `scripts/chat.py ARGV` on the test's data."""
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(list(argv), stdout=out, stderr=err,
                      environ={"NEWOS4_DATA_DIR": str(settings.data_dir)})
    return status, out.getvalue(), err.getvalue()


def approve(settings, *argv):
    return chat_py(settings, "approve", *argv)


def test_the_host_approves_with_always_and_the_thread_is_told_once(
        client, service, hermes, relay, settings):
    asked(client, service, hermes, relay)
    status, out, err = approve(settings, client.thread, "always")
    assert (status, err) == (0, "") and "recorded: 'always'" in out
    assert hermes.decisions == []  # the command line sends nothing to Hermes itself
    lines = relay()
    assert hermes.decisions == [("run_1", "always")]
    assert texts(service, client.thread)[-1] == ("hermes", host_line("always"))
    assert any("approval answered 'always' by the host" in line for line in lines)
    relay()
    assert hermes.decisions == [("run_1", "always")]
    hermes.runs["run_1"].update(status="completed", output="Tool result: done")
    relay()
    assert [a for a, _ in texts(service, client.thread)] == ["operator", "hermes", "hermes",
                                                             "hermes"]
    assert texts(service, client.thread)[-1] == ("hermes", "Tool result: done")
    assert state_path(settings).exists() and RelayState.read(state_path(settings)).threads == {}
    assert len(hermes.submits) == 1


def test_a_crash_after_sending_the_hosts_decision_sends_and_tells_it_once(
        client, service, hermes, relay, settings):
    asked(client, service, hermes, relay)
    approve(settings, client.thread, "once")
    path = state_path(settings)
    recorded = json.loads(path.read_text())
    recorded["threads"][client.thread]["deciding"] = "once"  # saved before sending it
    relay()
    # as if the pass died after telling the thread: its last save is the one before sending
    recorded["saves"] = json.loads(path.with_name("saves.json").read_text())["saves"]
    path.write_text(json.dumps(recorded))
    relay()
    assert hermes.decisions == [("run_1", "once"), ("run_1", "once")]  # the second gets 409
    assert [t for _, t in texts(service, client.thread)].count(host_line("once")) == 1
    hermes.runs["run_1"].update(status="completed", output="Tool result: done")
    relay()
    assert texts(service, client.thread)[-1] == ("hermes", "Tool result: done")


def test_the_host_decides_a_request_a_pass_wrote_but_died_before_recording(
        client, service, hermes, relay, settings):
    """The watcher killed between writing the request and saving the state: the host sees
    the request in the thread, so `approvals` lists it and `approve` decides it."""
    client.say(f"RUN: {COMMAND}")
    relay()
    hermes.wait("run_1")
    path = state_path(settings)
    saved = [(file, file.read_bytes()) for file in (path, path.with_name("saves.json"))]
    relay()
    for file, content in saved:  # as if the pass died between the message and the save
        file.write_bytes(content)
    [row] = pending(RelayState.read(path), service)
    assert (row["command"], row["person"]) == (COMMAND, ["once", "session", "deny"])
    status, out, err = approve(settings, client.thread, "once")
    assert (status, err) == (0, "") and "recorded: 'once'" in out
    relay()
    assert hermes.decisions == [("run_1", "once")]
    assert [t for _, t in texts(service, client.thread)] == [
        f"RUN: {COMMAND}", ASKED, host_line("once")]
    relay()
    assert hermes.decisions == [("run_1", "once")] and len(hermes.submits) == 1


def test_the_host_cannot_decide_what_is_not_pending_or_not_offered_or_already_answered(
        client, service, hermes, relay, settings):
    status, _, err = approve(settings, client.thread, "once")
    assert status == 1 and "has no approval request waiting" in err
    asked(client, service, hermes, relay)
    status, _, err = approve(settings, client.thread, "sometimes")
    assert status == 1 and "choose one of once/session/always/deny" in err
    client.say("deny")
    status, _, err = approve(settings, client.thread, "once")
    assert status == 1 and "already has an answer" in err and "operator message" in err
    status, _, err = approve(settings, "not-a-thread", "once")
    assert status == 1 and "16 lowercase hex digits" in err


def test_the_host_decision_is_recorded_once(client, service, hermes, relay, settings):
    asked(client, service, hermes, relay)
    assert approve(settings, client.thread, "deny")[0] == 0
    status, _, err = approve(settings, client.thread, "once")
    assert status == 1 and "the host already decided 'deny'" in err
    state = RelayState.read(state_path(settings))
    with pytest.raises(NotPending):
        record_host_decision(state, service, client.thread, "once")


def test_approvals_lists_thread_command_reason_age_and_choices(
        client, service, hermes, relay, settings, clock):
    asked(client, service, hermes, relay)
    [row] = pending(RelayState.read(state_path(settings)), service)
    assert (row["thread"], row["command"], row["reason"]) == (
        client.thread, COMMAND, "world/other-writable permissions")
    assert row["choices"] == ["once", "session", "always", "deny"]
    assert row["person"] == ["once", "session", "deny"]
    out = io.StringIO()
    assert cli.main(["approvals"], stdout=out, stderr=io.StringIO(),
                    environ={"NEWOS4_DATA_DIR": str(settings.data_dir)}) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"{client.thread}  asked ") and "choices once/session/" \
        "always/deny (the person: once/session/deny)" in lines[0]
    assert lines[1:] == [f"    command: {COMMAND}", "    why: world/other-writable permissions"]


def test_approvals_with_nothing_pending_says_so(settings):
    out = io.StringIO()
    settings.data_dir.mkdir(parents=True)
    assert cli.main(["approvals"], stdout=out, stderr=io.StringIO(),
                    environ={"NEWOS4_DATA_DIR": str(settings.data_dir)}) == 0
    assert out.getvalue() == "no approval request waits for a decision\n"


@pytest.mark.parametrize("record", ["once", {"choice": "sometimes"}, {"request": 7}])
def test_a_malformed_host_record_decides_nothing_and_stops_no_pass(
        client, service, hermes, relay, settings, record):
    asked(client, service, hermes, relay)
    path = state_path(settings)
    doc = json.loads(path.read_text())
    doc["threads"][client.thread]["host"] = record
    path.write_text(json.dumps(doc))
    relay()
    assert hermes.decisions == []
    client.say("deny")
    relay()
    assert hermes.decisions == [("run_1", "deny")]


def runs(settings, *argv):
    return chat_py(settings, "runs", *argv)


def test_runs_lists_each_run_in_flight_newest_first_with_what_it_waits_for(
        make_app, hermes, clock, settings):
    testapp, service = make_app()
    relay = passes(service, hermes)
    settings.data_dir.mkdir(parents=True)
    assert runs(settings) == (0, "no Hermes run in flight\n", "")
    status, out, err = runs(settings, "--quiet")  # what `RUN=$(…)` would catch: nothing
    assert (status, out) == (1, "") and "no Hermes run in flight" in err
    first, second = ChatClient(testapp), ChatClient(testapp)
    asked(first, service, hermes, relay)
    clock.advance(1000)
    second.say("What is 6 x 7?")
    relay()
    assert runs(settings, "--quiet") == (0, "run_2\nrun_1\n", "")
    status, out, _ = runs(settings)
    assert status == 0 and [line.split("  ")[0::3] for line in out.splitlines()] == [
        ["run_2", "working on an answer"], ["run_1", "waits for the person's decision"]]
    assert out.splitlines()[1].startswith(f"run_1  thread {first.thread}  submitted ")
    approve(settings, first.thread, "deny")
    rows = json.loads(runs(settings, "--json")[1])
    assert [(r["run"], r["thread"], r["waits"]) for r in rows] == [
        ("run_2", second.thread, "answer"), ("run_1", first.thread, "host")]
    with pytest.raises(SystemExit) as usage:  # one or the other
        runs(settings, "--json", "--quiet")
    assert usage.value.code == 2
