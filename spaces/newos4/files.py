"""Atomic file replacement (temporary file, fsync, os.replace, folder fsync) and the sidecar
locks that guard read-modify-write cycles across threads and processes."""
import os
import random
import threading
import time

from filelock import lock_descriptor

TMP_SUFFIX = ".tmp"
READ_CHUNK = 65536
# How often a wait for a lock that another process holds tries again. A post holds its address's
# window and its thread's lock only for its two fsyncs, so a wait costs that and one interval at
# most: shorter intervals end no burst of posts sooner and try more often, longer ones (filelock's
# default among them) make the bursts longer. bench/locks.py compares them.
POLL_S = 0.002


class _Process:
    """This process's id, asked of the kernel once (and again in a forked child), not per post."""
    pid = os.getpid()


os.register_at_fork(after_in_child=lambda: setattr(_Process, "pid", os.getpid()))


def tmp_name(path):
    """Name (a str) of a temporary sibling of `path`: hidden, unique, recognisable by the sweep.
    Unique by process id and 32 random bits (Python's generator, reseeded in every gunicorn
    worker: no system call per post; nothing depends on the name being unpredictable)."""
    folder, slash, name = os.fspath(path).rpartition("/")  # every post names one: no split()
    return f"{folder}{slash}.{name}.{_Process.pid}.{random.getrandbits(32):08x}{TMP_SUFFIX}"


def atomic_write(path, data, *, durable=True):
    """Replace `path` with `data` so readers see the old or the new file, never a mix.

    With `durable`, the data and the rename are on disk when this returns.
    """
    tmp = write_tmp(path, data, durable=durable)
    replace(tmp, path)
    if durable:
        fsync_dir(os.path.dirname(path))


def write_tmp(path, data, *, durable=True, mode=0o640):
    """A new temporary sibling of `path` holding `data` (fsync'd with `durable`): its name.
    It has `mode` (less the umask) from its creation: a secret is never readable by others."""
    tmp = tmp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        discard(tmp)
        raise
    os.close(fd)
    return tmp


def replace(tmp, path):
    """Rename `tmp` over `path`; the temporary file is removed if that fails."""
    try:
        os.replace(tmp, path)
    except BaseException:
        discard(tmp)
        raise


def discard(tmp):
    """Remove a temporary file if it is still there."""
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def keep_aside(path, now_ms, kind="corrupt"):
    """Move a file whose content cannot be used to `<name>.<kind>-<now_ms>` beside it, before
    anything is written in its place (an OSError here stops the writer: better than writing
    over the only copy); the new name."""
    aside = f"{os.path.basename(path)}.{kind}-{now_ms}"
    os.replace(path, os.path.join(os.path.dirname(path), aside))
    return aside


def read_file(path):
    """(stat, bytes) of a file: open, fstat, read, close, without a buffered file object's
    extra calls (a changed thread's poll needs the stat for its cache)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        stat = os.fstat(fd)
        return stat, _read_to_end(fd, stat.st_size + 1)
    finally:
        os.close(fd)


def read_bytes(path):
    """The bytes of a file: open, read, close, no fstat (a post reads its thread file; one read
    holds most threads, and the rest are read on to their end)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return _read_to_end(fd, READ_CHUNK)
    finally:
        os.close(fd)


def _read_to_end(fd, chunk):
    parts = []
    while True:
        part = os.read(fd, chunk)
        parts.append(part)
        if len(part) < chunk:  # a regular file reads short only at its end
            return b"".join(parts)


