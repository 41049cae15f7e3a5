"""The service registry: which emulators there are and how to build one by name."""
import importlib
import os

SERVICES = ("hermes", "github")


def load(name, environ=None):
    """Return a new `Service` of a registered emulator by name.

    With `environ` (an entry point's environment) the service reads its own variables there
    (HERMES_*); without, it has its defaults.
    """
    if name not in SERVICES:
        raise LookupError(f"unknown emulator {name!r}; choose one of {', '.join(SERVICES)}")
    app = importlib.import_module(f"emulators.{name}.app")
    return app.create_service() if environ is None else app.from_env(environ)
