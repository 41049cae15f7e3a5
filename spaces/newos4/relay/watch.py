"""The relay as a long-running process: the cron pass, run as soon as something changed.

It notices a change with one `stat` of the chat folder and one of the relay folder per tick:
every write of a thread file or of the relay state renames a temporary file into its folder,
which moves the folder's mtime. Runs in flight are polled every `relay_watch_poll_ms`. A pass is
`Relay.run`, under the same state lock as cron's, so the two never act on one question twice.
"""
import os
import threading
import time

from ..files import LockTimeout, lock
from .passes import Relay
from .polling import RunPoller
from .run_events import EventFollowers

# A folder mtime this close to now may change again within the same timestamp tick (a coarse
# filesystem clock) and still look the same, so it is not trusted: the next tick runs another
# pass (git's "racily clean" rule).
RACY_NS = 50_000_000
# With nothing in flight and nothing changing, a pass now and then still runs: it costs a few
# milliseconds and catches what no folder showed (a clock jump past a retry time).
IDLE_S = 30.0
MAX_BACKOFF_S = 30.0


class WatcherBusy(Exception):
    """Another watcher holds the watch lock."""


class Watcher:
    """Relay passes when the chat or relay state changed, a run is in flight or a retry is due."""

    def __init__(self, service, client, *, log, monotonic=time.monotonic, wall_ns=time.time_ns):
        self.service = service
        self.settings = service.settings
        self.client = client
        self.log = log
        self.monotonic = monotonic
        self.wall_ns = wall_ns
        self.tick_s = self.settings.relay_watch_tick_ms / 1000
        self.poll_s = self.settings.relay_watch_poll_ms / 1000
        self.lock_path = self.settings.data_dir / "relay" / "watch.lock"
        self._folders = (self.settings.chat_dir, self.settings.data_dir / "relay")
        self._seen = None
        self._due = 0.0
        self._woken = threading.Event()
        self._failures = 0
        self._said = set()
        self.passes = 0
        # Polls outlive a pass: one that Hermes is slow to answer does not hold the pass up.
        # Each run has at most one poll out, and a few more threads cover runs just dropped.
        self.poller = RunPoller(client, threads=self.settings.relay_max_in_flight + 4)
        # One event subscription per run in flight, for its whole life: the details of each
        # approval request arrive there (and an arrival wakes the next tick for a pass).
        self.events = EventFollowers(client, wake=self._wake)

    def _wake(self, run_id):
        """An approval request arrived on a run's stream: a pass now, not at the next tick."""
        self._due = 0.0
        self._woken.set()

    def watch(self, stop, *, alive=lambda: None):
        """Tick until `stop` (a threading.Event) is set; WatcherBusy if another one watches.

        `alive()` is called after every tick (the first one after the first pass): a service
        manager's readiness and watchdog signal.
        """
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with lock(self.lock_path, 0):
                while not stop.is_set():
                    self.step()
                    alive()
                    self._woken.wait(self.tick_s)  # a tick, or sooner when woken
                    self._woken.clear()
        except LockTimeout:
            raise WatcherBusy(f"another watcher holds {self.lock_path}")
        finally:
            self.poller.close()
            self.events.close()

    def step(self):
        """One tick: a pass when a folder changed or a pass is due; True when one ran."""
        snapshot = self._snapshot()
        if snapshot == self._seen and self.monotonic() < self._due:
            return False
        # Taken before the pass: whatever changes during it (our own writes too) shows next tick.
        self._seen = None if self._racy(snapshot) else snapshot
        log = self._say_once()
        relay = Relay(self.service, self.client, log=log, poller=self.poller,
                      poll_wait_s=self.poll_s, events=self.events)
        try:
            problems = relay.run()
        except Exception as exc:  # a pass that broke must not end the watcher: retry later
            log(f"relay: PROBLEM pass failed: {exc.__class__.__name__}: {exc}", True)
            problems = 1
        self.passes += 1
        self._schedule(relay.state, problems)
        if relay.state is not None:
            self.events.keep_only({e.run_id for e in relay.state.threads.values()})
        return True

    def _say_once(self):
        """A log for one pass that drops lines the previous pass said (a state that persists,
        such as an unreachable Hermes or a thread given up on, is said once, not every tick)."""
        said, self._said = self._said, set()

        def log(line, problem):
            self._said.add(line)
            if line not in said:
                self.log(line, problem)
        return log

    def _schedule(self, state, problems):
        now = self.monotonic()
        if problems:
            self._failures += 1
            self._due = now + min(MAX_BACKOFF_S, self.poll_s * 2 ** self._failures)
            return
        self._failures = 0
        due = now + IDLE_S
        now_ms = self.service.clock.now_ms()
        for entry in (state.threads.values() if state else ()):
            if entry.run_id:
                due = min(due, now + self.poll_s)
                if self._unasked(entry):  # the poll lagged the event: look again soon
                    due = min(due, now + self.tick_s)
            elif entry.attempts < self.settings.relay_max_attempts:
                due = min(due, now + max(self.poll_s, (entry.next_ms - now_ms) / 1000))
        self._due = due

    def _unasked(self, entry):
        """True when the run's events hold an approval request its thread was not asked yet."""
        follower = self.events.get(entry.run_id)
        return follower is not None and not entry.asked \
            and len(follower.requests) > entry.approvals

    def _snapshot(self):
        marks = []
        for folder in self._folders:
            try:
                stat = os.stat(folder)
                marks.append((stat.st_ino, stat.st_mtime_ns))
            except FileNotFoundError:
                marks.append(None)
        return tuple(marks)

    def _racy(self, snapshot):
        now = self.wall_ns()
        return any(mark and now - mark[1] < RACY_NS for mark in snapshot)
