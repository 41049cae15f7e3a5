"""The counter service as a WSGI app for real gunicorn (settings from the environment)."""
import os

from emulators.runtime import Settings, build_wsgi
from testkit.counter_service import service

application = build_wsgi(service, Settings.from_env(os.environ))
