"""The manuals' reference tables are the code's, checked rather than kept by hand twice: every
`NEWOS4_*`, `HERMES_*` and `EMULATORS_*` variable the code reads is a row of exactly one README
table and every such row is read; every command line's subcommands and options are its
manual's usage lines, and nothing more."""
import argparse
import ast
import importlib
import re
from collections import Counter
from collections.abc import Mapping

import pytest

from testkit.shell import readmes
from tests.test_layering import REPO

PREFIXES = ("NEWOS4_", "HERMES_", "EMULATORS_")
VARIABLE = re.compile(rf"(?:{'|'.join(PREFIXES)})[A-Z0-9_]*[A-Z0-9]")
TABLE_ROW = re.compile(rf"^\| `({VARIABLE.pattern})` \|", re.M)
SHIPPED = ("spaces", "emulators", "scripts", "cron")  # and the top-level entry files
TOP_FILES = ("wsgi.py", "gunicorn.conf.py")


class RecordingEnviron(Mapping):
    """An empty environment that remembers every name looked up in it."""

    def __init__(self):
        self.read = set()

    def __getitem__(self, name):
        self.read.add(name)
        raise KeyError(name)

    def __contains__(self, name):
        self.read.add(name)
        return False

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0


def shipped_modules():
    """(dotted module name, parsed tree) of every shipped Python file."""
    paths = [p for root in SHIPPED for p in (REPO / root).rglob("*.py")]
    paths += [REPO / name for name in TOP_FILES]
    for path in sorted(paths):
        relative = path.relative_to(REPO).with_suffix("")
        yield ".".join(relative.parts).removesuffix(".__init__"), ast.parse(path.read_text())


def from_env_readers():
    """Every `from_env` the shipped code defines, found by walking it: (where, callable)."""
    found = []
    for module_name, tree in shipped_modules():
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            for child in body if isinstance(body, list) else ():
                if isinstance(child, ast.FunctionDef) and child.name == "from_env":
                    owner = importlib.import_module(module_name)
                    if isinstance(node, ast.ClassDef):
                        owner = getattr(owner, node.name)
                    found.append((f"{module_name}.{getattr(node, 'name', '')}".rstrip("."),
                                  owner.from_env))
    return found


def variables_read():
    """Every prefixed variable some `from_env` looks up, and every one the code names whole as
    a string (a read that bypassed `from_env` would show there)."""
    read = set()
    for _, from_env in from_env_readers():
        environ = RecordingEnviron()
        from_env(environ)
        read |= environ.read
    for _, tree in shipped_modules():
        read |= {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
                 and isinstance(node.value, str) and VARIABLE.fullmatch(node.value)}
    return {name for name in read if name.startswith(PREFIXES)}


def table_rows():
    """[(README, variable)] of every README table row whose first cell is a variable."""
    return [(readme, name) for readme in readmes()
            for name in TABLE_ROW.findall((REPO / readme).read_text())]


def test_every_from_env_is_found_and_reads_variables():
    readers = dict(from_env_readers())
    assert {"spaces.newos4.settings.Settings", "emulators.runtime.settings.Settings",
            "emulators.hermes.settings.HermesSettings", "emulators.hermes.app",
            "emulators.github.app"} <= set(readers)
    assert {"NEWOS4_DATA_DIR", "NEWOS4_RELAY_WATCH_POLL_MS", "HERMES_API_URL", "EMULATORS_DB",
            "HERMES_SSE_POLL_SECONDS"} <= variables_read()


def test_every_variable_read_is_in_a_table():
    documented = {name for _, name in table_rows()}
    assert sorted(variables_read() - documented) == []


def test_every_variable_in_a_table_is_read():
    read = variables_read()
    assert sorted((readme, name) for readme, name in table_rows() if name not in read) == []


def test_no_variable_is_in_two_tables():
    rows = table_rows()
    twice = {name for name, count in Counter(name for _, name in rows).items() if count > 1}
    assert sorted((name, readme) for readme, name in rows if name in twice) == []


def test_the_recording_environ_sees_every_kind_of_lookup():
    environ = RecordingEnviron()
    assert environ.get("A") is None and "B" not in environ
    with pytest.raises(KeyError):
        environ["C"]
    assert environ.read == {"A", "B", "C"}


# -- command lines -------------------------------------------------------------------------


def chat_parser():
    from spaces.newos4.cli import build_parser
    return build_parser()


def relay_parser():
    from spaces.newos4.relay.cli import build_parser
    return build_parser()


def emulators_parser():
    from emulators import SERVICES
    from emulators.runtime.cli import _parsers
    return _parsers(list(SERVICES))[0]


COMMAND_LINES = [  # (how the manual runs it, the manual, its parser)
    (".venv/bin/python scripts/chat.py", "spaces/newos4/relay/README.md", chat_parser),
    (".venv/bin/python cron/relay.py", "spaces/newos4/relay/README.md", relay_parser),
    (".venv/bin/python -m emulators", "emulators/README.md", emulators_parser),
]


def vocabulary(parser, command=""):
    """{subcommand ("" for none): (options, positional choices)} as `--help` shows them."""
    options, choices, found = set(), set(), {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(vocabulary(sub, name))
        elif action.option_strings:
            options |= {o for o in action.option_strings if o.startswith("--")} - {"--help"}
        elif action.choices:
            choices |= set(action.choices)
    if options or choices or not found:
        found[command] = (options, choices)
    return found


def usage_lines(manual, program):
    """The usage lines of `program` in `manual`: lines of its plain (not shell) fenced blocks
    that run it, an indented line continuing the one before; comments dropped."""
    lines, fence = [], None
    for line in (REPO / manual).read_text().splitlines():
        if line.startswith("```"):
            fence = line[3:] if fence is None else None
        elif fence == "" and line.startswith(" ") and lines and lines[-1] is not None:
            lines[-1] += " " + line.strip()
        elif fence == "":
            lines.append(line.split(" #")[0] if line.startswith(program + " ") else None)
    return [line[len(program):].strip() for line in lines if line is not None]


def documented_vocabulary(lines, commands):
    """{subcommand: (options, words)} from usage lines; the first word names the subcommand
    when the program has subcommands."""
    found = {}
    for line in lines:
        words = line.split()
        command = words[0] if words and words[0] in commands else ""
        options, plain = found.setdefault(command, (set(), set()))
        options |= set(re.findall(r"--[a-z][a-z-]*", line))
        plain |= {w for word in words for w in re.split(r"[][|]", word) if w}
    return found


@pytest.mark.parametrize("program, manual, parser", COMMAND_LINES,
                         ids=[p.rsplit(" ", 1)[-1] for p, _, _ in COMMAND_LINES])
def test_the_manuals_usage_is_the_command_lines_help(program, manual, parser):
    actual = vocabulary(parser())
    lines = usage_lines(manual, program)
    assert lines, f"{manual} shows no usage of {program}"
    documented = documented_vocabulary(lines, set(actual))
    assert sorted(documented) == sorted(actual), "subcommands"
    for command, (options, choices) in actual.items():
        shown, words = documented[command]
        assert sorted(shown) == sorted(options), command or program
        assert sorted(choices - words) == [], command or program


def test_the_usage_check_sees_a_missing_option_and_an_unknown_one():
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers()
    commands.add_parser("list").add_argument("--json", action="store_true")
    commands.add_parser("check")
    lines = ["list [--awaiting]", "check"]
    documented = documented_vocabulary(lines, {"list", "check"})
    assert vocabulary(parser) == {"list": ({"--json"}, set()), "check": (set(), set())}
    assert documented["list"][0] == {"--awaiting"}
