"""Every README's shell blocks work as written, top to bottom, as a user runs them on a fresh
clone: in one bash, from the checkout, with no virtualenv activated (a bare `python` there has
none of the dependencies). Only the port and the data folder differ, and what a README leaves
to the reader (the front page's pairing code and run id) is filled in once they would have it.
The chat's and the host side's manuals run here, one after the other in one shell (the host
commands answer the thread the chat's example left); each emulator README has the same test
beside the emulator's tests, and a test here checks that no README with a shell block is left
out."""
import json
import re
import secrets
import shutil
import subprocess

import pytest
import requests

from spaces.newos4.relay.access import LET_IN_LINE
from testkit.servers import REPO, gunicorn
from testkit.shell import Terminal, readmes, run_as_user, sh_blocks, user_env

needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")

# The manuals run here, in this order, in one shell.
RUN_HERE = ("spaces/newos4/README.md", "spaces/newos4/relay/README.md")
# The READMEs whose shell blocks a test beside their code runs.
# (emulators/README.md's "Use them from your project" runs in a project of its own:
# tests/integration/test_user_project.py)
RUN_BESIDE = {"emulators/README.md": "tests/emulators/runtime/fleet/test_start.py",
              "emulators/hermes/README.md": "tests/emulators/hermes/test_readme.py",
              "emulators/github/README.md": "tests/emulators/github/test_readme.py",
              "emulators/github/ratelimits/README.md": "tests/emulators/github/test_readme.py",
              "emulators/github/graphql/README.md":
                  "tests/emulators/github/test_graphql_readme.py"}
FRONT_PAGE = "README.md"  # the quick start (the fixtures play it), the first conversation


def test_every_readme_with_a_shell_block_is_run():
    with_blocks = {readme for readme in readmes() if sh_blocks(readme)}
    assert with_blocks == {FRONT_PAGE, *RUN_HERE, *RUN_BESIDE}
    for readme, test in RUN_BESIDE.items():
        assert f'sh_blocks("{readme}"' in (REPO / test).read_text(), (readme, test)


def test_the_front_pages_shell_blocks_are_the_quick_start_and_the_first_conversation():
    """The quick start is what the fixtures below play (gunicorn as `make serve` starts it);
    the first conversation's steps 3 to 6 are typed by the test after it. What the reader
    fills in by hand is only the code the page shows (the host is given it)."""
    quick_start, *steps = sh_blocks(FRONT_PAGE)
    assert [line.split("#")[0].strip() for line in quick_start.splitlines()] == \
        ["make serve", "make test"]
    assert len(steps) == 5
    assert re.findall(r"<[A-Z]+>", "".join(steps)) == ["<CODE>"]


@needs_curl
@pytest.mark.gunicorn
def test_the_first_conversation_as_a_newcomer_types_it(tmp_path):
    """The front page's six steps against the bundled emulator: the questions and the decision
    posted as the page posts them, steps 3 to 6 typed into one plain shell, the code read where
    the page shows it; the answers are then what the page reads."""
    env = {"NEWOS4_DATA_DIR": str(tmp_path / "data"), "EMULATORS_DB": str(tmp_path / "e.db")}
    relay, pair, answer, ask, finish = sh_blocks(FRONT_PAGE)[1:]
    with gunicorn(env=env, workers=2) as url:
        chat = url + "/spaces/newos4/api/chat"
        token = {"X-Chat-Token": secrets.token_hex(32)}

        def say(text):
            said = requests.post(chat + "/post.php", headers=token, data=json.dumps({"text": text}))
            assert said.json()["success"] is True

        def page():
            return requests.get(chat + "/poll.php", headers=token).json()["messages"]

        say("What is the capital of France?")
        terminal = Terminal(user_env(**env), ports={8000: url.rsplit(":", 1)[1]})
        try:
            terminal.type(relay)
            terminal.wait_for(r"relay: thread=[0-9a-f]{16} is not let in")
            code = re.search(r"pairing approve ([A-Z0-9]{8})", page()[-1]["text"])[1]
            terminal.type(pair, CODE=code)
            terminal.wait_for(r"let in thread [0-9a-f]{16}")
            run = terminal.wait_for(r"submitted run=(run_\w+)")[1]
            assert page()[-1]["author"] == "hermes"  # "The host let this conversation in"
            terminal.type(answer)
            terminal.wait_for(rf"run={run} delivered")

            say("Make /tmp/x writable for everyone")
            second = terminal.wait_for(rf"submitted run=(?!{run})(run_\w+)")[1]
            terminal.type(ask)
            terminal.wait_for(rf"run={second} waits for approval of 'chmod -R 777 /tmp/x'")
            assert page()[-1]["text"].startswith("Hermes asks before running a command:")
            say("deny")  # the page's Deny button
            terminal.wait_for(rf"run={second} approval answered 'deny'")
            terminal.type(finish)
            terminal.wait_for(rf"run={second} delivered")
        finally:
            exit_status = terminal.close()
        assert exit_status == 0, terminal.screen
        shown = [(m["author"], m["text"]) for m in page()]
    assert [author for author, _ in shown] == [
        "operator", "hermes", "hermes", "hermes", "operator", "hermes", "operator", "hermes"]
    assert shown[2:5] == [("hermes", LET_IN_LINE), ("hermes", "**Paris** is the capital of France."),
                          ("operator", "Make /tmp/x writable for everyone")]
    assert shown[-2:] == [("operator", "deny"),
                          ("hermes", "I left `/tmp/x` as it was: you denied the command.")]
    assert "PROBLEM" not in terminal.screen


