"""Bare Falcon endpoints to measure the chat service against, under the same gunicorn config."""
import os
from pathlib import Path

import falcon

from spaces.newos4.files import atomic_write, replace, write_tmp


class SmallJson:
    def on_get(self, req, resp):
        resp.media = {"success": True, "messages": [], "cursor": 0}


class FsyncWrite:
    """One durable atomic write per request: the floor under any durable post."""

    def __init__(self, folder):
        self.path = Path(folder) / "bare.json"
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def on_post(self, req, resp):
        atomic_write(self.path, req.bounded_stream.read())
        resp.status = falcon.HTTP_201
        resp.media = {"success": True}


class DurableWrite(FsyncWrite):
    """tmp + fsync + rename of a small file (no folder fsync): the floor under one durable
    write, as the emulator benchmark compares its mutations with."""

    def on_post(self, req, resp):
        replace(write_tmp(self.path, req.bounded_stream.read()), self.path)
        resp.status = falcon.HTTP_201
        resp.media = {"success": True}


application = falcon.App()
application.add_route("/bare", SmallJson())
_folder = os.environ.get("BENCH_BARE_DIR", "/tmp/bench")
application.add_route("/bare-write", FsyncWrite(_folder))
application.add_route("/bare-durable-write", DurableWrite(_folder))
