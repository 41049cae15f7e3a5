"""Post -> answer visible through the relay: the watcher (`cron/relay.py --watch`) beside cron.

Real gunicorn serves the chat and the mounted Hermes emulator. BENCH_RELAY_USERS (5) browsers
each ask BENCH_RELAY_QUESTIONS (10) questions in turn through post.php and poll poll.php every
50 ms until the answer shows, pausing up to a cron period before each question (a person reads,
then types). An agent thread completes each run the moment the relay records
it (the emulator's observe control), so the figures are the relay's own delay:
question->submitted, finished->visible and post->visible, p50/p99, for the watcher and for cron
run every BENCH_CRON_PERIOD_S (2) seconds, which is also given in periods (cron's is a minute).
It also prints what noticing costs: one stat of chat/ against a stat of each of 500 thread
files, and the watcher's CPU time while idle.
"""
import atexit
import concurrent.futures
import json
import os
import random
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spaces.newos4.app import POLL_PATH, POST_PATH  # noqa: E402
from testkit.background import InBackground  # noqa: E402
from testkit.servers import REPO, gunicorn  # noqa: E402

USERS = int(os.environ.get("BENCH_RELAY_USERS", "5"))
QUESTIONS = int(os.environ.get("BENCH_RELAY_QUESTIONS", "10"))
CRON_PERIOD_S = float(os.environ.get("BENCH_CRON_PERIOD_S", "2"))
IDLE_S = 5.0
# How often a browser polls while it waits: the resolution of "visible", and load on gunicorn
# (users / POLL_S requests a second) that the relay's own requests queue behind.
POLL_S = 0.05


