"""git over the GitHub emulator's smart HTTP vs git's own servers, side by side; prints ratios.

A repository of COMMITS commits (each adds a file of FILE_BYTES incompressible text and
edits a shared one, so the pack holds deltas) is pushed into an empty repository and cloned
back, ROUNDS times each, through:
  - the emulator under gunicorn (`wsgi:github`, 2 workers x 4 threads: bench/harness.py),
  - `git http-backend` (git's smart HTTP CGI) behind a minimal threaded HTTP server,
  - `git daemon` (git's native protocol, no HTTP at all),
with the same stock git client. Prints median seconds and the emulator's ratio to each
(target: clone within 3x of git http-backend).
"""
import atexit
import base64
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import SERVER  # noqa: E402
from testkit.servers import gunicorn, unused_port  # noqa: E402

COMMITS = int(os.environ.get("BENCH_GIT_COMMITS", "1000"))
FILE_BYTES = int(os.environ.get("BENCH_GIT_FILE_BYTES", "13000"))
ROUNDS = int(os.environ.get("BENCH_GIT_ROUNDS", "3"))
ENV = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1",
       "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "Bench",
       "GIT_AUTHOR_EMAIL": "bench@example.com", "GIT_COMMITTER_NAME": "Bench",
       "GIT_COMMITTER_EMAIL": "bench@example.com"}


def git(*args, cwd=None, data=None):
    done = subprocess.run(["git", *args], cwd=cwd, env=ENV, input=data, capture_output=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done.stdout


def build(path):
    """Write the benchmark repository with `git fast-import` (seconds, not minutes)."""
    git("init", "-q", "-b", "main", str(path))
    rng = random.Random(28)
    stream = []
    for n in range(COMMITS):
        text = base64.b64encode(rng.randbytes(FILE_BYTES * 3 // 4)).decode()
        shared = "".join(f"line {i} of commit {n if i % 50 == n % 50 else 0}\n"
                         for i in range(200))
        message = f"Commit {n}\n"
        stream.append(f"commit refs/heads/main\nmark :{n + 1}\n"
                      f"committer Bench <bench@example.com> {1_700_000_000 + n} +0000\n"
                      f"data {len(message)}\n{message}")
        if n:
            stream.append(f"from :{n}\n")
        for name, body in ((f"files/{n:04d}.txt", text), ("shared.txt", shared)):
            stream.append(f"M 100644 inline {name}\ndata {len(body.encode())}\n{body}\n")
    git("fast-import", "--quiet", cwd=path, data="".join(stream).encode())
    git("gc", "-q", "--aggressive", cwd=path)
    size = sum(p.stat().st_size for p in (path / ".git" / "objects").rglob("*") if p.is_file())
    return size


def timed(*args, cwd=None):
    started = time.perf_counter()
    git(*args, cwd=cwd)
    return time.perf_counter() - started


class _CGI(BaseHTTPRequestHandler):
    """Run `git http-backend` per request, as a web server's CGI handler would."""

    root = None
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def _cgi(self):
        path, _, query = self.path.partition("?")
        env = {**ENV, "GIT_PROJECT_ROOT": self.root, "GIT_HTTP_EXPORT_ALL": "1",
               "REQUEST_METHOD": self.command, "PATH_INFO": path, "QUERY_STRING": query,
               "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "REMOTE_USER": "bench", "REMOTE_ADDR": "127.0.0.1"}
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        length = self.headers.get("Content-Length")
        if length:
            env["CONTENT_LENGTH"] = length
            body = self.rfile.read(int(length))
        elif self.headers.get("Transfer-Encoding") == "chunked":
            body = b"".join(iter(self._chunk, b""))
        else:
            body = b""
        proc = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True)
        head, _, payload = proc.stdout.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.decode().split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _chunk(self):
        size = int(self.rfile.readline().strip(), 16)
        data = self.rfile.read(size) if size else b""
        self.rfile.readline()
        return data

    do_GET = do_POST = _cgi


def http_backend(root):
    handler = type("Handler", (_CGI,), {"root": str(root)})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}"


def reference_rounds(source, folder, url_of, fresh):
    pushes, clones = [], []
    for n in range(ROUNDS):
        name = fresh(n)
        pushes.append(timed("push", "-q", url_of(name), "main", cwd=source))
        clones.append(timed("clone", "-q", url_of(name), str(folder / f"clone-{name}")))
    return statistics.median(pushes), statistics.median(clones)


def main():
    folder = Path(tempfile.mkdtemp(prefix="bench-git-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    source = folder / "source"
    size = build(source)
    print(f"repository: {COMMITS} commits, {size / 1e6:.1f} MB of packed objects")

    bare = folder / "bare"
    bare.mkdir()

    def fresh_bare(n):
        git("init", "-q", "--bare", str(bare / f"r{n}.git"))
        return f"r{n}"

    results = {}
    server, url = http_backend(bare)
    try:
        results["git http-backend"] = reference_rounds(
            source, folder, lambda name: f"{url}/{name}.git", fresh_bare)
    finally:
        server.shutdown()

    daemon_root = folder / "daemon"
    daemon_root.mkdir()
    port = unused_port()
    daemon = subprocess.Popen(["git", "daemon", "--reuseaddr", "--export-all",
                               "--enable=receive-pack", f"--base-path={daemon_root}",
                               f"--port={port}", "--listen=127.0.0.1", str(daemon_root)],
                              env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)

        def fresh_daemon(n):
            git("init", "-q", "--bare", str(daemon_root / f"d{n}.git"))
            return f"d{n}"
        results["git daemon"] = reference_rounds(
            source, folder, lambda name: f"git://127.0.0.1:{port}/{name}.git", fresh_daemon)
    finally:
        daemon.terminate()
        daemon.wait()

    env = {"EMULATORS_DB": str(folder / "emulators.sqlite3")}
    with gunicorn("wsgi:github", env=env, **SERVER) as base:
        def fresh_emulator(n):
            requests.post(f"{base}/__admin/github/repositories", timeout=30,
                          json={"owner": "bench", "name": f"e{n}"}).raise_for_status()
            return f"e{n}"
        emulator = base.replace("http://", "http://x-access-token:bench@")
        results["emulator"] = reference_rounds(
            source, folder, lambda name: f"{emulator}/bench/{name}.git", fresh_emulator)
    database = sum(p.stat().st_size for p in folder.glob("emulators.sqlite3*"))
    print(f"emulator database after {ROUNDS} pushes: {database / 1e6:.1f} MB")

    print(f"{'server':<18} {'push s':>8} {'clone s':>8}")
    for name, (push, clone) in results.items():
        print(f"{name:<18} {push:>8.2f} {clone:>8.2f}")
    push, clone = results["emulator"]
    for name in ("git http-backend", "git daemon"):
        ref_push, ref_clone = results[name]
        print(f"emulator / {name}: push {push / ref_push:.1f}x, clone {clone / ref_clone:.1f}x")


if __name__ == "__main__":
    main()
