"""The operator's and Hermes' command line of the chat (`scripts/chat.py`, `newos4-chat`): parse
argv, call the chat service, print. Reads NEWOS4_* like the server does."""
import argparse
import json
import os
import sys

from . import errors
from .arguments import command
from .service import ChatService
from .settings import Settings, SettingsError
from .relay.access_cli import REFUSALS, add_parser as add_pairing_parser, run as pairing
from .relay.approvals_cli import COMMANDS as APPROVAL_COMMANDS, add_parsers as add_approval_parsers

EPILOG = """examples:
  chat.py list --awaiting              threads whose last message is not from Hermes
  chat.py show 1a2b3c4d5e6f7081        a thread's messages, oldest first
  chat.py reply 1a2b3c4d5e6f7081 "On it."
  echo "long answer" | chat.py reply 1a2b3c4d5e6f7081 -
  chat.py check                        report corrupt or foreign files in the chat folder
  chat.py delete 1a2b3c4d5e6f7081      delete a thread (--force: even a corrupt file)
  chat.py clear-rate 198.51.100.7      forget one client address's per-IP rate window
  chat.py runs                         the Hermes runs the relay follows (--quiet: ids only)
  chat.py approvals                    approval requests waiting for a decision
  chat.py approve 1a2b3c4d5e6f7081 once  decide one from the host (the relay sends it)
  chat.py pairing approve K7Q2MZ4P     let in the conversation that was given this code

environment: NEWOS4_DATA_DIR (default spaces/newos4/data), NEWOS4_MAX_TEXT, NEWOS4_KEEP_*.
exit status: 0 done, 1 refused or something needs a look (bad thread, bad text, busy, a thread
that could not be read: the others are still listed), 2 usage error."""


def build_parser():
    parser = argparse.ArgumentParser(
        prog="chat.py", description="Read and answer newOS4 chat threads as Hermes; check and "
        "repair the chat folder as its operator.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    reply = command(commands, "reply", writes=True, thread=True,
                    help="append a message from hermes to a thread",
                    description="Append TEXT to THREAD with author hermes. The thread must "
                    "exist; text is stored as given, never cut. TEXT and standard input must "
                    "be UTF-8.")
    reply.add_argument("text", metavar="TEXT", help="the reply, or - to read standard input")

    listing = command(commands, "list", writes=False, json="print a JSON array",
                      help="list threads",
                      description="One line per thread, newest activity first. A thread file "
                      "that cannot be read is reported on standard error and skipped (exit "
                      "1); the others are listed.")
    listing.add_argument("--awaiting", action="store_true",
                         help="only threads whose last message is not from hermes")

    show = command(commands, "show", writes=False, thread=True,
                   json="print a JSON array of messages", help="print a thread's messages",
                   description="Print THREAD's messages, oldest first.")
    show.add_argument("--since", type=_epoch, default=0, metavar="EPOCH",
                      help="only messages with epoch > EPOCH (milliseconds)")

    command(commands, "check", writes=False,
            help="find corrupt or foreign files in the chat folder",
            description="Read every entry of $NEWOS4_DATA_DIR/chat: print one line per corrupt "
            "thread file, foreign file and leftover (orphan lock, temporary file), then a "
            "summary. Exit 1 when anything is corrupt or foreign. Changes nothing.")

    delete = command(commands, "delete", writes=True, thread=True, help="delete a thread",
                     description="Delete THREAD's file and lock, under its lock. A corrupt "
                     "file is refused unless --force.")
    delete.add_argument("--force", action="store_true",
                        help="delete the file even when it is not a valid thread")
    add_approval_parsers(commands)

    clear = command(commands, "clear-rate", writes=True,
                    help="forget one client's per-IP rate window",
                    description="Forget the accepted messages counted against ADDRESS in the "
                    "per-IP window (as post.php saw it: the client address after trusted "
                    "proxies). The per-thread window is the thread's own messages and clears as "
                    "they age.")
    clear.add_argument("address", metavar="ADDRESS", help="an IPv4 or IPv6 address")
    add_pairing_parser(commands)
    return parser


def _epoch(value):
    if not (value.isascii() and value.isdigit()):
        raise argparse.ArgumentTypeError("EPOCH must be epoch milliseconds (ASCII digits)")
    return int(value)


class Refused(Exception):
    """A refusal of the command line itself (not of the chat rules)."""


def main(argv=None, *, stdin=sys.stdin, stdout=sys.stdout, stderr=sys.stderr, environ=None):
    args = build_parser().parse_args(argv)
    try:
        settings = Settings.from_env(os.environ if environ is None else environ)
        settings.check_data_dir(writable=args.writes)
        return COMMANDS[args.command](ChatService(settings), args, stdin, stdout, stderr)
    except (errors.ChatError, SettingsError, Refused) + REFUSALS as exc:
        print(f"chat.py: {exc}", file=stderr)
        return 1


def _reply(service, args, stdin, stdout, stderr):
    text = _read_stdin(stdin) if args.text == "-" else _utf8_arg(args.text)
    print(json.dumps(service.reply(args.thread, text), ensure_ascii=False), file=stdout)
    return 0


def _utf8_arg(value):
    """An argument decoded from the command line; bytes that were not UTF-8 are refused."""
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        raw = os.fsencode(value)
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Refused(f"TEXT is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset "
                          f"{exc.start})")
        raise Refused("TEXT is not valid Unicode")


def _read_stdin(stdin):
    """Standard input as UTF-8 text; other bytes are refused, never guessed."""
    raw = stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read()
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(f"standard input is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at "
                      f"offset {exc.start})")


def _list(service, args, stdin, stdout, stderr):
    rows, skipped = service.summaries(awaiting_only=args.awaiting)
    rows = sorted(rows, key=lambda r: r["last_epoch"], reverse=True)
    if args.json:
        print(json.dumps(rows, indent=2), file=stdout)
    else:
        for row in rows:
            flag = "awaiting" if row["awaiting"] else "answered"
            print(f"{row['thread']}  {flag:8}  {row['messages']:3} msgs  last {row['last_ts']} "
                  f"by {row['last_author']}", file=stdout)
    for thread, why in skipped:
        print(f"chat.py: skipped thread {thread}: {why}", file=stderr)
    return 1 if skipped else 0


def _show(service, args, stdin, stdout, stderr):
    messages = service.history(args.thread, args.since)
    if args.json:
        print(json.dumps(messages, ensure_ascii=False, indent=2), file=stdout)
        return 0
    for message in messages:
        print(f"[{message['ts']}] {message['author']} ({message['epoch']}):", file=stdout)
        print("    " + message["text"].replace("\n", "\n    "), file=stdout)
    return 0


def _check(service, args, stdin, stdout, stderr):
    found = service.store.inspect()
    counts = {verdict: 0 for verdict in ("ok", "corrupt", "foreign", "leftover")}
    for name, verdict, why in found:
        counts[verdict] += 1
        if verdict != "ok":
            print(f"{verdict:8}  {name}: {why}", file=stdout)
    threads = sum(1 for name, _, _ in found if name.endswith(".json"))
    print(f"checked {len(found)} entries in {service.store.chat_dir} ({threads} thread files): "
          + ", ".join(f"{n} {verdict}" for verdict, n in counts.items()), file=stdout)
    return 1 if counts["corrupt"] or counts["foreign"] else 0


def _delete(service, args, stdin, stdout, stderr):
    count = service.delete(args.thread, force=args.force)
    what = "a corrupt file" if count is None else f"{count} message(s)"
    print(f"deleted thread {args.thread} ({what})", file=stdout)
    return 0


def _clear_rate(service, args, stdin, stdout, stderr):
    if service.clear_ip_window(args.address):
        print(f"cleared the per-IP window of {args.address}", file=stdout)
    else:
        print(f"{args.address} had no hits in its per-IP window; nothing to clear", file=stdout)
    return 0


COMMANDS = {"reply": _reply, "list": _list, "show": _show, "check": _check, "delete": _delete,
            "clear-rate": _clear_rate, "pairing": pairing}
COMMANDS.update(APPROVAL_COMMANDS)
