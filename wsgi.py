"""WSGI entry points: `application` serves everything; `hermes` and `github` serve one emulator.

Settings are read from the environment once, here.
"""
import os

from spaces.newos4.app import create_app
from spaces.newos4.settings import Settings

application = create_app(Settings.from_env(os.environ))
