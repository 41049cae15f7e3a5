"""The emulator README's Python snippets run as written and print what the README says."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

import emulators.hermes

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
