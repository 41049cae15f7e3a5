"""The README's PyGithub and curl examples run as written (curl against a served emulator)."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from emulators.github import serve

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
def test_curl_example_runs():
    with serve() as server:
        script = block("sh").replace("http://127.0.0.1:8828", server.url)
        done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "response dropped" in done.stdout
        listed = requests.get(f"{server.url}/repos/synthetic-org/example/pulls", timeout=5).json()
        assert [p["title"] for p in listed] == ["Add topic"]
        assert done.stdout.rstrip().endswith("]")  # the last call printed the listing
        assert '"title": "Add topic"' in done.stdout.splitlines()[-1] or \
            '"title":"Add topic"' in done.stdout.splitlines()[-1]
