"""The README's shell blocks work as written, top to bottom, as a user runs them on a fresh
clone: in one bash, from the checkout, with no virtualenv activated (a bare `python` there has
none of the dependencies). Only the port and the data folder differ. (Each emulator README has
the same test beside the emulator's tests.)"""
import re
import shutil
import subprocess

import pytest

from testkit.servers import gunicorn
from testkit.shell import run_as_user, sh_blocks, user_env

pytestmark = [pytest.mark.gunicorn,
              pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")]


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


def test_the_readme_runs_top_to_bottom(tmp_path):
    """Every shell block after the quick start, in one shell, beside a server started as
    `make serve` starts it (the quick start's block, which the fixture plays)."""
    data = tmp_path / "data"
    env = {"NEWOS4_DATA_DIR": str(data), "EMULATORS_DB": str(tmp_path / "e.db")}
    with gunicorn(env=env, workers=2) as url:
        port = url.rsplit(":", 1)[1]
        script = "\n".join(sh_blocks("README.md", after="## The chat service"))
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
    # The relay by cron, then the watcher, each answering through the Hermes emulator.
    assert out.count("submitted run=run_") == 2 and out.count(" delivered") == 2
    assert out.count('"author": "hermes", "text": "42."') == 2
    assert "relay: watching" in out and "relay: stopped after" in out
