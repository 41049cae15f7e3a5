"""The README's PyGithub and shell examples run as written."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.servers import unused_port
from testkit.shell import run_as_user, sh_blocks, user_env

README = Path(__file__).resolve().parents[3] / "emulators" / "github" / "README.md"


def block(language):
    text = README.read_text()
    return re.search(rf"```{language}\n(.*?)```", text, re.S).group(1)


def test_pygithub_example_runs():
    done = subprocess.run([sys.executable, "-c", block("python")], capture_output=True,
                          text=True, timeout=60, cwd=README.parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "synthetic-org/example 1 closed"


@pytest.mark.skipif(not shutil.which("curl"), reason="curl is not on this machine")
def test_the_shell_blocks_run_top_to_bottom_as_a_user_runs_them(tmp_path):
    """The curl block starts the emulator (the venv's, from a shell with no venv activated);
    the webhook block registers an endpoint and stops it."""
    ports = {8828: unused_port(), 9000: unused_port()}
    done = run_as_user("\n".join(sh_blocks("emulators/github/README.md")),
                       user_env(TMPDIR=str(tmp_path)), ports)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert '"full_name": "synthetic-org/example"' in out
    listed = [line for line in out.splitlines() if line.startswith("[{")]
    assert "response dropped" in out  # the create's answer was lost, yet the PR was made:
    assert [pr["title"] for pr in json.loads(listed[0])] == ["Add topic"]
    assert f'"url":"http://127.0.0.1:{ports[9000]}/hook"' in out
    assert "* [new branch]      main -> main" in done.stderr  # the git block: pushed,
    assert out.count("# Demo\n") == 2  # cloned, and read back through REST


def section_example_prints(heading):
    """Run the first python block under `heading`; return the lines it printed."""
    section = README.read_text().split(heading, 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=README.parents[2])
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_pull_request_life_example_runs():
    assert section_example_prints("## A pull request's life") == [
        "405 At least 1 approving review is required by reviewers with write access.",
        "clean True"]


def test_the_github_apps_example_runs():
    assert section_example_prints("## GitHub Apps") == [
        "my-bot[bot]", "403 Resource not accessible by integration"]


@pytest.mark.skipif(not shutil.which("curl"), reason="curl is not on this machine")
def test_the_rate_limits_shell_block_runs_as_a_user_runs_it(tmp_path):
    """The 304 before the window fills, the 403 once it is full, the clock moving past it."""
    done = run_as_user("\n".join(sh_blocks("emulators/github/ratelimits/README.md")),
                       user_env(TMPDIR=str(tmp_path)), {8828: unused_port()})
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if not line.startswith("github ")]
    assert json.loads(lines[0]) == {"core": 2, "search": None, "graphql": None}
    assert lines[1:3] == ["304", "200"]
    assert json.loads(lines[3])["message"] == (
        "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated"
        " requests get a higher rate limit. Check out the documentation for more details.)")
    assert lines[4].startswith("{'limit': 2, 'used': 2, 'remaining': 0, 'reset': ")
    assert lines[5:] == ["200"]
