"""The lowest gunicorn that setup.cfg declares serves the shipped config: installed from the
package index into a venv of its own (beside the project's other dependencies), it answers
a post and a poll, a slow client, and a body it refuses unread (gunicorn's graceful close)."""
import configparser
import re
import secrets
import socket
import subprocess
import sys
import sysconfig
import time

import pytest
import requests
from packaging.version import Version

from spaces.newos4.app import POLL_PATH
from testkit.servers import REPO, gunicorn

pytestmark = [pytest.mark.gunicorn, pytest.mark.timeout(180)]
POST_PATH = "/spaces/newos4/api/chat/post.php"


def declared_floor():
    """The version in setup.cfg's `gunicorn>=X` requirement."""
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    found = re.findall(r"^gunicorn>=([\d.]+)$", config["options"]["install_requires"], re.M)
    assert len(found) == 1, "setup.cfg must declare gunicorn>=X exactly once"
    return found[0]


@pytest.fixture(scope="module")
def floor_python(tmp_path_factory):
    """A venv whose own site-packages holds only the lowest declared gunicorn; the project's
    other dependencies come from the running interpreter's, after it."""
    venv = tmp_path_factory.mktemp("gunicorn-floor")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], check=True, capture_output=True, text=True)
    site = site.stdout.strip()
    (venv / site / "project-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    version = declared_floor()
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-deps", "--target", site, f"gunicorn=={version}"],
        capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, f"could not install gunicorn {version}:\n{installed.stderr}"
    found = subprocess.run([python, "-c", "import gunicorn; print(gunicorn.__version__)"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Version(found) == Version(version)
    return python


def test_the_lowest_declared_gunicorn_serves_the_shipped_config(floor_python, tmp_path):
    env = {"NEWOS4_DATA_DIR": str(tmp_path / "data"), "EMULATORS_DB": str(tmp_path / "e.db")}
    token = secrets.token_hex(32)
    with gunicorn(env=env, workers=2, threads=None, ready_path=POLL_PATH,
                  python=floor_python) as url:
        posted = requests.post(url + POST_PATH, json={"text": "hello"},
                               headers={"X-Chat-Token": token}, timeout=5)
        assert posted.status_code == 201, posted.text
        polled = requests.get(url + POLL_PATH, headers={"X-Chat-Token": token}, timeout=5)
        assert [m["text"] for m in polled.json()["messages"]] == ["hello"]
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(f"GET {POLL_PATH} HTTP/1.1\r\nHost: x\r\n".encode())
            time.sleep(0.2)  # a slow client: the reader and a late thread answer it
            sock.sendall(f"X-Chat-Token: {token}\r\n\r\n".encode())
            assert sock.recv(4096).startswith(b"HTTP/1.1 200 ")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            body = b"x" * 200_000  # past the body limit: refused before it is read
            sock.sendall(f"POST {POST_PATH} HTTP/1.1\r\nHost: x\r\nX-Chat-Token: {token}\r\n"
                         f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:70_000])
            answer = b""
            while chunk := sock.recv(4096):
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 413 ")
        assert requests.get(url + POLL_PATH, headers={"X-Chat-Token": token},
                            timeout=5).status_code == 200
