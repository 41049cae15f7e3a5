"""The lowest and the newest gunicorn that setup.cfg allows serve the shipped config: each
installed from the package index into a venv of its own (beside the project's other
dependencies), it answers a post, polls on a kept-alive connection, a slow client, and a body it
refuses unread (gunicorn's graceful close); and the worker's tests, the lean reader side by side
with that gunicorn's parser and the private names we use of it (tests/test_dependency_pins.py)
pass on it."""
import secrets
import socket
import time

import pytest
import requests

from spaces.newos4.app import POLL_PATH
from testkit.bounds import bound_venv, run_tests
from testkit.servers import gunicorn

pytestmark = [pytest.mark.gunicorn, pytest.mark.timeout(240)]
POST_PATH = "/spaces/newos4/api/chat/post.php"


@pytest.fixture(scope="module", params=["lowest", "newest"])
def bound_python(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"gunicorn-{request.param}")
    return bound_venv(folder, "gunicorn", request.param)


def test_the_worker_and_the_private_names_it_uses_hold_on_the_bounds(bound_python):
    run_tests(bound_python, "tests/test_dependency_pins.py", "tests/test_lean.py",
              "tests/test_worker.py")


def test_the_bounds_serve_the_shipped_config(bound_python, tmp_path):
    env = {"NEWOS4_DATA_DIR": str(tmp_path / "data"), "EMULATORS_DB": str(tmp_path / "e.db")}
    token = secrets.token_hex(32)
    with gunicorn(env=env, workers=2, threads=None, ready_path=POLL_PATH,
                  python=bound_python) as url:
        posted = requests.post(url + POST_PATH, json={"text": "hello"},
                               headers={"X-Chat-Token": token}, timeout=5)
        assert posted.status_code == 201, posted.text
        kept = requests.Session()  # two answers on one kept-alive connection
        for _ in range(2):
            polled = kept.get(url + POLL_PATH, headers={"X-Chat-Token": token}, timeout=5)
            assert [m["text"] for m in polled.json()["messages"]] == ["hello"]
            assert polled.headers["Connection"] == "keep-alive"
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
