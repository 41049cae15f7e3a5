"""The relay: hand waiting chat threads to Hermes' runs API and write its answers back.

One invocation (a cron tick) polls the runs it has in flight, delivers finished answers, then
submits newly waiting threads, within a time budget; it never waits in a loop. Its state
(thread -> question, run, attempts, next retry) lives in `$NEWOS4_DATA_DIR/relay/state.json`,
written atomically. Every submission carries an Idempotency-Key derived from the thread, the
question's message id and a generation counter, so a crash between submit and record, or a
lost response, replays the same run instead of starting a second one.

Every pass (a cron tick's, or one of the watcher's) holds `relay/state.json.lock` and reads the
state afresh under it, so a cron run beside the watcher sees exactly what the watcher left:
passes never interleave, and each one makes the same decisions cron's sequential runs make.
"""
import dataclasses
import time

from .. import errors
from ..files import LockTimeout, lock
from .access import LET_IN_LINE, Access, is_let_in, waits_behind_notice
from .answers import answer_parts, repair_unicode, run_request
from .approvals import Approvals, watcher_alive
from .hermes_client import HermesUnreachable
from .lost_runs import LostSubmissions
from .modes import mode_conflict
from .outcomes import Deliver, Drop, Resubmit, Tell, Unreachable
from .polling import RunPoller
from .records import RelayRecord
from .state import RelayState, StateUnreadable, pass_lock_wait_s, state_path
from ..service import THREAD_FAULTS

ACTIVE = {"queued", "running", "stopping", "waiting_for_approval", "started"}
FAILED = {"failed", "cancelled", "interrupted"}
MAX_BACKOFF_S = 3600


