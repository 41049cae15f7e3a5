"""Record how a real Hermes Agent API server handles approvals of dangerous commands.

Run against a real server (loopback only) whose terminal toolset is on, whose model answers
`RUN: <command>` with one `terminal` call, and whose approval timeout is short (8 s or so):

    python tests/emulators/hermes/real_server/record_approvals.py --url http://127.0.0.1:8642 \
        --out tests/emulators/hermes/real_server/fixtures/approvals.json

Each scenario is a list of steps, each the request sent and what came back: status and JSON
body, or the frames of an event stream (data payloads and comments, in arrival order). Run ids,
the temporary directory and the model's tool result text are replaced by placeholders so the
file is stable; times are kept as the floats they were. test_approvals.py replays every
scenario against the emulator. The `always` scenario runs last: it makes the real server allow
the pattern permanently, so later runs would not ask.
"""
import argparse
import json
import os
import queue
import re
import socket
import tempfile
import threading
import time
import urllib.parse

import requests

DEFAULT_KEY = "oracle-test-key-0123456789abcdef"
RUN_ID = re.compile(r"run_[0-9a-f]{32}")


class Recorder:
    """One real server, the steps of the scenario being recorded, and the placeholders."""

    def __init__(self, url, key):
        host = urllib.parse.urlparse(url).hostname
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise SystemExit(f"refusing a non-loopback server: {host}")
        self.url, self.key = url.rstrip("/"), key
        self.steps, self.names = [], {}
        self.tmpdir = tempfile.mkdtemp(prefix="hermes-approval-")

    def headers(self):
        return {"Authorization": f"Bearer {self.key}"}

    def placeholder(self, value):
        """Replace run ids and the temporary directory inside any JSON value."""
        if isinstance(value, str):
            value = value.replace(self.tmpdir, "<dir>")
            return RUN_ID.sub(lambda m: self.name_of(m.group(0)), value)
        if isinstance(value, dict):
            return {k: self.placeholder(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.placeholder(v) for v in value]
        return value

    def name_of(self, run_id):
        """The placeholder of a run id: <run1>, <run2>, … in order of first appearance."""
        return self.names.setdefault(run_id, f"<run{len(self.names) + 1}>")

    def call(self, method, path, body=None, raw=None, note=None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None
                                            else None)
        headers = {**self.headers(), "Content-Type": "application/json"}
        res = requests.request(method, self.url + path, data=data, headers=headers, timeout=30)
        step = {"request": {"method": method, "path": path}, "status": res.status_code}
        if raw is not None:
            step["request"]["raw"] = raw.decode()
        elif body is not None:
            step["request"]["body"] = body
        step["body"] = res.json()
        if note:
            step["note"] = note
        self.steps.append(self.placeholder(step))
        return res.json()

    def create(self, command):
        return self.call("POST", "/v1/runs", {"input": f"RUN: {command}"})["run_id"]

    def wait_status(self, run_id, wanted, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = requests.get(f"{self.url}/v1/runs/{run_id}", headers=self.headers(),
                               timeout=10).json()
            if got.get("status") in wanted:
                return got
            time.sleep(0.1)
        raise SystemExit(f"{run_id} never reached {wanted}")

    def subscribe(self, run_id):
        return Stream(self, run_id)


class Stream:
    """An event stream read in a thread of its own; frames arrive on a queue."""

    def __init__(self, recorder, run_id):
        self.recorder, self.frames = recorder, queue.Queue()
        self.response = requests.get(f"{recorder.url}/v1/runs/{run_id}/events",
                                     headers=recorder.headers(), stream=True, timeout=(5, 120))
        self.status = self.response.status_code
        self.started = time.monotonic()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        """Split what arrives into frames as soon as it arrives (read1: no waiting for more)."""
        try:
            pending = ""
            while chunk := self.response.raw.read1(65536):
                pending += chunk.decode("utf-8")
                *blocks, pending = pending.split("\n\n")
                for text in blocks:
                    elapsed = round(time.monotonic() - self.started, 1)
                    if text.startswith("data: "):
                        self.frames.put({"data": json.loads(text[6:]), "after_s": elapsed})
                    else:
                        self.frames.put({"comment": text.lstrip(": "), "after_s": elapsed})
        except (requests.RequestException, OSError, ValueError, AttributeError):  # closed by us
            pass
        self.frames.put(None)

    def until(self, predicate, timeout=60):
        """Frames up to and including the first one the predicate accepts (or the end)."""
        got, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                item = self.frames.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if item is None:
                got.append({"end": True})
                break
            got.append(item)
            if predicate(item):
                break
        return got

    def record(self, predicate, note=None, timeout=60):
        frames = self.until(predicate, timeout)
        step = {"request": {"method": "GET", "path": "/v1/runs/{run}/events"},
                "status": self.status, "frames": frames}
        if note:
            step["note"] = note
        self.recorder.steps.append(self.recorder.placeholder(step))
        return frames

    def close(self):
        """Hang up at once, as a client that gives up does (closing would wait for a read)."""
        hang_up(self.response)


def hang_up(response):
    """Shut a streamed response's socket down, then close it (a plain close waits for a read).

    The socket sits on the connection, or, when the server said it will close the connection
    after this answer, only under the response's file object."""
    connection = getattr(response.raw, "_connection", None)
    sock = getattr(connection, "sock", None)
    if sock is None:  # found nowhere once the stream has ended
        reader = getattr(response.raw._fp, "fp", None)
        sock = getattr(getattr(reader, "raw", None), "_sock", None)
    if sock is not None:
        sock.shutdown(socket.SHUT_RDWR)
    response.close()


def is_event(name):
    return lambda item: item.get("data", {}).get("event") == name


def closed(item):
    return item.get("comment") == "stream closed" or item.get("end")


def decided(rec, choice, extra_steps=(), between=False):
    """A run asked about chmod, decided with `choice`, read to the end."""
    run_id = rec.create(f"chmod -R 777 {rec.tmpdir}")
    events = rec.subscribe(run_id)
    events.record(is_event("approval.request"), timeout=30)
    rec.call("GET", f"/v1/runs/{run_id}", note="while waiting")
    for step in extra_steps:
        step(rec, run_id)
    rec.call("POST", f"/v1/runs/{run_id}/approval", {"choice": choice})
    if between:  # the model answers within ~0.1 s: this GET can miss the window (re-record)
        events.record(is_event("tool.completed"))
        rec.call("GET", f"/v1/runs/{run_id}", note="decided, the model is still answering")
    events.record(closed)
    events.close()
    rec.call("GET", f"/v1/runs/{run_id}", note="settled")
    return run_id


def scenario_once(rec):
    def invalid(rec, run_id):
        rec.call("POST", f"/v1/runs/{run_id}/approval", {"choice": "maybe"})
        rec.call("POST", f"/v1/runs/{run_id}/approval", raw=b"{not json")
    run_id = decided(rec, "once", [invalid])
    rec.call("POST", f"/v1/runs/{run_id}/approval", {"choice": "once"}, note="finished run")
    rec.call("GET", f"/v1/runs/{run_id}/events", note="after the first stream ended")


def scenario_twice(rec):
    """Approval while nothing is pending, then twice in a row, then unknown runs."""
    run_id = rec.create(f"chmod -R 777 {rec.tmpdir}")
    rec.call("POST", f"/v1/runs/{run_id}/approval", {"choice": "once"},
             note="before any request")
    events = rec.subscribe(run_id)
    events.record(is_event("approval.request"))
    rec.call("POST", f"/v1/runs/{run_id}/approval", {"choice": "  Approve "})
    rec.call("POST", f"/v1/runs/{run_id}/approval", {"choice": "once"}, note="again")
    events.record(closed)
    events.close()
    unknown = "run_" + "0" * 32
    rec.call("POST", f"/v1/runs/{unknown}/approval", {"choice": "once"})
    rec.call("POST", f"/v1/runs/{unknown}/approval", raw=b"{not json")


def scenario_timeout(rec):
    """Nobody decides: Hermes denies by itself after its approval timeout."""
    run_id = rec.create(f"chmod -R 777 {rec.tmpdir}")
    events = rec.subscribe(run_id)
    events.record(is_event("approval.request"), timeout=30)
    rec.call("GET", f"/v1/runs/{run_id}", note="while waiting")
    events.record(is_event("tool.completed"), timeout=120)
    # The model answers within ~0.1 s: these two can miss the window (then re-record).
    rec.call("GET", f"/v1/runs/{run_id}", note="timed out, the model is still answering")
    rec.call("POST", f"/v1/runs/{run_id}/approval", {"choice": "once"},
             note="timed out, the model is still answering")
    events.record(closed, timeout=60)
    events.close()
    rec.call("GET", f"/v1/runs/{run_id}", note="settled")
    rec.call("POST", f"/v1/runs/{run_id}/approval", {"choice": "once"}, note="too late")


def scenario_second_subscriber(rec, listen_s):
    """Read to the request, disconnect, subscribe again: what does the second stream get?"""
    run_id = rec.create(f"chmod -R 777 {rec.tmpdir}")
    first = rec.subscribe(run_id)
    first.record(is_event("approval.request"), note="first subscriber, then it disconnects")
    first.close()
    second = rec.subscribe(run_id)
    rec.call("POST", f"/v1/runs/{run_id}/approval", {"choice": "once"})
    rec.wait_status(run_id, {"completed"})
    second.record(lambda item: False, timeout=listen_s,
                  note=f"second subscriber, listened {listen_s} s; the run completed meanwhile")
    second.close()
    rec.call("GET", f"/v1/runs/{run_id}", note="settled")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8642")
    parser.add_argument("--key", default=os.environ.get("HERMES_ORACLE_KEY", DEFAULT_KEY))
    parser.add_argument("--out", required=True)
    parser.add_argument("--listen", type=float, default=40,
                        help="seconds the second subscriber listens (default 40)")
    args = parser.parse_args(argv)
    scenarios = [("once", scenario_once), ("twice", scenario_twice),
                 ("session", lambda rec: decided(rec, "session")),
                 ("deny", lambda rec: decided(rec, "deny", between=True)),
                 ("timeout", scenario_timeout),
                 ("second_subscriber", lambda rec: scenario_second_subscriber(rec, args.listen)),
                 ("always", lambda rec: decided(rec, "always"))]
    recorded = {}
    for name, scenario in scenarios:
        rec = Recorder(args.url, args.key)
        scenario(rec)
        recorded[name] = rec.steps
        print(name, len(rec.steps), "steps", flush=True)
    with open(args.out, "w", encoding="utf-8") as out:
        json.dump(recorded, out, indent=1, ensure_ascii=False)
        out.write("\n")


if __name__ == "__main__":
    main()
