"""`scripts/chat.py runs`, `approvals` and `approve`: the host sees the Hermes runs the relay
follows and the approval requests waiting for a decision, and decides one (approvals.py).
Parse, call, print; a refusal is one line, exit 1."""
import contextlib
import json
import textwrap

from ..arguments import command
from ..files import LockTimeout, lock
from .approvals import CHOICE_WORDS, NotPending, host_choice, pending, record_host_decision
from .schemas import Unfit
from .state import RelayState, StateUnreadable, pass_lock_wait_s, state_path

APPROVE_DESCRIPTION = textwrap.fill(
    "Decide THREAD's pending approval request from the host, with any choice Hermes offered "
    "for it (`always` included, whatever NEWOS4_RELAY_ALLOW_ALWAYS says: it allows commands "
    "like this one in Hermes' own configuration, for every conversation). The decision is "
    "recorded in the relay's state; the relay's next pass (the watcher: within a second; else "
    "cron's next run) sends it to Hermes, writes one hermes line in the thread saying the host "
    "decided, and goes on as if the person had answered. Refused when the person (or the host) "
    "already answered.", 79)


def add_parsers(commands):
    """Add `runs`, `approvals` and `approve` to the chat command line's subcommands."""
    runs = command(
        commands, "runs", writes=False, help="list the Hermes runs the relay follows",
        description="One line per Hermes run the relay has in flight, newest first: the run "
        "id, its thread, when it was submitted and what it waits for (Hermes' answer, the "
        "person's decision, or the host's decision on its way). Changes nothing.")
    shown = runs.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="print a JSON array")
    shown.add_argument("--quiet", "-q", action="store_true",
                       help="print only the run ids, one a line, newest first (exit 1 when "
                       "there is none): RUN=$(chat.py runs --quiet | head -n 1)")
    command(commands, "approvals", writes=False, json="print a JSON array",
            help="list approval requests waiting for a decision",
            description="One entry per thread whose Hermes run waits for the person's "
            "decision: thread, how long ago Hermes asked, the choices Hermes offered (those "
            "offered to the person in the thread), the command and Hermes' reason. Changes "
            "nothing.")
    approve = command(commands, "approve", writes=True, thread=True,
                      help="decide a pending approval request from the host",
                      description=APPROVE_DESCRIPTION)
    approve.add_argument("choice", metavar="CHOICE",
                         help="one Hermes offered: " + ", ".join(CHOICE_WORDS))

class Busy(Exception):
    """A relay pass held the state lock for longer than a pass may."""


class Unusable(Exception):
    """The relay state cannot be read; the host's commands repair nothing (a pass does)."""


@contextlib.contextmanager
def _relay_state(service):
    """The relay state, read under its lock, as a pass reads it."""
    path = state_path(service.settings)
    wait_s = pass_lock_wait_s(service.settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with lock(f"{path}.lock", wait_s):
            yield _read(path)
    except LockTimeout:
        raise Busy(f"a relay pass held {path}.lock for {wait_s}s; try again")


def _read(path):
    try:
        return RelayState.read(path)
    except StateUnreadable as exc:
        raise Unusable(str(exc))
    except Unfit as exc:
        raise Unusable(f"relay state {path}: {exc}; nothing is listed or decided here until "
                       "the relay's next pass keeps the file aside (as state.json.corrupt-<ms>) "
                       "and starts over, or the field is repaired")


def _runs(service, args, stdout, stderr):
    now_ms = service.clock.now_ms()
    if state_path(service.settings).exists():
        with _relay_state(service) as state:
            rows = [_run_row(thread, entry) for thread, entry in state.threads.items()
                    if entry.run_id]
    else:
        rows = []
    rows.sort(key=lambda row: row["submitted_ms"] or 0, reverse=True)
    if args.json:
        print(json.dumps(rows, indent=2), file=stdout)
        return 0
    if args.quiet:
        for row in rows:
            print(row["run"], file=stdout)
        if not rows:  # said where a person sees it, when `RUN=$(…)` catches the output
            print("chat.py: no Hermes run in flight (the relay submits a waiting question at "
                  "its next pass: is the watcher or cron running?)", file=stderr)
        return 0 if rows else 1
    if not rows:
        print("no Hermes run in flight", file=stdout)
    for row in rows:
        since = _age(now_ms - row["submitted_ms"]) if row["submitted_ms"] else "not yet"
        print(f"{row['run']}  thread {row['thread']}  submitted {since}  {WAITS[row['waits']]}",
              file=stdout)
    return 0


WAITS = {"answer": "working on an answer", "person": "waits for the person's decision",
         "host": "the host decided; the relay sends it"}


def _run_row(thread, entry):
    """A run in flight as `runs` shows it."""
    waits = "host" if host_choice(entry) else "person" if entry.asked else "answer"
    return {"run": entry.run_id, "thread": thread, "question": entry.question,
            "submitted_ms": entry.submitted_ms, "waits": waits}


def _approvals(service, args, stdout, stderr):
    now_ms = service.clock.now_ms()
    if state_path(service.settings).exists():
        with _relay_state(service) as state:
            rows = pending(state, service)
    else:
        rows = []
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False), file=stdout)
        return 0
    if not rows:
        print("no approval request waits for a decision", file=stdout)
    for row in rows:
        age = _age(now_ms - row["asked_ms"]) if row["asked_ms"] else "at an unknown time"
        person = "" if row["person"] == row["choices"] else \
            f" (the person: {'/'.join(row['person'])})"
        host = f"; the host decided {row['host']!r}, the relay sends it" if row["host"] else ""
        print(f"{row['thread']}  asked {age}  choices {'/'.join(row['choices'])}{person}{host}",
              file=stdout)
        print(f"    command: {row['command']}", file=stdout)
        print(f"    why: {row['reason']}", file=stdout)
    return 0


def _approve(service, args, stdout, stderr):
    with _relay_state(service) as state:
        choice, row = record_host_decision(state, service, args.thread, args.choice)
    print(f"recorded: {choice!r} for {row['command']!r} in thread {args.thread}; the relay "
          "sends it to Hermes at its next pass and tells the thread the host decided",
          file=stdout)
    return 0


def _refusing(action):
    """A command of the chat command line: a refusal is one line on stderr and exit 1."""
    def run(service, args, stdin, stdout, stderr):
        try:
            return action(service, args, stdout, stderr)
        except (NotPending, Busy, Unusable) as exc:
            print(f"chat.py: {exc}", file=stderr)
            return 1
    return run


def _age(ms):
    seconds = max(0, ms // 1000)
    if seconds < 60:
        return f"{seconds}s ago"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60}s ago"
    return f"{seconds // 3600}h {seconds // 60 % 60}m ago"


COMMANDS = {"runs": _refusing(_runs), "approvals": _refusing(_approvals),
            "approve": _refusing(_approve)}
