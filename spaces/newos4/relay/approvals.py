"""Approvals in the conversation: Hermes asks before a dangerous command, and only the person
or the host decides.

A run that waits for approval gets one `hermes` message in its thread (the layout the chat page
knows). The rules of who decides, all here:
- the decision is the first `operator` message written after that request (a word written
  before Hermes asked is an ordinary message): an offered word or an alias decides, any other
  text refuses the command, stops the run and becomes the next question;
- an `agent` message (the in-page AI) is never a decision, whatever its words: the request
  keeps waiting for the person (Hermes' own approval timeout bounds the wait);
- `always` (which allows a pattern in Hermes' configuration for every conversation) is offered
  to the person only when the host allows it (NEWOS4_RELAY_ALLOW_ALWAYS=1);
- the host decides from the command line (`scripts/chat.py approve`), with any choice Hermes
  offered: it records the decision in the relay state, and the next pass sends it to Hermes
  and tells the thread, exactly as it would a person's reply.
`Approvals` runs these steps inside a relay pass, under the state lock, and answers the pass
with what to do next (outcomes.py).
"""
import dataclasses
import re
import time

from ..files import LockTimeout, lock
from ..service import THREAD_FAULTS
from ..store import is_thread_name
from .hermes_client import HermesUnreachable
from .outcomes import Deliver, Drop, Unreachable
from .records import CHOICE_WORDS, HostDecision
from .run_events import read_requests_briefly

REQUEST_MARKER = "Hermes asks before running a command:"
# How the line telling the thread the host decided begins (host_line).
HOST_LINE_START = "The host decided on this command:"
UNKNOWN_COMMAND = "(Hermes did not say which command)"
UNKNOWN_REASON = "(not given)"
FALLBACK_CHOICES = ["once", "deny"]
ALIASES = {"approve": "once", "yes": "once", "no": "deny"}
# The watcher waits this long after seeing a run wait for approval for the request's details to
# arrive on the run's event stream before it asks without them.
DETAILS_GRACE_S = 2.0
# A cron run reads a waiting run's buffered events for at most this long.
CRON_READ_S = 3.0
CHOICE_LINE = re.compile(r"^- `(once|session|always|deny)`: ", re.MULTILINE)
COMMAND_BLOCK = re.compile(r"\A[^\n]*\n\n(`{3,})\n(.*?)\n\1\n", re.DOTALL)
REASON_LINE = re.compile(r"^Why: (.*)$", re.MULTILINE)
# Hermes' approval states its run can be in while a decision is on its way.
ACTIVE_AFTER_DECISION = ("running", "waiting_for_approval")


def host_line(choice):
    """The `hermes` message that tells the thread the host decided."""
    return f"{HOST_LINE_START} `{choice}` ({CHOICE_WORDS[choice]})."


def offered_choices(request):
    """The choices of an approval request in Hermes' order (the fallback when unknown)."""
    choices = (request or {}).get("choices")
    if not isinstance(choices, list):
        return list(FALLBACK_CHOICES)
    known = [c for c in choices if isinstance(c, str) and c in CHOICE_WORDS]
    return list(dict.fromkeys(known)) or list(FALLBACK_CHOICES)


def person_choices(offered, *, allow_always):
    """The choices the person is offered among Hermes' own: `always` only when allowed."""
    return [c for c in offered if c != "always" or allow_always] or list(FALLBACK_CHOICES)


def command_of(request):
    command = (request or {}).get("command")
    return command if isinstance(command, str) and command else UNKNOWN_COMMAND


def reason_of(request):
    reason = (request or {}).get("description")
    return reason if isinstance(reason, str) and reason.strip() else UNKNOWN_REASON


def request_text(request, limit=None, choices=None):
    """The thread message asking the person about `request` (an `approval.request` event, or
    None when its details could not be had) with `choices` (Hermes' own when not given), at
    most `limit` characters: a command too long to fit is cut, and the message says so (one
    message, so the person can still answer it)."""
    command, reason = command_of(request), reason_of(request)
    choices = choices or offered_choices(request)
    text = _layout(command, reason[:1000], choices)
    if limit is not None and len(text) > limit:
        note = f"(cut: the command is {len(command)} characters long)"
        room = len(command)
        while len(text) > limit and room > 0:
            room = max(0, room - (len(text) - limit))
            text = _layout(command[:room], reason[:1000], choices, note)
    return text


def _layout(command, reason, choices, note=None):
    longest = max((len(run) for run in re.findall(r"`+", command)), default=0)
    fence = "`" * max(3, longest + 1)
    lines = [REQUEST_MARKER, "", fence, command, fence] + ([note] if note else [])
    lines += ["", f"Why: {reason}", "", "Reply with one of these words:"]
    lines += [f"- `{word}`: {CHOICE_WORDS[word]}" for word in choices]
    lines += ["", "Any other reply refuses the command and is sent to Hermes as your next "
                  "message."]
    return "\n".join(lines)


