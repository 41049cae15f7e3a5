"""The real Hermes server a test may run against (opt-in, HERMES_ORACLE_URL), checked first.

A real Hermes keeps an `always` approval for good: in its config.yaml's `command_allowlist`
and in the running process, which does not read that file again. A case run after one
(another file's, or a hand-made one) sees `chmod -R 777 <dir>` run without being asked, and
would blame the relay. So every case that needs Hermes to ask first checks that it still does.
"""
import os
import tempfile
import time

import pytest
import requests

ORACLE_KEY = "oracle-test-key-0123456789abcdef"  # the oracle's default (HERMES_ORACLE_KEY)
SETTLING = ("queued", "running", "stopping", "started")


def real_hermes():
    """(URL, key) of the real server named by HERMES_ORACLE_URL, once it is seen to ask before
    `chmod -R 777 <dir>`; skips the case when the variable is not set."""
    url = os.environ.get("HERMES_ORACLE_URL")
    if not url:
        pytest.skip("HERMES_ORACLE_URL is not set (a real Hermes server with its terminal "
                    "toolset, to run this against)")
    url, key = url.rstrip("/"), os.environ.get("HERMES_ORACLE_KEY", ORACLE_KEY)
    problem = asks_before_chmod(url, key)
    if problem:
        pytest.fail(problem, pytrace=False)
    return url, key


def asks_before_chmod(url, key, timeout_s=60):
    """None when a run whose question is `RUN: chmod -R 777 <a new directory>` waits for
    approval (it is then denied, and ends); else why this server cannot be tested against."""
    headers = {"Authorization": f"Bearer {key}"}
    with tempfile.TemporaryDirectory() as target:
        submitted = requests.post(f"{url}/v1/runs", json={"input": f"RUN: chmod -R 777 {target}"},
                                  headers=headers, timeout=10)
        if submitted.status_code != 202:
            return f"the real Hermes at {url} refused a run: {submitted.status_code} " \
                   f"{submitted.text[:200]}"
        run = submitted.json()["run_id"]
        status = _settled(url, headers, run, timeout_s)
        if status == "waiting_for_approval":
            requests.post(f"{url}/v1/runs/{run}/approval", json={"choice": "deny"},
                          headers=headers, timeout=10)
            _settled(url, headers, run, timeout_s)
            return None
        ran = os.stat(target).st_mode & 0o777 == 0o777
    if ran:
        return (f"the real Hermes at {url} ran `chmod -R 777 <dir>` without asking: an earlier "
                "`always` allowed that pattern for good. Remove it from command_allowlist in "
                "the server's config.yaml (or set the server up afresh) and restart the server: "
                "the running process keeps it even after the file is rewritten")
    return (f"the real Hermes at {url} did not ask before `chmod -R 777 <dir>` (run {run} "
            f"ended {status}): is its terminal toolset on and its test model the one "
            "tests/integration/relay/test_approvals.py describes?")


def _settled(url, headers, run, timeout_s):
    deadline = time.monotonic() + timeout_s
    while True:
        status = requests.get(f"{url}/v1/runs/{run}", headers=headers,
                              timeout=10).json().get("status")
        if status not in SETTLING or time.monotonic() > deadline:
            return status
        time.sleep(0.05)
