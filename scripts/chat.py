#!/usr/bin/env python3
"""How Hermes reads newOS4 chat threads and replies to them from the host.

Thin: the command line is spaces/newos4/cli.py (also installed as `newos4-chat`).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

try:
    from spaces.newos4.cli import main  # noqa: E402
except ModuleNotFoundError as missing:  # e.g. ./scripts/chat.py under the system python3
    sys.exit(f"chat.py: {missing}; run it with the repo's .venv/bin/python "
             "(make serve creates it)")

if __name__ == "__main__":
    sys.exit(main())
