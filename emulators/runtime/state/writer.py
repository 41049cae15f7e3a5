"""Writers of one database file take turns through a lock that wakes the next one at once.

SQLite makes a writer that finds the write lock held sleep and retry (1, 2, 5, 10 ... 100 ms
steps under busy_timeout), far longer than a transaction here lasts, so under load most of a
mutation's time was spent asleep. Database.transaction() takes this lock around its BEGIN
IMMEDIATE ... COMMIT instead: threads of a process queue on a lock, processes on an `flock` of
`<db>-requests/writer.lock`, and both wake the moment it is released. SQLite's own lock still
guards the data (a writer outside transaction(), one statement on its own, waits as before).
"""
import fcntl
import os
import threading
import weakref

_LOCKS = weakref.WeakValueDictionary()  # database file -> its WriterLock in this process
_LOCKS_LOCK = threading.Lock()


def for_path(path):
    """The one WriterLock of a database file in this process (None for in-memory: one process,
    SQLite's lock alone is enough there)."""
    if path.startswith("file:"):
        return None
    key = os.path.abspath(path)
    with _LOCKS_LOCK:
        lock = _LOCKS.get(key)
        if lock is None:
            lock = _LOCKS[key] = WriterLock(key + "-requests")
        return lock


class WriterLock:
    """A re-entrant lock for this process's threads plus an flock between processes."""

    def __init__(self, folder):
        self._folder = folder
        self._threads = threading.RLock()
        self._depth = 0
        self._fd = None
        self._pid = None
        weakref.finalize(self, _close, self.__dict__)

    def acquire(self):
        self._threads.acquire()
        try:
            if self._depth == 0:
                if self._pid != os.getpid():  # first use, or first use after a fork
                    os.makedirs(self._folder, exist_ok=True)
                    self._fd = os.open(os.path.join(self._folder, "writer.lock"),
                                       os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                    self._pid = os.getpid()
                fcntl.flock(self._fd, fcntl.LOCK_EX)
            self._depth += 1
        except BaseException:
            self._threads.release()
            raise

    def release(self):
        self._depth -= 1
        if self._depth == 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._threads.release()


def _close(state):
    if state.get("_fd") is not None and state.get("_pid") == os.getpid():
        os.close(state["_fd"])
