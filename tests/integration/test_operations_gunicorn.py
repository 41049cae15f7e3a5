"""Operations under real gunicorn with several workers: a bad configuration is refused in one
line (not one per worker, no traceback), the health route, deep nesting in a worker thread."""
import os
import secrets
import subprocess
import sys

import pytest
import requests

from spaces.newos4.app import HEALTH_PATH, POST_PATH
from testkit.servers import REPO, gunicorn, unused_port

pytestmark = pytest.mark.gunicorn


def start(env, *conf):
    """gunicorn -w 4 as the README runs it; returns (exit status, stderr without INFO lines)."""
    cmd = [sys.executable, "-m", "gunicorn", *conf, "--bind", f"127.0.0.1:{unused_port()}",
           "--workers", "4", "wsgi:application"]
    done = subprocess.run(cmd, cwd=REPO, env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=60)
    lines = (done.stdout + done.stderr).splitlines()
    return done.returncode, [line for line in lines if "[INFO]" not in line]


@pytest.mark.parametrize("env,line", [
    ({"NEWOS4_MAX_TEXT": "abc"}, "NEWOS4_MAX_TEXT: expected an integer >= 1, got 'abc'"),
    ({"HERMES_API_URL": "http://127.0.0.1:99999"},
     "HERMES_API_URL: expected an http(s) URL with a host and a valid port, got "
     "'http://127.0.0.1:99999'"),
    ({"NEWOS4_DATA_DIR": "{file}"}, "NEWOS4_DATA_DIR: {file} is not a directory"),
    ({"NEWOS4_DATA_DIR": "{file}/chat"}, "NEWOS4_DATA_DIR: {file}/chat cannot be created "
                                         "(Not a directory)"),
    ({"EMULATORS_ADMIN_PREFIX": "no-slash"}, None),
])
@pytest.mark.parametrize("conf", [("-c", "gunicorn.conf.py"), ()], ids=["-c conf", "default"])
def test_a_bad_configuration_is_one_line_however_many_workers(tmp_path, env, line, conf):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    env = {k: v.format(file=a_file) for k, v in env.items()}
    status, lines = start(env, *conf)
    assert status == 4
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    assert lines[0].startswith("gunicorn: configuration error: ")
    if line:
        assert lines[0] == f"gunicorn: configuration error: {line.format(file=a_file)}"


def test_a_port_in_use_is_one_line_and_exit_1(tmp_path):
    """Not gunicorn's five retries with `Connection in use` printed about a dozen times."""
    import socket
    port = unused_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        done = subprocess.run(
            [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "--bind",
             f"127.0.0.1:{port}", "wsgi:application"], cwd=REPO, capture_output=True, text=True,
            env={**os.environ, "NEWOS4_DATA_DIR": str(tmp_path / "data")}, timeout=60)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if "[INFO]" not in line]
    assert done.returncode == 1
    assert lines == [f"gunicorn: 127.0.0.1:{port} is already in use (another server?); choose "
                     "another with --bind or GUNICORN_CMD_ARGS"]


def test_health_follows_the_data_directory(tmp_path):
    data = tmp_path / "data"
    with gunicorn(env={"NEWOS4_DATA_DIR": str(data)}, workers=3) as url:
        for _ in range(6):  # every worker
            answer = requests.get(url + HEALTH_PATH, timeout=10)
            assert answer.status_code == 200 and answer.json() == {"success": True,
                                                                   "status": "ok"}
        data.rename(tmp_path / "moved")
        data.write_text("someone put a file here")
        for _ in range(6):
            answer = requests.get(url + HEALTH_PATH, timeout=10)
            assert answer.status_code == 503
            assert answer.json() == {"success": False, "error": "data directory not usable"}


def test_deep_nesting_in_a_worker_thread_is_a_400(tmp_path):
    with gunicorn(env={"NEWOS4_DATA_DIR": str(tmp_path / "data")}, workers=2) as url:
        for body in (b"[" * 5000, b'{"text": ' + b"[" * 30000 + b"}"):
            answer = requests.post(url + POST_PATH, data=body, timeout=10,
                                   headers={"X-Chat-Token": secrets.token_hex(32)})
            assert answer.status_code == 400, answer.text
            assert answer.json() == {"success": False, "error": "body must be a JSON object"}


def test_a_data_directory_that_is_not_writable_is_one_line():
    # Tests run as root here, for whom a mode bit is no obstacle: a kernel file system is.
    folder = "/sys/kernel"
    try:
        open(f"{folder}/.newos4-probe", "wb").close()
        os.unlink(f"{folder}/.newos4-probe")
        pytest.skip(f"{folder} is writable here")
    except OSError:
        pass
    status, lines = start({"NEWOS4_DATA_DIR": folder}, "-c", "gunicorn.conf.py")
    assert status == 4 and len(lines) == 1, lines
    assert lines[0].startswith(f"gunicorn: configuration error: NEWOS4_DATA_DIR: {folder} is "
                               "not writable (")
