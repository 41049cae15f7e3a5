"""A 201 means the message and its folder entry are on disk: file fsync -> rename -> folder fsync.

A spy on os.fsync / os.replace records what each call touched (by inode), and a WSGI wrapper
records the moment the status line is handed to the server, so speed work can never quietly
trade durability away: drop either fsync, or answer before one, and these tests fail.
"""
import os
import stat

import pytest
import webtest

from spaces.newos4.app import POST_PATH, create_app
from spaces.newos4.service import ChatService

from .conftest import ChatClient, new_token


class DiskSpy:
    """Records ("fsync-file", inode), ("fsync-dir", inode), ("replace", inode, target) and
    ("respond", status) in the order they happen."""

    def __init__(self, monkeypatch):
        self.events = []
        real_fsync, real_replace = os.fsync, os.replace

        def fsync(fd):
            info = os.fstat(fd)
            real_fsync(fd)
            kind = "fsync-dir" if stat.S_ISDIR(info.st_mode) else "fsync-file"
            self.events.append((kind, info.st_ino))

        def replace(src, dst, **kw):
            inode = os.stat(src).st_ino
            real_replace(src, dst, **kw)
            self.events.append(("replace", inode, os.fspath(dst)))

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "replace", replace)

    def wrap(self, app):
        def recording(environ, start_response):
            def start(status, headers, exc_info=None):
                self.events.append(("respond", status))
                return start_response(status, headers, exc_info)
            return app(environ, start)
        return recording

    def assert_durable_before(self, path, folder, answer):
        """The last write of `path` went file fsync -> rename -> folder fsync, then `answer`."""
        events = self.events
        done = next(i for i, e in enumerate(events) if e[0] == answer[0] and e[1:] == answer[1:])
        renames = [i for i, e in enumerate(events[:done])
                   if e[0] == "replace" and e[2] == os.fspath(path)]
        assert renames, f"{path} was not renamed into place before {answer}: {events}"
        rename = renames[-1]
        inode = events[rename][1]
        assert ("fsync-file", inode) in events[:rename], \
            f"the new file was not fsync'd before its rename: {events}"
        assert os.stat(path).st_ino == inode
        assert ("fsync-dir", os.stat(folder).st_ino) in events[rename + 1:done], \
            f"the folder was not fsync'd between the rename and {answer}: {events}"


@pytest.fixture
def spy(monkeypatch):
    return DiskSpy(monkeypatch)


def test_post_answers_201_only_after_file_fsync_rename_and_folder_fsync(settings, clock, spy):
    client = ChatClient(webtest.TestApp(spy.wrap(create_app(settings, clock=clock))))
    path = settings.chat_dir / f"{client.thread}.json"
    for text in ("first: creates the thread", "second: replaces it"):
        spy.events.clear()
        client.say(text)
        spy.assert_durable_before(path, settings.chat_dir, ("respond", "201 Created"))


def test_a_refused_post_touches_no_file(settings, clock, spy):
    app = webtest.TestApp(spy.wrap(create_app(settings, clock=clock)))
    app.post_json(POST_PATH, {"text": ""}, headers={"X-Chat-Token": new_token()}, status=400)
    assert [e[0] for e in spy.events] == ["respond"]


def test_host_reply_returns_only_after_the_write_is_durable(settings, clock, spy):
    service = ChatService(settings, clock=clock)
    client = ChatClient(webtest.TestApp(create_app(settings, clock=clock)))
    client.say("question")
    spy.events.clear()
    service.reply(client.thread, "answer")
    spy.events.append(("returned",))
    spy.assert_durable_before(settings.chat_dir / f"{client.thread}.json", settings.chat_dir,
                              ("returned",))
