"""@octokit/rest, unmodified, under Node against the served emulator (root and mounted).

Skipped with a reason when `node`/`npm` are missing or the package cannot be installed; it is
installed into the git-ignored `var/octokit/` on first use (by one process: another xdist
worker, or another run of this checkout, waits for it).
"""
import shutil
import subprocess
from pathlib import Path

import pytest
from filelock import FileLock

from .test_pygithub import served  # noqa: F401  (the same served emulators)

REPO = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
FOLDER = REPO / "var" / "octokit"
# auth-app: test_app_octokit.py; plugin-throttling: test_rate_limit_clients.py
PACKAGES = ("@octokit/rest@22.0.1", "@octokit/auth-app@8.3.1", "@octokit/plugin-throttling@11.0.5")
SCRIPTS = ("octokit_flow.mjs", "app_bot_flow.mjs", "octokit_throttling.mjs")


@pytest.fixture(scope="session")
def octokit_folder():
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("node and npm are not on this machine")
    FOLDER.mkdir(parents=True, exist_ok=True)
    with FileLock(FOLDER.with_name("octokit.lock")):
        installed = FOLDER / "node_modules" / "@octokit"
        if not all((installed / name.split("/")[1].rsplit("@", 1)[0]).is_dir()
                   for name in PACKAGES):
            if not (FOLDER / "package.json").exists():
                (FOLDER / "package.json").write_text('{"name":"octokit-consumer","private":true}\n')
            try:
                done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", *PACKAGES],
                                      cwd=FOLDER, capture_output=True, text=True, timeout=180)
            except subprocess.TimeoutExpired:
                pytest.skip(f"npm install {' '.join(PACKAGES)} timed out")
            if done.returncode:
                pytest.skip(f"npm install {' '.join(PACKAGES)} failed: {done.stderr[-500:]}")
        # ESM resolves packages from the script's folder, so the scripts run from there
        for script in SCRIPTS:
            shutil.copy(HERE / script, FOLDER / script)
    return FOLDER


def test_octokit_full_flow(served, octokit_folder):  # noqa: F811
    base, admin = served
    done = subprocess.run(["node", "octokit_flow.mjs", base, admin], cwd=octokit_folder,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "octokit flow ok" in done.stdout
