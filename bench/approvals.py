"""Approval request -> visible in poll.php, with the watcher (`cron/relay.py --watch`) relaying.

Real gunicorn serves the chat. Hermes is a real server when HERMES_ORACLE_URL is set (one with
its terminal toolset, as tests/integration/relay/test_approvals.py describes; HERMES_ORACLE_KEY
if not the default key), else
the mounted emulator played by testkit.hermes.driver. One browser asks BENCH_APPROVAL_RUNS (20)
times `RUN: chmod -R 777 <temporary directory>`, polls poll.php every 20 ms until the request
message shows, then answers `deny` and waits for the answer. The delay measured runs from the
moment the run entered waiting_for_approval (the run's own `updated_at`, set by Hermes on this
same host) to the poll that first showed the request: p50 and p99.
"""
import atexit
import json
import os
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
from spaces.newos4.service import thread_of  # noqa: E402
from testkit.hermes.driver import HermesDriver  # noqa: E402
from testkit.hermes.oracle import ORACLE_KEY  # noqa: E402
from testkit.servers import REPO, gunicorn  # noqa: E402

RUNS = int(os.environ.get("BENCH_APPROVAL_RUNS", "20"))
POLL_S = 0.02
MARKER = "Hermes asks before running a command:"
OUTPUTS = {"approved": "Tool result: approved", "denied": "Tool result: denied",
           "timed_out": "Tool result: timed out"}


def percentile(samples, p):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, -(-p * len(ordered) // 100) - 1)]


def wait_until(check, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(POLL_S)
    raise RuntimeError("timed out")


def one_request(url, hermes, key, data, target):
    """Ask once; return seconds from waiting_for_approval to the request visible."""
    session, token = requests.Session(), secrets.token_hex(32)
    headers = {"X-Chat-Token": token}
    session.post(url + POST_PATH, json={"text": f"RUN: chmod -R 777 {target}"},
                 headers=headers, timeout=30).raise_for_status()

    def request_visible():
        messages = session.get(url + POLL_PATH, headers=headers, timeout=30).json()["messages"]
        return messages[-1]["text"].startswith(MARKER) and time.time()
    visible = wait_until(request_visible)
    state = json.loads((data / "relay" / "state.json").read_text())["threads"]
    run = session.get(f"{hermes}/v1/runs/{state[thread_of(token)]['run_id']}", timeout=30,
                      headers={"Authorization": f"Bearer {key}"}).json()
    assert run["status"] == "waiting_for_approval", run
    session.post(url + POST_PATH, json={"text": "deny"}, headers=headers,
                 timeout=30).raise_for_status()
    wait_until(lambda: session.get(url + POLL_PATH, headers=headers, timeout=30)
               .json()["messages"][-1]["text"].startswith("Tool result:"))
    return visible - run["updated_at"]


def main():
    folder = Path(tempfile.mkdtemp(prefix="bench-approvals-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    data, target = folder / "data", folder / "target"
    target.mkdir()
    server_env = {"NEWOS4_DATA_DIR": str(data), "EMULATORS_DB": str(folder / "emu.sqlite3"),
                  "NEWOS4_RATE_IP": "1000000", "NEWOS4_RATE_THREAD": "1000"}
    oracle = os.environ.get("HERMES_ORACLE_URL", "").rstrip("/")
    with gunicorn(env=server_env, workers=2, threads=4,
                  extra_args=("--access-logfile", "/dev/null")) as url:
        hermes = oracle or url + "/emulators/hermes"
        key = os.environ.get("HERMES_ORACLE_KEY", ORACLE_KEY) if oracle else ""
        env = {**os.environ, **server_env, "HERMES_API_URL": hermes, "HERMES_API_KEY": key,
               "NEWOS4_RELAY_ACCESS": "open"}  # it measures relaying, not pairing
        driver = None if oracle else HermesDriver(hermes, OUTPUTS).__enter__()
        watcher = subprocess.Popen([sys.executable, "cron/relay.py", "--watch"], cwd=REPO,
                                   env=env, stdout=subprocess.DEVNULL)
        try:
            time.sleep(1)  # started before the first question, as a service would be
            delays = [one_request(url, hermes, key, data, target) for _ in range(RUNS)]
        finally:
            watcher.terminate()
            watcher.wait(10)
            if driver:
                driver.__exit__(None, None, None)
    where = f"the real Hermes at {oracle}" if oracle else "the emulator (driven)"
    print(f"approval request -> visible in poll.php, watch mode, {RUNS} runs against {where}: "
          f"p50 {percentile(delays, 50):.3f}s p99 {percentile(delays, 99):.3f}s "
          f"(min {min(delays):.3f}s, max {max(delays):.3f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
