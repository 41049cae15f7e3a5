"""Command line: `python -m emulators serve hermes|github [options]`, or a fleet of
them with `serve --config FILE`; strict parsing (an unknown command or flag exits 2),
start-up errors exit 1, SIGINT/SIGTERM exit 0."""
import argparse
import json
import re
import signal
import sys
import threading

from . import requestlog
from .fleet.config import ConfigError
from .fleet.start import FleetError, FleetStartError, start_fleet
from .mount import PREFIX
from .server import serve
from .settings import Settings

PROG = "python -m emulators"

DESCRIPTION = """\
Local emulators of Hermes Agent and GitHub for testing their clients.

Point a client at the printed URL (OpenAI(base_url=URL + "/v1"), Github(base_url=URL)) and steer
the emulator with admin routes under /__admin: namespaces (x-mockingbird-namespace header or the
/__admin/ns/<name>/... path carrier), clock, faults, journal, metrics, checkpoints and branches,
records (/__admin/state) and snapshots; a browser page at /__admin/ui.
All state lives in one SQLite file (EMULATORS_DB) shared by every worker and process.
`serve --config FILE` serves several emulators from one process, each on its own port, with a
control listener that resets, snapshots, restores and moves the clock of a namespace across all
of them at once.
"""

EPILOG = """\
commands:
  serve <service>   serve one emulator (hermes or github) until Ctrl-C
  serve --config F  serve a fleet: every service of the JSON file F, plus its control
  help [command]    this text, or a command's options

`python -m emulators serve --help` explains every option.
"""

SERVE_DESCRIPTION = """\
Serve one emulator on a TCP port (threaded; event streams are not buffered) until SIGINT or
SIGTERM, then close it and exit 0. Start-up lines name the URL, the health route and the admin
plane; then one line per provider request (--log). A start-up error exits 1, a bad option 2.
With --config FILE instead of a service: serve a fleet (below).
"""

SERVE_EPILOG = """\
options in detail:
  --port PORT          TCP port; default the service's own (hermes 8827, github 8828);
                       0 picks a free one (read the URL from the first line)
  --host HOST          interface to bind; default 127.0.0.1 (loopback only). An IPv6
                       host is printed bracketed: http://[::1]:8827
  --db FILE            SQLite file holding all state, shared with gunicorn workers and
                       other processes using the same file; default $EMULATORS_DB, else
                       var/emulators.sqlite3 in the working directory
  --admin-key KEY      lock the admin plane: every /__admin route except health needs the
                       header x-mockingbird-admin-key: KEY; default $EMULATORS_ADMIN_KEY,
                       else open (provider routes never need it)
  --admin-prefix PATH  where the admin plane lives (and the /ns/<name> path carrier); plain
                       segments, a trailing slash is dropped; default $EMULATORS_ADMIN_PREFIX,
                       else /__admin
  --seed SEED          seed of the service RNG and of fault rates (an integer, or any other
                       text, which is hashed); default 0. Same seed, same run
  --log MODE           the request log on stdout, one line per provider request (admin
                       and health calls are not logged); metadata only, never bodies, query
                       values or credentials:
                         pretty  <service> <METHOD> <path> <status> <operationId|UNMATCHED|->
                                 <ms>ms[ [ns]][ fault=<id>][ adopted]
                                 [ received=<n>B|? ct=<ct|-> [te=<te>]][ issues=...]
                                 (the default; [ns] only outside the default namespace,
                                 received/ct/te only for a rejected request)
                         json    the journal entry of GET /__admin/requests, without `at`
                         off     nothing
  --log-requests       the same as --log json

a fleet (--config FILE instead of a service):
  --config FILE        a JSON file naming the services to serve from this one process,
                       each on its own port, plus a control listener for all of them:
                         {"services": {"hermes": {"port": 0}, "github": {"port": 0}},
                          "control": {"port": 0}}
                       a service takes port (default its own), host (127.0.0.1),
                       adminPrefix, adminKey, seed, protocol ("http" only); the file
                       may set adminPrefix, adminKey, namespace (default of the
                       controls), log, db, control {host, port (default 0)}. The
                       file's adminKey, adminPrefix, log and db win over --admin-key,
                       --admin-prefix, --log and --db, which win over the
                       environment; a service's own adminKey/adminPrefix win over all.
                       Every service shares the one SQLite file, so a fleet control
                       is one transaction over all of them. --port, --host and --seed
                       belong in the file. A service that cannot start closes every
                       listener started and exits 1
  --ready-file FILE    once every service answered its health probe, write the ready
                       manifest (JSON: control adminBase and healthUrl, each service's
                       url, healthUrl, adminUrl) there atomically, mode 0600; an old
                       file is deleted before start-up, ours is removed on exit
  --connections-file FILE
                       the same for {version, id, pid, services: {name: {url}}}
  --ready-json         print the ready manifest as one JSON line instead of the
                       start-up lines
  controls, under <control>/__admin/fleet (x-mockingbird-admin-key when a key is set):
    GET  /fleet/metrics?namespace=N    GET /fleet/clock?namespace=N
    POST /fleet/clock {"set"|"advance"|"freeze", "services"?}
    POST /fleet/wait-until-idle {"timeoutMs"?}
    POST /fleet/namespaces/N/reset     POST /fleet/namespaces/N/snapshots {"label"?}
    POST /fleet/namespaces/N/snapshots/ID/restore
  and GET <control>/__admin/health (200 when every service is ready, else 503)

environment:
  EMULATORS_DB            SQLite file of all emulator state (default ./var/emulators.sqlite3)
  EMULATORS_ADMIN_KEY     as --admin-key (health and the /ui page stay open)
  EMULATORS_ADMIN_PREFIX  as --admin-prefix
  each service reads its own variables too (hermes: HERMES_EMULATOR_API_KEY, CORS
  origins, model name, stream timings); see emulators/<service>/README.md

examples:
  python -m emulators serve github --port 8828
  python -m emulators serve hermes --port 0 --db /tmp/h.sqlite3 --seed 7
  python -m emulators serve github --admin-key s3cret --log json
  python -m emulators serve hermes --admin-prefix /_mock --log off
  python -m emulators serve --config fleet.json --ready-file var/fleet.json --ready-json
  curl -s localhost:8828/__admin/health
  curl -s -X POST localhost:8828/__admin/clock -d '{"set":"2030-01-01T00:00:00Z","freeze":true}'
"""


