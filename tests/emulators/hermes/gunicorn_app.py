"""The Hermes emulator as a WSGI app for real gunicorn in tests (settings from the environment)."""
import os

from emulators.hermes.app import from_env
from emulators.runtime import Settings, build_wsgi

application = build_wsgi(from_env(os.environ), Settings.from_env(os.environ))
