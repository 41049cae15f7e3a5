#!/usr/bin/env python3
"""The newOS4 chat cron job: retention sweep, then relay waiting threads to Hermes.

Thin: the command line is spaces/newos4/relay/cli.py (also installed as `newos4-relay`).
Install with deploy/cron.d/newos4; the watcher (--watch) with
deploy/systemd/newos4-relay-watch.service.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

try:
    from spaces.newos4.relay.cli import main  # noqa: E402
except ModuleNotFoundError as missing:  # e.g. ./cron/relay.py under the system python3
    sys.exit(f"relay.py: {missing}; run it with the repo's .venv/bin/python "
             "(make serve creates it)")

if __name__ == "__main__":
    sys.exit(main())
