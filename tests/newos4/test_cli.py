"""scripts/chat.py and cron/relay.py as the host runs them: real processes, real exit codes."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spaces.newos4.files import lock
from spaces.newos4.service import DAY_MS

from .conftest import ChatClient

REPO = Path(__file__).resolve().parents[2]


def run(settings, *args, stdin=None, env=None):
    data_dir = {} if settings is None else {"NEWOS4_DATA_DIR": str(settings.data_dir)}
    environ = {**os.environ, **data_dir, **(env or {})}
    return subprocess.run([sys.executable, *args], cwd=REPO, env=environ, input=stdin,
                          capture_output=True, text=True, timeout=60)


def chat(settings, *args, **kw):
    return run(settings, "scripts/chat.py", *args, **kw)


def test_reply_appends_a_hermes_message_and_prints_it(client, settings):
    client.say("question?")
    done = chat(settings, "reply", client.thread, "answer!")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["author"] == "hermes" and printed["text"] == "answer!"
    body = client.poll().json
    assert body["awaiting"] is False and body["messages"][-1] == printed


def test_reply_dash_reads_standard_input_verbatim(client, settings):
    client.say("q")
    text = "line one\n  line two\n"
    assert chat(settings, "reply", client.thread, "-", stdin=text).returncode == 0
    assert client.poll().json["messages"][-1]["text"] == text


@pytest.mark.parametrize("thread,text,message", [
    ("XYZ", "hi", "thread must be 16 lowercase hex digits"),
    ("ABCDEF0123456789", "hi", "thread must be 16 lowercase hex digits"),
    ("0123456789abcdef", "hi", "no such thread: 0123456789abcdef"),
    (None, "", "text must be a non-empty string"),
    (None, "x" * 4001, "text too long (max 4000 chars)"),
])
def test_reply_refusals_go_to_stderr_exit_1_and_write_nothing(client, settings, thread, text,
                                                              message):
    client.say("q")
    before = (settings.chat_dir / f"{client.thread}.json").read_bytes()
    done = chat(settings, "reply", thread or client.thread, text)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == f"chat.py: {message}"
    assert (settings.chat_dir / f"{client.thread}.json").read_bytes() == before


def test_list_shows_awaiting_threads_and_json(testapp, settings, service):
    waiting, answered = ChatClient(testapp), ChatClient(testapp)
    waiting.say("q1")
    answered.say("q2")
    service.reply(answered.thread, "a2")
    everything = json.loads(chat(settings, "list", "--json").stdout)
    assert {r["thread"]: r["awaiting"] for r in everything} == {
        waiting.thread: True, answered.thread: False}
    only = chat(settings, "list", "--awaiting").stdout.splitlines()
    assert len(only) == 1 and only[0].startswith(waiting.thread) and "awaiting" in only[0]


def test_show_prints_messages_and_honours_since(client, settings, clock):
    first = client.say("first")
    clock.advance(10)
    client.say("second")
    text = chat(settings, "show", client.thread).stdout
    assert "first" in text and "second" in text and "operator" in text
    newer = json.loads(chat(settings, "show", client.thread, "--since", str(first["epoch"]),
                            "--json").stdout)
    assert [m["text"] for m in newer] == ["second"]


def test_show_unknown_thread_and_bad_since_are_errors(settings):
    settings.data_dir.mkdir(parents=True)
    missing = chat(settings, "show", "0123456789abcdef")
    assert missing.returncode == 1 and "no such thread" in missing.stderr
    bad = chat(settings, "show", "0123456789abcdef", "--since", "-5")
    assert bad.returncode == 2 and "EPOCH must be epoch milliseconds" in bad.stderr


def test_help_explains_commands_and_usage_errors_exit_2(settings):
    helped = chat(settings, "--help")
    assert helped.returncode == 0
    for word in ("reply", "list", "show", "NEWOS4_DATA_DIR", "exit status"):
        assert word in helped.stdout
    assert chat(settings).returncode == 2
    assert chat(settings, "frobnicate").returncode == 2


def test_bad_configuration_is_a_clear_error(settings):
    done = chat(settings, "list", env={"NEWOS4_MAX_TEXT": "lots"})
    assert done.returncode == 1
    assert "NEWOS4_MAX_TEXT: expected an integer >= 1, got 'lots'" in done.stderr


@pytest.mark.parametrize("command", [["list"], ["list", "--awaiting"], ["check"],
                                     ["show", "0123456789abcdef"]])
@pytest.mark.parametrize("layout, why", [
    ("missing", "does not exist (nothing was ever stored there: is the variable right?)"),
    ("under a file", "cannot exist: {tmp}/file is a file"),
    ("a file", "is not a directory"),
    ("chat is a file", "is not a directory (the threads' folder)")])
def test_an_unusable_data_dir_is_one_line_and_exit_1(tmp_path, command, layout, why):
    """A misspelled or broken NEWOS4_DATA_DIR is named, never a traceback or an empty listing."""
    (tmp_path / "file").write_text("x")
    data_dir = {"missing": tmp_path / "misspelled", "under a file": tmp_path / "file" / "data",
                "a file": tmp_path / "file", "chat is a file": tmp_path / "data"}[layout]
    if layout == "chat is a file":
        data_dir.mkdir()
        (data_dir / "chat").write_text("x")
    done = run(None, "scripts/chat.py", *command, env={"NEWOS4_DATA_DIR": str(data_dir)})
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("chat.py: NEWOS4_DATA_DIR: ") and done.stderr.count("\n") == 1
    assert why.format(tmp=tmp_path) in done.stderr, done.stderr


def test_relay_sweep_only_applies_retention_by_the_real_clock(testapp, settings, clock):
    now = int(time.time() * 1000)
    stale, fresh = ChatClient(testapp), ChatClient(testapp)
    clock.now = now - 31 * DAY_MS
    stale.say("a month ago")
    clock.now = now
    fresh.say("just now")
    done = run(settings, "cron/relay.py", "--sweep-only")
    assert done.returncode == 0, done.stderr
    assert '"threads_removed": 1' in done.stdout
    assert not (settings.chat_dir / f"{stale.thread}.json").exists()
    assert (settings.chat_dir / f"{fresh.thread}.json").exists()


def test_relay_help_and_overlapping_runs(settings):
    assert "--sweep-only" in run(settings, "cron/relay.py", "--help").stdout
    settings.data_dir.mkdir(parents=True)
    with lock(settings.data_dir / "relay.lock", 0):
        done = run(settings, "cron/relay.py", "--sweep-only")
    assert done.returncode == 0 and "another relay run holds the lock" in done.stdout
    assert "sweep" not in done.stdout


def test_relay_without_hermes_url_says_it_only_swept(settings):
    done = run(settings, "cron/relay.py", env={"HERMES_API_URL": ""})
    assert done.returncode == 0 and "HERMES_API_URL is not set: swept only" in done.stdout


@pytest.mark.parametrize("command", [["reply", "0123456789abcdef", "x"],
                                     ["delete", "0123456789abcdef"], ["clear-rate", "::1"]])
def test_writers_name_a_blocked_data_dir_or_chat_folder_too(tmp_path, command):
    (tmp_path / "file").write_text("x")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "chat").write_text("x")
    for data_dir, why in [(tmp_path / "file" / "data", "cannot be created (Not a directory)"),
                          (tmp_path / "data", "chat is not a directory (the threads' folder)")]:
        done = run(None, "scripts/chat.py", *command, env={"NEWOS4_DATA_DIR": str(data_dir)})
        assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith("chat.py: NEWOS4_DATA_DIR: ") and why in done.stderr


def test_sweep_only_ignores_a_malformed_hermes_url_that_a_full_run_refuses(settings):
    bad = {"HERMES_API_URL": "http//127.0.0.1:8642"}
    swept = run(settings, "cron/relay.py", "--sweep-only", env=bad)
    assert swept.returncode == 0 and "relay: sweep" in swept.stdout, swept.stderr
    refused = run(settings, "cron/relay.py", env=bad)
    assert refused.returncode == 1 and "relay: HERMES_API_URL: expected an http(s) URL" \
        in refused.stderr
