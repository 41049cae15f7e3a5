"""Approvals in the conversation: Hermes asks before a dangerous command, the person decides.

A run that waits for approval gets one `hermes` message in its thread (the layout the chat page
knows, see README: "Hermes asks before running a command"). The person's next message is the
decision when it is one of the offered words or an alias; any other text refuses the command,
stops the run, and becomes the next question. The steps here run inside a relay pass, under the
state lock, on the pass's relay record of the thread.
"""
import re

from ..files import LockTimeout, lock
from .hermes_client import HermesUnreachable
from .run_events import read_requests_briefly

REQUEST_MARKER = "Hermes asks before running a command:"
UNKNOWN_COMMAND = "(Hermes did not say which command)"
UNKNOWN_REASON = "(not given)"
CHOICE_WORDS = {
    "once": "allow it this time",
    "session": "allow commands like it for the rest of this conversation",
    "always": "always allow commands like it",
    "deny": "refuse it",
}
FALLBACK_CHOICES = ["once", "deny"]
ALIASES = {"approve": "once", "yes": "once", "no": "deny"}
# The watcher waits this long after seeing a run wait for approval for the request's details to
# arrive on the run's event stream before it asks without them.
DETAILS_GRACE_S = 2.0
# A cron run reads a waiting run's buffered events for at most this long.
CRON_READ_S = 3.0
CHOICE_LINE = re.compile(r"^- `(once|session|always|deny)`: ", re.MULTILINE)


def offered_choices(request):
    """The choices of an approval request in Hermes' order (the fallback when unknown)."""
    choices = (request or {}).get("choices")
    if not isinstance(choices, list):
        return list(FALLBACK_CHOICES)
    known = [c for c in choices if isinstance(c, str) and c in CHOICE_WORDS]
    return list(dict.fromkeys(known)) or list(FALLBACK_CHOICES)


def request_text(request, limit=None):
    """The thread message asking the person about `request` (an `approval.request` event, or
    None when its details could not be had), at most `limit` characters: a command too long to
    fit is cut, and the message says so (one message, so the person can still answer it)."""
    request = request or {}
    command = request.get("command")
    command = command if isinstance(command, str) and command else UNKNOWN_COMMAND
    reason = request.get("description")
    reason = reason if isinstance(reason, str) and reason.strip() else UNKNOWN_REASON
    choices = offered_choices(request)
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