def percentile(samples, p):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, -(-p * len(ordered) // 100) - 1)]


class Agent:
    """Completes every run as soon as it appears in the relay state; notes when."""

    def __init__(self, state_path, hermes):
        self.state_path, self.hermes = state_path, hermes
        self.submitted, self.finished = {}, {}

    def run(self, stop):
        session, seen, mark = requests.Session(), set(), None
        while not stop.wait(0.002):
            try:
                stat = self.state_path.stat()
                if (stat.st_mtime_ns, stat.st_size) == mark:
                    continue
                mark = (stat.st_mtime_ns, stat.st_size)
                threads = json.loads(self.state_path.read_text())["threads"]
            except (FileNotFoundError, ValueError):
                continue
            for entry in threads.values():
                run_id = entry.get("run_id")
                if run_id and run_id not in seen:
                    seen.add(run_id)
                    self.submitted[entry["question"]] = time.monotonic()
                    session.post(f"{self.hermes}/__admin/hermes/runs/{run_id}/observe",
                                 json={"status": "completed", "output": f"re {entry['question']}"},
                                 timeout=30).raise_for_status()
                    self.finished[entry["question"]] = time.monotonic()


def converse(url, token):
    """Ask QUESTIONS questions in turn; return [(question id, posted at, visible at)]."""
    session, samples = requests.Session(), []
    headers = {"X-Chat-Token": token}
    pause = random.Random(token)
    for n in range(QUESTIONS):
        # A person reads, then types: without a pause every question would be posted just
        # after the tick that delivered the last answer, and wait a whole period for cron.
        time.sleep(pause.uniform(0, CRON_PERIOD_S))
        posted_at = time.monotonic()
        answer = session.post(url + POST_PATH, json={"text": f"question {n}"}, headers=headers,
                              timeout=30)
        answer.raise_for_status()
        question, cursor = answer.json()["id"], answer.json()["epoch"]
        while True:
            messages = session.get(f"{url}{POLL_PATH}?since={cursor}", headers=headers,
                                   timeout=30).json()["messages"]
            if any(m["text"] == f"re {question}" for m in messages):
                samples.append((question, posted_at, time.monotonic()))
                break
            time.sleep(POLL_S)
    return samples


def one_mode(url, data, env, relay):
    """Run the conversations with `relay` (a context manager) relaying; return the samples."""
    agent = Agent(data / "relay" / "state.json", url + "/emulators/hermes")
    with InBackground(agent.run, name="agent", join_s=None), relay(env), \
            concurrent.futures.ThreadPoolExecutor(USERS) as pool:
        tokens = [secrets.token_hex(32) for _ in range(USERS)]
        asked = [s for user in pool.map(lambda t: converse(url, t), tokens) for s in user]
    return {
        "question->submitted": [agent.submitted[q] - posted for q, posted, _ in asked],
        "finished->visible": [visible - agent.finished[q] for q, _, visible in asked],
        "post->visible": [visible - posted for _, posted, visible in asked],
    }


class watching:
    def __init__(self, env):
        self.env = env

    def __enter__(self):
        self.proc = subprocess.Popen([sys.executable, "cron/relay.py", "--watch"], cwd=REPO,
                                     env=self.env, stdout=subprocess.DEVNULL)
        time.sleep(1)  # started before the first question, as a service would be
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(10)


def every_period(env):
    """cron: `cron/relay.py` at the start of every period."""
    def tick(stop):
        while not stop.wait(CRON_PERIOD_S - time.time() % CRON_PERIOD_S):
            subprocess.run([sys.executable, "cron/relay.py"], cwd=REPO, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return InBackground(tick, name="cron", join_s=60)


def noticing_costs(folder):
    """Microseconds for one stat of a 500-thread chat/ and for a stat of each of its files."""
    chat = folder / "scan"
    chat.mkdir()
    for n in range(500):
        (chat / f"{n:016x}.json").write_text("{}")
    rounds = 2000
    started = time.perf_counter()
    for _ in range(rounds):
        os.stat(chat)
    one_stat = (time.perf_counter() - started) / rounds * 1e6
    rounds = 50
    started = time.perf_counter()
    for _ in range(rounds):
        for entry in os.scandir(chat):
            entry.stat()
    scan = (time.perf_counter() - started) / rounds * 1e6
    return one_stat, scan


def idle_cpu_s(env):
    """CPU seconds the watcher uses in IDLE_S seconds with nothing to do."""
    with watching(env) as watcher:
        def cpu():  # nanoseconds on a CPU, all of the process's threads
            tasks = Path(f"/proc/{watcher.proc.pid}/task")
            return sum(int((task / "schedstat").read_text().split()[0])
                       for task in tasks.iterdir()) / 1e9
        time.sleep(2)  # past start-up (imports, the first passes) even on a loaded machine
        before = cpu()
        time.sleep(IDLE_S)
        return cpu() - before


def main():
    folder = Path(tempfile.mkdtemp(prefix="bench-relay-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    data = folder / "data"
    server_env = {"NEWOS4_DATA_DIR": str(data), "EMULATORS_DB": str(folder / "emu.sqlite3"),
                  "NEWOS4_RATE_IP": "1000000"}
    results = {}
    with gunicorn(env=server_env, workers=2, threads=4,
                  extra_args=("--access-logfile", "/dev/null")) as url:
        env = {**os.environ, **server_env, "HERMES_API_URL": url + "/emulators/hermes",
               "NEWOS4_RELAY_MAX_IN_FLIGHT": str(max(4, USERS)),
               "NEWOS4_RELAY_ACCESS": "open"}  # it measures relaying, not pairing
        results["watch"] = one_mode(url, data, env, watching)
        results["cron"] = one_mode(url, data, env, every_period)
        idle = idle_cpu_s(env)
    one_stat, scan = noticing_costs(folder)
    count = USERS * QUESTIONS
    print(f"relay latency over {count} questions ({USERS} threads at once), the agent "
          f"completing each run as soon as it is submitted:")
    for measure in ("question->submitted", "finished->visible", "post->visible"):
        watch, cron = results["watch"][measure], results["cron"][measure]
        print(f"    {measure:20} watch p50 {percentile(watch, 50):6.3f}s p99 "
              f"{percentile(watch, 99):6.3f}s | cron every {CRON_PERIOD_S:g}s p50 "
              f"{percentile(cron, 50):6.3f}s p99 {percentile(cron, 99):6.3f}s "
              f"({percentile(cron, 50) / CRON_PERIOD_S:.2f} / "
              f"{percentile(cron, 99) / CRON_PERIOD_S:.2f} periods)")
    print("    (cron's period is a minute when installed: its waits are periods of 60 s; the "
          "watcher's do not depend on it)")
    print(f"noticing a change: one stat of chat/ {one_stat:.1f} us vs a stat of each of 500 "
          f"thread files {scan:.0f} us ({scan / one_stat:.0f}x): every 100 ms tick, "
          f"{2 * one_stat / 1e3:.3f}% vs {scan / 1e3:.1f}% of a core (two folders vs 500 files); "
          f"the watcher idle used {idle / IDLE_S * 100:.2f}% of a core over {IDLE_S:g}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
