"""The emulator README's `openai` SDK snippet runs as written and prints what the README says."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

import emulators.hermes

README = Path(emulators.hermes.__file__).parent / "README.md"
REPO = README.parents[2]


@pytest.mark.timeout(60)
def test_openai_sdk_snippet_prints_what_the_readme_shows():
    text = README.read_text()
    section = text[text.index("## With the `openai` SDK"):]
    snippet = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shown = re.search(r"prints\n\n```\n(.*?)```", section, re.S).group(1)
    done = subprocess.run([sys.executable, "-c", snippet], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown
