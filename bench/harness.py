"""What the emulator benchmarks share: client connections and parallel round-trip rates,
BENCH_CLIENTS (4) clients for BENCH_SECONDS (3) per round. Each client keeps its connection
while the server does (gunicorn.conf.py's `keepalive`); the service and the bare app alike."""
import concurrent.futures
import http.client
import os
import time

SECONDS = float(os.environ.get("BENCH_SECONDS", "3"))
CLIENTS = int(os.environ.get("BENCH_CLIENTS", "4"))
SERVER = {"workers": 2, "threads": 4, "extra_args": ("--access-logfile", "/dev/null")}


def connect(url, timeout=60):
    """An HTTP connection to a loopback base URL (reconnects by itself when the server closed
    it)."""
    host, port = url.removeprefix("http://").split(":")
    return http.client.HTTPConnection(host, int(port), timeout=timeout)


def trips_per_second(url, trip, *, clients=CLIENTS, seconds=SECONDS):
    """Round trips per second of `clients` parallel clients for `seconds`.

    `trip(conn, n)` performs one round trip; `n` counts that client's trips.
    """
    def client(_):
        conn = connect(url)
        done, deadline = 0, time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            trip(conn, done)
            done += 1
        conn.close()
        return done

    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        started = time.perf_counter()
        total = sum(pool.map(client, range(clients)))
    return total / (time.perf_counter() - started)


def report(label, ours, theirs, unit="round trips/s"):
    """Print both series of interleaved rounds and the ratio of the best of each."""
    best_ours, best_bare = max(ours), max(theirs)
    print(f"    {label}: {best_ours:8.1f} vs bare {best_bare:8.1f} {unit}   (rounds: "
          + ", ".join(f"{x:.0f}" for x in ours) + " vs "
          + ", ".join(f"{x:.0f}" for x in theirs) + f");  ratio {best_ours / best_bare:.3f}")
