"""`python -m emulators` as a real process: help, strict parsing (exit 2), start-up lines, the
request log, start-up errors (exit 1) and SIGINT/SIGTERM (exit 0); loopback only."""
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading

import pytest
import requests

from emulators.runtime.state.rng import mulberry32, seed_state
from testkit.counter_service import service as counter
from tests.emulators.runtime.conftest import run_main
from testkit.servers import REPO

USAGE_SERVE = "usage: python -m emulators serve [-h] [--port PORT] [--host HOST] [--db FILE]"
MS = r"\d+(\.\d+)?ms"


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMULATORS_", "HERMES_"))}
    return {**env, **extra}


def cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "emulators", *args], cwd=REPO, env=env or
                          clean_env(), capture_output=True, text=True, timeout=60)


class Served:
    """A `python -m emulators serve ...` process; lines of stdout arrive through a queue."""

    def __init__(self, *args, env=None):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "emulators", "serve", *args], cwd=REPO, env=env or clean_env(),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.lines = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def line(self, timeout=20):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()
            raise AssertionError(f"no output line; stderr: {self.proc.stderr.read()}") from None

    def banner(self, count):
        return [self.line() for _ in range(count)]

    def stop(self, sig=signal.SIGINT):
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()

    def rest(self):
        lines = []
        while not self.lines.empty():
            lines.append(self.lines.get())
        return lines


@pytest.fixture
def launch():
    started = []

    def start(*args, **kwargs):
        served = Served(*args, **kwargs)
        started.append(served)
        return served
    yield start
    for served in started:
        if served.proc.poll() is None:
            served.proc.kill()
            served.proc.wait()


@pytest.mark.parametrize("args", [(), ("--help",), ("-h",), ("help",)])
def test_help_prints_usage_and_exits_0(args):
    done = cli(*args)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("usage: python -m emulators [-h] command ...\n")
    assert "serve <service>   serve one emulator (hermes or github) until Ctrl-C" in done.stdout


@pytest.mark.parametrize("args", [("serve", "--help"), ("serve", "-h"), ("help", "serve")])
def test_serve_help_explains_every_option_with_examples(args):
    done = cli(*args)
    assert done.returncode == 0
    assert done.stdout.startswith(USAGE_SERVE)
    for option in ("--port PORT ", "--host HOST ", "--db FILE ", "--admin-key KEY ",
                   "--admin-prefix PATH ", "--seed SEED ", "--log MODE ", "--log-requests "):
        assert f"\n  {option}" in done.stdout.split("options in detail:")[1], option
    for needle in ("EMULATORS_ADMIN_PREFIX", "EMULATORS_ADMIN_KEY", "EMULATORS_DB",
                   "python -m emulators serve hermes --admin-prefix /_mock --log off"):
        assert needle in done.stdout


@pytest.mark.parametrize("args, message", [
    (("frob",), "python -m emulators: error: argument command: invalid choice: 'frob'"
                " (choose from 'serve', 'help')"),
    (("serve", "nope"), "python -m emulators serve: error: argument service: invalid choice:"
                        " 'nope' (choose from 'hermes', 'github')"),
    (("serve", "github", "--bogus"), "python -m emulators: error: unrecognized arguments:"
                                     " --bogus"),
    (("serve", "github", "--adm", "k"), "python -m emulators: error: unrecognized arguments:"
                                        " --adm k"),
    (("serve", "github", "--log", "loud"),
     "python -m emulators serve: error: --log must be pretty, json or off (got loud)"),
    (("serve", "github", "--port", "70000"),
     "python -m emulators serve: error: argument --port: must be a TCP port from 0 to 65535"
     " (got 70000)"),
    (("serve", "github", "--admin-prefix", "/a/../b"),
     "python -m emulators serve: error: --admin-prefix must be an absolute path of plain"
     " segments, like /__admin (got /a/../b)"),
    (("serve", "github", "--seed"), "python -m emulators serve: error: argument --seed:"
                                    " expected one argument"),
])
def test_unknown_or_invalid_input_exits_2(args, message):
    done = cli(*args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1] == message


