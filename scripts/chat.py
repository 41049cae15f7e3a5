#!/usr/bin/env python3
"""How Hermes reads newOS4 chat threads and replies to them from the host.

Thin: parse argv, call spaces.newos4.service, print. Reads NEWOS4_* like the server does.
"""
import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

try:
    from spaces.newos4 import errors  # noqa: E402
    from spaces.newos4.service import ChatService  # noqa: E402
    from spaces.newos4.settings import Settings, SettingsError  # noqa: E402
except ModuleNotFoundError as missing:  # e.g. ./scripts/chat.py under the system python3
    sys.exit(f"chat.py: {missing}; run it with the repo's .venv/bin/python "
             "(make serve creates it)")

EPILOG = """examples:
  chat.py list --awaiting              threads whose last message is not from Hermes
  chat.py show 1a2b3c4d5e6f7081        a thread's messages, oldest first
  chat.py reply 1a2b3c4d5e6f7081 "On it."
  echo "long answer" | chat.py reply 1a2b3c4d5e6f7081 -

environment: NEWOS4_DATA_DIR (default spaces/newos4/data), NEWOS4_MAX_TEXT, NEWOS4_KEEP_*.
exit status: 0 done, 1 refused (bad thread, bad text, busy), 2 usage error."""


def build_parser():
    parser = argparse.ArgumentParser(
        prog="chat.py", description="Read and answer newOS4 chat threads as Hermes.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    reply = commands.add_parser("reply", help="append a message from hermes to a thread",
                                description="Append TEXT to THREAD with author hermes. The "
                                "thread must exist; text is stored as given, never cut.")
    reply.add_argument("thread", metavar="THREAD", help="16 lowercase hex digits")
    reply.add_argument("text", metavar="TEXT", help="the reply, or - to read standard input")

    listing = commands.add_parser("list", help="list threads",
                                  description="One line per thread, newest activity first.")
    listing.add_argument("--awaiting", action="store_true",
                         help="only threads whose last message is not from hermes")
    listing.add_argument("--json", action="store_true", help="print a JSON array")

    show = commands.add_parser("show", help="print a thread's messages",
                               description="Print THREAD's messages, oldest first.")
    show.add_argument("thread", metavar="THREAD", help="16 lowercase hex digits")
    show.add_argument("--since", type=_epoch, default=0, metavar="EPOCH",
                      help="only messages with epoch > EPOCH (milliseconds)")
    show.add_argument("--json", action="store_true", help="print a JSON array of messages")
    return parser


def _epoch(value):
    if not (value.isascii() and value.isdigit()):
        raise argparse.ArgumentTypeError("EPOCH must be epoch milliseconds (ASCII digits)")
    return int(value)


def main(argv=None, *, stdin=sys.stdin, stdout=sys.stdout, stderr=sys.stderr, environ=None):
    args = build_parser().parse_args(argv)
    try:
        service = ChatService(Settings.from_env(os.environ if environ is None else environ))
        if args.command == "reply":
            text = stdin.read() if args.text == "-" else args.text
            print(json.dumps(service.reply(args.thread, text), ensure_ascii=False), file=stdout)
        elif args.command == "list":
            _print_list(service.summaries(awaiting_only=args.awaiting), args.json, stdout)
        else:
            _print_thread(service, args.thread, args.since, args.json, stdout)
    except (errors.ChatError, SettingsError) as exc:
        print(f"chat.py: {exc}", file=stderr)
        return 1
    return 0


def _print_list(rows, as_json, out):
    rows = sorted(rows, key=lambda r: r["last_epoch"], reverse=True)
    if as_json:
        print(json.dumps(rows, indent=2), file=out)
        return
    for row in rows:
        flag = "awaiting" if row["awaiting"] else "answered"
        print(f"{row['thread']}  {flag:8}  {row['messages']:3} msgs  last {row['last_ts']} "
              f"by {row['last_author']}", file=out)


def _print_thread(service, thread, since, as_json, out):
    messages = service.history(thread, since)
    if as_json:
        print(json.dumps(messages, ensure_ascii=False, indent=2), file=out)
        return
    for message in messages:
        print(f"[{message['ts']}] {message['author']} ({message['epoch']}):", file=out)
        print("    " + message["text"].replace("\n", "\n    "), file=out)


if __name__ == "__main__":
    sys.exit(main())