class ApprovalSteps:
    """The approval steps of a relay pass, mixed into Relay (which provides state, client,
    service, log and the delivery steps)."""

    events = None  # the watcher's EventFollowers; None in a cron run

    def _subscribe_new_runs(self):
        """Watcher: subscribe to each new run's events once, recorded before subscribing."""
        for entry in self.state.threads.values():
            run_id = entry.get("run_id")
            if run_id and not entry.get("events"):
                entry["events"] = "watch"
                self.state.save()
                self.events.follow(run_id)

    def _ask(self, thread, entry):
        """The run waits for approval and the person was not asked yet: ask, once."""
        index = entry.get("approvals", 0)
        request = self._approval_request(entry, index)
        if request is False:
            return  # the details are on their way, or the watcher asks
        text = request_text(request, self.settings.max_text)
        outcome = self.service.deliver(thread, entry["question"], [text])
        if outcome == "superseded":
            return  # a newer message: the next pass supersedes the run
        messages = self.service.history(thread)
        ids = [m["id"] for m in messages]
        after = messages[ids.index(entry["question"]) + 1:] if entry["question"] in ids else []
        if not after or not after[0]["text"].startswith(REQUEST_MARKER):
            return  # answered by hand meanwhile: the next pass drops the run
        asked = after[0]
        entry.update(asked=asked["id"], choices=choices_in(asked["text"]), approvals=index + 1)
        self.state.save()
        how = "asked" if outcome == "delivered" else "already asked (found in the thread)"
        command = (request or {}).get("command") or "a command it did not name"
        self._say(f"thread={thread} run={entry['run_id']} waits for approval of {command!r}: "
                  f"{how} in {asked['id']}, choices {'/'.join(entry['choices'])}",
                  problem=False)

    def _adopt_request(self, thread, entry):
        """True when the thread already holds the request for the run's current approval
        (a pass wrote it and stopped before saving the state): record it, ask no second time."""
        messages = self.service.history(thread)
        ids = [m["id"] for m in messages]
        if entry["question"] not in ids:
            return False
        after = messages[ids.index(entry["question"]) + 1:]
        if not after or after[0]["author"] != "hermes" \
                or not after[0]["text"].startswith(REQUEST_MARKER):
            return False
        entry.update(asked=after[0]["id"], choices=choices_in(after[0]["text"]),
                     approvals=entry.get("approvals", 0) + 1)
        self.state.save()
        self._say(f"thread={thread} run={entry['run_id']} waits for approval: already asked "
                  f"(found in the thread) in {after[0]['id']}", problem=False)
        return True

    def _approval_request(self, entry, index):
        """The `index`-th approval request of the entry's run; None when its details cannot be
        had (ask anyway); False when it is too early to ask here."""
        run_id = entry["run_id"]
        if self.events is not None:
            follower = self.events.get(run_id)
            if follower is None:
                return None  # subscribed by another process, or before a restart
            request = follower.request(index)
            if request is not None or follower.ended.is_set():
                return request
            if follower.first_waiting is None:
                follower.first_waiting = self.monotonic()
            return False if self.monotonic() - follower.first_waiting < DETAILS_GRACE_S \
                else None
        if watcher_alive(self.settings):
            return False  # the watcher holds the run's events and asks
        if entry.get("events"):
            return None  # read before: Hermes gives the events to no one else
        entry["events"] = "cron"
        self.state.save()
        requests = read_requests_briefly(self.client, run_id, CRON_READ_S)
        return requests[index] if index < len(requests) else None

    def _follow_asked(self, thread, entry, answer):
        """The person was asked: route their reply, else follow the run (Hermes' own approval
        timeout bounds the wait, so the relay's run timeout does not apply meanwhile)."""
        messages = self.service.history(thread)
        ids = [m["id"] for m in messages]
        if entry["asked"] not in ids:
            self._stop_quietly(entry)
            self._forget(thread, f"its approval request {entry['asked']} is gone from the "
                                 f"thread; dropping run={entry['run_id']}")
            return
        after = messages[ids.index(entry["asked"]) + 1:]
        if after and after[0]["author"] == "hermes":
            self._stop_quietly(entry)
            self._forget(thread, f"was answered by hand after approval request "
                                 f"{entry['asked']}; run={entry['run_id']} dropped")
        elif after:
            self._decide(thread, entry, after[0])
        elif isinstance(answer, HermesUnreachable):
            self.unreachable = str(answer)
        elif answer is not None:
            self._settle_unanswered(thread, entry, answer)

    def _settle_unanswered(self, thread, entry, answer):
        """Nobody replied yet; the run may have ended anyway (Hermes' approval timeout)."""
        run = answer.body if isinstance(answer.body, dict) else {}
        status = run.get("status")
        if status == "completed":
            self._deliver(thread, entry, run)
        elif answer.status == 404 or status in ("failed", "cancelled", "interrupted"):
            self._say(f"thread={thread} run={entry['run_id']} ended "
                      f"{status or 'unknown to Hermes'} while its approval request "
                      f"{entry['asked']} was unanswered; the person's next message is a new "
                      "question")
            self._forget(thread, "dropping its relay record")
        elif answer.status != 200:
            self._say(f"thread={thread} poll run={entry['run_id']}: {answer.error_text()}")

    def _decide(self, thread, entry, reply):
        choice = decision_of(reply["text"], entry["choices"])
        run_id = entry["run_id"]
        if choice is None:
            self._refuse(thread, entry, reply)
            return
        retry = entry.get("deciding") == choice  # an earlier try's answer was lost
        entry["deciding"] = choice
        self.state.save()
        try:
            answer = self.client.approve(run_id, choice)
            applied = answer.status == 200 or (answer.status == 409 and retry
                                               and self._already_applied(run_id))
        except HermesUnreachable as exc:
            self.unreachable = str(exc)  # the reply stays; the next pass sends it again
            return
        if not applied:
            self._stop_quietly(entry)
            self._forget(thread, f"reply {reply['id']} ({choice}) came after Hermes had settled "
                                 f"the approval of run={run_id} ({answer.error_text()}); it "
                                 "goes to Hermes as a new question")
            return
        entry.update(question=reply["id"], asked=None, choices=None, deciding=None,
                     submitted_ms=self._now())
        self.state.save()
        self._say(f"thread={thread} run={run_id} approval answered {choice!r} "
                  f"(reply {reply['id']})", problem=False)

    def _already_applied(self, run_id):
        """After a 409: did our own earlier approval (its answer lost) take effect?"""
        try:
            answer = self.client.get_run(run_id)
        except HermesUnreachable:
            return False
        run = answer.body if isinstance(answer.body, dict) else {}
        return answer.status == 200 and run.get("status") in ("running", "waiting_for_approval")

    def _refuse(self, thread, entry, reply):
        """Any other reply fails closed: deny the command, stop the run, relay the reply."""
        run_id = entry["run_id"]
        try:
            denied = self.client.approve(run_id, "deny")
            self.client.stop_run(run_id)
        except HermesUnreachable as exc:
            self.unreachable = str(exc)  # nothing is relayed until the command is refused
            return
        how = "denied the command and stopped the run" if denied.status == 200 \
            else f"stopped the run (deny: {denied.error_text()})"
        self._forget(thread, f"reply {reply['id']} is not one of "
                             f"{'/'.join(entry['choices'])}: {how} run={run_id}; the reply "
                             "goes to Hermes as the next question")