def fsync_dir(folder):
    """Make a rename or unlink in `folder` durable."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LockTimeout(Exception):
    """A lock could not be had within its timeout."""


class Locks:
    """Exclusive locks on files by path, for every thread and process: `with locks(p) as fd:`.

    The one way the chat locks a file: threads, the rate windows (whose window file is its own
    lock, read and rewritten through `fd`), the relay and the watcher. The lock is filelock's
    (`filelock.lock_descriptor`: the flock its FileLock takes) on a descriptor of ours, which
    the holder may use. A timeout of 0 tries once and never waits; None waits as long as it
    takes, for locks whose holders never wait on anything unbounded (the rate windows).
    Threads of one process queue on one `threading.Lock` per path, so they wait without
    polling and only the first of them takes the file lock; a lock another process holds is
    tried again every POLL_S (filelock's wait polls). A refusal creates no lock file it leaves
    behind: the file it opened is the one a holder has. A lock file unlinked while we waited
    (a sweep of orphan locks) is opened again, so two holders can never each hold a different
    inode.
    """

    def __init__(self, timeout_s):
        self.timeout_s = timeout_s
        self._guard = threading.Lock()
        # path -> [threading.Lock, how many callers hold or wait for it]; an entry goes when its
        # last user leaves, so the table never grows past the locks in use.
        self._mutexes = {}

    def __call__(self, path):
        return _Held(self, str(path))


class _Held:
    """One `with locks(path):`. A class rather than a generator context, and a counted table
    rather than a WeakValueDictionary: every post takes a lock, and those cost more."""

    __slots__ = ("_locks", "_key", "_entry", "_fd")

    def __init__(self, locks, key):
        self._locks, self._key = locks, key

    def __enter__(self):
        locks, key = self._locks, self._key
        with locks._guard:
            entry = locks._mutexes.get(key)
            if entry is None:
                entry = locks._mutexes[key] = [threading.Lock(), 0]
            entry[1] += 1
        self._entry = entry
        try:
            timeout_s = locks.timeout_s
            if timeout_s is None:
                deadline = None
                entry[0].acquire()
            else:
                deadline = time.monotonic() + timeout_s
                if not entry[0].acquire(timeout=max(0.0, timeout_s)):
                    raise LockTimeout(key)
            try:
                self._fd = _flock(key, deadline, wait=timeout_s is None or timeout_s > 0)
            except BaseException:
                entry[0].release()
                raise
        except BaseException:
            self._leave()
            raise
        return self._fd

    def __exit__(self, *exc_info):
        try:
            os.close(self._fd)  # closing the only descriptor releases the flock
        finally:
            self._entry[0].release()
            self._leave()

    def _leave(self):
        with self._locks._guard:
            self._entry[1] -= 1
            if not self._entry[1]:
                del self._locks._mutexes[self._key]


def open_lock_file(path):
    """Return a read-write descriptor of `path`, created (with its folder) when missing."""
    while True:
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o640)
        except FileNotFoundError:  # the first lock in a new data folder creates the folder
            os.makedirs(os.path.dirname(path), exist_ok=True)


def lock(path, timeout_s):
    """`with lock(path, timeout_s):` a lock of its own (not queued with a `Locks` table's
    threads): for the relay's and the watcher's process-wide locks, taken once per pass or
    life. LockTimeout when it cannot be had within `timeout_s` (0: only if free now)."""
    return Locks(timeout_s)(path)


def _flock(path, deadline, *, wait=True):
    """A descriptor of `path` holding its exclusive lock, had by `deadline` (monotonic; None:
    however long it takes); when not `wait`, had now or never."""
    while True:
        fd = open_lock_file(path)
        try:
            if deadline is None:
                lock_descriptor(fd, blocking=True, poll_interval=POLL_S)
            elif not lock_descriptor(fd, blocking=False):
                if not wait:
                    raise LockTimeout(path)
                _lock_by(fd, path, deadline)
        except BaseException:
            os.close(fd)
            raise
        if _still_linked(fd, path):
            return fd
        os.close(fd)


def _lock_by(fd, path, deadline):
    """Try the lock on `fd` every POLL_S until it is had, or LockTimeout at `deadline`."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise LockTimeout(path)
        time.sleep(min(POLL_S, left))
        if lock_descriptor(fd, blocking=False):
            return


def _still_linked(fd, path):
    """True unless the file was unlinked (by a sweep of orphan locks) while we waited for it;
    lock files are never renamed, so a linked one is the file at `path`."""
    return os.fstat(fd).st_nlink > 0
