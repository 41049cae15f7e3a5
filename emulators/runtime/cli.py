"""Command line: `python -m emulators serve hermes|github [--port N] [--host H] [--db FILE]
[--admin-key KEY]`."""
import argparse
import os
import signal
import sys
import threading

from .server import serve
from .settings import Settings

DESCRIPTION = """\
Local emulators of Hermes Agent and GitHub for testing their clients.

Point a client at the printed URL (OpenAI(base_url=URL + "/v1"), Github(base_url=URL)) and steer
the emulator with admin routes under /__admin: namespaces (x-mockingbird-namespace header or the
/__admin/ns/<name>/... path carrier), clock, faults, journal, metrics, checkpoints and branches,
records (/__admin/state) and snapshots; a browser page at /__admin/ui.
All state lives in one SQLite file (EMULATORS_DB) shared by every worker and process.
"""

SERVE_EPILOG = """\
environment:
  EMULATORS_DB          SQLite file of all emulator state (default var/emulators.sqlite3)
  EMULATORS_ADMIN_KEY   when set, every /__admin route but health and the
                        /ui page needs the header x-mockingbird-admin-key: <key>
  each service reads its own variables too (hermes: HERMES_EMULATOR_API_KEY, CORS
  origins, model name, stream timings); see emulators/<service>/README.md

examples:
  python -m emulators serve github --port 8828
  curl -s localhost:8828/__admin/health
  curl -s -X POST localhost:8828/__admin/clock -d '{"set":"2030-01-01T00:00:00Z","freeze":true}'
"""


def _parser(services):
    parser = argparse.ArgumentParser(prog="python -m emulators", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", metavar="command")
    run = commands.add_parser(
        "serve", help="serve one emulator on a loopback port",
        description="Serve one emulator (threaded; streams are not buffered).",
        epilog=SERVE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("service", choices=services, help="which emulator to serve")
    run.add_argument("--port", type=int, default=None,
                     help="TCP port (default: the service's, hermes 8827, github 8828; 0 = any)")
    run.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    run.add_argument("--db", default=None,
                     help="SQLite file of the state (default: $EMULATORS_DB or "
                          "var/emulators.sqlite3)")
    run.add_argument("--admin-key", default=None,
                     help="require x-mockingbird-admin-key (default: $EMULATORS_ADMIN_KEY; open)")
    return parser


def main(argv=None, *, environ=None, loader=None):
    """Run the CLI; return the exit status."""
    from emulators import SERVICES, load
    loader = loader or load
    environ = os.environ if environ is None else environ
    parser = _parser(list(SERVICES))
    args = parser.parse_args(argv)
    if args.command != "serve":
        parser.print_help()
        return 0
    base = Settings.from_env(environ)
    settings = Settings(db=args.db or base.db, admin_key=args.admin_key or base.admin_key)
    try:
        service = loader(args.service)
        port = service.default_port if args.port is None else args.port
        server = serve(service, host=args.host, port=port, settings=settings)
    except Exception as error:  # start-up errors: message, exit 1
        print(f"error: {error}", file=sys.stderr)
        return 1
    name, url, prefix = service.name, server.url, server.runtime.admin_prefix
    lock = "x-mockingbird-admin-key required" if settings.admin_key else \
        "open — pass --admin-key to lock"
    print(f"{name} emulator listening on {url}")
    print(f"{name} health: GET {url}{prefix}/health")
    print(f"{name} admin: {url}{prefix} ({lock})")
    print(f"{name} admin ui: {url}{prefix}/ui")
    print(f"{name} state: {settings.db}", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    server.close()
    return 0