def test_a_bare_python_is_not_the_venv_here():
    """Where these tests show what a fresh clone meets: the user's shell cannot import the app
    (skipped where a system-wide falcon makes a bare python work)."""
    bare = shutil.which("python3", path=user_env()["PATH"])
    if bare is None:
        pytest.skip("no python3 outside the venv")
    done = subprocess.run([bare, "-c", "import falcon"], env=user_env(), capture_output=True)
    if done.returncode == 0:
        pytest.skip(f"{bare} has falcon installed: a bare python works on this machine")
    assert b"No module named 'falcon'" in done.stderr


@needs_curl
@pytest.mark.gunicorn
def test_the_manuals_run_top_to_bottom(tmp_path):
    """Every shell block of the chat's and the host side's manuals, in one shell, beside a
    server started as `make serve` starts it (the front page's quick start, which the fixture
    plays)."""
    data = tmp_path / "data"
    env = {"NEWOS4_DATA_DIR": str(data), "EMULATORS_DB": str(tmp_path / "e.db")}
    with gunicorn(env=env, workers=2) as url:
        port = url.rsplit(":", 1)[1]
        script = "\n".join(block for readme in RUN_HERE for block in sh_blocks(readme))
        script = script.replace("spaces/newos4/data", str(data))
        done = run_as_user(script, user_env(**env), ports={8000: port})
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    lines = out.splitlines()
    # The chat example.
    assert '"success": true' in lines[0] and '"thread"' in lines[0]
    assert '"author": "operator", "text": "hello"' in lines[1] and '"awaiting": true' in lines[1]
    assert "HTTP/1.1 400 Bad Request" in out
    assert '"since must be epoch milliseconds (ASCII digits)"' in out
    # The host side, on the thread the chat example left waiting.
    thread = re.search(r'"thread": "([0-9a-f]{16})"', lines[0]).group(1)
    assert f"{thread}  awaiting" in out and '"text": "On it."' in out
    assert '"text": "a long answer\\n"' in out and "relay: sweep" in out
    assert "0 corrupt, 0 foreign, 0 leftover" in out
    assert f"deleted thread {thread} (3 message(s))" in out
    assert "cleared the per-IP window of 127.0.0.1" in out
    assert "no such thread" not in done.stderr
    # The relay by cron, then the watcher, each answering through the Hermes emulator; cron's
    # conversation paired by its code, the watcher's let in by name.
    assert out.count("is not let in (NEWOS4_RELAY_ACCESS=pairing)") == 1
    assert out.count("let in thread ") == 2 and "NEWOS4_RELAY_ACCESS=open" not in out
    assert out.count("submitted run=run_") == 2 and out.count(" delivered") == 2
    assert out.count('"author": "hermes", "text": "42."') == 2
    assert "relay: watching" in out and "relay: stopped after" in out
