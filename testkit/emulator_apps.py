"""Emulators as WSGI apps for real gunicorn in tests, settings from the environment; gunicorn
calls the factory it is named with (`testkit.emulator_apps:counter()`)."""
import os

from emulators.hermes.app import from_env
from emulators.runtime import Settings, build_wsgi
from testkit.counter_service import service


def counter():
    """The counter service (the whole runtime contract) under the runtime."""
    return build_wsgi(service, Settings.from_env(os.environ))


def hermes():
    """The Hermes emulator alone, as the shipped wsgi:hermes but with the test's settings."""
    return build_wsgi(from_env(os.environ), Settings.from_env(os.environ))
