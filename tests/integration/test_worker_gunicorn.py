"""The shipped worker (spaces/serving/worker.py) under real gunicorn: event streams hold no
request thread, a stop lets requests in flight finish, the heartbeat outlives slow requests, max
requests, several listeners, slow and silent clients (they hold no request thread), a request
thread's death, TLS settings refused, kept-alive connections (idle in the reader, pipelined,
bounded, making room for others, a worker killed under them, a stopping worker's), the WSGI
environ."""
import concurrent.futures
import contextlib
import json
import os
import re
import runpy
import secrets
import signal
import socket
import subprocess
import sys
import time

import pytest
import requests

from emulators.runtime.stopping import STOPPING_KEY
from spaces.serving import worker
from spaces.newos4.app import HEALTH_PATH, POLL_PATH
from spaces.newos4.service import thread_of
from testkit.servers import REPO, gunicorn, unused_port

pytestmark = [pytest.mark.gunicorn, pytest.mark.timeout(90)]
HERMES = "/emulators/hermes"
GITHUB = "/emulators/github"


@pytest.fixture
def env(tmp_path):
    return {"NEWOS4_DATA_DIR": str(tmp_path / "data"), "EMULATORS_DB": str(tmp_path / "e.db"),
            "HERMES_SSE_KEEPALIVE_SECONDS": "0.3", "HERMES_SSE_POLL_SECONDS": "0.05"}


def open_stream(url):
    run = requests.post(f"{url}{HERMES}/v1/runs", json={"input": "x"},
                        headers={"Connection": "close"}, timeout=10).json()
    stream = requests.get(f"{url}{HERMES}/v1/runs/{run['run_id']}/events", stream=True,
                          timeout=10)
    assert stream.status_code == 200
    return stream


def still_streaming(stream):
    """The stream goes on: its next line comes within seconds (a keepalive comment)."""
    return next(stream.iter_lines(decode_unicode=True), None) is not None


def poll(url, timeout=3.0):
    return requests.get(url + POLL_PATH, headers={"X-Chat-Token": secrets.token_hex(32),
                                                  "Connection": "close"}, timeout=timeout)


def delay(url, path, ms):
    """Every GET of `path` on the GitHub emulator waits `ms` first (a fault rule)."""
    answer = requests.post(f"{url}{GITHUB}/__admin/faults",
                           json={"method": "GET", "path": path, "delayMs": ms}, timeout=5)
    assert answer.status_code in (200, 201), answer.text


def worker_pids(master):
    out = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True).stdout
    return set(out.split())


def raw_exchange(where, *parts, pause=0.0):
    """Send `parts` on one connection (to a loopback port, or a unix socket's path), `pause`
    seconds apart; return what the server sends until it closes, or its first whole answer
    (a 1xx aside) when it keeps the connection."""
    if isinstance(where, str):
        sock = socket.socket(socket.AF_UNIX)
        sock.settimeout(10)
        sock.connect(where)
    else:
        sock = socket.create_connection(("127.0.0.1", where), timeout=10)
    with sock:
        for n, part in enumerate(parts):
            if n:
                time.sleep(pause)
            sock.sendall(part)
        answer = b""
        while not _one_answer(answer) and (chunk := sock.recv(4096)):
            answer += chunk
    return answer


def _one_answer(data):
    head, found, body = data.partition(b"\r\n\r\n")
    length = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I)
    return found and length and len(body) >= int(length.group(1))


def test_event_streams_hold_no_request_thread(env):
    """One worker with one request thread: six open streams, and chat requests still get their
    answers at once; the streams go on."""
    with gunicorn(env=env, workers=1, threads=1, ready_path=POLL_PATH) as url:
        streams = [open_stream(url) for _ in range(6)]
        try:
            for _ in range(5):
                assert poll(url, timeout=2).status_code == 200
            assert all(still_streaming(stream) for stream in streams)
        finally:
            for stream in streams:
                stream.close()


