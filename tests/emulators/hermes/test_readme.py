"""The emulator README's Python snippets run as written and print what the README says."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import emulators.hermes
from testkit.servers import unused_port
from testkit.shell import run_as_user, sh_blocks, user_env

README = Path(emulators.hermes.__file__).parent / "README.md"
REPO = README.parents[2]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("heading", ["## With the `openai` SDK", "## Approvals"])
def test_readme_snippet_prints_what_the_readme_shows(heading):
    text = README.read_text()
    section = text[text.index(heading):]
    snippet = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shown = re.search(r"prints\n\n```\n(.*?)```", section, re.S).group(1)
    done = subprocess.run([sys.executable, "-c", snippet], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_curl_walk_through_runs_as_a_user_runs_it(tmp_path):
    """It starts the venv's emulator from a shell with no venv activated, and stops it."""
    done = run_as_user("\n".join(sh_blocks("emulators/hermes/README.md")),
                       user_env(TMPDIR=str(tmp_path)), {8827: unused_port()})
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    run = "run_4e685a726271445348426a4a70783364"  # the README's: the first run of a fresh file
    assert f'{{"run_id": "{run}", "status": "started", "replayed": false}}' in out
    assert "idempotency-replayed: true" in out.lower()
    assert '"code": "idempotency_key_conflict"' in out and '"status": "stopping"' in out
    assert '"event": "run.cancelled"' in out and ": stream closed" in out
