"""The chat alone, as production serves it (deploy/systemd/newos4.service runs
`gunicorn -c gunicorn.conf.py spaces.newos4.wsgi:application`).

Imports nothing of the emulators (the repository's wsgi.py, the development monolith, mounts
them beside the chat), so the deployed service holds no emulator thread, module or database.
"""
import os
import sys

from .app import create_app
from .settings import Settings


def settings_from_env(environ):
    """The chat's settings with its data directory checked; a ValueError names what is wrong."""
    settings = Settings.from_env(environ)
    settings.check_data_dir()
    return settings


def refuse_configuration(exc):
    """Stop loading with one line: exit code 4 is gunicorn's "App failed to load", so the arbiter
    stops at once instead of printing a traceback from every worker it keeps respawning."""
    sys.stderr.write(f"wsgi: configuration error: {exc}\n")
    raise SystemExit(4)


try:
    application = create_app(settings_from_env(os.environ))
except ValueError as exc:  # Settings.from_env names the variable and the value it refused
    refuse_configuration(exc)
