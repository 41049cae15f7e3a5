"""`python -m emulators serve <service>`: see emulators/cli.py."""
import sys

from emulators.cli import main

if __name__ == "__main__":
    sys.exit(main())
