"""Emulator test fixtures come from the emulators' pytest plugin."""
from emulators.pytest_plugin import (  # noqa: F401  (fixtures)
    emulator_app, emulator_servers, github_emulator, hermes_emulator)
