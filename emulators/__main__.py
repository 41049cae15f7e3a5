"""`python -m emulators serve <service>`: see emulators.runtime.cli."""
import sys

from emulators.runtime.cli import main

if __name__ == "__main__":
    sys.exit(main())
