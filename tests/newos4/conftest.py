"""Fixtures for the chat service: a TestApp over create_app with an injected clock."""
import dataclasses
import hashlib
import secrets

import pytest
import webtest

from spaces.newos4.app import POLL_PATH, POST_PATH, create_app
from spaces.newos4.clock import FixedClock
from spaces.newos4.service import ChatService
from spaces.newos4.settings import Settings

# 2026-10-23T18:40:00.123Z. (The contract's example epoch, 1792778400123, is 18:00:00.123Z:
# its epoch and ts disagree; ours derives ts from the epoch.)
T0 = 1792780800123


def new_token():
    return secrets.token_hex(32)


def thread_for(token):
    return hashlib.sha256(token.encode()).hexdigest()[:16]


class ChatClient:
    """Drive the chat endpoints the way the newOS4 browser does."""

    def __init__(self, testapp, token=None, remote_addr="203.0.113.7"):
        self.app = testapp
        self.token = token or new_token()
        self.remote_addr = remote_addr

    @property
    def thread(self):
        return thread_for(self.token)

    def post(self, body=None, *, status=201, headers=None, raw=None, **kw):
        hdrs = {"X-Chat-Token": self.token, **(headers or {})}
        env = {"REMOTE_ADDR": self.remote_addr}
        if raw is not None:
            return self.app.post(POST_PATH, raw, headers=hdrs, status=status,
                                 extra_environ=env, content_type="application/json", **kw)
        return self.app.post_json(POST_PATH, body if body is not None else {"text": "hello"},
                                  headers=hdrs, status=status, extra_environ=env, **kw)

    def say(self, text, kind=None):
        body = {"text": text} if kind is None else {"text": text, "kind": kind}
        return self.post(body).json

    def poll(self, since=None, *, status=200, query=None):
        url = POLL_PATH + (query if query is not None else
                           ("" if since is None else f"?since={since}"))
        return self.app.get(url, headers={"X-Chat-Token": self.token}, status=status,
                            extra_environ={"REMOTE_ADDR": self.remote_addr})


@pytest.fixture
def clock():
    return FixedClock(T0)


@pytest.fixture
def settings(tmp_path):
    """The relay open to every thread (see tests/conftest.py); access tests replace it."""
    return Settings(data_dir=tmp_path / "data", relay_access="open")


@pytest.fixture
def make_app(settings, clock):
    def make(**overrides):
        s = dataclasses.replace(settings, **overrides)
        return webtest.TestApp(create_app(s, clock=clock)), ChatService(s, clock=clock)
    return make


@pytest.fixture
def testapp(make_app):
    return make_app()[0]


@pytest.fixture
def service(settings, clock):
    """A second view of the same data, as scripts/chat.py would have."""
    return ChatService(settings, clock=clock)


@pytest.fixture
def client(testapp):
    return ChatClient(testapp)


def files_under(path):
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*")) if path.exists() else []
