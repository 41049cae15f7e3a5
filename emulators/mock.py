"""The portless mode: `mock_github()` and `mock_hermes()` answer the calls a process makes with
`requests` or httpx to the service's URL from an emulator in this process, with no port.

Each use (a `with` block, or a call of a decorated function) starts a fresh emulator over a
temporary database, yields its handle (the fixtures' helpers) and closes it afterwards.
"""
import functools
import inspect
import os
import shutil
import tempfile

from .handles import WsgiTransport, handle
from .registry import load
from .runtime.app import Runtime
from .runtime.intercept import ROUTES, Route
from .runtime.settings import Settings

GITHUB_URL = "https://api.github.com"  # what GitHub's clients call unless told otherwise
HERMES_URL = "http://127.0.0.1:8642"  # the Hermes API server's own default address


class Mock:
    """A context manager and decorator routing `base_url` to a fresh emulator of `service`."""

    def __init__(self, service, base_url, *, refuse_unmatched=False, admin_key=None, seed=0):
        Route(base_url, None)  # a bad URL fails here, where it was written
        self.service, self.base_url = service, base_url.rstrip("/")
        self.refuse_unmatched, self.admin_key, self.seed = refuse_unmatched, admin_key, seed
        self._open = []  # (route, runtime, folder) of each use in progress, innermost last

    def __enter__(self):
        folder = tempfile.mkdtemp(prefix=f"emulator-{self.service}-")
        try:
            runtime = Runtime(load(self.service, os.environ),
                              Settings(db=os.path.join(folder, "emulators.sqlite3"),
                                       admin_key=self.admin_key, seed=self.seed))
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        route = Route(self.base_url, runtime, refuse_unmatched=self.refuse_unmatched)
        ROUTES.add(route)
        self._open.append((route, runtime, folder))
        transport = WsgiTransport(self.base_url, _with_key(runtime, self.admin_key))
        return handle(self.service, self.base_url, transport,
                      admin_prefix=runtime.admin_prefix)

    def __exit__(self, *exc):
        route, runtime, folder = self._open.pop()
        ROUTES.remove(route)
        runtime.close()
        shutil.rmtree(folder, ignore_errors=True)

    def __call__(self, function):
        """Decorate a function (sync or async): each call runs inside a fresh mock. A class:
        each of its `test*` methods, as moto's decorators do."""
        if inspect.isclass(function):
            for name, method in list(vars(function).items()):
                if name.startswith("test") and inspect.isfunction(method):
                    setattr(function, name, self(method))
            return function
        if inspect.iscoroutinefunction(function):
            @functools.wraps(function)
            async def run_async(*args, **kwargs):
                with self:
                    return await function(*args, **kwargs)
            return run_async

        @functools.wraps(function)
        def run(*args, **kwargs):
            with self:
                return function(*args, **kwargs)
        return run


def _with_key(app, admin_key):
    """The handle's own admin calls carry the admin key the mock was given."""
    if not admin_key:
        return app

    def keyed(environ, start_response):
        environ["HTTP_X_MOCKINGBIRD_ADMIN_KEY"] = admin_key
        return app(environ, start_response)
    return keyed


def mock_github(base_url=GITHUB_URL, **options):
    """Answer `requests`/httpx calls to GitHub's API (or `base_url`, e.g. a GitHub Enterprise
    `https://ghe.example/api/v3`) from a GitHub emulator in this process; see Mock."""
    return Mock("github", base_url, **options)


def mock_hermes(base_url=HERMES_URL, **options):
    """Answer `requests`/httpx calls to a Hermes API server at `base_url` from a Hermes
    emulator in this process; see Mock."""
    return Mock("hermes", base_url, **options)