class Relay:
    """One relay invocation over `service` (the chat rules) and `client` (a HermesClient).

    Each thread is handled on its own: a thread or answer that cannot be handled is reported
    once (thread id, why) and skipped, and the other threads are still relayed. When Hermes
    does not answer at all, the run stops contacting it and says so in one line. Approvals
    (approvals.py) and submissions whose answer was lost (lost_runs.py) are collaborators of
    the pass: they decide with their own rules, and the pass acts on their outcome.
    """

    def __init__(self, service, client, *, log, monotonic=time.monotonic, reported=(),
                 poller=None, poll_wait_s=None, events=None, access=None):
        self.service = service
        self.settings = service.settings
        self.client = client
        # Who may reach Hermes: asked before anything of a thread goes there (access.py).
        self.access = access or Access.for_settings(self.settings, service.clock)
        self.poller = poller  # shared across passes by the watcher; else one for this pass
        self.poll_wait_s = poll_wait_s
        self.events = events  # the watcher's run event subscriptions (cron: None)
        self.log = log
        self.monotonic = monotonic
        self.state_path = state_path(self.settings)
        self.state = None  # read under the state lock by run()
        self.approvals = self.lost = None  # the pass's collaborators, made by run()
        self.problems = 0
        self.unreachable = None  # why Hermes gave no answer, once it did not
        self._reported = set(reported)  # threads already reported in this invocation

    def run(self):
        """Poll in-flight runs, then submit waiting threads; return the number of problems.

        Holds the state lock for the whole pass and reads the state under it. Another pass
        may hold it for as long as its budget; waiting longer than that is a problem.
        """
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        wait_s = pass_lock_wait_s(self.settings)
        try:
            with lock(f"{self.state_path}.lock", wait_s):
                if not self._read_state():
                    return self.problems
                say = self._collaborator_log
                self.approvals = Approvals(self.service, self.client, self.state, say=say,
                                           events=self.events, monotonic=self.monotonic)
                self.lost = LostSubmissions(
                    self.client, say=say, now_ms=self._now,
                    bound_s=self.settings.relay_run_timeout_s,
                    grace_s=self.settings.relay_transcript_grace_s)
                return self._pass()
        except LockTimeout:
            self._say(f"another relay pass held {self.state_path}.lock for {wait_s}s; "
                      "nothing relayed this time")
            return self.problems

    def _read_state(self):
        """Read the state under the lock, saying what was wrong with it; False when it cannot
        be read at all (then nothing is relayed, and nothing written over it)."""
        try:
            self.state, said = RelayState.for_pass(self.state_path, now_ms=self._now())
        except StateUnreadable as exc:
            self._say(str(exc))
            return False
        for line in said:
            self._say(line)
        return True

    def _pass(self):
        cron = self.events is None  # the watcher follows runs' events; a cron pass does not
        conflict = mode_conflict(
            self.state_path.with_name("modes.json"), "cron" if cron else "watch",
            self.settings.relay_access, now_ms=self._now(),
            watcher_alive=lambda: watcher_alive(self.settings))
        if conflict:  # two policies at once would be the looser one: neither relays
            self._say(conflict)
            return self.problems
        unreadable = self.access.problem()
        for note in self.access.take_notes():  # a mode it narrowed
            self._say(note)
        if unreadable:  # who is let in is unknown: nothing goes to Hermes, nothing is told
            self._say(unreadable)
            return self.problems
        deadline = self.monotonic() + self.settings.relay_budget_s
        waiting = {row["thread"]: row for row in self._waiting()}
        polled = self._poll_runs(waiting)
        for thread in sorted(self.state.threads):
            if self.monotonic() > deadline:
                self._say("time budget spent; the rest waits for the next run", problem=False)
                return self.problems
            if self.unreachable:
                break
            if thread in self._reported:
                continue  # its file cannot be read now: keep its run and record for later
            if not self.access.admits(thread):
                self._isolated(thread, self._shut_out, thread)
                continue
            self._isolated(thread, self._follow, thread, waiting.get(thread), polled.get(thread))
        # Delivering changed which threads wait: look again before submitting.
        waiting = [] if self.unreachable else self._waiting()
        for row in sorted(waiting, key=lambda r: r["last_epoch"]):
            if self.monotonic() > deadline:
                self._say("time budget spent; the rest waits for the next run", problem=False)
                break
            if self._isolated(row["thread"], self._submit, row) is False or self.unreachable:
                break
        if self.events is not None:
            self.approvals.subscribe_new_runs()
        if self.unreachable:
            pending = sum(1 for e in self.state.threads.values() if e.run_id)
            waiting_now = len(self._waiting())
            self._say(f"Hermes is unreachable at {getattr(self.client, 'base_url', 'its URL')} "
                      f"({self.unreachable}); {pending} run(s) in flight and {waiting_now} "
                      "waiting thread(s) wait for the next run")
        return self.problems

    def _waiting(self):
        rows, skipped = self.service.summaries(awaiting_only=True)
        for thread, why in skipped:
            self._thread_problem(thread, why)
        released = [self._isolated(t, self._released, t) for t in self.access.releases()]
        return rows + [row for row in released if row]

    def _released(self, thread):
        """A thread just let in whose question waits behind the notice it was told: it is told
        once that it is let in (LET_IN_LINE: the page shows from it that an answer is on its
        way), and the row is for its newest message before that line, answered after the line.
        None when it holds no such question (then the access state stops offering it, unless
        a run of it is in flight)."""
        messages = self._history_or_empty(thread)
        if waits_behind_notice(messages):
            self.service.announce(thread, messages[-1]["id"], LET_IN_LINE)
            messages = self._history_or_empty(thread)  # what was written meanwhile counts too
        asked = [m for m in messages[:-1] if m["author"] != "hermes"]
        if messages and is_let_in(messages[-1]) and asked:
            return {"thread": thread, "last_id": messages[-1]["id"], "input": asked[-1]["id"],
                    "last_epoch": messages[-1]["epoch"]}
        if thread not in self.state.threads:
            self.access.released(thread)
        return None

    def _history_or_empty(self, thread):
        try:
            return self.service.history(thread)
        except errors.ThreadNotFound:
            return []

    def _isolated(self, thread, step, *args):
        """Run one thread's step; a fault in it is that thread's problem, not the run's."""
        try:
            return step(*args)
        except THREAD_FAULTS + (ValueError, KeyError, TypeError) as exc:
            self._thread_problem(thread, f"{exc.__class__.__name__}: {exc}")
            return None

    def _thread_problem(self, thread, why):
        if thread not in self._reported:
            self._reported.add(thread)
            self._say(f"thread={thread} skipped: {why}")

    # -- in-flight runs ------------------------------------------------------------------

    def _poll_runs(self, waiting):
        """Poll every run still worth following, all at once: a pass waits for the slowest
        poll (at most `poll_wait_s`), not for the sum of them. A thread whose poll has not
        answered yet is missing from the result: no news for it this pass."""
        wanted = {thread: entry.run_id for thread, entry in self.state.threads.items()
                  if entry.run_id and (entry.asked or entry.by_host or (
                      waiting.get(thread) or {}).get("last_id") == entry.question)}
        if not wanted:
            return {}
        poller = self.poller or RunPoller(self.client, threads=len(wanted))
        try:
            answers = poller.poll(list(wanted.values()), self.poll_wait_s)
        finally:
            if poller is not self.poller:
                poller.close()
        return {thread: answers[run] for thread, run in wanted.items() if run in answers}

    def _follow(self, thread, waiting_row, answer):
        entry = self.state.threads[thread]
        changed = (waiting_row or {}).get("last_id") != entry.question
        if entry.run_id and (entry.asked or changed and self.approvals.adopt(thread, entry)):
            self._act(thread, entry, self.approvals.follow(thread, entry, answer))
            return
        if entry.by_host and waiting_row is None:
            # The host decided: the thread ends with the line saying so, and waits no more.
            if not entry.run_id:
                self._forget(thread, f"its run failed after the host's decision in "
                                     f"{entry.question}; the person's next message starts "
                                     "over")
                return
            waiting_row = {"last_id": entry.question}
        if waiting_row is None:
            self._stop_quietly(entry)
            self._forget(thread, "answered or gone; dropping its relay record")
            return
        if waiting_row["last_id"] != entry.question:
            self._stop_quietly(entry)
            self._forget(thread, f"got a newer message {waiting_row['last_id']}: superseding "
                                 f"run={entry.run_id} for {entry.question}")
            return
        if not entry.run_id:
            return  # submitted but unconfirmed: _submit replays it with the same key
        if answer is None:
            return  # its poll is still out (see RunPoller): no news this pass
        if isinstance(answer, HermesUnreachable):
            self.unreachable = str(answer)
            return
        run = answer.body if isinstance(answer.body, dict) else {}
        status = run.get("status")
        if answer.status == 404:
            self._failed(thread, entry, f"run {entry.run_id} is unknown to Hermes (404)")
        elif answer.status != 200:
            self._say(f"thread={thread} poll run={entry.run_id}: {answer.error_text()}")
        elif status == "completed":
            self._deliver(thread, entry, run)
        elif status in FAILED:
            self._failed(thread, entry, f"run {entry.run_id} {status}: "
                                        f"{run.get('error') or run.get('last_event')}")
        elif status == "waiting_for_approval":
            self._act(thread, entry, self.approvals.ask(thread, entry))
        elif self._now() - entry.submitted_ms > self.settings.relay_run_timeout_s * 1000:
            self._stop_quietly(entry)
            self._failed(thread, entry, f"run {entry.run_id} still {status} after "
                                        f"{self.settings.relay_run_timeout_s}s; stopped it")

    def _deliver(self, thread, entry, run):
        output = run.get("output")
        if not isinstance(output, str) or output == "":
            self._failed(thread, entry, f"run {entry.run_id} completed with no output")
            return
        output, repaired = repair_unicode(output)
        if repaired:
            self._say(f"thread={thread} run={entry.run_id} answer held {repaired} lone "
                      "surrogate(s) (not valid Unicode); each was replaced by U+FFFD")
        parts = answer_parts(output, self.settings.max_text)
        # While an approval request is unanswered the answer follows it, not the question.
        outcome = self.service.deliver(thread, entry.asked or entry.question, parts)
        if outcome == "superseded":
            self._forget(thread, f"run={entry.run_id} answered {entry.question} but a "
                                 "newer message came first; its output is discarded")
            return
        split = f" in {len(parts)} parts (over {self.settings.max_text} chars)" \
            if len(parts) > 1 else ""
        unanswered = f" (its approval request {entry.asked} went unanswered)" \
            if entry.asked else ""
        self._forget(thread, f"run={entry.run_id} {outcome}{split}{unanswered}")

    def _failed(self, thread, entry, why):
        entry.attempts += 1
        entry.generation += 1
        entry.run_id = None
        delay_s = min(MAX_BACKOFF_S, 60 * 2 ** (entry.attempts - 1))
        entry.next_ms = self._now() + delay_s * 1000
        self.state.save()
        if entry.attempts >= self.settings.relay_max_attempts:
            self._say(f"GAVE UP thread={thread} question={entry.question} after "
                      f"{entry.attempts} attempts ({why}); it stays waiting until a new "
                      "message arrives or someone replies with scripts/chat.py")
        else:
            self._say(f"thread={thread} {why}; retry {entry.attempts + 1} in {delay_s}s "
                      "with a fresh key")

    def _act(self, thread, entry, outcome):
        """Carry out what a collaborator decided (outcomes.py); None: nothing this pass."""
        if isinstance(outcome, Deliver):
            run_id = outcome.run_id or entry.run_id
            self._deliver(thread, dataclasses.replace(entry, run_id=run_id), outcome.run)
        elif isinstance(outcome, Drop):
            if outcome.stop:
                self._stop_quietly(entry)
            self._forget(thread, outcome.why)
        elif isinstance(outcome, Tell):
            told = self.service.deliver(thread, entry.question, [outcome.text])
            self._forget(thread, f"{outcome.why} ({told})")
        elif isinstance(outcome, Unreachable):
            self.unreachable = outcome.why

    def _stop_quietly(self, entry):
        if entry.run_id:
            try:
                self.client.stop_run(entry.run_id)
            except HermesUnreachable:
                pass  # best effort: the run's output will be ignored anyway

    def _forget(self, thread, why):
        del self.state.threads[thread]
        self.state.save()
        self._say(f"thread={thread} {why}", problem=False)

    def _shut_out(self, thread):
        """A thread no longer let in (revoked): its run is stopped, nothing more goes."""
        entry = self.state.threads[thread]
        self._stop_quietly(entry)
        self._forget(thread, f"is no longer let in: stopped run={entry.run_id} and "
                             "dropped its relay record")

    def _keep_out(self, row):
        """A waiting thread not let in: told once how to get in (access.py), nothing sent."""
        thread = row["thread"]
        text = self.access.pairing_message(thread)
        if text is None:
            return
        outcome = self.service.deliver(thread, row["last_id"], [text])
        if outcome in ("delivered", "already delivered"):
            self.access.told(thread)
            self._say(f"thread={thread} is not let in (NEWOS4_RELAY_ACCESS="
                      f"{self.settings.relay_access}): told it how to get in, nothing went to "
                      "Hermes (scripts/chat.py pairing list)", problem=False)

    # -- submissions ---------------------------------------------------------------------

    def _submit(self, row):
        """Submit (or replay) `row`'s question; False when no more may start this run."""
        thread = row["thread"]
        if not self.access.admits(thread):
            self._keep_out(row)
            return True
        entry = self.state.threads.get(thread) or RelayRecord(question=row["last_id"])
        held = self._held_back(thread, entry)
        if held is not None:
            return held
        # A question released by the host waits behind its notice (see _released).
        question = self._question(thread, row.get("input") or entry.question)
        if question is None:  # the thread or its question went away meanwhile
            return True
        body, asked_ms = question
        key = f"newos4-{thread}-{entry.question}-{entry.generation}"
        if thread not in self.state.threads and asked_ms < self.state.since_ms:
            self._forgotten(thread, entry, key, asked_ms)
        if entry.submitting == key:  # its answer was lost: may it have started a run?
            settled = self._settle_lost(thread, entry, body, key)
            if settled is not None:
                return settled
        answer = self._send(thread, entry, body, key)
        return False if answer is None else self._took(thread, entry, key, answer)

    def _held_back(self, thread, entry):
        """None when `entry`'s question may be submitted now; else what _submit returns."""
        if entry.run_id:
            return True
        if entry.attempts >= self.settings.relay_max_attempts:
            self._say(f"thread={thread} waits: gave up after {entry.attempts} attempts",
                      problem=False)
            return True
        if entry.next_ms > self._now():
            return True
        in_flight = sum(1 for e in self.state.threads.values() if e.run_id)
        if in_flight >= self.settings.relay_max_in_flight:
            self._say(f"{in_flight} runs in flight (max {self.settings.relay_max_in_flight}); "
                      "later threads wait", problem=False)
            return False
        return None

    def _question(self, thread, question_id):
        """(the run request, when the question was written); None when it is gone."""
        return run_request(thread, self._history_or_empty(thread), question_id,
                           self.settings.relay_history)

    def _forgotten(self, thread, entry, key, asked_ms):
        """A question waiting from before the state's memory began (state.py) has no record:
        a state that was lost may have submitted it, so it is settled as a lost submission."""
        self.lost.forgotten(entry, key, asked_ms=asked_ms, since_ms=self.state.since_ms)
        self.state.threads[thread] = entry
        self.state.save()

    def _settle_lost(self, thread, entry, body, key):
        """The submission of `key` may have started a run: None when submitting it (again) is
        safe, else what _submit returns."""
        outcome = self.lost.settle(thread, entry, body)
        if not isinstance(outcome, Resubmit):
            self._act(thread, entry, outcome)
            return not self.unreachable
        self._say(f"thread={thread} submitting key={key} again: {outcome.why}", problem=False)
        return None

    def _send(self, thread, entry, body, key):
        """Record `key`, then submit; Hermes' answer, or None when none came."""
        entry.key = entry.submitting = key
        entry.submitting_ms = self._now()
        self.state.threads[thread] = entry
        self.state.save()  # before submitting: a crash now replays with the same key
        answer, failure, maybe_applied = self._post(thread, body, key)
        if answer is None:  # Hermes is down; the saved key settles it next run
            if not maybe_applied:  # never applied: submitting again is safe
                entry.submitting = entry.submitting_ms = None
            elif not self._replays():
                self.lost.lost(thread, entry)
            self.state.save()
            self.unreachable = self.unreachable or str(failure)
        return answer

    def _post(self, thread, body, key):
        """(answer or None, the last failure, whether a failed request may have been applied):
        one immediate replay with the same key recovers a lost response."""
        failure, maybe_applied = None, False
        for attempt in (1, 2):
            try:
                return self.client.submit_run(body, idempotency_key=key), None, maybe_applied
            except HermesUnreachable as exc:
                failure, maybe_applied = exc, maybe_applied or exc.sent
                if not exc.sent:
                    continue  # no connection: nothing can have been applied
                if attempt == 2 or not self._replays():
                    break
                self._say(f"thread={thread} submit key={key} got no answer ({exc}); "
                          "replaying with the same key", problem=False)
        return None, failure, maybe_applied

    def _took(self, thread, entry, key, answer):
        """Record what Hermes answered the submission of `key`; False when no more may start
        this run."""
        entry.submitting = entry.submitting_ms = entry.lost_ms = None
        if answer.status == 202 and isinstance(answer.body, dict) and answer.body.get("run_id"):
            entry.run_id = answer.body["run_id"]
            entry.submitted_ms = self._now()
            self.state.save()
            replayed = " (replayed)" if answer.body.get("replayed") else ""
            self._say(f"thread={thread} question={entry.question} submitted "
                      f"run={entry.run_id}{replayed}", problem=False)
        elif answer.status in (429, 503):
            wait_s = max(1, answer.retry_after_s(60))
            entry.generation += 1
            entry.next_ms = self._now() + wait_s * 1000
            self.state.save()
            self._say(f"thread={thread} Hermes is busy ({answer.error_text()}); retry after "
                      f"{wait_s}s with a fresh key", problem=False)
            return False
        elif answer.status == 409:
            entry.generation += 1
            self.state.save()
            self._say(f"thread={thread} key={key} conflicts ({answer.error_text()}); the next "
                      "run uses a fresh key")
        else:
            self._failed(thread, entry, f"submit refused: {answer.error_text()}")
        return True

    def _replays(self):
        """Whether Hermes replays a run for a repeated key (False when it cannot say now)."""
        try:
            return self.lost.honours_keys()
        except HermesUnreachable:
            return False

    def _now(self):
        return self.service.clock.now_ms()

    def _collaborator_log(self, line, problem=False):
        self._say(line, problem=problem)

    def _say(self, line, *, problem=True):
        if problem:
            self.problems += 1
        self.log(("relay: PROBLEM " if problem else "relay: ") + line, problem)
