"""Production serves the chat alone: the entry point the systemd unit runs
(spaces/newos4/wsgi.py) loads no emulator module, starts no emulator thread and opens no SQLite
file, in a fresh interpreter and in the workers of real gunicorn. The same probes on the
development monolith (wsgi:application) see the emulators, so they can fail."""
import json
import os
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from spaces.newos4.app import HEALTH_PATH, POLL_PATH, POST_PATH
from testkit.servers import REPO, gunicorn

PRODUCTION = "spaces.newos4.wsgi:application"
MONOLITH = "wsgi:application"
EMULATOR_PATHS = ("/emulators/hermes/v1/models", "/emulators/github/__admin/health")

# Loads the app in this interpreter, sends a health check and a request to each emulator path
# through the WSGI callable, and reports what the process then holds.
PROBE = r"""
import importlib, io, json, os, sys, threading
module, name = sys.argv[1].split(":")
app = getattr(importlib.import_module(module), name)
for path in sys.argv[2:]:
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": "",
               "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
               "REMOTE_ADDR": "127.0.0.1", "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(),
               "wsgi.errors": sys.stderr, "wsgi.version": (1, 0), "wsgi.multithread": True,
               "wsgi.multiprocess": True, "wsgi.run_once": False}
    b"".join(app(environ, lambda status, headers, exc_info=None: None))
fds = []
for fd in os.listdir("/proc/self/fd"):
    try:
        fds.append(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass
print(json.dumps({
    "modules": sorted(m for m in sys.modules if m.split(".")[0] in ("emulators", "sqlite3")),
    "threads": [t.name for t in threading.enumerate()],
    "files": fds}))
"""


def probe(app, tmp_path):
    env = {**os.environ, "NEWOS4_DATA_DIR": str(tmp_path / "data"),
           "EMULATORS_DB": str(tmp_path / "emulators.sqlite3")}
    done = subprocess.run([sys.executable, "-c", PROBE, app, HEALTH_PATH, *EMULATOR_PATHS],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def sqlite_files(paths):
    return [p for p in paths if re.search(r"\.sqlite3(-wal|-shm|-journal)?$", p)]


def test_the_production_entry_loads_no_emulator_and_opens_no_sqlite_file(tmp_path):
    held = probe(PRODUCTION, tmp_path)
    assert held["modules"] == []  # not one emulator module, not even sqlite3
    assert held["threads"] == ["MainThread"]
    assert sqlite_files(held["files"]) == []
    assert not (tmp_path / "emulators.sqlite3").exists()


def test_the_probe_sees_the_emulators_in_the_development_monolith(tmp_path):
    held = probe(MONOLITH, tmp_path)
    assert "emulators.runtime.state.db" in held["modules"] and "sqlite3" in held["modules"]
    assert sqlite_files(held["files"]), held["files"]


def worker_pids(arbiter):
    """The gunicorn workers: the processes whose parent is `arbiter`."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == arbiter:
                children.append(int(entry.name))
    return children


def settled_thread_count(pid):
    """How many threads `pid` runs, once a booting worker has started all of its own (a
    worker still importing its app, slow on a loaded machine, runs its main thread alone)."""
    counts = [len(os.listdir(f"/proc/{pid}/task"))]
    deadline = time.monotonic() + 10
    while len(counts) < 3 or len(set(counts[-3:])) > 1 or counts[-1] == 1:
        assert time.monotonic() < deadline, counts
        time.sleep(0.1)
        counts.append(len(os.listdir(f"/proc/{pid}/task")))
    return counts[-1]


def what_workers_hold(app, tmp_path, *, chat=True):
    """Serve `app` with gunicorn.conf.py (two workers, the shipped request threads); when it
    serves the `chat`, post and poll and ask each emulator path; then read each worker's
    threads, descriptors and mappings."""
    env = {"NEWOS4_DATA_DIR": str(tmp_path / "data"),
           "EMULATORS_DB": str(tmp_path / "emulators.sqlite3")}
    pidfile = tmp_path / "gunicorn.pid"
    statuses = set()
    with gunicorn(app, env=env, workers=2, threads=None, extra_args=("--pid", str(pidfile))) \
            as url:
        token = {"X-Chat-Token": secrets.token_hex(32)}
        for _ in range(4 if chat else 0):  # more requests than workers: each answers some
            assert requests.post(url + POST_PATH, json={"text": "hi"}, headers=token,
                                 timeout=10).status_code == 201
            assert requests.get(url + POLL_PATH, headers=token, timeout=10).status_code == 200
            statuses |= {requests.get(url + path, timeout=10).status_code
                         for path in EMULATOR_PATHS}
        deadline = time.monotonic() + 20
        while len(workers := worker_pids(int(pidfile.read_text()))) < 2:  # both booted
            assert time.monotonic() < deadline, workers
            time.sleep(0.1)
        held = []
        for pid in workers:
            files = []
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    files.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
                except OSError:
                    pass
            held.append({"threads": settled_thread_count(pid), "files": files,
                         "maps": Path(f"/proc/{pid}/maps").read_text()})
        return statuses, held


@pytest.mark.gunicorn
def test_gunicorn_workers_of_the_production_entry_hold_no_emulator(tmp_path):
    (tmp_path / "chat").mkdir()
    (tmp_path / "bare").mkdir()
    statuses, held = what_workers_hold(PRODUCTION, tmp_path / "chat")
    # The same worker and settings serving a bare Falcon app: the threads the worker has itself.
    _, bare = what_workers_hold("bench.bare:application", tmp_path / "bare", chat=False)
    assert statuses == {404}  # no emulator behind it
    for worker in held:
        assert "_sqlite3" not in worker["maps"]  # the SQLite module was never even loaded
        assert sqlite_files(worker["files"]) == []
        assert worker["threads"] <= min(b["threads"] for b in bare)  # none of the app's own
    assert not (tmp_path / "chat" / "emulators.sqlite3").exists()


@pytest.mark.gunicorn
def test_gunicorn_workers_of_the_monolith_hold_the_emulators_the_probe_can_fail(tmp_path):
    statuses, held = what_workers_hold(MONOLITH, tmp_path)
    assert statuses == {200}
    assert all("_sqlite3" in worker["maps"] for worker in held)
    assert any(sqlite_files(worker["files"]) for worker in held)
