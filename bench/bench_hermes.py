"""Hermes emulator vs a bare Falcon endpoint, same gunicorn config, one run; prints the ratio.

One round trip = POST /v1/runs (202) then GET /v1/runs/{id} (200), as a polling client does;
the bare round trip is two small-JSON GETs on the bare Falcon app. Both over one keep-alive
connection per client, several clients in parallel.
"""
import concurrent.futures
import os
import http.client
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.servers import gunicorn  # noqa: E402

SECONDS = float(os.environ.get("BENCH_SECONDS", "3"))
CLIENTS = int(os.environ.get("BENCH_CLIENTS", "4"))
ROUNDS = 3
SERVER = {"workers": 2, "threads": 4, "extra_args": ("--access-logfile", "/dev/null")}
HERMES = "tests.emulators.hermes.gunicorn_app:application"


def hermes_trip(conn, n):
    conn.request("POST", "/v1/runs", body=json.dumps({"input": f"bench {n}"}),
                 headers={"Content-Type": "application/json"})
    answer = conn.getresponse()
    run_id = json.loads(answer.read())["run_id"]
    assert answer.status == 202, answer.status
    conn.request("GET", f"/v1/runs/{run_id}")
    answer = conn.getresponse()
    answer.read()
    assert answer.status == 200, answer.status


def bare_trip(conn, n):
    for _ in range(2):
        conn.request("GET", "/bare")
        answer = conn.getresponse()
        answer.read()
        assert answer.status == 200, answer.status


def rate(url, trip):
    """Round trips per second of CLIENTS parallel keep-alive clients for SECONDS."""
    host, port = url.removeprefix("http://").split(":")

    def client(_):
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        done, deadline = 0, time.perf_counter() + SECONDS
        while time.perf_counter() < deadline:
            trip(conn, done)
            done += 1
        conn.close()
        return done

    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        started = time.perf_counter()
        total = sum(pool.map(client, range(CLIENTS)))
    return total / (time.perf_counter() - started)


def main():
    folder = Path(tempfile.mkdtemp(prefix="bench-hermes-"))
    env = {"EMULATORS_DB": str(folder / "emulators.sqlite3"), "BENCH_BARE_DIR": str(folder)}
    with gunicorn(HERMES, env=env, ready_path="/__admin/health", **SERVER) as hermes, \
            gunicorn("bench.bare:application", env=env, ready_path="/bare", **SERVER) as bare:
        rate(hermes, hermes_trip)  # warm up both
        rate(bare, bare_trip)
        ours, theirs = [], []
        for _ in range(ROUNDS):  # interleaved so both see the same machine load
            ours.append(rate(hermes, hermes_trip))
            theirs.append(rate(bare, bare_trip))
    best_ours, best_bare = max(ours), max(theirs)
    print(f"hermes create+poll: {best_ours:8.1f} round trips/s   (rounds: "
          + ", ".join(f"{x:.0f}" for x in ours) + ")")
    print(f"bare falcon 2xGET:  {best_bare:8.1f} round trips/s   (rounds: "
          + ", ".join(f"{x:.0f}" for x in theirs) + ")")
    print(f"ratio hermes/bare:  {best_ours / best_bare:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
