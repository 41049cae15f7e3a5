#!/usr/bin/env python3
"""The newOS4 chat cron job: retention sweep, then (issue 6) relaying waiting threads to Hermes.

Lock-guarded so overlapping cron runs are safe. Install with cron/crontab.
"""
import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import filelock  # noqa: E402

from spaces.newos4 import errors  # noqa: E402
from spaces.newos4.service import ChatService  # noqa: E402
from spaces.newos4.settings import Settings, SettingsError  # noqa: E402


def build_parser():
    parser = argparse.ArgumentParser(
        prog="relay.py",
        description="Sweep chat retention (30 days, newest 200 messages per thread; emptied "
        "threads, stale temporary files and idle rate windows are deleted). Safe to run while "
        "the server writes.",
        epilog="environment: NEWOS4_DATA_DIR, NEWOS4_KEEP_DAYS, NEWOS4_KEEP_MESSAGES, "
        "HERMES_API_URL. exit status: 0 done, 1 failed, 3 another run holds the lock.")
    parser.add_argument("--sweep-only", action="store_true",
                        help="only apply retention; do not contact Hermes")
    return parser


def main(argv=None, *, environ=None, stdout=sys.stdout, stderr=sys.stderr):
    args = build_parser().parse_args(argv)
    environ = os.environ if environ is None else environ
    try:
        settings = Settings.from_env(environ)
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(settings.data_dir / "relay.lock", timeout=0):
            outcome = ChatService(settings).sweep()
            print("relay: sweep " + json.dumps(outcome, sort_keys=True), file=stdout)
            if not args.sweep_only:
                if not environ.get("HERMES_API_URL"):
                    print("relay: HERMES_API_URL is not set: swept only", file=stdout)
                else:
                    print("relay: relaying to Hermes is not built yet: swept only", file=stderr)
                    return 1
    except filelock.Timeout:
        print("relay: another relay run holds the lock; nothing done", file=stderr)
        return 3
    except (errors.ChatError, SettingsError, OSError) as exc:
        print(f"relay: {exc}", file=stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