def choices_in(text):
    """The choices a request message offered (read back from the thread after a crash)."""
    return CHOICE_LINE.findall(text) or list(FALLBACK_CHOICES)


def details_in(text):
    """(command, reason) as a request message shows them (the command maybe cut)."""
    block, reason = COMMAND_BLOCK.match(text), REASON_LINE.search(text)
    return (block.group(2) if block else UNKNOWN_COMMAND,
            reason.group(1) if reason else UNKNOWN_REASON)


def host_choice(entry):
    """The decision the host recorded for the entry's pending request, else None."""
    host = entry.host
    if host is not None and host.request == entry.asked and host.choice in CHOICE_WORDS:
        return host.choice
    return None


def update(entry, **values):
    """Set fields of a relay record (records.RelayRecord: a name it lacks is an error)."""
    for name, value in values.items():
        setattr(entry, name, value)


def is_request(message):
    return message["author"] == "hermes" and message["text"].startswith(REQUEST_MARKER)


def request_after(messages, message_id):
    """The request message right after `message_id` in `messages` (a thread, oldest first),
    else None: a request a pass wrote for the question it relays."""
    ids = [m["id"] for m in messages]
    after = messages[ids.index(message_id) + 1:] if message_id in ids else []
    return after[0] if after and is_request(after[0]) else None


def answer_to(after):
    """Who answers a request, from the messages written after it (oldest first): the first
    that is not the in-page AI's (an `operator` reply decides; a `hermes` one was written by
    hand on the host and ends the request), else None. `agent` messages never decide."""
    return next((m for m in after if m["author"] != "agent"), None)


def decision_of(text, choices):
    """The choice `text` makes among `choices` (any case, blanks around ignored), else None."""
    word = text.strip().lower()
    word = ALIASES.get(word, word)
    return word if word in choices else None


def watcher_alive(settings):
    """True when a watcher holds its lock (it reads the runs' events; cron leaves asking to it)."""
    try:
        with lock(settings.data_dir / "relay" / "watch.lock", 0):
            return False
    except LockTimeout:
        return True


