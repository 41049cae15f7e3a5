"""Hermes emulator vs a bare Falcon endpoint, same gunicorn config, one run; prints the ratio.

One round trip = POST /v1/runs (202) then GET /v1/runs/{id} (200), as a polling client does;
the bare round trip is two small-JSON GETs on the bare Falcon app. Both from one http.client
connection per client, several clients in parallel.
"""
import atexit
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import SERVER, report, trips_per_second  # noqa: E402
from testkit.servers import gunicorn  # noqa: E402

ROUNDS = 3
HERMES = "wsgi:hermes"  # the emulator as shipped, like bench/github.py's wsgi:github


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


def main():
    folder = Path(tempfile.mkdtemp(prefix="bench-hermes-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    env = {"EMULATORS_DB": str(folder / "emulators.sqlite3"), "BENCH_BARE_DIR": str(folder)}
    with gunicorn(HERMES, env=env, ready_path="/__admin/health", **SERVER) as hermes, \
            gunicorn("bench.bare:application", env=env, ready_path="/bare", **SERVER) as bare:
        trips_per_second(hermes, hermes_trip)  # warm up both
        trips_per_second(bare, bare_trip)
        ours, theirs = [], []
        for _ in range(ROUNDS):  # interleaved so both see the same machine load
            ours.append(trips_per_second(hermes, hermes_trip))
            theirs.append(trips_per_second(bare, bare_trip))
    print("hermes create+poll vs bare falcon 2xGET:")
    report("round trips/s", ours, theirs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
