"""Atomic file replacement: temporary file in the same folder, fsync, os.replace, folder fsync."""
import os
import secrets

import filelock

TMP_SUFFIX = ".tmp"


def tmp_name(path):
    """Name of a temporary sibling of `path`: hidden, unique, recognisable by the sweep."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TMP_SUFFIX}")


def atomic_write(path, data, *, durable=True):
    """Replace `path` with `data` so readers see the old or the new file, never a mix.

    With `durable`, the data and the rename are on disk when this returns.
    """
    tmp = tmp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        fsync_dir(path.parent)


def fsync_dir(folder):
    """Make a rename or unlink in `folder` durable."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Locks:
    """Reusable `FileLock`s by path: building one costs as much as taking it.

    filelock keeps lock state per thread by default, so one object serves every thread of a
    gthread worker safely.
    """

    def __init__(self, timeout_s, size=4096):
        self.timeout_s = timeout_s
        self._size = size
        self._locks = {}

    def __call__(self, path):
        key = str(path)
        lock = self._locks.get(key)
        if lock is None:
            if len(self._locks) >= self._size:
                self._locks.pop(next(iter(self._locks)))
            lock = self._locks[key] = filelock.FileLock(key, timeout=self.timeout_s)
        return lock
