"""`scripts/chat.py approvals` and `approve`: the host sees the approval requests waiting for a
decision and decides one (approvals.py). Parse, call, print; a refusal is one line, exit 1."""
import contextlib
import json
import textwrap

from ..files import LockTimeout, lock
from .approvals import CHOICE_WORDS, NotPending, pending, record_host_decision
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
    """Add `approvals` and `approve` to the chat command line's subcommands."""
    listing = commands.add_parser(
        "approvals", help="list approval requests waiting for a decision",
        description="One entry per thread whose Hermes run waits for the person's decision: "
        "thread, how long ago Hermes asked, the choices Hermes offered (those offered to the "
        "person in the thread), the command and Hermes' reason. Changes nothing.")
    listing.add_argument("--json", action="store_true", help="print a JSON array")
    listing.set_defaults(writes=False)
    approve = commands.add_parser(
        "approve", help="decide a pending approval request from the host",
        description=APPROVE_DESCRIPTION)
    approve.add_argument("thread", metavar="THREAD", help="16 lowercase hex digits")
    approve.add_argument("choice", metavar="CHOICE",
                         help="one Hermes offered: " + ", ".join(CHOICE_WORDS))
    approve.set_defaults(writes=True)


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


COMMANDS = {"approvals": _refusing(_approvals), "approve": _refusing(_approve)}
