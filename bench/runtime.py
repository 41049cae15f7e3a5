"""Emulator runtime overhead: a mutating provider request through the full pipeline (namespace,
fault check, dispatch, automatic checkpoint, journal, metrics, stamping) vs the same falcon
handler called bare with a ready instance. Same SQLite file settings, one run, side by side:
first in process (the pipeline's own cost, nothing else), then over HTTP through gunicorn
with several clients (what a client of the emulator sees).
Then the same write into namespaces of 10 and 10,000 records (a commit copies no rows: ~flat),
and what one automatic checkpoint adds to a handler's write on its own: the part of the
overhead that bounds the ratio (node row and its index, branch head, the undo entry of the
written row, WAL pages, amortized retention). BENCH_N (3000) requests per side;
BENCH_BREAKDOWN=1 adds the SQL of one full-pipeline request, statement by statement."""
import atexit
import io
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from emulators.runtime import Runtime, Settings  # noqa: E402
from testkit.counter_service import service  # noqa: E402

N = int(os.environ.get("BENCH_N", "3000"))
ROUNDS = 6
TARGET = 0.5


def environ(path, method="POST", namespace=None):
    env = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": "",
           "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80", "wsgi.url_scheme": "http",
           "wsgi.input": io.BytesIO(b""), "CONTENT_LENGTH": "0", "wsgi.errors": sys.stderr,
           "wsgi.version": (1, 0), "wsgi.multithread": False, "wsgi.multiprocess": False,
           "wsgi.run_once": False, "SERVER_PROTOCOL": "HTTP/1.1"}
    if namespace:
        env["HTTP_X_MOCKINGBIRD_NAMESPACE"] = namespace
    return env


def start_response(status, headers, exc_info=None):
    if not status.startswith("200"):
        raise SystemExit(f"unexpected status {status}")


def timed(call, n=None):
    """Seconds per call of `call`, run `n` times (default N) after a warm-up."""
    n = n or N
    for _ in range(50):  # warm up connections, caches and the timeline
        call()
    started = time.perf_counter()
    for _ in range(n):
        call()
    return (time.perf_counter() - started) / n


