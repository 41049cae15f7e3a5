"""Reading a run's event stream for the approval requests in it, never holding up a pass.

Hermes (0.19.0) buffers a run's events until the first subscriber, gives them to that one
subscriber only, and drops them when its stream ends: a second subscription to the same run
sends nothing and never closes. So each run is subscribed to at most once, ever (the relay
state records it), and the reading happens on a thread of its own with deadlines of its own:
the watcher keeps one subscription per run open for the run's whole life, so a second approval
in the same run is seen too; a cron run reads briefly and lets go.
"""
import threading
import time

from .hermes_client import HermesUnreachable

# Hermes sends a keepalive comment after 30 s of quiet; a stream silent much longer is dead.
IDLE_TIMEOUT_S = 75.0


class RunEvents:
    """One subscription to one run, read on a daemon thread: the approval requests seen so
    far (each the `approval.request` event's JSON object), in order."""

    def __init__(self, client, run_id, *, on_request=None, idle_timeout_s=IDLE_TIMEOUT_S):
        self.run_id = run_id
        self.requests = []
        self.ended = threading.Event()
        self.got_request = threading.Event()
        self.why_ended = None
        self.first_waiting = None  # when a pass first saw the run wait with no request here
        self._client = client
        self._on_request = on_request
        self._idle_timeout_s = idle_timeout_s
        self._stream = None
        self._closed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, name=f"relay-events-{run_id}",
                                        daemon=True)
        self._thread.start()

    def _read(self):
        try:
            stream = self._client.events(self.run_id, idle_timeout_s=self._idle_timeout_s)
        except HermesUnreachable as exc:
            self.why_ended = str(exc)
            stream = None
        else:
            if stream is None:
                self.why_ended = "Hermes refused the subscription"
        with self._lock:
            self._stream = stream
            if self._closed and stream is not None:
                stream.close()
        try:
            for event in stream.events() if stream is not None else ():
                if event.get("event") == "approval.request":
                    self.requests.append(event)
                    self.got_request.set()
                    if self._on_request:
                        self._on_request(self.run_id)
        finally:
            self.why_ended = self.why_ended or "the stream ended"
            self.ended.set()

    def request(self, index):
        """The `index`-th approval request of the run (0 first), or None if not seen (yet)."""
        requests = self.requests
        return requests[index] if index < len(requests) else None

    def close(self):
        with self._lock:
            self._closed = True
            if self._stream is not None:
                self._stream.close()


def read_requests_briefly(client, run_id, wait_s):
    """Subscribe once, read what the run's stream holds for up to `wait_s`, let go.

    For a run already waiting for approval: Hermes buffered its events, so they arrive at
    once; the stream ends for good when we let go (nobody can read it again).
    """
    events = RunEvents(client, run_id)
    deadline = time.monotonic() + wait_s
    while not (events.got_request.is_set() or events.ended.is_set()) \
            and time.monotonic() < deadline:
        events.ended.wait(0.02)
    events.close()
    return list(events.requests)


class EventFollowers:
    """The watcher's subscriptions, one per run in flight, kept across passes.

    `wake(run_id)` is called from a reading thread when an approval request arrives, so the
    watcher can run a pass at once instead of at its next poll.
    """

    def __init__(self, client, *, wake=None):
        self._client = client
        self._wake = wake
        self._runs = {}

    def follow(self, run_id):
        if run_id not in self._runs:
            self._runs[run_id] = RunEvents(self._client, run_id, on_request=self._wake)
        return self._runs[run_id]

    def get(self, run_id):
        return self._runs.get(run_id)

    def keep_only(self, run_ids):
        """Close the subscriptions of runs nobody follows any more."""
        for run_id in [r for r in self._runs if r not in run_ids]:
            self._runs.pop(run_id).close()

    def close(self):
        self.keep_only(())
