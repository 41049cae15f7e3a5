"""Sliding windows of accepted messages, shared by every worker through small files on disk."""
import contextlib
import hashlib
import hmac
import json
import os
import secrets

import filelock

from . import errors
from .files import Locks, tmp_name


def retry_after_s(hits, now_ms, limit, window_ms):
    """Seconds until one more hit fits in the window, or None when it fits now."""
    recent = sorted(h for h in hits if h > now_ms - window_ms)
    if len(recent) < limit:
        return None
    frees_at = recent[len(recent) - limit] + window_ms
    return max(1, -(-(frees_at - now_ms) // 1000))


class IpWindows:
    """Per-IP windows: one file per hashed address, so unrelated clients never share a lock.

    Addresses are stored only as keyed hashes (the key lives beside the windows), so the files
    cannot be reversed by hashing the IPv4 space.
    """

    def __init__(self, folder, *, limit, window_ms, lock_timeout_s=10.0):
        self.folder = folder
        self.limit = limit
        self.window_ms = window_ms
        self._locks = Locks(lock_timeout_s)
        self._key = None

    @contextlib.contextmanager
    def hold(self, address, now_ms):
        """Lock this address's window; raise RateLimited when full; yield `record()`.

        Calling `record()` counts one accepted message; the window is saved on exit only then.
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{self._hash(address)}.json"
        try:
            with self._locks(f"{path}.lock"):
                hits = _load_hits(path)
                wait = retry_after_s(hits, now_ms, self.limit, self.window_ms)
                if wait is not None:
                    raise errors.RateLimited(
                        f"rate limit: at most {self.limit} messages per IP per "
                        f"{describe_window(self.window_ms)}", wait)
                recorded = []
                yield lambda: recorded.append(now_ms)
                if recorded:
                    # Only the newest `limit` hits can ever decide a later request.
                    live = sorted(h for h in hits if h > now_ms - self.window_ms)
                    live = (live + recorded)[-self.limit:]
                    _rewrite(path, json.dumps({"hits": live}).encode())
        except filelock.Timeout:
            raise errors.StoreBusy()

    def sweep(self, now_ms):
        """Delete windows with no hit left inside them; return how many."""
        removed = 0
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return 0
        for name in names:
            if not name.endswith(".json"):
                continue
            path = self.folder / name
            with self._locks(f"{path}.lock"):
                hits = _load_hits(path)
                if not any(h > now_ms - self.window_ms for h in hits):
                    try:
                        os.unlink(path)
                        removed += 1
                    except FileNotFoundError:
                        pass
        return removed

    def _hash(self, address):
        if self._key is None:
            self._key = _load_or_create_key(self.folder / ".key")
        return hmac.new(self._key, address.encode(), hashlib.sha256).hexdigest()[:32]


def _rewrite(path, data):
    """Overwrite in place: every reader holds the lock, so no reader sees a partial write, and
    a crash mid-write only forgets recent hits (an unreadable window counts as empty)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o640)
    try:
        os.write(fd, data)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def _load_hits(path):
    try:
        with open(path, "rb") as handle:
            doc = json.loads(handle.read())
        return [h for h in doc.get("hits", []) if isinstance(h, int)]
    except (FileNotFoundError, ValueError, AttributeError):
        return []


def _load_or_create_key(path):
    """Read the hashing key, creating it once; a half-written key is never visible."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    tmp = tmp_name(path)
    tmp.write_bytes(secrets.token_bytes(32))
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    return path.read_bytes()


def describe_window(window_ms):
    """`10 min` or `90 s`: the window as people read it."""
    seconds = window_ms // 1000
    return f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds} s"
