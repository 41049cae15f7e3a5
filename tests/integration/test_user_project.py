"""emulators/README.md's "Use them from your project", as a user meets it: a project outside the
checkout, a virtualenv installed from a fresh copy of the checkout with pip (for real, from
pip's cache), the README's test files and its shell blocks, nothing else: `pytest`, `pytest -n
2`, and a shared `emulators serve` that writes nothing into site-packages."""
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from testkit.servers import REPO, unused_port
from testkit.shell import run_as_user, sh_blocks, user_env

README = REPO / "emulators" / "README.md"
SECTION = "## Use them from your project"

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


def section():
    text = README.read_text()
    start = text.index(f"\n{SECTION}\n")
    return text[start:text.index("\n## ", start + 1)]


def project_files(text):
    """{path: source} of every python block that starts with `# <path>.py`."""
    blocks = re.findall(r"```python\n# (\S+\.py)\n(.*?)```", text, re.S)
    return {path: source for path, source in blocks}


def fresh_clone(target):
    """The checkout's files as a clone has them (tracked and new, nothing git ignores)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=REPO, capture_output=True, check=True)
    for name in listed.stdout.decode().split("\0"):
        if name and (REPO / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target / name)


def test_a_project_outside_the_checkout_installs_and_tests_as_the_readme_says(tmp_path):
    text = section()
    install, run, shared = sh_blocks("emulators/README.md", SECTION)
    files = project_files(text)
    assert sorted(files) == ["tests/test_agent.py", "tests/test_bot.py", "tests/test_edges.py"]
    clone, project = tmp_path / "newos4", tmp_path / "project"
    fresh_clone(clone)
    project.mkdir()
    for path, source in files.items():
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(source)
    env = user_env(NEWOS4=str(clone), PIP_DISABLE_PIP_VERSION_CHECK="1")

    started = time.monotonic()
    done = run_as_user(f"cd {project}\n{install}", env, timeout=600)
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    print(f"venv and install: {seconds:.1f} s")  # measured for the record (-s shows it)

    python = project / ".venv" / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True)
    site_packages = Path(site.stdout.strip())
    before = sorted(p.name for p in site_packages.iterdir())
    found = subprocess.run([python, "-c", "import wsgi"], cwd=project, capture_output=True,
                           text=True)
    assert "No module named 'wsgi'" in found.stderr

    done = run_as_user(f"cd {project}\n{run}", env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    tests = str(sum(source.count("\ndef test_") for source in files.values()))
    assert re.findall(r"(\d+) passed", done.stdout) == [tests, tests], done.stdout
    assert "warning" not in done.stdout.lower() and "Traceback" not in done.stderr

    port = unused_port()
    done = run_as_user(f"cd {project}\n{shared}", env, ports={8828: port}, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.findall(r"(\d+) passed", done.stdout) == [tests], done.stdout
    assert (project / "var" / "emulators.sqlite3").is_file()  # the server's state, here
    assert sorted(p.name for p in site_packages.iterdir()) == before  # nothing new there
