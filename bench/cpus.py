"""The shipped worker on one CPU per worker (as shipped: gunicorn.conf.py's `pre_fork`) beside
the same server whose workers run on any CPU, side by side in one run.

Both are `gunicorn -c gunicorn.conf.py -w N wsgi:application` on the chat; the second's config
is the shipped one with a `pre_fork` that pins nothing. wrk keeps its connections, as nginx's
upstream `keepalive` does, so every request after the first goes through the reader. Rows, in
interleaved slices (each cycle runs every row for BENCH_SLICE seconds): posts (64 users take
turns, so the posts in flight are to different threads; each posts 20 times from its own
address, limits raised) and idle polls of a 1-message thread. For each,
the ratio one-CPU / any-CPU of req/s (median of per-cycle ratios, target >= 1) and each side's
CPU per request (user and system, from /proc, the median of the cycles).
Knobs (env): BENCH_CYCLES=6, BENCH_SLICE=1, BENCH_CONNECTIONS=16, BENCH_WORKERS=2, BENCH_DATA
(a folder on a real disk: on tmpfs fsync is free).
"""
import atexit
import contextlib
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.emulators import CONNS, SLICE, WORKERS, Server, request  # noqa: E402
from spaces.newos4.app import POLL_PATH, POST_PATH  # noqa: E402

CYCLES = int(os.environ.get("BENCH_CYCLES", "6"))
LIMITS = {"NEWOS4_RATE_THREAD": "1000000", "NEWOS4_RATE_IP": "1000000",
          "NEWOS4_MAX_THREADS": "1000000"}
ANY_CPU = "def pre_fork(server, worker):\n    pass  # every worker on any CPU\n"

LUA = r"""
local prefix, counter, post = "%(prefix)s", 0, %(post)s
function request()
  counter = counter + 1
  if not post then
    return wrk.format("GET", nil, {["X-Chat-Token"] = "%(token)s"})
  end
  -- 64 users take turns (requests in flight at once belong to different threads), each
  -- posting 20 times
  local user = counter %% 64 + 64 * math.floor(counter / 1280)
  return wrk.format("POST", nil, {["Content-Type"] = "application/json",
    ["X-Chat-Token"] = prefix .. string.format("%%016x", user),
    ["X-Forwarded-For"] = string.format("10.%%d.%%d.%%d", user %% 250, user / 250 %% 250,
                                        user / 62500 %% 250)},
    '{"text": "bench message ' .. counter .. '"}')
end
function done(summary, latency, requests)
  io.write(string.format('BENCHJSON {"requests": %%d, "seconds": %%f, "bad": %%d}\n',
    summary.requests, summary.duration / 1e6, summary.errors.connect + summary.errors.read +
    summary.errors.write + summary.errors.timeout + summary.errors.status))
end
"""


