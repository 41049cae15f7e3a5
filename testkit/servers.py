"""Start real gunicorn for integration tests: unused port, readiness poll, log on failure."""
import contextlib
import http.server
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parent.parent


def unused_port():
    """Return a loopback TCP port that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serving_in_a_thread(handler):
    """Serve `handler` (an http.server handler class) on an unused loopback port from a thread
    of this process; yield its base URL; stop it afterwards."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class ServerFailed(RuntimeError):
    """The server did not become ready; the message carries its log."""


@contextlib.contextmanager
def gunicorn(app="wsgi:application", *, env=None, workers=3, threads=4, ready_path="/__ready__",
             ready_status=None, timeout=20.0, extra_args=(), python=sys.executable,
             unix_socket=None):
    """Run `gunicorn APP` on an unused loopback port; yield its base URL; stop it afterwards.

    `threads=None` keeps gunicorn.conf.py's request threads (as shipped); `python` is the
    interpreter whose gunicorn runs; `unix_socket` (a path) binds that socket too, as a
    client that speaks HTTP over a unix socket (`gh`) reaches it.
    Readiness: any HTTP answer on `ready_path` (or exactly `ready_status` when given), and the
    socket accepting connections.
    """
    port = unused_port()
    log = tempfile.NamedTemporaryFile(prefix="gunicorn-", suffix=".log", delete=False)
    sizing = [] if threads is None else ["--threads", str(threads)]
    binds = ["--bind", f"127.0.0.1:{port}"] + (["--bind", f"unix:{unix_socket}"]
                                               if unix_socket else [])
    cmd = [str(python), "-m", "gunicorn", "-c", str(REPO / "gunicorn.conf.py"),
           *binds, "--workers", str(workers), *sizing,
           "--access-logfile", "-", *extra_args, app]
    proc = subprocess.Popen(cmd, cwd=REPO, env={**os.environ, **(env or {})},
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise ServerFailed(f"gunicorn exited {proc.returncode}:\n{_read(log.name)}")
            try:
                # `Connection: close`: the probe leaves no kept connection behind (the answer
                # held here would keep it open, and a stopping worker waits for those)
                answer = requests.get(url + ready_path, headers={"Connection": "close"},
                                      timeout=1)
                if (ready_status is None or answer.status_code == ready_status) and \
                        (unix_socket is None or _accepts(unix_socket)):
                    break
            except (requests.ConnectionError, requests.Timeout):
                pass
            if time.monotonic() > deadline:
                raise ServerFailed(f"gunicorn not ready after {timeout}s:\n{_read(log.name)}")
            time.sleep(0.1)
        yield url
    finally:
        # The test is over and its files are thrown away: SIGKILL to the arbiter and its workers
        # at once (their own session), not a shutdown to wait for; tests of stopping send their
        # own signals.
        with contextlib.suppress(ProcessLookupError):  # a test may have stopped it all
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        log.close()
        os.unlink(log.name)


def _accepts(path):
    """Whether a unix socket accepts a connection now."""
    with socket.socket(socket.AF_UNIX) as sock:
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


def _read(path):
    return Path(path).read_text(errors="replace")[-20000:]


class Watcher:
    """`cron/relay.py --watch` in its own process, its output in files."""

    def __init__(self, env, folder, name="watch"):
        self.out, self.err = folder / f"{name}.out", folder / f"{name}.err"
        with open(self.out, "w") as out, open(self.err, "w") as err:
            self.proc = subprocess.Popen([sys.executable, "cron/relay.py", "--watch"], cwd=REPO,
                                         env=env, stdout=out, stderr=err)
        deadline = time.monotonic() + 20
        while "relay: watching" not in self.stdout():
            assert self.proc.poll() is None, self.stderr()
            assert time.monotonic() < deadline, "the watcher did not start"
            time.sleep(0.05)

    def stdout(self):
        return self.out.read_text()

    def stderr(self):
        return self.err.read_text()

    def stop(self, signum=signal.SIGTERM):
        """Send `signum`; return (exit status, seconds until it exited)."""
        started = time.monotonic()
        self.proc.send_signal(signum)
        try:
            status = self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            status = "killed"
        return status, time.monotonic() - started

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
