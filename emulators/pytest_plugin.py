"""The emulators' pytest fixtures, loaded through the package's `pytest11` entry point (no
conftest line): served emulators with helpers (`github_emulator`, `hermes_emulator` and their
`_module`/`_session` variants), a namespace per test (`github_namespace`, `hermes_namespace`),
the portless mocks (`mock_github`, `mock_hermes`) and in-process webtest apps (`emulator_app`,
`test_app` beneath it). An entry point above the runtime: it reads the environment
(`PluginSettings.from_env`; HERMES_* reach the services it starts).
"""
import itertools
import os
import secrets
from dataclasses import dataclass, field

import pytest

from . import SERVICES, load


@dataclass(frozen=True)
class PluginSettings:
    """Where the fixtures find their emulators: `urls` of external servers by service (the
    others are started in this process), and the admin key and prefix to use with them
    (`None`: none, and the runtime's default prefix)."""

    urls: dict = field(default_factory=dict)
    admin_key: str | None = None
    admin_prefix: str | None = None

    @classmethod
    def from_env(cls, environ):
        """EMULATORS_GITHUB_URL, EMULATORS_HERMES_URL, EMULATORS_ADMIN_KEY and
        EMULATORS_ADMIN_PREFIX."""
        urls = {name: environ[f"EMULATORS_{name.upper()}_URL"].rstrip("/") for name in SERVICES
                if environ.get(f"EMULATORS_{name.upper()}_URL")}
        return cls(urls=urls, admin_key=environ.get("EMULATORS_ADMIN_KEY") or None,
                   admin_prefix=environ.get("EMULATORS_ADMIN_PREFIX") or None)


class Servers:
    """The session's emulators: an external server where its URL is set, else one started
    here on first use (each xdist worker starts its own); closed at the session's end."""

    def __init__(self, settings, worker):
        self.settings = settings
        self.started = {}
        # Namespaces the fixtures create are unique to this run and worker, so runs and
        # workers sharing one external server never meet.
        self._prefix = f"{secrets.token_hex(3)}-{worker}"
        self._numbers = itertools.count(1)

    def handle(self, name, ns="default"):
        """A handle on namespace `ns` of the `name` emulator."""
        from .handles import HttpTransport, handle
        if name in self.settings.urls:
            prefix = {"admin_prefix": self.settings.admin_prefix} if self.settings.admin_prefix \
                else {}
            return handle(name, self.settings.urls[name], HttpTransport(self.settings.admin_key),
                          ns=ns, **prefix)
        if name not in self.started:
            from .runtime.server import serve
            self.started[name] = serve(load(name, os.environ))
        server = self.started[name]
        return handle(name, server.url, HttpTransport(), ns=ns,
                      admin_prefix=server.runtime.admin_prefix, server=server)

    def fresh_namespace(self, kind):
        """A namespace name no other test, module, worker or run uses."""
        return f"{kind}{self._prefix}-{next(self._numbers)}"

    def close(self):
        for server in self.started.values():
            server.close()
        self.started.clear()


@pytest.fixture(scope="session")
def emulator_servers(request):
    """The session's `Servers` (external or started here on first use), closed at its end."""
    worker = getattr(request.config, "workerinput", {}).get("workerid", "main")
    servers = Servers(PluginSettings.from_env(os.environ), worker)
    yield servers
    servers.close()


def _reset_views(handle):
    for view in handle.views:
        view.reset()


def _default(servers, name):
    """The default namespace of this worker's own server, wiped before the test; on an
    external server (shared by workers and runs) a namespace of the test's own instead. The
    namespaces the test took with `.namespace()` are wiped after it."""
    if name in servers.settings.urls:
        yield from _own(servers, name, "t")
        return
    handle = servers.handle(name)
    handle.reset()
    yield handle
    _reset_views(handle)


def _own(servers, name, kind):
    """A handle on a namespace of its own, wiped after its scope."""
    handle = servers.handle(name, servers.fresh_namespace(kind))
    yield handle
    _reset_views(handle)
    handle.reset()


@pytest.fixture
def github_emulator(emulator_servers):
    """The GitHub emulator (served), clean for each test: its default namespace, or on an
    external server (EMULATORS_GITHUB_URL) a namespace of the test's own."""
    yield from _default(emulator_servers, "github")


@pytest.fixture
def hermes_emulator(emulator_servers):
    """The Hermes emulator (served), clean for each test (as `github_emulator`)."""
    yield from _default(emulator_servers, "hermes")


@pytest.fixture
def github_namespace(emulator_servers):
    """The GitHub emulator in a namespace of this test's own, wherever it is served."""
    yield from _own(emulator_servers, "github", "t")


@pytest.fixture
def hermes_namespace(emulator_servers):
    """The Hermes emulator in a namespace of this test's own, wherever it is served."""
    yield from _own(emulator_servers, "hermes", "t")


@pytest.fixture(scope="module")
def github_emulator_module(emulator_servers):
    """The GitHub emulator in a namespace the tests of one module share (seed it in a
    module-scoped fixture), wiped after the module."""
    yield from _own(emulator_servers, "github", "m")


@pytest.fixture(scope="module")
def hermes_emulator_module(emulator_servers):
    """The Hermes emulator in a namespace the tests of one module share."""
    yield from _own(emulator_servers, "hermes", "m")


@pytest.fixture(scope="session")
def github_emulator_session(emulator_servers):
    """The GitHub emulator in a namespace the whole session (one xdist worker) shares."""
    yield from _own(emulator_servers, "github", "s")


@pytest.fixture(scope="session")
def hermes_emulator_session(emulator_servers):
    """The Hermes emulator in a namespace the whole session (one xdist worker) shares."""
    yield from _own(emulator_servers, "hermes", "s")


@pytest.fixture
def mock_github():
    """`emulators.mock_github()` around the test: requests/httpx calls to
    https://api.github.com answered in process; yields the handle."""
    from .mock import mock_github as mock
    with mock() as handle:
        yield handle


@pytest.fixture
def mock_hermes():
    """`emulators.mock_hermes()` around the test: requests/httpx calls to Hermes' default
    http://127.0.0.1:8642 answered in process; yields the handle."""
    from .mock import mock_hermes as mock
    with mock() as handle:
        yield handle


def test_app(service, db, *, admin_key=None, wall=None, **settings):
    """Return a `webtest.TestApp` of a service (a Service, or its name) over the SQLite file
    `db` (`.runtime` attached).

    A dropped connection surfaces as `emulators.runtime.DroppedByFault` raised by the call.
    """
    try:
        import webtest
    except ImportError:
        raise ImportError("emulator_app and test_app need webtest: pip install"
                          " 'newos4-monolith[pytest]'") from None
    from .runtime.app import Runtime
    from .runtime.settings import Settings
    if isinstance(service, str):
        service = load(service, os.environ)
    kwargs = {"wall": wall} if wall else {}
    runtime = Runtime(service, Settings(db=str(db), admin_key=admin_key, **settings), **kwargs)
    app = webtest.TestApp(runtime)
    app.runtime = runtime
    return app


test_app.__test__ = False  # not a pytest test despite its name


@pytest.fixture
def emulator_app(tmp_path):
    """Return `make(service, **settings)` building a webtest app of a service (a name such as
    "github", or a Service) over a fresh database; each is closed after the test."""
    counter = itertools.count()
    made = []

    def make(service, **settings):
        app = test_app(service, tmp_path / f"emulators-{next(counter)}.sqlite3", **settings)
        made.append(app.runtime)
        return app
    yield make
    for runtime in made:
        runtime.close()
