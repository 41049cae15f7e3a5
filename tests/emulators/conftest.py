"""Emulator test fixtures come from the runtime's pytest plugin."""
from emulators.runtime.pytest_plugin import (  # noqa: F401  (fixtures)
    emulator_app, emulator_servers, github_emulator, hermes_emulator)
