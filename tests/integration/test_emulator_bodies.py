"""Oversize bodies under real gunicorn: a declared 100 MB body is refused at once and never holds
the worker thread that would read it (one worker, one thread: a held thread stops everything)."""
import http.client
import time
from urllib.parse import urlsplit

import pytest
import requests

from testkit.servers import gunicorn

pytestmark = pytest.mark.gunicorn
GITHUB = "/emulators/github"
HERMES = "/emulators/hermes"
TROUBLESHOOTING = "https://docs.github.com/rest/using-the-rest-api/troubleshooting-the-rest-api"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    env = {"EMULATORS_DB": str(tmp_path_factory.mktemp("bodies") / "emulators.sqlite3"),
           "EMULATORS_ADMIN_KEY": "",
           "NEWOS4_DATA_DIR": str(tmp_path_factory.mktemp("chat-data"))}
    with gunicorn("wsgi:application", env=env, workers=1, threads=1) as url:
        yield url


def declare_only(url, method, path, length):
    """Send the headers of a `length`-byte JSON body but none of it; return (status, JSON)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
    try:
        conn.putrequest(method, path)
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(length))
        conn.endheaders()
        answer = conn.getresponse()  # a held thread would time out here
        return answer.status, answer.read()
    finally:
        conn.close()


@pytest.mark.parametrize("method,path,length", [
    ("POST", GITHUB + "/repos/o/r/pulls", 100_000_000),
    ("PATCH", GITHUB + "/repos/o/r/git/refs/heads/main", 100_000_000),
    ("PUT", GITHUB + "/__admin/state/items/big", 20_000_000),
    ("POST", GITHUB + "/__admin/github/repositories", 100_000_000),
    ("POST", HERMES + "/__admin/faults", 100_000_000),
    ("POST", HERMES + "/v1/chat/completions", 100_000_000),
])
def test_declared_oversize_body_is_413_at_once_and_frees_the_thread(server, method, path, length):
    started = time.monotonic()
    status, body = declare_only(server, method, path, length)
    assert status == 413, body
    assert time.monotonic() - started < 5
    # The one worker thread is free: the next request is answered.
    assert requests.get(server + GITHUB + "/__admin/health", timeout=5).status_code == 200


def test_the_413s_speak_each_services_envelope(server):
    status, body = declare_only(server, "POST", GITHUB + "/repos/o/r/pulls", 100_000_000)
    assert (status, body) == (413, b'{"message": "Payload Too Large", "documentation_url": "'
                              + TROUBLESHOOTING.encode() + b'", "status": "413"}')
    status, body = declare_only(server, "PUT", GITHUB + "/__admin/state/items/big", 20_000_000)
    assert (status, body) == (413, b'{"error":{"type":"mockingbird_admin","message":'
                              b'"request body is larger than 10000000 bytes"}}')
    assert requests.get(server + GITHUB + "/__admin/state/items", timeout=5).json()[
        "records"] == []


def test_deeply_nested_bodies_are_4xx_not_500(server):
    deep = b"[" * 5000 + b"]" * 5000
    for path in (GITHUB + "/repos/o/r/pulls", GITHUB + "/__admin/faults",
                 HERMES + "/__admin/faults", HERMES + "/v1/chat/completions"):
        answer = requests.post(server + path, data=deep, timeout=5,
                               headers={"Content-Type": "application/json"})
        assert 400 <= answer.status_code < 500, (path, answer.text)
