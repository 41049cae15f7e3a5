"""WSGI entry points of the development monolith: `application` serves everything; `hermes` and
`github` serve one emulator. Production serves the chat alone (spaces/newos4/wsgi.py).

`application` sends `/emulators/hermes/...` and `/emulators/github/...` to the mounted emulators
and every other path to the chat app. Settings are read from the environment once, at import.
"""
import os

from emulators import load
from emulators.runtime import PathDispatcher, build_wsgi
from emulators.runtime import Settings as EmulatorSettings
from spaces.newos4.app import PAGE_PATH
from spaces.newos4.wsgi import application as chat  # production's chat app, settings checked
from spaces.newos4.wsgi import refuse_configuration

try:
    github_service = load("github", os.environ)
    hermes_service = load("hermes", os.environ)  # HERMES_* through HermesSettings.from_env
    _emulator_settings = EmulatorSettings.from_env(os.environ)
except ValueError as exc:  # every from_env names the variable and the value it refused
    refuse_configuration(exc)

hermes = build_wsgi(hermes_service, _emulator_settings)
github = build_wsgi(github_service, _emulator_settings)


def root_to_the_page(app):
    """`make serve` announces the server's root: a GET there goes on to the chat page (302)
    instead of the chat app's JSON 404. Every other path, and any other method, is `app`'s."""
    def serve(environ, start_response):
        if environ.get("PATH_INFO", "/") in ("", "/") and \
                environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
            start_response("302 Found", [("Location", PAGE_PATH), ("Content-Length", "0"),
                                         ("Cache-Control", "no-store")])
            return [b""]
        return app(environ, start_response)
    return serve


application = root_to_the_page(
    PathDispatcher(chat, {"/emulators/hermes": hermes, "/emulators/github": github}))
