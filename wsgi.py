"""WSGI entry points: `application` serves everything; `hermes` and `github` serve one emulator.

`application` sends `/emulators/hermes/...` and `/emulators/github/...` to the mounted emulators
and every other path to the chat app. Settings are read from the environment once, here.
"""
import os
import sys

from emulators import load
from emulators.runtime import PathDispatcher, build_wsgi
from emulators.runtime import Settings as EmulatorSettings
from spaces.newos4.app import PAGE_PATH, create_app
from spaces.newos4.settings import Settings

try:
    github_service = load("github", os.environ)
    hermes_service = load("hermes", os.environ)  # HERMES_* through HermesSettings.from_env
    _chat_settings = Settings.from_env(os.environ)
    _chat_settings.check_data_dir()
    _emulator_settings = EmulatorSettings.from_env(os.environ)
except ValueError as exc:  # every from_env names the variable and the value it refused
    # Exit code 4 is gunicorn's "App failed to load": the arbiter stops at once with this one
    # line instead of a traceback from every worker it keeps respawning.
    sys.stderr.write(f"wsgi: configuration error: {exc}\n")
    raise SystemExit(4)

hermes = build_wsgi(hermes_service, _emulator_settings)
github = build_wsgi(github_service, _emulator_settings)
chat = create_app(_chat_settings)


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