class Approvals:
    """The approval steps of one relay pass over `state` (the pass's RelayState, read under
    its lock): ask the person, route the decision (the person's or the host's) to Hermes, and
    tell the pass what follows (a Deliver, Drop or Unreachable outcome, or None: nothing).

    `say(line, problem=False)` logs a line; `events` are the watcher's run subscriptions (None
    in a cron run).
    """

    def __init__(self, service, client, state, *, say, events=None, monotonic=time.monotonic):
        self.service = service
        self.settings = service.settings
        self.client = client
        self.state = state
        self.events = events
        self._say = say
        self._monotonic = monotonic

    def subscribe_new_runs(self):
        """Watcher: subscribe to each new run's events once, recorded before subscribing."""
        for entry in self.state.threads.values():
            run_id = entry.run_id
            if run_id and not entry.events:
                entry.events = "watch"
                self.state.save()
                self.events.follow(run_id)

    def ask(self, thread, entry):
        """The run waits for approval and the person was not asked yet: ask, once."""
        index = entry.approvals
        request = self._approval_request(entry, index)
        if request is False:
            return None  # the details are on their way, or the watcher asks
        offered = offered_choices(request)
        choices = person_choices(offered, allow_always=self.settings.relay_allow_always)
        text = request_text(request, self.settings.max_text, choices)
        outcome = self.service.deliver(thread, entry.question, [text])
        if outcome == "superseded":
            return None  # a newer message (a word before Hermes asked): the run is superseded
        asked = self._request_after(thread, entry.question)
        if asked is None:
            return None  # answered by hand meanwhile: the next pass drops the run
        update(entry, asked=asked["id"], choices=choices_in(asked["text"]), offered=offered,
               approvals=index + 1, command=command_of(request),
               reason=reason_of(request)[:1000])
        self.state.save()
        how = "asked" if outcome == "delivered" else "already asked (found in the thread)"
        self._say(f"thread={thread} run={entry.run_id} waits for approval of "
                  f"{entry.command!r}: {how} in {asked['id']}, choices "
                  f"{'/'.join(entry.choices)}")
        return None

    def adopt(self, thread, entry):
        """True when the thread already holds the request for the run's current approval
        (a pass wrote it and stopped before saving the state): record it, ask no second time."""
        asked = self._request_after(thread, entry.question)
        if asked is None:
            return False
        command, reason = details_in(asked["text"])
        update(entry, asked=asked["id"], choices=choices_in(asked["text"]),
               offered=choices_in(asked["text"]), approvals=entry.approvals + 1,
               command=command, reason=reason)
        self.state.save()
        self._say(f"thread={thread} run={entry.run_id} waits for approval: already asked "
                  f"(found in the thread) in {asked['id']}")
        return True

    def _request_after(self, thread, message_id):
        return request_after(self.service.history(thread), message_id)

    def _approval_request(self, entry, index):
        """The `index`-th approval request of the entry's run; None when its details cannot be
        had (ask anyway); False when it is too early to ask here."""
        run_id = entry.run_id
        if self.events is not None:
            follower = self.events.get(run_id)
            if follower is None:
                return None  # subscribed by another process, or before a restart
            request = follower.request(index)
            if request is not None or follower.ended.is_set():
                return request
            if follower.first_waiting is None:
                follower.first_waiting = self._monotonic()
            return False if self._monotonic() - follower.first_waiting < DETAILS_GRACE_S \
                else None
        if watcher_alive(self.settings):
            return False  # the watcher holds the run's events and asks
        if entry.events:
            return None  # read before: Hermes gives the events to no one else
        entry.events = "cron"
        self.state.save()
        requests = read_requests_briefly(self.client, run_id, CRON_READ_S)
        return requests[index] if index < len(requests) else None

    def follow(self, thread, entry, answer):
        """The person was asked: route the host's decision or the person's reply, else follow
        the run (`answer`, this pass's poll of it, or None). Hermes' own approval timeout
        bounds the wait, so the relay's run timeout does not apply meanwhile."""
        messages = self.service.history(thread)
        ids = [m["id"] for m in messages]
        if entry.asked not in ids:
            return Drop(f"its approval request {entry.asked} is gone from the thread; "
                        f"dropping run={entry.run_id}")
        after = messages[ids.index(entry.asked) + 1:]
        choice = host_choice(entry)
        if choice is not None:
            return self._decide(thread, entry, choice, None, answer)
        reply = answer_to(after)
        self._note_agent_messages(thread, entry, after)
        if reply is not None and reply["author"] == "hermes":
            return Drop(f"was answered by hand after approval request {entry.asked}; "
                        f"run={entry.run_id} dropped")
        if reply is not None:
            choice = decision_of(reply["text"], entry.choices)
            if choice is None:
                return self._refuse(entry, reply)
            return self._decide(thread, entry, choice, reply, answer)
        if isinstance(answer, HermesUnreachable):
            return Unreachable(str(answer))
        return self._settle_unanswered(thread, entry, answer)

    def _note_agent_messages(self, thread, entry, after):
        """Say once per message that an agent message is not a decision."""
        seen = entry.not_decisions or []
        new = [m["id"] for m in after if m["author"] == "agent" and m["id"] not in seen]
        if new:
            entry.not_decisions = seen + new
            self.state.save()
            self._say(f"thread={thread} run={entry.run_id}: agent message(s) "
                      f"{', '.join(new)} after approval request {entry.asked} are not a "
                      "decision (only the person's or the host's is); the request waits")

    def _settle_unanswered(self, thread, entry, answer):
        """Nobody decided yet; the run may have ended anyway (Hermes' approval timeout)."""
        if answer is None:
            return None
        run = answer.body if isinstance(answer.body, dict) else {}
        status = run.get("status")
        if status == "completed":
            return Deliver(run)
        if answer.status == 404 or status in ("failed", "cancelled", "interrupted"):
            self._say(f"thread={thread} run={entry.run_id} ended "
                      f"{status or 'unknown to Hermes'} while its approval request "
                      f"{entry.asked} was unanswered; the person's next message is a new "
                      "question", problem=True)
            return Drop("dropping its relay record", stop=False)
        if answer.status != 200:
            self._say(f"thread={thread} poll run={entry.run_id}: {answer.error_text()}",
                      problem=True)
        return None

    def _decide(self, thread, entry, choice, reply, answer):
        """Send `choice` (the person's `reply`, or the host's when `reply` is None) to Hermes;
        once applied, the thread goes on from the reply (or from the line telling it the host
        decided), exactly once across retries of a lost answer."""
        run_id = entry.run_id
        retry = entry.deciding == choice  # an earlier try's answer was lost
        entry.deciding = choice
        self.state.save()
        try:
            sent = self.client.approve(run_id, choice)
            applied = sent.status == 200 or (sent.status == 409 and retry
                                             and self._already_applied(run_id))
        except HermesUnreachable as exc:
            return Unreachable(str(exc))  # the decision stays; the next pass sends it again
        if not applied and reply is not None:
            return Drop(f"reply {reply['id']} ({choice}) came after Hermes had settled the "
                        f"approval of run={run_id} ({sent.error_text()}); it goes to Hermes "
                        "as a new question")
        if not applied:
            update(entry, host=None, deciding=None)
            self.state.save()
            self._say(f"thread={thread} the host's decision ({choice}) came after Hermes had "
                      f"settled the approval of run={run_id} ({sent.error_text()}); nothing "
                      "was decided", problem=True)
            return self._settle_unanswered(thread, entry, answer)
        if reply is None:
            anchor = self.service.announce(thread, entry.asked, host_line(choice))
            if anchor is None:
                return Drop(f"its approval request {entry.asked} is gone from the thread "
                            f"after the host decided {choice!r}; dropping run={run_id}")
            who = f"the host (told in {anchor})"
        else:
            anchor, who = reply["id"], f"reply {reply['id']}"
        update(entry, question=anchor, by_host=reply is None, asked=None, choices=None,
               offered=None, deciding=None, host=None, not_decisions=None,
               submitted_ms=self.service.clock.now_ms())
        self.state.save()
        self._say(f"thread={thread} run={run_id} approval answered {choice!r} by {who}")
        return None

    def _already_applied(self, run_id):
        """After a 409: did our own earlier approval (its answer lost) take effect?"""
        try:
            answer = self.client.get_run(run_id)
        except HermesUnreachable:
            return False
        run = answer.body if isinstance(answer.body, dict) else {}
        return answer.status == 200 and run.get("status") in ACTIVE_AFTER_DECISION

    def _refuse(self, entry, reply):
        """Any other reply fails closed: deny the command, stop the run, relay the reply."""
        run_id = entry.run_id
        try:
            denied = self.client.approve(run_id, "deny")
            self.client.stop_run(run_id)
        except HermesUnreachable as exc:
            return Unreachable(str(exc))  # nothing is relayed until the command is refused
        how = "denied the command and stopped the run" if denied.status == 200 \
            else f"stopped the run (deny: {denied.error_text()})"
        return Drop(f"reply {reply['id']} is not one of {'/'.join(entry.choices)}: {how} "
                    f"run={run_id}; the reply goes to Hermes as the next question", stop=False)