def test_streams_past_worker_connections_are_streamed_by_a_request_thread(env):
    """Past `worker_connections` streams a request thread streams the answer itself: with one
    thread and room for one stream, a second stream takes the thread until it ends."""
    with gunicorn(env=env, workers=1, threads=1, ready_path=POLL_PATH,
                  extra_args=["--worker-connections", "1"]) as url:
        first = open_stream(url)
        assert poll(url).status_code == 200
        second = open_stream(url)
        with pytest.raises(requests.Timeout):
            poll(url, timeout=1)
        second.close()  # the next keepalive write fails and frees the thread
        assert poll(url, timeout=5).status_code == 200
        assert still_streaming(first)
        first.close()


def test_a_stop_lets_requests_in_flight_finish(env, tmp_path):
    pidfile = tmp_path / "gunicorn.pid"
    with gunicorn(env=env, workers=1, threads=2, ready_path=POLL_PATH,
                  extra_args=["--pid", str(pidfile)]) as url:
        delay(url, "/repos/{owner}/{repo}", 1500)
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            slow = [pool.submit(requests.get, f"{url}{GITHUB}/repos/octo/demo{n}", timeout=10)
                    for n in range(2)]
            time.sleep(0.5)
            master = int(pidfile.read_text())
            os.kill(master, signal.SIGTERM)
            assert [future.result().status_code for future in slow] == [404, 404]
        deadline = time.monotonic() + 10
        while pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pidfile.exists()  # the arbiter stopped
        with pytest.raises(requests.ConnectionError):
            requests.get(url + HEALTH_PATH, timeout=2)


def test_a_stop_ends_idle_event_streams_at_once(env, tmp_path):
    """Streams idle between upstream's 30-s keepalives end as soon as the worker begins to
    stop (the environ's stopping Event, which the emulators' streams wait on): a stop takes a
    moment, not `graceful_timeout`, and each client sees its stream end cleanly."""
    assert STOPPING_KEY == worker.STOPPING_KEY  # the worker names the emulators' key itself
    pidfile = tmp_path / "gunicorn.pid"
    with gunicorn(env={**env, "HERMES_SSE_KEEPALIVE_SECONDS": "30"}, workers=1, threads=2,
                  ready_path=POLL_PATH,
                  extra_args=["--pid", str(pidfile), "--graceful-timeout", "30"]) as url:
        streams = [open_stream(url) for _ in range(3)]
        started = time.monotonic()
        os.kill(int(pidfile.read_text()), signal.SIGTERM)
        for stream in streams:
            assert stream.content == b""  # read to a clean end: no error, no read timeout
        while pidfile.exists() and time.monotonic() - started < 25:
            time.sleep(0.05)
        assert not pidfile.exists()  # the arbiter stopped
        assert time.monotonic() - started < 5


def test_the_heartbeat_outlives_requests_slower_than_the_timeout(env, tmp_path):
    """gunicorn kills a worker that stays silent for `timeout` seconds; a request thread busy
    for longer must not silence the worker (the sync worker would be killed here)."""
    pidfile = tmp_path / "gunicorn.pid"
    with gunicorn(env=env, workers=1, threads=2, ready_path=POLL_PATH,
                  extra_args=["--timeout", "1", "--pid", str(pidfile)]) as url:
        before = worker_pids(int(pidfile.read_text()))
        delay(url, "/repos/{owner}/{repo}", 2500)
        answer = requests.get(f"{url}{GITHUB}/repos/octo/slow", timeout=10)
        assert answer.status_code == 404
        assert worker_pids(int(pidfile.read_text())) == before


def test_max_requests_restarts_the_worker_and_refuses_nothing(env, tmp_path):
    pidfile = tmp_path / "gunicorn.pid"
    with gunicorn(env=env, workers=1, threads=2, ready_path=POLL_PATH,
                  extra_args=["--max-requests", "5", "--pid", str(pidfile)]) as url:
        master = int(pidfile.read_text())
        seen = set()
        for _ in range(20):
            assert poll(url, timeout=10).status_code == 200
            seen |= worker_pids(master)
        assert len(seen) >= 3


