"""The READMEs' shell blocks work as written, top to bottom, as a user runs them on a fresh
clone: in one bash per README, from the checkout, with no virtualenv activated (a bare `python`
there has none of the dependencies). Only the ports and the data folder differ, so tests never
take a port a user's server may hold."""
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

from testkit.servers import REPO, gunicorn, unused_port

pytestmark = [pytest.mark.gunicorn,
              pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")]

VENV_BIN = os.path.dirname(os.path.abspath(sys.executable))


def sh_blocks(readme_path, after=None):
    """Every ```sh block of the README, in order (only those after the line holding `after`)."""
    readme = (REPO / readme_path).read_text()
    if after is not None:
        readme = readme[readme.index(after):]
    return re.findall(r"```sh\n(.*?)```", readme, re.S)


def user_env(**extra):
    """A user's shell: no virtualenv on PATH or in the environment."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME") and not k.startswith("PYTEST")}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if os.path.abspath(p) != VENV_BIN and ".venv" not in p)
    return {**env, **extra}


def run_as_user(script, env, ports=()):
    """bash -euo pipefail over `script` from the checkout, in its own process group, which is
    ended afterwards (a block that failed half-way may have left a server running)."""
    for written, free in dict(ports).items():
        script = re.sub(rf"\b{written}\b", str(free), script)
    proc = subprocess.Popen(["bash", "-euo", "pipefail", "-c", script], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_a_bare_python_is_not_the_venv_here():
    """What makes these tests mean something: the user's shell cannot import the app."""
    bare = shutil.which("python3", path=user_env()["PATH"])
    if bare is None:
        pytest.skip("no python3 outside the venv")
    done = subprocess.run([bare, "-c", "import falcon"], env=user_env(), capture_output=True)
    assert done.returncode != 0


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


def test_the_emulators_readme_runs_top_to_bottom(tmp_path):
    """The steering walk-through starts and stops its own emulator, then the fleet takes the
    same ports."""
    ports = {8827: unused_port(), 8828: unused_port(), 8829: unused_port()}
    done = run_as_user("\n".join(sh_blocks("emulators/README.md")),
                       user_env(TMPDIR=str(tmp_path)), ports)
    assert done.returncode == 0, done.stdout + done.stderr
    codes = [line for line in done.stdout.splitlines() if re.fullmatch(r"\d{3}", line)]
    assert codes == ["200", "404", "503", "200", "200", "404", "404", "200"]
    assert '"now":1893456900000' in done.stdout and '"requests":[' in done.stdout
    assert '"status":"ready"' in done.stdout and '"now":1893456000000' in done.stdout


def test_the_hermes_readme_runs_top_to_bottom(tmp_path):
    ports = {8827: unused_port()}
    done = run_as_user("\n".join(sh_blocks("emulators/hermes/README.md")),
                       user_env(TMPDIR=str(tmp_path)), ports)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    run = "run_4e685a726271445348426a4a70783364"  # the README's: its first run on a fresh file
    assert f'{{"run_id": "{run}", "status": "started", "replayed": false}}' in out
    assert "idempotency-replayed: true" in out.lower()
    assert '"code": "idempotency_key_conflict"' in out and '"status": "stopping"' in out
    assert '"event": "run.cancelled"' in out and ": stream closed" in out


def test_the_hermes_readmes_python_prints_what_it_says(tmp_path):
    readme = (REPO / "emulators" / "hermes" / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    printed = re.search(r"\nprints\n\n```\n(.*?)```", readme, re.S).group(1)
    done = subprocess.run([".venv/bin/python", "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120,
                          env=user_env(EMULATORS_DB=str(tmp_path / "e.db")))
    assert done.returncode == 0, done.stderr
    assert done.stdout == printed


def test_the_github_readme_runs_top_to_bottom(tmp_path):
    ports = {8828: unused_port(), 9000: unused_port()}
    done = run_as_user("\n".join(sh_blocks("emulators/github/README.md")),
                       user_env(TMPDIR=str(tmp_path)), ports)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert '"full_name": "synthetic-org/example"' in out
    listed = next(line for line in out.splitlines() if line.startswith('[{"id": 1'))
    assert "response dropped" in out and '"title": "Add topic"' in listed  # dropped, yet made
    assert f'"url":"http://127.0.0.1:{ports[9000]}/hook"' in out


def test_the_github_readmes_python_runs(tmp_path):
    readme = (REPO / "emulators" / "github" / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    done = subprocess.run([".venv/bin/python", "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120,
                          env=user_env(EMULATORS_DB=str(tmp_path / "e.db")))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "synthetic-org/example 1 closed\n"
