"""How the chat command line (`scripts/chat.py`) declares a command: what every command that
names a thread, prints JSON or writes shares, in one place (cli.py and the relay's host
commands add theirs with it)."""
THREAD_HELP = "16 lowercase hex digits"


def command(commands, name, *, writes, thread=False, json=None, **options):
    """Add command `name` to `commands` (argparse subparsers) with `options` (help,
    description, …): THREAD first when `thread`, a --json flag helped by `json` when given, and
    whether it `writes` (then the data directory must be writable, else only readable)."""
    parser = commands.add_parser(name, **options)
    if thread:
        parser.add_argument("thread", metavar="THREAD", help=THREAD_HELP)
    if json:
        parser.add_argument("--json", action="store_true", help=json)
    parser.set_defaults(writes=writes)
    return parser