def _port(text):
    if not re.fullmatch(r"[0-9]{1,5}", text) or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"must be a TCP port from 0 to 65535 (got {text})")
    return int(text)


def _seed(text):
    return int(text) if re.fullmatch(r"-?[0-9]+", text) else text


def _parsers(services):
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=formatter, allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", metavar="command")
    run = commands.add_parser(
        "serve", help="serve one emulator", description=SERVE_DESCRIPTION, epilog=SERVE_EPILOG,
        formatter_class=formatter, allow_abbrev=False)
    run.add_argument("service", nargs="?", choices=services,
                     help="which emulator to serve (omit with --config)")
    run.add_argument("--port", type=_port, default=None,
                     help="TCP port (default: the service's; 0 = any free port)")
    run.add_argument("--host", default=None, help="interface (default 127.0.0.1)")
    run.add_argument("--db", default=None, metavar="FILE",
                     help="SQLite file of the state (default $EMULATORS_DB)")
    run.add_argument("--admin-key", default=None, metavar="KEY",
                     help="require x-mockingbird-admin-key (default $EMULATORS_ADMIN_KEY; open)")
    run.add_argument("--admin-prefix", default=None, metavar="PATH",
                     help="admin plane path (default $EMULATORS_ADMIN_PREFIX or /__admin)")
    run.add_argument("--seed", type=_seed, default=None, help="RNG seed (default 0)")
    run.add_argument("--log", default="pretty", metavar="MODE",
                     help="request log: pretty (default), json or off")
    run.add_argument("--log-requests", dest="log", action="store_const", const="json",
                     help="the same as --log json")
    run.add_argument("--config", default=None, metavar="FILE",
                     help="serve the fleet of a JSON config file instead of one service")
    run.add_argument("--ready-file", default=None, metavar="FILE",
                     help="fleet: write the ready manifest there (0600)")
    run.add_argument("--connections-file", default=None, metavar="FILE",
                     help="fleet: write the service URLs there (0600)")
    run.add_argument("--ready-json", action="store_true",
                     help="fleet: print the ready manifest as one JSON line")
    helper = commands.add_parser("help", help="show help", allow_abbrev=False)
    helper.add_argument("topic", nargs="?", choices=["serve"], help="a command")
    return parser, run


