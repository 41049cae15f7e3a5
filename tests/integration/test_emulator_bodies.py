"""Bodies under real gunicorn: a declared 100 MB body is refused at once and never holds the
worker thread that would read it (one worker, one thread: a held thread stops everything); the
admin plane takes a 100,000-commit history (about 11 MB) to seed; the limits are settings."""
import hashlib
import http.client
import json
import os
import subprocess
import sys
import time
from urllib.parse import urlsplit

import pytest
import requests

from testkit.servers import REPO, gunicorn, unused_port

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
    ("PUT", GITHUB + "/__admin/state/items/big", 100_000_000),
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
    status, body = declare_only(server, "PUT", GITHUB + "/__admin/state/items/big", 100_000_000)
    assert (status, body) == (413, b'{"error":{"type":"mockingbird_admin","message":'
                              b'"request body is larger than 64000000 bytes"}}')
    assert requests.get(server + GITHUB + "/__admin/state/items", timeout=5).json()[
        "records"] == []


def test_deeply_nested_bodies_are_4xx_not_500(server):
    deep = b"[" * 5000 + b"]" * 5000
    for path in (GITHUB + "/repos/o/r/pulls", GITHUB + "/__admin/faults",
                 HERMES + "/__admin/faults", HERMES + "/v1/chat/completions"):
        answer = requests.post(server + path, data=deep, timeout=5,
                               headers={"Content-Type": "application/json"})
        assert 400 <= answer.status_code < 500, (path, answer.text)


def history(count, cycle=False):
    """A repository seed with a `count`-commit linear chain (each commit's parent is the one
    before; with `cycle`, the first commit's parent is the last)."""
    shas = [hashlib.sha1(str(n).encode()).hexdigest() for n in range(count)]
    commits = [{"sha": sha, "parents": [shas[n - 1]] if n else []} for n, sha in enumerate(shas)]
    if cycle:
        commits[0]["parents"] = [shas[-1]]
    return {"owner": "octo", "name": f"long{int(cycle)}", "commits": commits,
            "branches": {"main": shas[-1], "start": shas[0]}}


def test_a_100000_commit_history_is_seeded_and_its_cycle_found_over_http(server):
    """The largest history the seeding rules must handle, both ways, through the admin route."""
    seeds = GITHUB + "/__admin/github/repositories"
    chain = json.dumps(history(100_000)).encode()
    assert len(chain) > 10_000_000  # past the provider routes' limit
    answer = requests.post(server + seeds, data=chain, timeout=120,
                           headers={"Content-Type": "application/json"})
    assert answer.status_code == 201, answer.text[:300]
    last = hashlib.sha1(b"99999").hexdigest()
    answer = requests.patch(f"{server}{GITHUB}/repos/octo/long0/git/refs/heads/start",
                            json={"sha": last}, timeout=60)  # a fast-forward down the chain
    assert answer.status_code == 200, answer.text[:300]
    assert answer.json()["object"]["sha"] == last
    answer = requests.post(server + seeds, data=json.dumps(history(100_000, cycle=True)),
                           timeout=120, headers={"Content-Type": "application/json"})
    assert (answer.status_code, answer.json()["message"]) == \
        (400, "Synthetic ancestry must be acyclic")


@pytest.mark.parametrize("name", ["EMULATORS_MAX_BODY", "EMULATORS_MAX_ADMIN_BODY"])
def test_a_bad_limit_stops_gunicorn_in_one_line(tmp_path, name):
    done = subprocess.run(
        [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "--bind",
         f"127.0.0.1:{unused_port()}", "--workers", "2", "wsgi:application"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
        env={**os.environ, "NEWOS4_DATA_DIR": str(tmp_path / "data"), name: "10MB"})
    assert done.returncode == 4
    lines = [line for line in done.stderr.splitlines() if name in line]
    assert lines == [f"gunicorn: configuration error: {name} must be a number of bytes, 1 or "
                     f"more, like {'64000000' if 'ADMIN' in name else '10000000'} (got '10MB')"]