def cpus_of(pid):
    """The CPUs each thread of process `pid` may run on, as a set of sets."""
    return {frozenset(os.sched_getaffinity(int(thread)))
            for thread in os.listdir(f"/proc/{pid}/task")}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to spread over")
def test_each_worker_runs_on_one_cpu_and_a_replacement_takes_the_freed_one(env, tmp_path):
    pidfile = tmp_path / "gunicorn.pid"
    ours = os.sched_getaffinity(0)
    allowed = sorted(ours)[:2]
    # As an operator restricts the server (taskset, systemd's CPUAffinity=): two CPUs allowed,
    # inherited from this thread by the server it starts.
    os.sched_setaffinity(0, allowed)
    try:
        server = gunicorn(env=env, workers=2, threads=None, ready_path=POLL_PATH,
                          extra_args=["--pid", str(pidfile)])
        url = server.__enter__()
    finally:
        os.sched_setaffinity(0, ours)
    with contextlib.ExitStack() as stack:
        stack.push(server)
        master = int(pidfile.read_text())
        assert os.sched_getaffinity(master) == set(allowed)  # the arbiter itself is not pinned
        placed = {}
        for pid in worker_pids(master):
            threads = cpus_of(pid)
            assert len(threads) == 1, f"worker {pid}: threads on {threads}"  # all on one CPU
            placed[pid] = next(iter(threads))
        assert sorted(min(cpus) for cpus in placed.values()) == allowed
        victim = next(iter(placed))
        os.kill(int(victim), signal.SIGKILL)
        deadline = time.monotonic() + 20
        while (workers := worker_pids(master)) - {victim} == set(placed) - {victim} \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        new = (workers - set(placed)).pop()
        deadline = time.monotonic() + 10
        while len(cpus_of(new)) != 1 or len(os.listdir(f"/proc/{new}/task")) < 3:
            assert time.monotonic() < deadline, "the replacement never started its threads"
            time.sleep(0.1)
        assert cpus_of(new) == {placed[victim]}
        assert poll(url).status_code == 200


def test_a_cpu_the_kernel_refuses_leaves_the_worker_serving_on_any(env, tmp_path):
    errors, config = tmp_path / "error.log", tmp_path / "offline.conf.py"
    config.write_text(f"exec(open({str(REPO / 'gunicorn.conf.py')!r}).read())\n"
                      "def pre_fork(server, worker):\n"
                      "    worker.cpu = 4095  # no such CPU here\n")
    with gunicorn(env=env, workers=1, threads=1, ready_path=POLL_PATH,
                  extra_args=["-c", str(config), "--error-logfile", str(errors)]) as url:
        assert poll(url).status_code == 200
    assert "Worker runs on any CPU: CPU 4095 refused" in errors.read_text()


