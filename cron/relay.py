#!/usr/bin/env python3
"""The newOS4 chat cron job: retention sweep, then relay waiting threads to Hermes.

Thin: parse argv, call spaces.newos4.relay, print one line per action. Install with cron/crontab.
"""
import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

try:
    from spaces.newos4 import errors  # noqa: E402
    from spaces.newos4.hermes_client import HermesClient  # noqa: E402
    from spaces.newos4.relay import RelayBusy, cron_tick  # noqa: E402
    from spaces.newos4.service import ChatService  # noqa: E402
    from spaces.newos4.settings import Settings, SettingsError  # noqa: E402
except ModuleNotFoundError as missing:  # e.g. ./cron/relay.py under the system python3
    sys.exit(f"relay.py: {missing}; run it with the repo's .venv/bin/python "
             "(make serve creates it)")

EPILOG = """Each run: sweep retention (30 days, newest 200 messages; emptied threads, stale
temporary files and idle rate windows are deleted), then, when HERMES_API_URL is set, poll the
runs in flight, write finished answers back as hermes messages, and submit threads that wait
(one run per question, Idempotency-Key per question, backoff on 429/503 and failed runs).

environment:
  HERMES_API_URL                 e.g. http://127.0.0.1:8642 (unset: sweep only)
  HERMES_API_KEY                 bearer token of the Hermes API server (API_SERVER_KEY)
  NEWOS4_RELAY_BUDGET_S=45       stop starting work after this many seconds
  NEWOS4_RELAY_MAX_IN_FLIGHT=4   runs pending at once
  NEWOS4_RELAY_MAX_ATTEMPTS=5    failed runs before a question is left waiting
  NEWOS4_RELAY_HISTORY=20        earlier messages sent as conversation_history
  NEWOS4_RELAY_RUN_TIMEOUT_S=1800  a run pending longer is stopped and retried
  NEWOS4_RELAY_HTTP_TIMEOUT_S=10 per request to Hermes
  NEWOS4_DATA_DIR, NEWOS4_KEEP_DAYS, NEWOS4_KEEP_MESSAGES, NEWOS4_MAX_TEXT

Each thread is handled on its own: a thread file that cannot be read or an answer that cannot
be written is reported once (relay: PROBLEM thread=... skipped: why) and skipped, and every
other thread is still swept and relayed. When Hermes does not answer, one line says so.

exit status: 0 all well (or another run holds the lock), 1 something needs a look
(Hermes unreachable, a run failed, a question given up, a thread skipped), 2 usage error."""


def build_parser():
    parser = argparse.ArgumentParser(
        prog="relay.py", description="newOS4 chat cron job: retention sweep and Hermes relay.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sweep-only", action="store_true",
                        help="only apply retention; do not contact Hermes")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)

    def log(line, problem):
        print(line, file=sys.stderr if problem else sys.stdout, flush=True)

    try:
        settings = Settings.from_env(os.environ)
        settings.check_data_dir()
        client = HermesClient(settings.hermes_api_url, api_key=settings.hermes_api_key,
                              timeout_s=settings.relay_http_timeout_s) \
            if settings.hermes_api_url else None
        problems = cron_tick(ChatService(settings), sweep_only=args.sweep_only, log=log,
                             client=client)
    except RelayBusy:
        print("relay: another relay run holds the lock; nothing done", flush=True)
        return 0
    except (errors.ChatError, SettingsError, OSError) as exc:
        print(f"relay: {exc}", file=sys.stderr)
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
