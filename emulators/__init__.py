"""Local emulators of Hermes Agent and GitHub for testing their clients; see emulators/README.md.

`load(name)` imports `emulators.<name>.app` and returns its `service` (the runtime itself never
imports a service).
"""
import importlib

SERVICES = ("hermes", "github")


def load(name):
    """Return the `Service` of a registered emulator by name."""
    if name not in SERVICES:
        raise LookupError(f"unknown emulator {name!r}; choose one of {', '.join(SERVICES)}")
    return importlib.import_module(f"emulators.{name}.app").service