def test_every_listener_is_served(env, tmp_path):
    unix = tmp_path / "gunicorn.sock"
    with gunicorn(env=env, workers=1, threads=1, ready_path=POLL_PATH,
                  extra_args=["--bind", f"unix:{unix}"]) as url:
        for _ in range(3):
            assert poll(url).status_code == 200
            answer = raw_exchange(str(unix),
                                  f"GET {HEALTH_PATH} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
            assert answer.endswith(b'{"success": true, "status": "ok"}')


def test_a_client_slower_than_an_idle_threads_wakeup_is_answered(env):
    """Accepted sockets inherit the listener's short receive timeout unless it is reset."""
    with gunicorn(env=env, workers=1, threads=1, ready_path=POLL_PATH) as url:
        port = int(url.rsplit(":", 1)[1])
        request = f"GET {HEALTH_PATH} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        assert raw_exchange(port, b"", request, pause=0.5).startswith(b"HTTP/1.1 200 ")
        body = b'{"text": "sent slowly"}'
        head = (f"POST /spaces/newos4/api/chat/post.php HTTP/1.1\r\nHost: x\r\n"
                f"X-Chat-Token: {secrets.token_hex(32)}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        assert raw_exchange(port, head, body, pause=0.5).startswith(b"HTTP/1.1 201 ")


def test_a_silent_client_is_closed_after_the_timeout_and_frees_its_thread(env):
    with gunicorn(env=env, workers=1, threads=1, ready_path=POLL_PATH,
                  extra_args=["--timeout", "2"]) as url:
        port = int(url.rsplit(":", 1)[1])
        started = time.monotonic()
        assert raw_exchange(port, b"") == b""  # closed by the server, nothing sent
        assert 1.5 < time.monotonic() - started < 8
        assert poll(url).status_code == 200


def test_a_malformed_request_gets_gunicorns_400_whole(env):
    with gunicorn(env=env, workers=1, threads=1, ready_path=POLL_PATH) as url:
        port = int(url.rsplit(":", 1)[1])
        answer = raw_exchange(port, b"NOT HTTP AT ALL\r\n\r\n")
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 Bad Request")
        assert int(dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:])
                   [b"Content-Length"]) == len(body)
        assert poll(url).status_code == 200


def test_request_hooks_still_run_when_set_and_the_debug_log_still_names_each_request(env,
                                                                                   tmp_path):
    """The worker skips gunicorn's default hooks (they do nothing a request needs), never a
    hook a configuration sets, nor the default's debug line when the log level asks for it."""
    seen, errors = tmp_path / "seen", tmp_path / "error.log"
    config = tmp_path / "hooked.conf.py"
    config.write_text(f"exec(open({str(REPO / 'gunicorn.conf.py')!r}).read())\n"
                      "def post_request(worker, req, environ, resp):\n"
                      f"    with open({str(seen)!r}, 'a') as out:\n"
                      "        out.write(f'{req.path} {resp.status_code}\\n')\n")
    with gunicorn(env=env, workers=1, threads=1, ready_path=POLL_PATH, extra_args=[
            "-c", str(config), "--log-level", "debug", "--error-logfile", str(errors)]) as url:
        assert poll(url).status_code == 200
        deadline = time.monotonic() + 5
        while f"{POLL_PATH} 200" not in (seen.read_text() if seen.exists() else ""):
            assert time.monotonic() < deadline, "post_request was not called"
            time.sleep(0.05)
    assert f"GET {POLL_PATH}" in errors.read_text()  # the default pre_request's debug line


def test_a_request_thread_that_dies_restarts_the_worker(env, tmp_path):
    """Not a request's error (those get a 500): a thread that can no longer accept. The worker
    says so and exits, and the arbiter starts a fresh one."""
    conf = tmp_path / "breaks-once.conf.py"
    marker = tmp_path / "broken-once"
    conf.write_text(
        "import runpy\n"
        f"globals().update(runpy.run_path({str(REPO / 'gunicorn.conf.py')!r}))\n"
        "def post_worker_init(worker):\n"
        f"    if not __import__('os').path.exists({str(marker)!r}):\n"
        f"        open({str(marker)!r}, 'w').close()\n"
        "        for listener in worker.sockets:  # accept() on a socket that never listened\n"
        "            listener.sock = __import__('socket').socket()\n")
    log = tmp_path / "error.log"
    with gunicorn(env=env, workers=1, threads=1, ready_path=POLL_PATH,
                  extra_args=["-c", str(conf), "--error-logfile", str(log)]) as url:
        assert marker.exists()
        assert poll(url).status_code == 200
        assert "A request thread died" in log.read_text()


