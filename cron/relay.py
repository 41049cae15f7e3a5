#!/usr/bin/env python3
"""The newOS4 chat cron job: retention sweep, then relay waiting threads to Hermes.

Thin: the command line is spaces/newos4/relay/cli.py (also installed as `newos4-relay`).
Install with deploy/cron.d/newos4; the watcher (--watch) with
deploy/systemd/newos4-relay-watch.service.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spaces.newos4.launch import run  # noqa: E402

if __name__ == "__main__":
    run("spaces.newos4.relay.cli", "relay.py")
