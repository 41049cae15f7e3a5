"""Emulators as WSGI apps for real gunicorn in tests, settings from the environment; gunicorn
calls the factory it is named with (`testkit.emulator_apps:counter()`)."""
import io
import json
import os

from emulators import load
from emulators.hermes.app import from_env
from emulators.runtime import Settings, build_wsgi
from testkit.counter_service import service


def counter():
    """The counter service (the whole runtime contract) under the runtime."""
    return build_wsgi(service, Settings.from_env(os.environ))


def hermes():
    """The Hermes emulator alone, as the shipped wsgi:hermes but with the test's settings."""
    return build_wsgi(from_env(os.environ), Settings.from_env(os.environ))


def github():
    """The GitHub emulator alone, as the shipped wsgi:github; with `GITHUB_GRAPHQL_RECORD`
    naming a file, each GraphQL request and its answer are appended to it, one JSON line each
    (`{"request": …, "answer": …}`), for the tests that check what real clients sent."""
    app = build_wsgi(load("github", os.environ), Settings.from_env(os.environ))
    record = os.environ.get("GITHUB_GRAPHQL_RECORD")
    return GraphQLRecorder(app, record) if record else app


class GraphQLRecorder:
    """WSGI middleware: append every `POST …/graphql` exchange to a file (JSON lines)."""

    def __init__(self, app, path):
        self.app, self.path = app, path

    def __call__(self, environ, start_response):
        if environ.get("REQUEST_METHOD") != "POST" or \
                not environ.get("PATH_INFO", "").endswith("/graphql"):
            return self.app(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length)
        environ["wsgi.input"] = io.BytesIO(body)
        answer = b"".join(self.app(environ, start_response))
        line = json.dumps({"request": _json_or_text(body), "answer": _json_or_text(answer)})
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:  # one write() on O_APPEND: whole lines even with several workers
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
        return [answer]


def _json_or_text(data):
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace")
