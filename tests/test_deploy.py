"""The deployment kit under deploy/: the systemd units are valid and start what the repo has."""
import shutil
import subprocess

import pytest

from tests.servers import REPO

UNITS = ["newos4-gunicorn.service", "newos4-relay-watch.service"]


def unit_settings(name):
    settings = {}
    for line in (REPO / "deploy" / name).read_text().splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            settings.setdefault(key, []).append(value)
    return settings


@pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                    reason="systemd-analyze is not installed")
def test_units_pass_systemd_analyze_verify_with_the_repo_as_their_home(tmp_path):
    """With /srv/newos4-monolith pointed at this checkout, every command they run exists."""
    for name in UNITS:
        text = (REPO / "deploy" / name).read_text()
        text = text.replace("/srv/newos4-monolith", str(REPO)).replace(
            "/etc/newos4/newos4.env", str(REPO / "deploy" / "newos4.env.example"))
        (tmp_path / name).write_text(text)
    result = subprocess.run(["systemd-analyze", "verify", *[str(tmp_path / n) for n in UNITS]],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_the_watcher_unit_runs_the_watcher_and_does_not_restart_on_usage_errors():
    watcher = unit_settings("newos4-relay-watch.service")
    assert watcher["ExecStart"] == [
        "/srv/newos4-monolith/.venv/bin/python cron/relay.py --watch"]
    assert watcher["Restart"] == ["on-failure"] and watcher["RestartPreventExitStatus"] == ["2"]
    assert int(watcher["TimeoutStopSec"][0]) > 5  # it exits within 5 s of SIGTERM
    gunicorn = unit_settings("newos4-gunicorn.service")
    assert gunicorn["ExecStart"] == [
        "/srv/newos4-monolith/.venv/bin/gunicorn -c gunicorn.conf.py wsgi:application"]
    assert gunicorn["Type"] == ["notify"]
    # Both write only where the data lives, and the data folder is the repo's default.
    for unit in (watcher, gunicorn):
        assert "/srv/newos4-monolith/spaces/newos4/data" in unit["ReadWritePaths"][0].split()


def test_the_env_example_sets_what_the_watcher_needs():
    lines = (REPO / "deploy" / "newos4.env.example").read_text().splitlines()
    assert any(line.startswith("HERMES_API_URL=http") for line in lines)
