"""The Hermes emulator as a WSGI app for real gunicorn in tests (settings from the environment)."""
import os

from emulators.hermes.app import service
from emulators.runtime import Settings, build_wsgi

application = build_wsgi(service, Settings.from_env(os.environ))
