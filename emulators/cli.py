"""The `emulators` command (`python -m emulators`): the runtime's CLI over the service registry.

An entry point: the only place besides wsgi.py where the environment is read.
"""
import os
import sys

from . import SERVICES, load
from .runtime import cli


def main(argv=None, *, environ=None, loader=None):
    """Run the CLI; return the exit status. Services come from `loader(name)`, by default the
    registry configured from `environ` (HERMES_*)."""
    environ = os.environ if environ is None else environ
    return cli.main(sys.argv[1:] if argv is None else argv, environ=environ,
                    loader=loader or (lambda name: load(name, environ)), services=SERVICES)