def test_tls_settings_are_refused_at_start_in_one_line(tmp_path):
    cert = tmp_path / "cert.pem"
    cert.write_text("not used")
    done = subprocess.run(
        [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "--bind",
         f"127.0.0.1:{unused_port()}", "--workers", "2", "--certfile", str(cert), "--keyfile",
         str(cert), "wsgi:application"],
        cwd=REPO, env={**os.environ, "NEWOS4_DATA_DIR": str(tmp_path / "data")},
        capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    lines = [line for line in (done.stdout + done.stderr).splitlines()
             if "serves plain HTTP" in line]
    assert lines and "--worker-class gthread" in lines[0]


def half_requests(port, count):
    """`count` connections, each with half a request sent: half of a head, or a whole head and
    half of its body (alternately); return (socket, the rest of its request) pairs."""
    body = b'{"text": "' + b"x" * 2000 + b'"}'
    halves = []
    for n in range(count):
        request = (f"POST /spaces/newos4/api/chat/post.php HTTP/1.1\r\nHost: x\r\n"
                   f"X-Chat-Token: {secrets.token_hex(32)}\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        cut = len(request) - len(body) // 2 if n % 2 else len(request) // 4
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(request[:cut])
        halves.append((sock, request[cut:]))
    return halves


def test_slow_clients_cost_no_request_thread_under_the_shipped_config(env):
    """Twenty clients that send half a request and wait: a poll is answered at once, as
    shipped (gunicorn.conf.py's threads, two workers), and each slow client is answered when
    its request is complete."""
    with gunicorn(env=env, workers=2, threads=None, ready_path=POLL_PATH) as url:
        halves = half_requests(int(url.rsplit(":", 1)[1]), 20)
        try:
            time.sleep(0.3)  # every half is in
            took = []
            for _ in range(5):
                started = time.monotonic()
                assert poll(url, timeout=10).status_code == 200
                took.append(time.monotonic() - started)
            print("poll beside 20 slow clients, s:", ", ".join(f"{t:.3f}" for t in took))
            assert max(took) < 1.0
            for sock, rest in halves:
                sock.sendall(rest)
            for sock, _ in halves:
                assert sock.recv(4096).startswith(b"HTTP/1.1 201 ")
        finally:
            for sock, _ in halves:
                sock.close()


def test_requests_that_arrive_slowly_are_answered_whole(env):
    """The reader's ways with a request: a chunked body in pieces, a client that waits for
    `100 Continue`, a body too big to hold (a late thread reads it as it arrives)."""
    with gunicorn(env=env, workers=1, threads=1, ready_path=POLL_PATH) as url:
        port = int(url.rsplit(":", 1)[1])
        head = (f"POST /spaces/newos4/api/chat/post.php HTTP/1.1\r\nHost: x\r\n"
                f"X-Chat-Token: {secrets.token_hex(32)}\r\n")
        chunked = (head + "Transfer-Encoding: chunked\r\n\r\n").encode()
        answer = raw_exchange(port, chunked, b'9\r\n{"text": \r\n', b'5\r\n"hi"}\r\n',
                              b"0\r\n\r\n", pause=0.2)
        assert answer.startswith(b"HTTP/1.1 201 ")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall((head + "Expect: 100-continue\r\nContent-Length: 14\r\n\r\n").encode())
            assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
            sock.sendall(b'{"text": "hi"}')
            assert sock.recv(4096).startswith(b"HTTP/1.1 201 ")
        big = b'{"input": "' + b"x" * 100_000 + b'"}'
        head = f"POST {HERMES}/v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: {len(big)}\r\n\r\n"
        answer = raw_exchange(port, head.encode() + big[:50_000], big[50_000:], pause=0.3)
        assert answer.startswith(b"HTTP/1.1 202 ")
        assert poll(url).status_code == 200


def test_a_stream_is_answered_from_the_reader_too(env):
    """A stream whose request arrived slowly is streamed by a thread of its own as well."""
    with gunicorn(env=env, workers=1, threads=1, ready_path=POLL_PATH) as url:
        port = int(url.rsplit(":", 1)[1])
        run = requests.post(f"{url}{HERMES}/v1/runs", json={"input": "x"}, timeout=10).json()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(f"GET {HERMES}/v1/runs/{run['run_id']}/events HTTP/1.1\r\n".encode())
            time.sleep(0.3)
            sock.sendall(b"Host: x\r\n\r\n")
            assert sock.recv(4096).startswith(b"HTTP/1.1 200 ")
            for _ in range(3):  # the late thread is free, and so is the request thread
                with socket.create_connection(("127.0.0.1", port), timeout=5) as slow:
                    slow.sendall(f"GET {HEALTH_PATH} HTTP/1.1\r\n".encode())
                    time.sleep(0.2)
                    slow.sendall(b"Host: x\r\n\r\n")
                    assert slow.recv(4096).startswith(b"HTTP/1.1 200 ")
                assert poll(url).status_code == 200


class Answers:
    """The answers on one kept-alive connection, one per call: (head, body), or None once the
    server has closed (or reset) it."""

    def __init__(self, sock):
        self.sock, self.data = sock, b""

    def __call__(self):
        try:
            while b"\r\n\r\n" not in self.data:
                if not self._more():
                    return None
            head, _, rest = self.data.partition(b"\r\n\r\n")
            length = int(re.search(rb"\r\ncontent-length: *(\d+)", head, re.I).group(1))
            while len(rest) < length:
                assert self._more(), "closed in the middle of an answer"
                head, _, rest = self.data.partition(b"\r\n\r\n")
        except ConnectionResetError:
            return None
        self.data = rest[length:]
        return head, rest[:length]

    def _more(self):
        chunk = self.sock.recv(65536)
        self.data += chunk
        return bool(chunk)


def health_request(close=False):
    return (f"GET {HEALTH_PATH} HTTP/1.1\r\nHost: x\r\n"
            + ("Connection: close\r\n" if close else "") + "\r\n").encode()


def kept_connection(port):
    """A connection that has had one answer and is kept alive: it waits in the reader."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(health_request())
    head, _ = Answers(sock)()
    assert b"\r\nConnection: keep-alive" in head
    return sock


def test_a_kept_connection_serves_requests_until_it_idles_past_keepalive(env):
    with gunicorn(env=env, workers=1, threads=1, ready_path=POLL_PATH,
                  extra_args=["--keep-alive", "1"]) as url:
        with kept_connection(int(url.rsplit(":", 1)[1])) as sock:
            read_answer = Answers(sock)
            for pause in (0.0, 0.3, 0.6):  # each idle time within the second
                time.sleep(pause)
                sock.sendall(health_request())
                head, body = read_answer()
                assert head.startswith(b"HTTP/1.1 200 ") and b"Connection: keep-alive" in head
                assert body == b'{"success": true, "status": "ok"}'
            started = time.monotonic()
            assert read_answer() is None  # closed by the server: idle for `keepalive`
            assert 0.8 < time.monotonic() - started < 3


def proxy_idle_s():
    """How long the shipped nginx site keeps an idle connection to gunicorn, in seconds."""
    site = (REPO / "deploy" / "nginx" / "newos4.conf").read_text()
    return float(re.search(r"^\s*keepalive_timeout (\d+)s;", site, re.M).group(1))


def test_the_proxy_closes_an_idle_connection_before_gunicorn_or_a_stopping_worker_does():
    shipped = runpy.run_path(str(REPO / "gunicorn.conf.py"))
    assert proxy_idle_s() < shipped["keepalive"]
    assert proxy_idle_s() < worker.STOP_LINGER_S <= shipped["graceful_timeout"] / 2


def test_a_stopping_worker_answers_on_a_kept_connection_the_proxy_may_still_use(env, tmp_path):
    """A reload (HUP) stops the old worker. A request on a connection it kept, idle for less
    than the proxy keeps one, is answered with `Connection: close`, not cut (nginx would answer
    a POST cut so with a 502); and with no connection left, the old worker exits at once, not
    at the end of STOP_LINGER_S."""
    pidfile = tmp_path / "gunicorn.pid"
    with gunicorn(env=env, workers=1, threads=2, ready_path=POLL_PATH,
                  extra_args=["--pid", str(pidfile)]) as url:
        master = int(pidfile.read_text())
        old = worker_pids(master)
        with kept_connection(int(url.rsplit(":", 1)[1])) as sock:
            os.kill(master, signal.SIGHUP)
            hup = time.monotonic()
            time.sleep(proxy_idle_s() / 2)
            sock.sendall(health_request())
            read_answer = Answers(sock)
            head, body = read_answer()
            assert head.startswith(b"HTTP/1.1 200 ") and b"\r\nConnection: close" in head
            assert body == b'{"success": true, "status": "ok"}'
            assert read_answer() is None
        while old & worker_pids(master) and time.monotonic() - hup < 10:
            time.sleep(0.05)
        assert not old & worker_pids(master)
        assert time.monotonic() - hup < worker.STOP_LINGER_S


def test_pipelined_requests_are_answered_in_order_and_close_ends_the_connection(env):
    with gunicorn(env=env, workers=1, threads=1, ready_path=POLL_PATH) as url:
        token = secrets.token_hex(32)
        with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])),
                                      timeout=10) as sock:
            posts = [(f"POST /spaces/newos4/api/chat/post.php HTTP/1.1\r\nHost: x\r\n"
                      f"X-Chat-Token: {token}\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {len(body)}\r\n\r\n").encode() + body
                     for body in (b'{"text": "one"}', b'{"text": "two"}')]
            sock.sendall(posts[0] + posts[1] + health_request(close=True) + health_request())
            read_answer = Answers(sock)
            answers = [read_answer() for _ in range(3)]
            assert [a[0].split(b"\r\n")[0] for a in answers] == [
                b"HTTP/1.1 201 Created", b"HTTP/1.1 201 Created", b"HTTP/1.1 200 OK"]
            assert b"Connection: close" in answers[2][0]
            assert read_answer() is None  # the request after the close is not answered
        polled = requests.get(url + POLL_PATH, headers={"X-Chat-Token": token}, timeout=5)
        assert [m["text"] for m in polled.json()["messages"]] == ["one", "two"]


def test_a_connection_is_closed_after_its_thousandth_answer(env):
    from spaces.serving.worker import REQUESTS_PER_CONNECTION
    with gunicorn(env=env, workers=1, threads=1, ready_path=POLL_PATH) as url:
        with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])),
                                      timeout=10) as sock:
            sock.sendall(health_request() * (REQUESTS_PER_CONNECTION + 1))
            read_answer = Answers(sock)
            heads = [read_answer()[0] for _ in range(REQUESTS_PER_CONNECTION)]
            assert all(b"Connection: keep-alive" in head for head in heads[:-1])
            assert b"Connection: close" in heads[-1]
            assert read_answer() is None


def test_idle_kept_connections_hold_no_thread_and_make_room_for_others(env, tmp_path):
    """One request thread, one late thread, room for 4 connections in the reader: 6 idle
    kept-alive connections (the 2 oldest are closed to make room), then 2 slow clients (2 more
    idle ones go, not the slow clients): a poll is answered at once, the slow clients when
    their requests are whole, and the idle connections still held serve their next request."""
    log = tmp_path / "error.log"
    with gunicorn(env=env, workers=1, threads=1, ready_path=POLL_PATH,
                  extra_args=["--worker-connections", "4", "--error-logfile", str(log)]) as url:
        port = int(url.rsplit(":", 1)[1])
        idle = [kept_connection(port) for _ in range(6)]
        halves = half_requests(port, 2)
        try:
            time.sleep(0.3)
            started = time.monotonic()
            assert poll(url, timeout=5).status_code == 200
            assert time.monotonic() - started < 1.0
            for sock, rest in halves:
                sock.sendall(rest)
                assert Answers(sock)()[0].startswith(b"HTTP/1.1 201 ")
            for sock in idle[:4]:  # closed to make room, oldest first
                assert Answers(sock)() is None
            for sock in idle[4:]:
                sock.sendall(health_request())
                assert Answers(sock)()[0].startswith(b"HTTP/1.1 200 ")
        finally:
            for sock in idle + [sock for sock, _ in halves]:
                sock.close()
    assert "incomplete requests held" not in log.read_text()


def keeping(url, pids):
    """The processes among `pids` that hold an established connection to `url`'s port."""
    listing = subprocess.run(["ss", "-Htnp", "state", "established",
                              f"( sport = :{url.rsplit(':', 1)[1]} )"],
                             capture_output=True, text=True, check=True).stdout
    return {pid for pid in pids if f"pid={pid}," in listing}


def test_a_worker_killed_under_kept_connections_loses_no_acknowledged_post(env, tmp_path):
    """Four clients post over kept-alive connections to two workers; one worker is killed
    (SIGKILL) in the middle: its clients see their connection fail and post again on a new
    one, and every message that got a 201 is in its thread."""
    pidfile = tmp_path / "gunicorn.pid"
    env = {**env, "NEWOS4_RATE_THREAD": "100000", "NEWOS4_RATE_IP": "100000",
           "NEWOS4_KEEP_MESSAGES": "100000"}
    with gunicorn(env=env, workers=2, threads=None, ready_path=POLL_PATH,
                  extra_args=["--pid", str(pidfile)]) as url:
        master = int(pidfile.read_text())
        stop, acked, failed = time.monotonic() + 2.5, {}, []

        def client(n):
            token, session = secrets.token_hex(32), requests.Session()
            acked[token] = []
            while time.monotonic() < stop:
                text = f"client {n} message {len(acked[token])}"
                try:
                    answer = session.post(url + "/spaces/newos4/api/chat/post.php",
                                          json={"text": text}, timeout=5,
                                          headers={"X-Chat-Token": token})
                except requests.ConnectionError:
                    failed.append(text)
                    session = requests.Session()
                    continue
                assert answer.status_code == 201, answer.text
                acked[token].append(text)

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            clients = [pool.submit(client, n) for n in range(4)]
            time.sleep(1.0)
            victim = next(iter(keeping(url, worker_pids(master))))
            os.kill(int(victim), signal.SIGKILL)
            for future in clients:
                future.result()
        assert victim not in worker_pids(master)
        for token, texts in acked.items():
            thread = tmp_path / "data" / "chat" / f"{thread_of(token)}.json"
            kept = {m["text"] for m in json.loads(thread.read_text())["messages"]}
            assert set(texts) <= kept, set(texts) - kept
            assert len(texts) > 10
        print(f"{sum(map(len, acked.values()))} posts acknowledged, {len(failed)} failed with "
              "the killed worker's connections")


def test_the_environ_says_several_threads_serve(env, tmp_path):
    (tmp_path / "environ_app.py").write_text(
        "def application(environ, start_response):\n"
        "    start_response('200 OK', [('Content-Type', 'text/plain')])\n"
        "    return [repr((environ['wsgi.multithread'], environ['wsgi.multiprocess'])).encode()]\n")
    with gunicorn("environ_app:application", env=env, workers=2, threads=None,
                  extra_args=["--pythonpath", str(tmp_path)]) as url:
        assert requests.get(url, timeout=5).text == "(True, True)"


def test_past_worker_connections_held_the_oldest_slow_client_is_closed(env, tmp_path):
    log = tmp_path / "error.log"
    with gunicorn(env=env, workers=1, threads=1, ready_path=POLL_PATH,
                  extra_args=["--worker-connections", "3", "--error-logfile", str(log)]) as url:
        halves = half_requests(int(url.rsplit(":", 1)[1]), 5)
        try:
            time.sleep(0.5)
            closed = []
            for sock, _ in halves:
                sock.settimeout(0.5)
                try:
                    closed.append(sock.recv(100) == b"")
                except TimeoutError:
                    closed.append(False)
            assert closed == [True, True, False, False, False]
            assert poll(url).status_code == 200
        finally:
            for sock, _ in halves:
                sock.close()
    assert log.read_text().count("incomplete requests held: closing the oldest") == 1