def test_serve_prints_its_lines_logs_requests_and_stops_on_sigint(launch, tmp_path):
    served = launch("github", "--port", "0", "--db", str(tmp_path / "g.db"))
    first = served.line()
    url = re.fullmatch(r"github emulator listening on (http://127\.0\.0\.1:\d+)", first).group(1)
    assert served.banner(4) == [
        f"github health: GET {url}/__admin/health",
        f"github admin: {url}/__admin (open — pass --admin-key to lock)",
        f"github admin ui: {url}/__admin/ui",
        f"github state: {tmp_path / 'g.db'}"]
    assert requests.get(url + "/__admin/health").json()["service"] == "github"
    requests.get(url + "/repos/octo/demo?access_token=QUERYSECRET")
    requests.post(url + "/repos/octo/demo/pulls", json={"title": "PROMPT"},
                  headers={"x-mockingbird-namespace": "w1", "authorization": "Bearer TOKEN"})
    requests.get(url + "/not/a/route")
    logged = [served.line() for _ in range(3)]
    patterns = [rf"github GET /repos/octo/demo 404 repos/get {MS} received=\? ct=-",
                rf"github POST /repos/octo/demo/pulls 404 pulls/create {MS} \[w1\]"
                r" received=19B ct=application/json",
                rf"github GET /not/a/route 404 UNMATCHED {MS} received=\? ct=-"]
    for line, pattern in zip(logged, patterns):
        assert re.fullmatch(pattern, line), line
    assert served.stop(signal.SIGINT) == 0
    assert served.rest() == [] and served.proc.stderr.read() == ""
    with pytest.raises(requests.ConnectionError):
        requests.get(url + "/__admin/health", timeout=2)


def test_json_log_admin_key_and_prefix_and_sigterm(launch, tmp_path):
    env = clean_env(EMULATORS_ADMIN_KEY="from-env", EMULATORS_ADMIN_PREFIX="/__envprefix")
    served = launch("hermes", "--port", "0", "--db", str(tmp_path / "h.db"), "--log-requests",
                    "--admin-key", "k1", "--admin-prefix", "/_mock/", env=env)
    url = served.line().rsplit(" ", 1)[1]
    assert served.banner(3) == [f"hermes health: GET {url}/_mock/health",
                                f"hermes admin: {url}/_mock (x-mockingbird-admin-key required)",
                                f"hermes admin ui: {url}/_mock/ui"]
    assert served.line().startswith("hermes state: ")
    assert requests.get(url + "/_mock/requests").status_code == 401
    assert requests.get(url + "/_mock/requests", headers={
        "x-mockingbird-admin-key": "k1"}).status_code == 200
    requests.post(url + "/v1/runs?key=QUERYSECRET", json={"input": "PROMPT SECRET"},
                  headers={"authorization": "Bearer BEARERSECRET"})
    requests.get(url + "/_mock/ns/w2/v1/runs/run_nope")
    line1, line2 = served.line(), served.line()
    for secret in ("QUERYSECRET", "PROMPT", "BEARERSECRET", "key="):
        assert secret not in line1 + line2
    first, second = json.loads(line1), json.loads(line2)
    assert (first["method"], first["path"], first["operationId"], first["namespace"]) == \
        ("POST", "/v1/runs", "RunCreate", "default")
    assert (second["path"], second["status"], second["namespace"]) == \
        ("/v1/runs/run_nope", 404, "w2")
    assert "at" not in first and isinstance(first["durationMs"], float)
    assert served.stop(signal.SIGTERM) == 0


def test_log_off_prints_nothing_per_request(launch, tmp_path):
    served = launch("github", "--port", "0", "--db", str(tmp_path / "g.db"), "--log", "off")
    url = served.line().rsplit(" ", 1)[1]
    served.banner(4)
    assert requests.get(url + "/repos/o/r").status_code == 404
    assert served.stop() == 0
    assert served.rest() == []


def test_start_up_errors_exit_1_with_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = cli("serve", "github", "--port", str(port), "--db", str(tmp_path / "g.db"))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"error: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    bad_env = cli("serve", "github", "--port", "0",
                  env=clean_env(EMULATORS_ADMIN_PREFIX="admin"))
    assert bad_env.returncode == 1
    assert bad_env.stderr == ("error: EMULATORS_ADMIN_PREFIX must be an absolute path of plain"
                              " segments without a trailing slash, like /__admin (got 'admin')\n")
    (tmp_path / "file").write_text("not a folder")
    bad_db = cli("serve", "github", "--port", "0", "--db", str(tmp_path / "file" / "g.db"))
    assert bad_db.returncode == 1 and bad_db.stdout == ""
    assert bad_db.stderr.startswith(f"error: cannot open {tmp_path / 'file' / 'g.db'}: ")
    assert len(bad_db.stderr.splitlines()) == 1


@pytest.mark.parametrize("seed, state", [("7", 7), ("-3", -3 & 0xFFFFFFFF),
                                         ("abc", seed_state("abc"))])
def test_seed_reaches_the_service_rng(monkeypatch, tmp_path, seed, state):
    url, handlers, thread, done = run_main(
        monkeypatch, ["--db", str(tmp_path / "s.db"), "--seed", seed, "--log", "off"],
        lambda name: counter)
    try:
        assert requests.get(url + "/info").json()["random"] == mulberry32(state)[0]
    finally:
        handlers[signal.SIGTERM]()
        thread.join(timeout=10)
    assert done["rc"] == 0
