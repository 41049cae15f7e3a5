"""The README's shell examples work as written: run them with bash against a live server."""
import os
import re
import shutil
import subprocess

import pytest

from testkit.servers import REPO, gunicorn

pytestmark = [pytest.mark.gunicorn,
              pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")]


def sh_block(after_heading_text, readme_path="README.md"):
    """The first ```sh block after the line containing `after_heading_text`."""
    readme = (REPO / readme_path).read_text()
    start = readme.index(after_heading_text)
    match = re.search(r"```sh\n(.*?)```", readme[start:], re.S)
    return match.group(1)


def run(script, url, env):
    script = script.replace("http://127.0.0.1:8000", url)
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=REPO,
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=120)


@pytest.fixture
def live(tmp_path):
    env = {"NEWOS4_DATA_DIR": str(tmp_path / "data"), "EMULATORS_DB": str(tmp_path / "e.db")}
    with gunicorn(env=env, workers=2) as url:
        yield url, env


def test_chat_examples(live):
    url, env = live
    done = run(sh_block("Try it (with `make serve` running):"), url, env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert '"success": true' in lines[0] and '"thread"' in lines[0]
    assert '"author": "operator", "text": "hello"' in lines[1] and '"awaiting": true' in lines[1]
    assert "HTTP/1.1 400 Bad Request" in done.stdout
    assert '"since must be epoch milliseconds (ASCII digits)"' in done.stdout


def test_relay_walk_through_against_the_bundled_emulator(live):
    url, env = live
    # In README order: the chat example leaves its own thread waiting, which the relay submits too.
    assert run(sh_block("Try it (with `make serve` running):"), url, env).returncode == 0
    script = sh_block("Try it against the bundled emulator instead").replace(
        "spaces/newos4/data", env["NEWOS4_DATA_DIR"])
    done = run(script, url, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "submitted run=run_" in done.stdout and "delivered" in done.stdout
    assert '"author": "hermes", "text": "42."' in done.stdout
    assert '"awaiting": false' in done.stdout


def test_host_side_examples(tmp_path):
    from spaces.newos4.service import ChatService
    from spaces.newos4.settings import Settings
    data = tmp_path / "data"
    thread = "1a2b3c4d5e6f7081"
    ChatService(Settings(data_dir=data)).post(thread, "hello?", "operator", "198.51.100.7")
    done = run(sh_block("## The host side"), "", {"NEWOS4_DATA_DIR": str(data),
                                                  "HERMES_API_URL": ""})
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert f"{thread}  awaiting" in out and '"text": "On it."' in out
    assert '"text": "a long answer\\n"' in out and "relay: sweep" in out
    assert "0 corrupt, 0 foreign" in out and f"deleted thread {thread} (3 message(s))" in out
    assert "cleared the per-IP window of 198.51.100.7" in out


def test_emulator_steering_examples(tmp_path):
    with gunicorn("wsgi:github", env={"EMULATORS_DB": str(tmp_path / "e.db")}, workers=2) as url:
        script = sh_block("Try it (start `python -m emulators serve github`",
                          "emulators/README.md")
        done = run(script.replace("http://127.0.0.1:8828", url), url, {})
    assert done.returncode == 0, done.stderr
    codes = [line for line in done.stdout.splitlines() if re.fullmatch(r"\d{3}", line)]
    assert codes == ["200", "404", "503", "200", "200", "404"]
    assert '"now":1893456900000' in done.stdout
    assert '"requests":[' in done.stdout


def test_watcher_walk_through_against_the_bundled_emulator(live):
    url, env = live
    script = sh_block("Try it against the bundled emulator (with").replace(
        "spaces/newos4/data", env["NEWOS4_DATA_DIR"])
    done = run(script, url, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "relay: watching" in done.stdout and "submitted run=run_" in done.stdout
    assert " delivered" in done.stdout and "relay: stopped after" in done.stdout
    assert '"author": "hermes", "text": "42."' in done.stdout and '"awaiting": false' in done.stdout
