"""ThreadStore: one JSON file per thread, replaced atomically under a sidecar file lock.

The one piece of code that reads and writes thread files, for the app, scripts/chat.py and
cron/relay.py alike. Returns plain dicts.
"""
import json
import os
import re
import time

from . import errors
from .files import TMP_SUFFIX, Locks, LockTimeout, discard, fsync_dir, replace, write_tmp

THREAD_RE = re.compile(r"\A[0-9a-f]{16}\Z")
THREAD_FILE_RE = re.compile(r"\A([0-9a-f]{16})\.json\Z")
# A cached parse is trusted only for files whose mtime is this far behind the moment the cache
# was filled: a later write in the same timestamp tick, with the same size and a recycled inode,
# could otherwise look unchanged (git's "racily clean" rule).
RACY_NS = 2_000_000_000
CACHE_SIZE = 1024


def is_thread_name(name):
    """True for the 16 lowercase hex digits a thread is called."""
    return isinstance(name, str) and bool(THREAD_RE.match(name))


class ThreadStore:
    """Per-thread JSON files in `chat_dir`; creating threads is capped under one extra lock."""

    def __init__(self, chat_dir, *, create_lock_path, lock_timeout_s=10.0):
        self.chat_dir = chat_dir
        self._chat_prefix = os.path.join(chat_dir, "")
        self._locks = Locks(lock_timeout_s)
        self._create_lock_path = create_lock_path
        self._cache = {}

    def path(self, thread):
        """The thread's file, as a string: polling builds it on every request."""
        if not is_thread_name(thread):
            raise ValueError(f"not a thread name: {thread!r}")
        return f"{self._chat_prefix}{thread}.json"

    def read(self, thread):
        """The thread's document, or None when it has no file. Never writes, never locks.

        An unchanged file costs one `stat`: the parse cached for its (inode, mtime, size).
        """
        path = self.path(thread)
        try:
            stat = os.stat(path)
            cached = self._cache.get(path)
            if cached is not None and cached[0] == (stat.st_ino, stat.st_mtime_ns, stat.st_size):
                return cached[1]
            with open(path, "rb") as handle:
                stat = os.fstat(handle.fileno())
                doc = _parse(handle.read(), path)
        except FileNotFoundError:
            return None
        if time.time_ns() - stat.st_mtime_ns > RACY_NS:
            if len(self._cache) >= CACHE_SIZE:
                self._cache.clear()  # threads of this worker may share it: no iteration
            self._cache[path] = ((stat.st_ino, stat.st_mtime_ns, stat.st_size), doc)
        return doc

    def update(self, thread, change, *, max_threads=None):
        """Apply `change(doc) -> new doc | None` under the thread's lock; return the stored doc.

        `doc` is a fresh copy ({"thread", "messages"}, empty for a new thread). Returning None
        writes nothing; a doc without messages deletes the file. Creating a thread when
        `max_threads` files exist raises ThreadLimitReached. Returns after the write is durable:
        file fsync'd, renamed into place, folder fsync'd.
        """
        path = self.path(thread)
        try:
            with self._locks(f"{path}.lock"):
                try:
                    with open(path, "rb") as handle:
                        current = _parse(handle.read(), path)
                except FileNotFoundError:
                    current = None
                new = change(current if current is not None
                             else {"thread": thread, "messages": []})
                if new is None:
                    return current
                if not new["messages"]:
                    if current is not None:
                        os.unlink(path)
                    return None
                data = json.dumps(new, ensure_ascii=False, separators=(",", ":")).encode()
                tmp = write_tmp(path, data)
                if current is None:
                    self._create(tmp, path, max_threads)
                else:
                    replace(tmp, path)
                fsync_dir(self.chat_dir)
                return new
        except LockTimeout:
            raise errors.StoreBusy()

    def _create(self, tmp, path, max_threads):
        """Rename a new thread's written file into place unless the cap is reached. Only the
        count and the rename hold the one global lock; the fsyncs happen outside it."""
        if max_threads is None:
            replace(tmp, path)
            return
        try:
            with self._locks(self._create_lock_path):
                if self.count() >= max_threads:
                    raise errors.ThreadLimitReached()
                replace(tmp, path)
        except BaseException:
            discard(tmp)
            raise

    def threads(self):
        """Names of every thread with a file, sorted."""
        try:
            entries = os.listdir(self.chat_dir)
        except FileNotFoundError:
            return []
        return sorted(m.group(1) for m in map(THREAD_FILE_RE.match, entries) if m)

    def count(self):
        return len(self.threads())

    def remove_stale_tmp(self, older_than_s, now_s=None):
        """Delete temporary files a crashed writer left behind; return how many."""
        now_s = time.time() if now_s is None else now_s
        removed = 0
        try:
            entries = list(os.scandir(self.chat_dir))
        except FileNotFoundError:
            return 0
        for entry in entries:
            if entry.name.startswith(".") and entry.name.endswith(TMP_SUFFIX):
                try:
                    if now_s - entry.stat().st_mtime > older_than_s:
                        os.unlink(entry.path)
                        removed += 1
                except FileNotFoundError:
                    pass
        return removed


def _parse(data, path):
    try:
        doc = json.loads(data)
    except ValueError:
        raise errors.ThreadCorrupt(f"thread file {path} is not valid JSON")
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        raise errors.ThreadCorrupt(f"thread file {path} has no messages list")
    return doc
