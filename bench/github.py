"""GitHub emulator under gunicorn: pulls/list paging cost, a create/get round trip; prints ratios.

(a) `GET /repos/o/r/pulls?per_page=10` latency in a repository with 1000 PRs (first, middle and
    last page) vs one with 10 PRs: filtering, sorting and paging run in SQL, so a page should
    cost about the same whatever the repository holds (target: ratio <= 1.5).
(b) `POST /pulls` then `GET /pulls/{n}` round trips per second vs small-JSON GETs on a bare
    Falcon app, same gunicorn config, several clients. Each trip also closes its PR
    (`PATCH`), so a client reuses its own head branch; the bare trip is three GETs. Every round
    starts from a freshly reset and seeded namespace: the runtime checkpoints the namespace's
    whole state after each write, so a namespace that grows without bound slows every write.
"""
import atexit
import concurrent.futures
import itertools
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import CLIENTS, SERVER, connect, report, trips_per_second  # noqa: E402
from testkit.servers import gunicorn  # noqa: E402

A, B = "a" * 40, "b" * 40
ROUNDS = 3
SAMPLES = 200


def call(conn, method, path, body=None, headers=None, expect=200):
    headers = dict(headers or {})
    if body is not None:
        headers["Content-Type"] = "application/json"
        body = json.dumps(body)
    conn.request(method, path, body=body, headers=headers)
    answer = conn.getresponse()
    data = answer.read()
    assert answer.status == expect, (method, path, answer.status, data[:300])
    return json.loads(data) if data else None


def seed(conn, name, branches, namespace=None):
    headers = {"x-mockingbird-namespace": namespace} if namespace else {}
    body = {"owner": "o", "name": name, "commits": [{"sha": A, "parents": []},
                                                    {"sha": B, "parents": [A]}],
            "branches": {"main": A, **{f"b{i}": B for i in range(branches)}}}
    call(conn, "POST", "/__admin/github/repositories", body, headers, expect=201)


def open_pulls(url, name, count):
    def worker(numbers):
        conn = connect(url)
        for i in numbers:
            call(conn, "POST", f"/repos/o/{name}/pulls",
                 {"title": f"PR {i}", "head": f"b{i}", "base": "main"}, expect=201)
        conn.close()
    chunks = [range(k, count, CLIENTS) for k in range(CLIENTS)]
    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(worker, chunks))


def page_latency(conn, path):
    """Median and p90 milliseconds of SAMPLES sequential GETs of one page."""
    times = []
    for _ in range(SAMPLES):
        started = time.perf_counter()
        items = call(conn, "GET", path)
        times.append((time.perf_counter() - started) * 1000)
        assert len(items) == 10, len(items)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.9)]


def main():
    folder = Path(tempfile.mkdtemp(prefix="bench-github-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    env = {"EMULATORS_DB": str(folder / "emulators.sqlite3"), "BENCH_BARE_DIR": str(folder)}
    with gunicorn("wsgi:github", env=env, ready_path="/__admin/health", **SERVER) as gh, \
            gunicorn("bench.bare:application", env=env, ready_path="/bare", **SERVER) as bare:
        conn = connect(gh)
        seed(conn, "small", 10)
        seed(conn, "big", 1000)
        open_pulls(gh, "small", 10)
        open_pulls(gh, "big", 1000)

        paths = {"10 PRs, page 1": "/repos/o/small/pulls?per_page=10",
                 "1000 PRs, page 1": "/repos/o/big/pulls?per_page=10",
                 "1000 PRs, page 50": "/repos/o/big/pulls?per_page=10&page=50",
                 "1000 PRs, page 100": "/repos/o/big/pulls?per_page=10&page=100"}
        for path in paths.values():  # warm up
            page_latency(conn, path)
        results = {label: page_latency(conn, path) for label, path in paths.items()}
        conn.close()
        small = results["10 PRs, page 1"][0]
        print("(a) pulls/list page of 10, sequential, ms (median / p90):")
        for label, (median, p90) in results.items():
            print(f"    {label:20s} {median:7.2f} / {p90:7.2f}   ratio vs 10 PRs: "
                  f"{median / small:5.2f}")

        trips = {"x-mockingbird-namespace": "trips"}
        heads = itertools.count()

        def github_trip(c, _):
            if not hasattr(c, "head"):
                c.head = f"b{next(heads)}"  # one head branch per client connection
            created = call(c, "POST", "/repos/o/trips/pulls",
                           {"title": "trip", "head": c.head, "base": "main"}, trips, expect=201)
            path = f"/repos/o/trips/pulls/{created['number']}"
            call(c, "GET", path, headers=trips)
            call(c, "PATCH", path, {"state": "closed"}, trips)

        def bare_trip(c, _):
            for _ in range(3):
                call(c, "GET", "/bare")

        def fresh_trips_namespace():
            c = connect(gh)
            call(c, "POST", "/__admin/reset", {}, trips)
            seed(c, "trips", CLIENTS, namespace="trips")
            c.close()

        fresh_trips_namespace()
        trips_per_second(gh, github_trip)  # warm up both
        trips_per_second(bare, bare_trip)
        ours, theirs = [], []
        for _ in range(ROUNDS):  # interleaved so both see the same machine load
            fresh_trips_namespace()
            heads = itertools.count()
            ours.append(trips_per_second(gh, github_trip))
            theirs.append(trips_per_second(bare, bare_trip))
    print(f"(b) github create+get+close vs bare falcon 3xGET, {CLIENTS} clients:")
    report("round trips/s", ours, theirs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
