"""Local emulators of Hermes Agent and GitHub for testing their clients; see emulators/README.md.

The service registry lives here, above the runtime (which never imports a service).
"""
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


def start_fleet(config, *, loader=None, **options):
    """Start a fleet (emulators.runtime.fleet.start.start_fleet) of registered services, configured
    from the environment (HERMES_*) unless `loader(name)` says otherwise."""
    from .runtime.fleet.start import start_fleet as start  # on call: `import emulators` stays light
    return start(config, loader=loader or (lambda name: load(name, os.environ)), **options)
