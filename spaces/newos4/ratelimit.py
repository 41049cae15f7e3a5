"""Sliding windows of accepted messages, shared by every worker through small files on disk."""
import contextlib
import functools
import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

from . import errors
from .files import Locks, tmp_name

READ_CHUNK = 65536  # below malloc's mmap threshold
MAX_WINDOW_BYTES = 1 << 20  # a longer file is not one we wrote: it counts as empty


def retry_after_s(hits, now_ms, limit, window_ms):
    """Seconds until one more hit fits in the window, or None when it fits now."""
    cutoff = now_ms - window_ms
    recent = [h for h in hits if h > cutoff]
    if len(recent) < limit:
        return None
    recent.sort()
    frees_at = recent[len(recent) - limit] + window_ms
    return max(1, -(-(frees_at - now_ms) // 1000))


class IpWindows:
    """Per-IP windows: one file per hashed address, so unrelated clients never share a lock.

    Each window file is its own lock (held with `files.Locks`, rewritten in place through the
    lock's descriptor, never replaced): one open per post instead of a sidecar lock and a
    temporary file. Addresses are stored only as keyed hashes (the key lives beside the
    windows), so the files cannot be reversed by hashing the IPv4 space.
    """

    def __init__(self, folder, *, limit, window_ms):
        self.folder = folder
        self._prefix = os.path.join(folder, "")  # each post builds a path: no pathlib on it
        self.limit = limit
        self.window_ms = window_ms
        # No timeout: a holder waits on nothing longer than a thread lock's timeout, so a wait
        # here is bounded; it blocks in flock itself, with no helper thread, since every post
        # from one address takes this lock, in every worker.
        self._locks = Locks(None)
        self._hash_of = None

    @contextlib.contextmanager
    def hold(self, address, now_ms):
        """Lock this address's window; raise RateLimited when full; yield `record()`.

        Calling `record()` counts one hit; the window is saved on exit (even by an exception)
        only then.
        """
        path = f"{self._prefix}{self._hash(address)}.json"
        with self._locks(path) as fd:
            recorded, raw = [], None
            try:
                raw = _read_window(fd)
                hits = _hits_of(raw)
                wait = retry_after_s(hits, now_ms, self.limit, self.window_ms)
                if wait is not None:
                    raise errors.RateLimited(
                        f"rate limit: at most {self.limit} messages per IP per "
                        f"{describe_window(self.window_ms)}", wait)
                try:
                    yield lambda: recorded.append(now_ms)
                finally:  # a hit recorded before a refusal (a 507) counts too
                    if recorded:
                        # Only the newest `limit` hits can ever decide a later request.
                        cutoff = now_ms - self.window_ms
                        live = sorted([h for h in hits if h > cutoff])
                        _rewrite(fd, _window_bytes((live + recorded)[-self.limit:]), len(raw))
            finally:
                if not recorded and raw == b"":
                    # A window this request created and left empty (a refused post from a
                    # new address): removed while locked, so a refusal leaves no file. A
                    # waiter on it opens the path again (files.Locks).
                    os.unlink(path)

    def sweep(self, now_ms):
        """Delete windows with no hit left inside them; return how many."""
        removed = 0
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return 0
        for name in names:
            if not name.endswith(".json") or not os.path.isfile(self.folder / name):
                continue  # not a window we wrote: never opened, never deleted
            with self._locks(self.folder / name) as fd:
                if not any(h > now_ms - self.window_ms for h in _read_hits(fd)):
                    os.unlink(self.folder / name)
                    removed += 1
        return removed

    def clear(self, address):
        """Forget every hit of `address` (an operator's pardon); True when it had a window."""
        path = self.folder / f"{self._hash(address)}.json"
        if not path.exists():
            return False
        with self._locks(path) as fd:
            had_hits = bool(_read_hits(fd))
            os.unlink(path)
        return had_hits

    def _hash(self, address):
        """The window's name for `address`; remembered, since each post asks (HMAC is slow)."""
        if self._hash_of is None:
            key = _load_or_create_key(self.folder / ".key")
            self._hash_of = functools.lru_cache(maxsize=4096)(
                lambda a: hmac.new(key, a.encode(), hashlib.sha256).hexdigest()[:32])
        return self._hash_of(address)


def _rewrite(fd, data, old_size):
    """Overwrite in place: every reader holds the lock, so no reader sees a partial write, and
    a crash mid-write only forgets recent hits (an unreadable window counts as empty). The file
    is truncated only when it shrinks: a full window keeps its size, and on ext4 an ftruncate
    costs five times the write."""
    os.pwrite(fd, data, 0)
    if len(data) < old_size or old_size >= MAX_WINDOW_BYTES:  # (a longer file was read cut)
        os.ftruncate(fd, len(data))


def _read_window(fd):
    """The window file's bytes, at most MAX_WINDOW_BYTES. Read in small chunks: one pread of a
    1 MiB buffer maps and unmaps that much memory on every post."""
    parts, size = [], 0
    while size < MAX_WINDOW_BYTES:
        part = os.pread(fd, READ_CHUNK, size)
        parts.append(part)
        size += len(part)
        if len(part) < READ_CHUNK:
            break
    return b"".join(parts)


# A window as written here: json.dumps({"hits": [...]}) of integers, the same bytes made and
# read without the json module, which took most of a post's time in its window. Anything else in
# the file is read by json.
WINDOW_HEAD, WINDOW_TAIL = b'{"hits": [', b"]}"


def _window_bytes(hits):
    return b"%s%s%s" % (WINDOW_HEAD, b", ".join([b"%d" % hit for hit in hits]), WINDOW_TAIL)


def _hits_of(raw):
    if raw.startswith(WINDOW_HEAD) and raw.endswith(WINDOW_TAIL):
        inside = raw[len(WINDOW_HEAD):-len(WINDOW_TAIL)]
        try:
            return [int(hit) for hit in inside.split(b", ")] if inside else []
        except ValueError:  # not integers alone: json says what it holds
            pass
    try:
        doc = json.loads(raw or b"{}")
        return [h for h in doc.get("hits", []) if isinstance(h, int)]
    except (ValueError, AttributeError):
        return []


def _read_hits(fd):
    return _hits_of(_read_window(fd))


def _load_or_create_key(path):
    """Read the hashing key, creating it once; a half-written key is never visible."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tmp_name(path))
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