def main(argv, *, environ, loader, services):
    """Run the CLI; return the exit status. `loader(name)` returns the Service of one of
    `services` (the registry above the runtime supplies both: emulators/cli.py)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser, run = _parsers(list(services))
    if not argv:
        parser.print_help()
        return 0
    try:
        args = parser.parse_args(argv)
        if args.command == "serve":
            prefix = _admin_prefix(run, args.admin_prefix)
            on_log = _log_sink(run, args.log)
            _check_mode(run, args)
    except SystemExit as exit_:  # argparse: --help exits 0, a bad command or option 2
        return exit_.code if isinstance(exit_.code, int) else 0
    if args.command != "serve":  # `help [serve]`, or only `--`
        (run if getattr(args, "topic", None) == "serve" else parser).print_help()
        return 0
    try:
        base = Settings.from_env(environ)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    options = {"db": args.db or base.db, "admin_key": args.admin_key or base.admin_key,
               "admin_prefix": prefix or base.admin_prefix, "on_log": on_log,
               "max_body": base.max_body, "max_admin_body": base.max_admin_body}
    if args.seed is not None:
        options["seed"] = args.seed
    stop = threading.Event()  # set by SIGINT/SIGTERM, also one arriving during start-up
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    if args.config is not None:
        return _serve_fleet(args, loader, options, stop)
    server = _start(args, loader, Settings(**options))
    if server is None:
        return 1
    _banner(server)
    stop.wait()
    server.close()
    return 0


def _admin_prefix(run, value):
    if value is None:
        return None
    trimmed = value.rstrip("/")
    if not PREFIX.match(trimmed):
        run.error(f"--admin-prefix must be an absolute path of plain segments, like /__admin"
                  f" (got {value})")
    return trimmed


def _log_sink(run, mode):
    try:
        return requestlog.sink(mode)
    except ValueError as error:
        run.error(str(error))


def _check_mode(run, args):
    """One service, or a fleet (--config): each with its own options (exit 2 otherwise)."""
    if args.config is None:
        if args.service is None:
            run.error("choose a service (hermes or github), or a fleet with --config FILE")
        for flag, value in (("--ready-file", args.ready_file),
                            ("--connections-file", args.connections_file),
                            ("--ready-json", args.ready_json or None)):
            if value is not None:
                run.error(f"{flag} only applies to a fleet (--config FILE)")
        return
    if args.service is not None:
        run.error("give a service or --config FILE, not both")
    for flag, value in (("--port", args.port), ("--host", args.host), ("--seed", args.seed)):
        if value is not None:
            run.error(f"{flag} does not apply with --config: set it per service in the file")


def _start(args, loader, settings):
    """Load the service and listen; on failure print one line to stderr and return None."""
    try:
        service = loader(args.service)
    except Exception as error:  # e.g. a HERMES_* variable the service refused
        print(f"error: {args.service}: {error}", file=sys.stderr)
        return None
    port = service.default_port if args.port is None else args.port
    host = args.host or "127.0.0.1"
    try:
        server = serve(service, host=host, port=port, settings=settings)
    except OSError as error:
        print(f"error: cannot listen on {host}:{port}: {error.strerror or error}",
              file=sys.stderr)
        return None
    except Exception as error:
        print(f"error: {error}", file=sys.stderr)
        return None
    try:
        server.runtime.namespaces()  # open the database now: a bad --db fails at start-up
        server.runtime.journal.drain()  # and its journal folder (what a dead server left)
    except Exception as error:
        server.close()
        print(f"error: cannot open {settings.db}: {error}", file=sys.stderr)
        return None
    return server


def _banner(server):
    runtime = server.runtime
    name, url, prefix = runtime.name, server.url, runtime.admin_prefix
    lock = "x-mockingbird-admin-key required" if runtime.settings.admin_key else \
        "open — pass --admin-key to lock"
    lines = [f"{name} emulator listening on {url}",
             f"{name} health: GET {url}{prefix}/health",
             f"{name} admin: {url}{prefix} ({lock})"]
    lines.append(f"{name} admin ui: {url}{prefix}/ui")
    lines.append(f"{name} state: {runtime.settings.db}")
    print("\n".join(lines), flush=True)


def _serve_fleet(args, loader, options, stop):
    """Serve the fleet of --config until a signal; return the exit status."""
    try:
        fleet = start_fleet(args.config, admin_key=options["admin_key"],
                            admin_prefix=options["admin_prefix"], log=args.log,
                            db=options["db"], loader=loader, ready_file=args.ready_file,
                            connections_file=args.connections_file)
    except FleetStartError as error:
        print(f"error: {error} ({_reason(error.cause)})", file=sys.stderr)
        return 1
    except (ConfigError, FleetError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.ready_json:
        print(json.dumps(fleet.manifest, separators=(",", ":")), flush=True)
    else:
        _fleet_banner(fleet)
    stop.wait()
    fleet.close()
    return 0


def _reason(cause):
    if isinstance(cause, LookupError) and cause.args:
        return str(cause.args[0])  # KeyError quotes its message
    return str(cause) or type(cause).__name__


def _fleet_banner(fleet):
    lines = []
    for name, child in fleet.children.items():
        lock = "x-mockingbird-admin-key required" if child.runtime.settings.admin_key else \
            "open — set adminKey to lock"
        lines += [f"{name} emulator listening on {child.url}",
                  f"{name} admin: {child.admin_url} ({lock})"]
    lock = "x-mockingbird-admin-key required" if fleet.plan.admin_key else \
        "open — set adminKey to lock"
    lines += [f"fleet control listening on {fleet.url}",
              f"fleet health: GET {fleet.health_url}",
              f"fleet admin: {fleet.admin_url} ({lock})",
              f"fleet state: {fleet.db_path}"]
    print("\n".join(lines), flush=True)