def cpu_seconds(pid):
    """(user, system) seconds of `pid` and its children (the arbiter and its workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    user = system = 0
    for task in [pid, *children(pid)]:
        try:
            fields = Path(f"/proc/{task}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # a worker that just restarted
            continue
        user, system = user + int(fields[11]), system + int(fields[12])
    return user / tick, system / tick


def children(pid):
    listing = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(child) for child in listing.split()]


def slice_of(server, path, lua, folder):
    """One wrk slice: req/s, bad answers, and CPU microseconds per request (user, system)."""
    script = Path(folder) / f"row-{secrets.token_hex(4)}.lua"
    script.write_text(lua)
    before = cpu_seconds(server.proc.pid)
    out = subprocess.run(["wrk", "-t", "1", "-c", str(CONNS), "-d", f"{SLICE}s", "--timeout",
                          "10s", "-s", str(script), server.url + path],
                         capture_output=True, text=True, timeout=SLICE + 60)
    after = cpu_seconds(server.proc.pid)
    script.unlink()
    line = next((x for x in out.stdout.splitlines() if x.startswith("BENCHJSON ")), None)
    if out.returncode or line is None:
        raise SystemExit(f"wrk failed: {out.stdout[-500:]} {out.stderr[-500:]}")
    result = json.loads(line[len("BENCHJSON "):])
    count = max(1, result["requests"])
    return {"rps": result["requests"] / result["seconds"], "bad": result["bad"],
            "user_us": 1e6 * (after[0] - before[0]) / count,
            "sys_us": 1e6 * (after[1] - before[1]) / count}


def main():
    if not shutil.which("wrk"):
        print("bench cpus: needs wrk (apt-get install wrk)")
        return 1
    folder = tempfile.mkdtemp(prefix="bench-cpus-", dir=os.environ.get("BENCH_DATA"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    any_cpu = Path(folder) / "any-cpu.conf.py"
    any_cpu.write_text(f"exec(open({str(REPO / 'gunicorn.conf.py')!r}).read())\n{ANY_CPU}")
    token = secrets.token_hex(32)
    with contextlib.ExitStack() as stack:
        sides, cursor = {}, None
        for name, extra in (("one CPU", ()), ("any CPU", ("-c", str(any_cpu)))):
            env = {**LIMITS, "NEWOS4_DATA_DIR": os.path.join(folder, name.replace(" ", "-"))}
            server = Server("wsgi:application", env, folder)
            server.cmd[-1:-1] = extra  # a later -c wins
            sides[name] = stack.enter_context(server)
            status, answer = request(server.url, "POST", POST_PATH, {"text": "the one message"},
                                     headers={"X-Chat-Token": token})
            if status != 201:
                raise SystemExit(f"{name}: the seeding post answered {status}: {answer}")
            cursor = max(cursor or 0, answer["epoch"])
        rows = {"post": (POST_PATH, "true"), "idle poll": (f"{POLL_PATH}?since={cursor}", "false")}
        samples = {(row, name): [] for row in rows for name in sides}
        for cycle in range(CYCLES + 1):  # the first is a warm-up, not kept
            for row, (path, post) in rows.items():
                for name in (sides if cycle % 2 else reversed(list(sides))):
                    lua = LUA % {"prefix": secrets.token_hex(24), "post": post, "token": token}
                    got = slice_of(sides[name], path, lua, folder)
                    if cycle:
                        samples[row, name].append(got)
    report(rows, sides, samples)
    return 0


def report(rows, sides, samples):
    print(f"shipped worker, one CPU per worker vs any CPU: gunicorn.conf.py -w {WORKERS}, wrk at"
          f" {CONNS} kept connections, {CYCLES} interleaved cycles of {SLICE}-s slices")
    print(f"| {'row':10s} | {'CPUs':8s} | {'req/s':>7s} | {'user us/req':>11s} |"
          f" {'sys us/req':>10s} | {'bad':>4s} |")
    print(f"|{'-' * 12}|{'-' * 10}|{'-' * 8}:|{'-' * 12}:|{'-' * 11}:|{'-' * 5}:|")
    verdicts = []
    for row in rows:
        for name in sides:
            mine = samples[row, name]
            print(f"| {row:10s} | {name:8s} | {statistics.median(s['rps'] for s in mine):7.0f}"
                  f" | {statistics.median(s['user_us'] for s in mine):11.0f}"
                  f" | {statistics.median(s['sys_us'] for s in mine):10.0f}"
                  f" | {sum(s['bad'] for s in mine):4d} |")
        ratios = [a["rps"] / b["rps"] for a, b in zip(samples[row, "one CPU"],
                                                      samples[row, "any CPU"])]
        value = statistics.median(ratios)
        verdicts.append(f"{row}: one CPU / any CPU {value:.2f} (target 1: "
                        f"{'meets' if value >= 1 else 'BELOW'}; cycles "
                        f"{', '.join(f'{r:.2f}' for r in ratios)})")
    for line in verdicts:
        print("  " + line)


if __name__ == "__main__":
    sys.exit(main())
