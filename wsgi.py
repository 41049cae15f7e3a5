"""WSGI entry points: `application` serves everything; `hermes` and `github` serve one emulator.

`application` sends `/emulators/hermes/...` and `/emulators/github/...` to the mounted emulators
and every other path to the chat app. Settings are read from the environment once, here.
"""
import os

from emulators.github.app import service as github_service
from emulators.hermes.app import service as hermes_service
from emulators.runtime import PathDispatcher, build_wsgi
from emulators.runtime import Settings as EmulatorSettings
from spaces.newos4.app import create_app
from spaces.newos4.settings import Settings

_emulator_settings = EmulatorSettings.from_env(os.environ)
hermes = build_wsgi(hermes_service, _emulator_settings)
github = build_wsgi(github_service, _emulator_settings)
chat = create_app(Settings.from_env(os.environ))
application = PathDispatcher(chat, {"/emulators/hermes": hermes, "/emulators/github": github})
