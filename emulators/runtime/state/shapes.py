"""Answers built once per change: a process's cache of what a read built from a storage key's
records, valid while the key's version (a counter every write of its records moves, in the
write's own transaction: db.py) stands.

A read looks the version up (one primary-key read) and reuses what it built for the same
request at that version; anything that writes the key's records, by any worker, moves the
version, so no stale answer is served. The cache holds at most `max_bytes` of encoded bodies
(oldest dropped first); it is a per-process copy of what the database says, never state.
"""
import threading
from collections import OrderedDict

VERSION = "SELECT version FROM key_versions WHERE service=? AND key=?"


class ShapeCache:
    """Built values by (storage key, token), each tagged with the key version it was built at."""

    def __init__(self, db, service, max_bytes=64 << 20):
        self._db = db
        self._service = service
        self._max_bytes = max_bytes
        self._entries = OrderedDict()  # (key, token) -> (version, value, size)
        self._bytes = 0
        self._lock = threading.Lock()

    def version(self, key):
        row = self._db.one(VERSION, (self._service, key))
        return 0 if row is None else row[0]

    def get(self, key, token, build, size=len, version=None):
        """Return `build()` for the key's records as they are now (at `version` when the caller
        read it), reusing the value built at the same version; `size(value)` is what it costs
        to keep."""
        if version is None:
            version = self.version(key)
        with self._lock:
            found = self._entries.get((key, token))
            if found is not None and found[0] == version:
                self._entries.move_to_end((key, token))
                return found[1]
        value = build()
        cost = size(value)
        if cost > self._max_bytes:
            return value
        with self._lock:
            old = self._entries.pop((key, token), None)
            if old is not None:
                self._bytes -= old[2]
            self._entries[key, token] = (version, value, cost)
            self._bytes += cost
            while self._bytes > self._max_bytes:
                self._bytes -= self._entries.popitem(last=False)[1][2]
        return value