def pending(state, service):
    """The approval requests waiting for a decision, oldest first: one dict per thread with
    thread, run, request (message id), command, reason, asked_ms, choices (Hermes' own, which
    the host may give), person (those offered in the thread) and host (a decision the host
    recorded that the relay has not sent yet, else None).

    A request in the thread that its record does not hold yet (the pass that wrote it died
    before saving the state) is listed from the message alone: the next pass adopts it, and a
    decision the host recorded for it."""
    rows = []
    for thread, entry in sorted(state.threads.items()):
        if not entry.run_id:
            continue
        try:
            history = service.history(thread)
        except THREAD_FAULTS:  # listed from the relay's record alone
            history = []
        if entry.asked:
            request = next((m for m in history if m["id"] == entry.asked), None)
            recorded = entry
        else:
            request = request_after(history, entry.question)
            if request is None:
                continue
            shown = choices_in(request["text"])
            recorded = dataclasses.replace(entry, asked=request["id"], choices=shown,
                                           offered=shown)
        command, reason = details_in(request["text"]) if request else (None, None)
        rows.append({"thread": thread, "run": entry.run_id, "request": recorded.asked,
                     "command": recorded.command or command,
                     "reason": recorded.reason or reason,
                     "asked_ms": request["epoch"] if request else None,
                     "choices": recorded.offered or recorded.choices,
                     "person": recorded.choices, "host": host_choice(recorded)})
    return sorted(rows, key=lambda r: r["asked_ms"] or 0)


class NotPending(Exception):
    """The host's decision cannot be recorded (one clear line says why)."""


def record_host_decision(state, service, thread, word):
    """Record the host's decision `word` on `thread`'s pending request in `state` (held under
    its lock); the relay's next pass sends it. Returns (choice, the request's row)."""
    if not is_thread_name(thread):
        raise NotPending("THREAD must be 16 lowercase hex digits (the page shows it)")
    row = next((r for r in pending(state, service) if r["thread"] == thread), None)
    if row is None:
        raise NotPending(f"thread {thread} has no approval request waiting for a decision "
                         "(scripts/chat.py approvals lists them)")
    choice = decision_of(word, row["choices"])
    if choice is None:
        raise NotPending(f"{word!r} is not a choice Hermes offered for this command; choose one "
                         f"of {'/'.join(row['choices'])}")
    if row["host"]:
        raise NotPending(f"the host already decided {row['host']!r} for thread {thread}; the "
                         "relay sends it at its next pass")
    messages = service.history(thread)
    ids = [m["id"] for m in messages]
    reply = answer_to(messages[ids.index(row["request"]) + 1:]) if row["request"] in ids \
        else None
    if reply is not None:
        raise NotPending(f"thread {thread} already has an answer to the request "
                         f"({reply['author']} message {reply['id']}); the relay routes it")
    state.threads[thread].host = HostDecision(choice, row["request"], service.clock.now_ms())
    state.save()
    return choice, row
