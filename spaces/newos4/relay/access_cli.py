"""`scripts/chat.py pairing ...`: the host lets conversations in to Hermes (access.py) and sees
who waits. Parse, call Access, print; a refusal is one line and exit 1."""
import argparse
import json
import textwrap

from ..arguments import command
from ..service import iso_ts
from .access import (ALPHABET, CODE_LENGTH, CODE_TTL_MS, LOCKOUT_MS, MAX_FAILURES,
                     MAX_PENDING, Access, AccessRefused)

DESCRIPTION = textwrap.fill(
    "Who reaches Hermes through the relay (NEWOS4_RELAY_ACCESS). In pairing mode (the default) "
    "a conversation the host has not let in gets one hermes message with a one-time code and "
    "the command to run here; the person gives the host's owner the code. A code is "
    f"{CODE_LENGTH} characters, valid for {CODE_TTL_MS // 60_000} minutes, and works once; at "
    f"most {MAX_PENDING} are pending; {MAX_FAILURES} wrong codes in a row lock `approve` for "
    f"{LOCKOUT_MS // 60_000} minutes. In allowlist mode no code is given: `allow` names a "
    "conversation. Once let in, its waiting question goes to Hermes at once (the watcher sees "
    "the change within a second).", 79)

EPILOG = """examples:
  chat.py pairing list                      pending codes and the conversations let in
  chat.py pairing approve K7Q2MZ4P          let in the conversation that was given this code
  chat.py pairing allow 1a2b3c4d5e6f7081    let a conversation in by the id its page shows
  chat.py pairing revoke 1a2b3c4d5e6f7081   let it in no more (a run in flight is stopped)

Run them as the relay's user: the state is relay/access.json in NEWOS4_DATA_DIR, mode 0600.
exit status: 0 done, 1 refused (a wrong or malformed code, approval locked, an unknown thread,
an unreadable state), 2 usage error."""


def add_parser(commands):
    """Add the `pairing` command group to the chat command line's subcommands."""
    pairing = commands.add_parser(
        "pairing", help="let conversations in to Hermes; see who waits",
        description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = pairing.add_subparsers(dest="pairing_command", required=True, metavar="ACTION")
    command(actions, "list", writes=False, json="print one JSON object",
            help="pending codes' conversations and ages; the conversations let in",
            description="Print the conversations holding a pending code (how long ago it was "
            "given, when it expires; never the code), the conversations let in (since when, by "
            "code or by name), and whether approval is locked.")
    approve = command(
        actions, "approve", writes=True, help="let in the conversation that was given CODE",
        description="Let in the conversation that was given CODE (its page shows it). A code "
        f"works once and for {CODE_TTL_MS // 60_000} minutes; {MAX_FAILURES} wrong codes in a "
        f"row lock approval for {LOCKOUT_MS // 60_000} minutes (`allow` still works).")
    approve.add_argument("code", metavar="CODE",
                         help=f"{CODE_LENGTH} characters of {ALPHABET} (any case)")
    command(actions, "allow", writes=True, thread=True, help="let a conversation in by its id",
            description="Let THREAD in, with or without a code, whatever is pending or locked. "
            "The chat page shows the id: \"Conversation 1a2b3c4d5e6f7081\".")
    command(actions, "revoke", writes=True, thread=True, help="let a conversation in no more",
            description="Let THREAD in no more and cancel its pending code. Its messages stop "
            "reaching Hermes; a run of it in flight is stopped at the relay's next pass. Its "
            "next message gets a new code (pairing) or the allowlist notice.")


def run(service, args, stdin, stdout, stderr):
    """Carry out one `pairing` action; AccessRefused for a refusal."""
    access = Access.for_settings(service.settings, service.clock)
    try:
        return ACTIONS[args.pairing_command](access, service, args, stdout)
    finally:
        for note in access.take_notes():  # a mode it narrowed
            print(f"chat.py: {note}", file=stderr)


def _list(access, service, args, stdout):
    shown = access.listing()
    if args.json:
        print(json.dumps(shown, indent=2), file=stdout)
        return 0
    mode = shown["mode"]
    note = ": every conversation reaches Hermes, the lists below apply in pairing and " \
        "allowlist mode" if mode == "open" else ""
    print(f"access: {mode} (NEWOS4_RELAY_ACCESS){note}", file=stdout)
    print(f"pending codes ({len(shown['pending'])} of at most {MAX_PENDING}):", file=stdout)
    for row in shown["pending"]:
        seen = "" if row["shown"] else " (not in the thread yet)"
        print(f"  {row['thread']}  given {_ago(row['age_s'])} ago, expires in "
              f"{_ago(row['expires_in_s'])}{seen}", file=stdout)
    print(f"let in ({len(shown['allowed'])}):", file=stdout)
    for row in shown["allowed"]:
        how = "by code" if row["by"] == "code" else "by name"
        print(f"  {row['thread']}  since {iso_ts(row['since_ms'])} ({how})", file=stdout)
    if shown["locked_until_ms"]:
        print(f"approval: locked until {iso_ts(shown['locked_until_ms'])} after "
              f"{MAX_FAILURES} wrong codes in a row", file=stdout)
    else:
        print(f"approval: {shown['wrong_codes']} wrong code(s) in a row (locked at "
              f"{MAX_FAILURES})", file=stdout)
    return 0


def _approve(access, service, args, stdout):
    thread = access.approve(args.code)
    print(f"let in thread {thread}: its waiting question goes to Hermes at the relay's next "
          "pass", file=stdout)
    return 0


def _allow(access, service, args, stdout):
    if not access.allow(args.thread):
        print(f"thread {args.thread} was let in already", file=stdout)
        return 0
    later = "" if service.store.read(args.thread) is not None else \
        " (no such conversation yet: it is let in from its first message)"
    print(f"let in thread {args.thread}{later}", file=stdout)
    return 0


def _revoke(access, service, args, stdout):
    was_in, had_code = access.revoke(args.thread)
    done = [f"thread {args.thread} is no longer let in (a run in flight is stopped at the "
            "relay's next pass)"] if was_in else []
    done += [f"cancelled the pending code of thread {args.thread}"] if had_code else []
    print("; ".join(done), file=stdout)
    return 0


def _ago(seconds):
    return f"{seconds // 60} min" if seconds >= 60 else f"{seconds} s"


ACTIONS = {"list": _list, "approve": _approve, "allow": _allow, "revoke": _revoke}
REFUSALS = (AccessRefused,)
