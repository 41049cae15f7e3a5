"""What the emulators offer the tests of their users' clients: the pytest fixtures
`hermes_emulator`, `github_emulator` (a served emulator, reset before each test) and
`emulator_app` (a factory of in-process webtest apps), and `test_app` beneath it. Load with
`pytest_plugins = ["emulators.pytest_plugin"]` in a root conftest, or import the fixtures.
An entry point above the runtime: it takes services from the registry (HERMES_* apply).
"""
import os

import pytest

from . import load
from .runtime.app import Runtime
from .runtime.server import serve
from .runtime.settings import Settings


def test_app(service, db, *, admin_key=None, wall=None, **settings):
    """Return a `webtest.TestApp` of the service over the SQLite file `db` (`.runtime` attached).

    A dropped connection surfaces as `emulators.runtime.DroppedByFault` raised by the call.
    """
    import webtest
    kwargs = {"wall": wall} if wall else {}
    runtime = Runtime(service, Settings(db=str(db), admin_key=admin_key, **settings), **kwargs)
    app = webtest.TestApp(runtime)
    app.runtime = runtime
    return app


test_app.__test__ = False  # not a pytest test despite its name


@pytest.fixture(scope="session")
def emulator_servers():
    """Servers started lazily by name for the whole session, closed at its end."""
    servers = {}
    yield servers
    for server in servers.values():
        server.close()


def _served(servers, name):
    if name not in servers:
        servers[name] = serve(load(name, os.environ))
    server = servers[name]
    server.reset()
    return server


@pytest.fixture
def hermes_emulator(emulator_servers):
    """The Hermes emulator on an ephemeral loopback port, every namespace reset."""
    return _served(emulator_servers, "hermes")


@pytest.fixture
def github_emulator(emulator_servers):
    """The GitHub emulator on an ephemeral loopback port, every namespace reset."""
    return _served(emulator_servers, "github")


@pytest.fixture
def emulator_app(tmp_path):
    """Return `make(service, **settings)` building a webtest app over a fresh database."""
    counter = iter(range(1_000_000))

    def make(service, **settings):
        return test_app(service, tmp_path / f"emulators-{next(counter)}.sqlite3", **settings)
    return make
