"""Console scripts `newos4-chat` and `newos4-relay` (setup.cfg): the programs scripts/chat.py and
cron/relay.py of the checkout this package is installed from (`pip install -e .`), run as they
are, so the command and the file path are one program with one --help."""
import runpy
import sys

from .settings import REPO_ROOT


def chat():
    """newos4-chat: scripts/chat.py."""
    return _run("scripts/chat.py")


def relay():
    """newos4-relay: cron/relay.py."""
    return _run("cron/relay.py")


def _run(relative):
    path = REPO_ROOT / relative
    if not path.is_file():
        sys.exit(f"{relative} is not in {REPO_ROOT}: install the package from a checkout "
                 "(pip install -e .)")
    sys.argv[0] = str(path)
    runpy.run_path(str(path), run_name="__main__")  # ends in sys.exit(main())
