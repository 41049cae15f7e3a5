"""The relay's command line (`cron/relay.py`, `newos4-relay`): a cron run (sweep, then one relay
pass) or, with --watch, the watcher as a long-running process (daemon.py)."""
import argparse
import os
import sys

from .. import errors
from ..service import ChatService
from ..settings import Settings, SettingsError
from .cron import RelayBusy, cron_tick
from .daemon import watch
from .hermes_client import HermesClient

EPILOG = """Each run: sweep retention (30 days, newest 200 messages; emptied threads, stale
temporary files and idle rate windows are deleted), then, when HERMES_API_URL is set, poll the
runs in flight, write finished answers back as hermes messages, and submit threads that wait
(one run per question, Idempotency-Key per question, backoff on 429/503 and failed runs).

environment:
  HERMES_API_URL                 e.g. http://127.0.0.1:8642 (unset: sweep only)
  HERMES_API_KEY                 bearer token of the Hermes API server (API_SERVER_KEY)
  NEWOS4_RELAY_ACCESS=pairing    who reaches Hermes: pairing (the host approves each
                                 conversation's code), allowlist, or open (anyone)
  NEWOS4_RELAY_BUDGET_S=45       stop starting work after this many seconds
  NEWOS4_RELAY_MAX_IN_FLIGHT=4   runs pending at once
  NEWOS4_RELAY_MAX_ATTEMPTS=5    failed runs before a question is left waiting
  NEWOS4_RELAY_HISTORY=20        earlier messages sent as conversation_history
  NEWOS4_RELAY_RUN_TIMEOUT_S=1800  a run pending longer is stopped and retried
  NEWOS4_RELAY_HTTP_TIMEOUT_S=10 per request to Hermes
  NEWOS4_RELAY_WATCH_TICK_MS=100 --watch: how often it looks for changed threads
  NEWOS4_RELAY_WATCH_POLL_MS=500 --watch: how often it polls the runs in flight
  NEWOS4_RELAY_ALLOW_ALWAYS=0    1: offer the person `always` in approval requests
  NEWOS4_DATA_DIR, NEWOS4_KEEP_DAYS, NEWOS4_KEEP_MESSAGES, NEWOS4_MAX_TEXT

Access: a conversation the host has not let in gets one hermes message (pairing: a one-time
code and the command `scripts/chat.py pairing approve CODE`; allowlist: that it is not let in)
and nothing of it goes to Hermes; once let in, its waiting question goes at once. See
`scripts/chat.py pairing --help`.

When Hermes asks before running a command (a run waiting for approval), the relay writes the
request into the thread ("Hermes asks before running a command:", the command, why, the words
to reply with: Hermes' own, `always` only with NEWOS4_RELAY_ALLOW_ALWAYS=1). The person's next
message after it decides (once/session/deny, approve/yes/no), and any other text refuses the
command and becomes the next question; the in-page AI's (agent) messages never decide. The
host decides with `scripts/chat.py approve THREAD CHOICE`, which the next pass sends. A cron
run reads a waiting run's details only when no watcher runs (the watcher holds each run's
event stream).

Each thread is handled on its own: a thread file that cannot be read or an answer that cannot
be written is reported once (relay: PROBLEM thread=... skipped: why) and skipped, and every
other thread is still swept and relayed. When Hermes does not answer, one line says so.

--watch runs the same relay (same variables, state file, keys and retries) as a long-running
process that submits a new question and delivers a finished answer within a second; it does
not sweep, so keep the crontab line for the sweep (and as the fallback: a cron run beside the
watcher does nothing twice). SIGTERM or Ctrl-C stops it (exit 0).

exit status: 0 all well (or another run holds the lock), 1 something needs a look
(Hermes unreachable, a run failed, a question given up, a thread skipped, a state file in
relay/ that cannot be read: see its README), 2 usage error (--watch without HERMES_API_URL)."""


def build_parser():
    parser = argparse.ArgumentParser(
        prog="relay.py", description="newOS4 chat cron job: retention sweep and Hermes relay.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--sweep-only", action="store_true",
                      help="only apply retention; do not contact Hermes")
    mode.add_argument("--watch", action="store_true",
                      help="keep running: relay within a second of each change (no sweep)")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)

    def log(line, problem):
        print(line, file=sys.stderr if problem else sys.stdout, flush=True)

    try:
        settings = Settings.from_env(_environ_for(args))
        settings.check_data_dir()
        client = HermesClient(settings.hermes_api_url, api_key=settings.hermes_api_key,
                              timeout_s=settings.relay_http_timeout_s) \
            if settings.hermes_api_url else None
        if client is not None and not args.sweep_only and settings.relay_access == "open":
            log("relay: NEWOS4_RELAY_ACCESS=open: anyone who can reach the chat page reaches "
                "Hermes (and the tools it runs on this host)", False)
        if args.watch:
            return watch(ChatService(settings), client, log)
        problems = cron_tick(ChatService(settings), sweep_only=args.sweep_only, log=log,
                             client=client)
    except RelayBusy:
        print("relay: another relay run holds the lock; nothing done", flush=True)
        return 0
    except (errors.ChatError, SettingsError, OSError) as exc:
        print(f"relay: {exc}", file=sys.stderr)
        return 1
    return 1 if problems else 0


def _environ_for(args):
    """The environment the settings are read from: a sweep never contacts Hermes, so a
    malformed HERMES_API_URL cannot stop it (the full run and --watch still refuse it)."""
    if args.sweep_only:
        return {name: value for name, value in os.environ.items() if name != "HERMES_API_URL"}
    return os.environ
