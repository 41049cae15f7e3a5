"""Play a tool-using Hermes through the emulator's admin plane, as the real server behaves.

The real Hermes (with the test model tests/integration/relay/test_approvals.py describes)
answers a question holding `RUN: <command>` by calling its terminal tool, which waits for
approval; after the decision (or after its own approval timeout) the run completes with
`Tool result: …`. Any other question gets the test model's fixed reply. `HermesDriver` watches
the emulator's runs and scripts exactly that with `observe`, using the outputs recorded from the
real server (tests/fixtures/). Beyond the test model, a question with several `RUN:` lines asks
about each command in turn within one run (until one is denied), as a real model calling
several tools would.
"""
import json
import re
import threading
import time

import requests

from ..background import InBackground

FAKE_REPLY = "Hello from the fake LLM. This is a fixed deterministic reply."
RUN_MARKER = re.compile(r"RUN: (.+)")
GUARD = "world/other-writable permissions"


class HermesDriver:
    """A thread that scripts every run of one emulator (`hermes_url`, default namespace).

    `outputs` maps "approved", "denied" and "timed_out" to the run output the real server gave;
    `approval_timeout_s` plays Hermes' own approval timeout. `choice_of(run_id, n)` says which
    choice the run's n-th approval (0 first) got; by default it is read from the run's event
    buffer, which the emulator keeps while a subscriber (the watcher) holds the stream; a test
    where nobody holds it (cron, a restart) must say (otherwise the run fails).
    """

    def __init__(self, hermes_url, outputs, *, approval_timeout_s=30.0, choice_of=None):
        self.url = hermes_url
        self.outputs = outputs
        self.approval_timeout_s = approval_timeout_s
        self.choice_of = choice_of or self._choice_from_events
        self.waiting_since = {}  # run id -> monotonic time it started waiting for approval
        self.commands = {}       # run id -> the commands still to run, the current one first
        self.decisions = {}      # run id -> how many approvals it had
        self.settled = {}        # run id -> what happened ("approved", "denied", …)
        self._done = set()
        self.hold = threading.Event()  # set: new runs stay queued (the agent is slow to start)
        self._http = requests.Session()
        self._running = InBackground(self._loop, name="hermes-driver", join_s=5)

    def __enter__(self):
        self._running.__enter__()
        return self

    def __exit__(self, *exc):
        self._running.__exit__(*exc)

    def _loop(self, stop):
        while not stop.is_set():
            try:
                self._step()
            except requests.RequestException:
                pass  # the server is starting or stopping: look again
            stop.wait(0.05)

    def _records(self, collection):
        answer = self._http.get(f"{self.url}/__admin/state/{collection}?limit=200", timeout=10)
        answer.raise_for_status()
        return {row["id"]: row["value"] for row in answer.json()["records"]}

    def _observe(self, run_id, **body):
        answer = self._http.post(f"{self.url}/__admin/hermes/runs/{run_id}/observe", json=body,
                                 timeout=10)
        answer.raise_for_status()

    def _step(self):
        owners = self._records("hermes-owners")
        for run_id, run in self._records("hermes-runs").items():
            if run_id not in self._done and run_id in owners:
                self._drive(run_id, run, owners[run_id].get("input") or "")

    def _drive(self, run_id, run, text):
        status = run["status"]
        if status == "stopping":
            self._settle(run_id, "cancelled", status="cancelled")
        elif status == "queued" and not self.hold.is_set():
            commands = [found.strip() for found in RUN_MARKER.findall(text)]
            if not commands:
                self._settle(run_id, "answered", status="completed", output=FAKE_REPLY)
                return
            self.commands[run_id] = commands
            self._ask(run_id, commands[0])
        elif status == "running" and run_id in self.waiting_since:
            del self.waiting_since[run_id]  # decided: approval.responded
            decided = self.decisions.get(run_id, 0)
            self.decisions[run_id] = decided + 1
            choice = self.choice_of(run_id, decided)
            if choice is None:  # say so rather than guess: the test must tell the driver
                self._settle(run_id, "unknown choice", status="failed",
                             error="the driver could not tell which choice was made")
                return
            outcome = "denied" if choice == "deny" else "approved"
            self._end_tool(run_id, run, error=outcome == "denied")
            self.commands[run_id].pop(0)
            if outcome == "approved" and self.commands[run_id]:
                self._ask(run_id, self.commands[run_id][0])
                return
            self._settle(run_id, outcome, status="completed", output=self.outputs[outcome])
        elif status == "waiting_for_approval" and \
                time.monotonic() - self.waiting_since[run_id] > self.approval_timeout_s:
            # Hermes denies by itself. An emulator that keeps the approval timeout itself
            # applies it when the run is read, so read it as a client would.
            run = self._http.get(f"{self.url}/v1/runs/{run_id}", timeout=10).json()
            self._end_tool(run_id, run, error=True)
            self._settle(run_id, "timed_out", status="completed",
                         output=self.outputs["timed_out"])

    def _ask(self, run_id, command):
        self._observe(run_id, status="running", events=[
            {"event": "tool.started", "tool": "terminal", "preview": command}])
        asking = {"status": "waiting_for_approval", "approval": {
            "command": command, "pattern_key": GUARD, "pattern_keys": [GUARD],
            "description": GUARD, "allow_permanent": True}}
        try:  # an emulator that keeps Hermes' approval timeout itself is told this one
            self._observe(run_id, **asking, approval_timeout_s=self.approval_timeout_s)
        except requests.HTTPError:
            self._observe(run_id, **asking)
        self.waiting_since[run_id] = time.monotonic()

    def _end_tool(self, run_id, run, *, error):
        """The gated tool call ends, unless the emulator already ended it (it does so itself
        when it follows Hermes there)."""
        if run.get("last_event") != "tool.completed":
            self._observe(run_id, status="running", events=[
                {"event": "tool.completed", "tool": "terminal", "duration": 0.01,
                 "error": error}])

    def _settle(self, run_id, what, **observation):
        self._observe(run_id, **observation)
        self.settled[run_id] = what
        self._done.add(run_id)

    def _choice_from_events(self, run_id, n):
        events = sorted((e for e in self._records("hermes-events").values()
                         if e.get("run_id") == run_id), key=lambda e: e["seq"])
        choices = [json.loads(e["frame"].split("data: ", 1)[1])["choice"] for e in events
                   if '"approval.responded"' in e.get("frame", "")]
        return choices[n] if n < len(choices) else None
