"""The counter service (testkit) under gunicorn for bench/runtime.py: through the full runtime
pipeline (`full`), and its provider app alone with a ready instance per request (`bare`).

Both read EMULATORS_DB, so they share one SQLite file and its settings."""
import os

from emulators.runtime import Runtime, Settings
from testkit.counter_service import service

_runtime = Runtime(service, Settings.from_env(os.environ))
full = _runtime


def bare(environ, start_response):
    """The same handler called bare: no namespace, faults, checkpoint, journal or stamping."""
    environ["emulators.instance"] = _runtime.instance("bare", method=environ["REQUEST_METHOD"])
    return _runtime.provider(environ, start_response)
