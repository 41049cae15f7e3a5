"""How scripts/chat.py and cron/relay.py start: the package's command line, or, under a python3
without its dependencies (e.g. ./cron/relay.py under the system python3), one line saying which
python to use. The standard library only: it runs before anything else may be imported."""
import importlib
import sys


def run(module, script):
    """Exit with the status of `module`'s main(); `script` names the script in that line."""
    try:
        main = importlib.import_module(module).main
    except ModuleNotFoundError as missing:
        sys.exit(f"{script}: {missing}; run it with the repo's .venv/bin/python "
                 "(make serve creates it)")
    sys.exit(main())
