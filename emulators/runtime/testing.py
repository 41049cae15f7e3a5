"""Test helpers: run a service in-process under webtest, with its runtime at hand."""
from .app import Runtime
from .settings import Settings


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
