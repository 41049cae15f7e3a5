#!/usr/bin/env python3
"""How Hermes reads newOS4 chat threads and replies to them from the host.

Thin: the command line is spaces/newos4/cli.py (also installed as `newos4-chat`).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spaces.newos4.launch import run  # noqa: E402

if __name__ == "__main__":
    run("spaces.newos4.cli", "chat.py")