def side_by_side(first, second, rounds=ROUNDS):
    """Seconds per call of each, in interleaved rounds (the machine's load moves both alike);
    the best round of each, so a burst of outside load never decides the ratio."""
    firsts, seconds = [], []
    for _ in range(rounds):
        firsts.append(timed(first, N // rounds))
        seconds.append(timed(second, N // rounds))
    return min(firsts), min(seconds)


def main():
    folder = tempfile.mkdtemp(prefix="bench-runtime-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    runtime = Runtime(service, Settings(db=os.path.join(folder, "e.sqlite3")))
    provider = runtime.provider
    # A rule that matches nothing here, so fault evaluation does its real work per request.
    runtime.faults.add({"id": "elsewhere", "namespace": "full", "operationId": "getInfo",
                        "status": 500})

    def bare():
        env = environ("/counter")
        env["emulators.instance"] = runtime.instance("bare", method="POST")
        b"".join(provider(env, start_response))

    def full():
        b"".join(runtime(environ("/counter", namespace="full"), start_response))

    def bare_read():
        env = environ("/counter", method="GET")
        env["emulators.instance"] = runtime.instance("bare", method="GET")
        b"".join(provider(env, start_response))

    def full_read():
        b"".join(runtime(environ("/counter", method="GET", namespace="full"), start_response))

    bare_s, full_s = side_by_side(bare, full)
    print(f"in process, best of {ROUNDS} interleaved rounds of {N // ROUNDS} requests each")
    print("the smallest handler (test counter, POST /counter: one read, one write), the"
          " pipeline's worst case:")
    print(f"bare handler      {1 / bare_s:9.0f} req/s  {bare_s * 1e6:8.1f} us/req")
    print(f"full pipeline     {1 / full_s:9.0f} req/s  {full_s * 1e6:8.1f} us/req")
    print(f"ratio full/bare   {verdict(bare_s / full_s)}; overhead "
          f"{(full_s - bare_s) * 1e6:.1f} us/request")
    # The same for a read (no checkpoint): shown beside, not instead of, the write above.
    read_bare, read_full = side_by_side(bare_read, full_read)
    print(f"reads (GET, no checkpoint): bare {read_bare * 1e6:.1f} us, full {read_full * 1e6:.1f}"
          f" us, ratio {read_bare / read_full:.2f}x")
    # A checkpoint copies no rows (an undo log keeps old values): write latency must not follow
    # the namespace size.
    sizes = {}
    for size in (10, 10_000):
        namespace = f"size{size}"
        instance = runtime.instance(namespace, method="POST")
        with instance.transaction():
            for n in range(size):
                instance.records.put("items", n, {"id": n, "name": f"item {n}"})
        runtime.timeline.commit(namespace)
        sizes[size] = timed(lambda: b"".join(runtime(environ("/counter", namespace=namespace),
                                                     start_response)))
    print(f"write, 10 records    {sizes[10] * 1e6:8.1f} us/req;  10,000 records "
          f"{sizes[10_000] * 1e6:8.1f} us/req  ({sizes[10_000] / sizes[10]:.2f}x)")
    writer = runtime.instance("checkpointed", method="POST")

    def write(commit):
        with runtime.db.transaction():
            writer.records.put("counter", "c", {"value": 1})
            if commit:
                runtime.timeline.commit("checkpointed")
    alone, committed = side_by_side(lambda: write(False), lambda: write(True))
    print(f"checkpoint alone  {(committed - alone) * 1e6:8.1f} us/req (write {alone * 1e6:.1f}"
          f" us, write + checkpoint {committed * 1e6:.1f} us)")
    checkpoints = runtime.db.one("SELECT count(*) FROM checkpoints")[0]
    runtime.journal.drain()  # entries wait in segment files until a reader drains them
    journal = runtime.db.one("SELECT count(*) FROM journal")[0]
    print(f"(checkpoints kept {checkpoints}, journal rows {journal}, n={N})")
    real_handlers(folder)
    over_http(folder)
    if os.environ.get("BENCH_BREAKDOWN"):
        breakdown(runtime, full, os.path.join(folder, "e.sqlite3-wal"))
    return 0  # a report, not a gate: the machine's load moves the ratio between runs


def verdict(ratio):
    return f"{ratio:.2f}x ({'meets' if ratio >= TARGET else 'BELOW'} target >= {TARGET}x)"


def real_handlers(folder):
    """A real service's handlers, in process: GitHub pulls/get and pulls/update (validation,
    several reads, a write), full pipeline vs the same handler called bare."""
    from emulators.github.app import create_service
    runtime = Runtime(create_service(), Settings(db=os.path.join(folder, "github.sqlite3")))
    provider = runtime.provider
    a, b = "a" * 40, "b" * 40

    def request(method, path, body=None, namespace=None):
        env = environ(path, method=method, namespace=namespace)
        data = json.dumps(body).encode() if body is not None else b""
        env.update({"wsgi.input": io.BytesIO(data), "CONTENT_LENGTH": str(len(data)),
                    "CONTENT_TYPE": "application/json", "HTTP_HOST": "127.0.0.1"})
        return env

    def answer(status, headers, exc_info=None):
        if status[0] not in "23":
            raise SystemExit(f"unexpected status {status}")
    for namespace in ("full", "bare"):
        seed = {"owner": "o", "name": "r", "branches": {"main": a, "topic": b},
                "commits": [{"sha": a, "parents": []}, {"sha": b, "parents": [a]}]}
        b"".join(runtime(request("POST", "/__admin/github/repositories", seed, namespace),
                         answer))
        pull = {"title": "t", "head": "topic", "base": "main"}
        b"".join(runtime(request("POST", "/repos/o/r/pulls", pull, namespace), answer))
    titles = itertools.count()

    def call(method, body, bare):
        env = request(method, "/repos/o/r/pulls/1", body() if body else None,
                      None if bare else "full")
        if bare:
            env["emulators.instance"] = runtime.instance("bare", method=method)
            return b"".join(provider(env, answer))
        return b"".join(runtime(env, answer))
    print("a real service's handlers (GitHub), in process:")
    for label, method, body in (("pulls/get   ", "GET", None),
                                ("pulls/update", "PATCH", lambda: {"title": f"t{next(titles)}"})):
        bare_s, full_s = side_by_side(lambda: call(method, body, True),
                                      lambda: call(method, body, False))
        print(f"    {label} bare {bare_s * 1e6:7.1f} us, full {full_s * 1e6:7.1f} us, ratio"
              f" {verdict(bare_s / full_s)}; overhead {(full_s - bare_s) * 1e6:.1f} us")


def over_http(folder):
    """The same POST /counter over HTTP: the runtime and the bare provider, each under
    gunicorn (bench.harness config), several clients, interleaved rounds."""
    from bench.harness import CLIENTS, SERVER, report, trips_per_second
    from testkit.servers import gunicorn
    env = {"EMULATORS_DB": os.path.join(folder, "http.sqlite3")}

    def trip(namespace):
        headers = {"x-mockingbird-namespace": namespace} if namespace else {}

        def one(conn, _):
            conn.request("POST", "/counter", body=b"", headers=headers)
            answer = conn.getresponse()
            answer.read()
            assert answer.status == 200, answer.status
        return one

    with gunicorn("bench.counter_apps:full", env=env, ready_path="/__admin/health",
                  **SERVER) as full, \
            gunicorn("bench.counter_apps:bare", env=env, ready_path="/counter", **SERVER) as bare:
        trips_per_second(full, trip("http"))  # warm up both
        trips_per_second(bare, trip(None))
        ours, theirs = [], []
        for _ in range(3):
            ours.append(trips_per_second(full, trip("http")))
            theirs.append(trips_per_second(bare, trip(None)))
    print(f"over HTTP (gunicorn, {CLIENTS} clients, POST /counter): full pipeline vs bare")
    report("requests/s", ours, theirs)
    print(f"    ratio {verdict(max(ours) / max(theirs))}")


def breakdown(runtime, call, wal):
    """BENCH_BREAKDOWN=1: the SQL of one full-pipeline request, statement by statement (time
    per request and calls per request), and the WAL frames one request's COMMIT writes."""
    from collections import Counter
    real = runtime.db.conn
    spent, calls = Counter(), Counter()

    class Timed:  # a sqlite3.Connection cannot be patched: wrap this thread's connection
        def execute(self, sql, params=()):
            started = time.perf_counter()
            try:
                return real.execute(sql, params)
            finally:
                spent[sql[:48]] += time.perf_counter() - started
                calls[sql[:48]] += 1

        def __getattr__(self, name):
            return getattr(real, name)

    runtime.db._local.conn = Timed()
    try:
        total = timed(call)
    finally:
        runtime.db._local.conn = real
    runs = N + 50
    print(f"-- per request (us, calls) of {total * 1e6:.1f} us:")
    for sql, seconds in spent.most_common():
        print(f"{seconds / runs * 1e6:8.1f} {calls[sql] / runs:5.2f}  {sql}")
    print(f"{sum(spent.values()) / runs * 1e6:8.1f}        all SQL")
    real.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for _ in range(100):
        call()
    frames = os.path.getsize(wal) / (4096 + 24) / 100
    print(f"WAL frames per request {frames:.1f}")


if __name__ == "__main__":
    sys.exit(main())
