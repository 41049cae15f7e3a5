"""ThreadStore: one JSON file per thread, replaced atomically under a sidecar file lock.

The one piece of code that reads and writes thread files, for the app, scripts/chat.py and
cron/relay.py alike. Returns plain dicts.
"""
import json
import os
import re
import threading
import time

from . import errors
from .files import (TMP_SUFFIX, Locks, LockTimeout, discard, fsync_dir, read_bytes, read_file,
                    replace, write_tmp)

THREAD_RE = re.compile(r"\A[0-9a-f]{16}\Z")
THREAD_FILE_RE = re.compile(r"\A([0-9a-f]{16})\.json\Z")
LOCK_FILE_RE = re.compile(r"\A([0-9a-f]{16})\.json\.lock\Z")
# THREAD_FILE_RE over a whole listing joined by "/", the one character no name can hold: one C
# call instead of one match per entry.
THREAD_FILES_RE = re.compile(r"/[0-9a-f]{16}\.json(?=/)")
# json.dumps with options builds a new encoder per call; every post encodes its thread.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
# A cached parse is trusted only for files whose mtime is this far behind the moment the cache
# was filled: a later write in the same timestamp tick, with the same size and a recycled inode,
# could otherwise look unchanged (git's "racily clean" rule).
RACY_NS = 2_000_000_000
CACHE_SIZE = 1024
# What the documents last written may hold in memory at most, in file bytes (a parsed document
# takes a few times its file): past it they are forgotten, and the next posts parse again.
WRITTEN_BYTES = 16 << 20
# How a thread file we wrote ends: the messages list is its last member, encoded without
# spaces, so a message appended goes in before these two bytes.
TAIL = b"]}"


def is_thread_name(name):
    """True for the 16 lowercase hex digits a thread is called."""
    return isinstance(name, str) and bool(THREAD_RE.match(name))


class ThreadStore:
    """Per-thread JSON files in `chat_dir`; creating threads is capped under one extra lock."""

    def __init__(self, chat_dir, *, create_lock_path, lock_timeout_s=10.0):
        self.chat_dir = chat_dir
        self._chat_prefix = os.path.join(chat_dir, "")
        self._locks = Locks(lock_timeout_s)
        self._try_lock = Locks(0)  # the sweep never waits for a lock a writer holds
        self._create_lock_path = create_lock_path
        # How many thread files there are, at most (see _create).
        self._count_path = os.path.join(os.path.dirname(create_lock_path), "chat-threads.count")
        self._cache = {}
        # path -> (bytes, doc): the document this store last wrote to each thread file. Under
        # the lock, a file holding exactly those bytes is that document: no parse, no checks.
        self._written, self._written_bytes = {}, 0
        self._written_guard = threading.Lock()  # threads write different files at once

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
            stat, data = read_file(path)
            doc = _parse(data, path)
        except FileNotFoundError:
            return None
        except OSError as exc:  # a directory or an unreadable file where a thread should be
            raise errors.ThreadCorrupt(f"{path}: cannot be read ({exc.strerror})")
        if time.time_ns() - stat.st_mtime_ns > RACY_NS:
            if len(self._cache) >= CACHE_SIZE:
                self._cache.clear()  # threads of this worker may share it: no iteration
            self._cache[path] = ((stat.st_ino, stat.st_mtime_ns, stat.st_size), doc)
        return doc

    def update(self, thread, change, *, max_threads=None):
        """Apply `change(doc) -> new doc | None` under the thread's lock; return the stored doc.

        `doc` is a fresh dict with a fresh messages list ({"thread", "messages"}, empty for a
        new thread); the messages in it are shared with the store's memory and are never changed
        in place (a change builds new ones). Returning None writes nothing; a doc without
        messages deletes the file. Creating a thread when `max_threads` files exist raises
        ThreadLimitReached. Returns after the write is durable: file fsync'd, renamed into
        place, folder fsync'd.
        """
        path = self.path(thread)
        try:
            with self._locks(f"{path}.lock"):
                kept = False  # whether a thread file is there when the lock is let go
                try:
                    try:
                        data = read_bytes(path)
                    except FileNotFoundError:
                        current = data = None
                    except OSError as exc:
                        raise errors.ThreadCorrupt(f"{path}: cannot be read ({exc.strerror})")
                    else:
                        written = self._written.get(path)
                        if written is not None and written[0] == data:
                            current = written[1]
                        else:  # another process wrote last: most often, it appended
                            current = (written is not None and _extended(*written, data)) \
                                or _parse(data, path)
                    kept = current is not None
                    new = change({**current, "messages": list(current["messages"])}
                                 if current is not None
                                 else {"thread": thread, "messages": []})
                    if new is None:
                        return current
                    if not new["messages"]:
                        if current is not None:
                            os.unlink(path)
                            self._remember(path, None, None)
                            kept = False
                        return None
                    data = _appended(data, current, new) or _encode(new).encode()
                    self._remember(path, data, new)
                    tmp = write_tmp(path, data)
                    if current is None:
                        self._create(tmp, path, max_threads)
                        kept = True
                    else:
                        replace(tmp, path)
                    fsync_dir(self.chat_dir)
                    return new
                finally:
                    if not kept:
                        self._drop_held_lock(path)
        except LockTimeout:
            raise errors.StoreBusy()

    def _remember(self, path, data, doc):
        """Keep (data, doc) as what `path` holds (None: forget it), within WRITTEN_BYTES."""
        with self._written_guard:
            old = self._written.pop(path, None)
            if old is not None:
                self._written_bytes -= len(old[0])
            if data is None:
                return
            if self._written_bytes + len(data) > WRITTEN_BYTES:
                self._written.clear()
                self._written_bytes = 0
            self._written[path] = (data, doc)
            self._written_bytes += len(data)

    def _drop_held_lock(self, path):
        """Remove the lock file of a thread that has no file, while we hold that lock: a refused
        creation (a 507, a failed change), a deleted thread or a mistyped name leaves nothing in
        the folder. Safe beside waiters for the same reason the sweep's removal is (see
        remove_orphan_locks); a thread file that is still there (a corrupt one) keeps its lock."""
        if not os.path.lexists(path):
            discard(f"{path}.lock")

    def _create(self, tmp, path, max_threads):
        """Rename a new thread's written file into place unless the cap is reached. Only the
        count and the rename hold the one global lock; the fsyncs happen outside it. The count
        of creations is kept in a small file, so a new thread costs no scan of the folder (under
        that lock, a scan would grow with the threads). Deletions leave it high; at the cap the
        files are counted before anything is refused, so a refusal is always exact."""
        try:
            with self._locks(self._create_lock_path):
                known = self._known_count()
                if max_threads is not None and known >= max_threads:
                    known = self.count()
                    if known >= max_threads:
                        self._save_count(known)
                        raise errors.ThreadLimitReached()
                replace(tmp, path)
                self._save_count(known + 1)
        except BaseException:
            discard(tmp)
            raise

    def recount(self):
        """Count the thread files again and keep that count; the sweep's way to correct it after
        files were added or removed by hand, or a crash between a rename and the count."""
        try:
            with self._locks(self._create_lock_path):
                counted = self.count()
                self._save_count(counted)
                return counted
        except LockTimeout:
            raise errors.StoreBusy()

    def _known_count(self):
        known = self._stored_count()
        return self.count() if known is None else known

    def _stored_count(self):
        """The kept count, or None when there is none yet or it cannot be read."""
        try:
            with open(self._count_path, "rb") as handle:
                return int(handle.read(64))
        except (OSError, ValueError):
            return None

    def _save_count(self, count):
        """Overwrite in place, fixed width, without a temporary file or an fsync: a count torn
        or lost by a crash is at worst wrong until the folder is counted again (by the sweep,
        or at the cap before any refusal). A count that cannot be saved is removed instead."""
        try:
            fd = os.open(self._count_path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o640)
            try:
                os.pwrite(fd, b"%20d\n" % count, 0)
            finally:
                os.close(fd)
        except OSError:
            discard(self._count_path)

    def threads(self):
        """Names of every thread with a file, sorted."""
        try:
            entries = os.listdir(self.chat_dir)
        except FileNotFoundError:
            return []
        return sorted(m.group(1) for m in map(THREAD_FILE_RE.match, entries) if m)

    def count(self):
        """How many threads have a file, counted in the folder: one regex pass over the listing
        (no sorted list of names, as `len(self.threads())` would build)."""
        try:
            entries = os.listdir(self.chat_dir)
        except FileNotFoundError:
            return 0
        return len(THREAD_FILES_RE.findall(f"/{'/'.join(entries)}/"))

    def delete(self, thread, *, force=False):
        """Delete the thread's file (and its lock) under the lock; return its message count,
        or None for a corrupt file deleted with `force`. ThreadNotFound when it has no file."""
        path = self.path(thread)
        lock = self._locks(f"{path}.lock")
        try:
            with lock:
                try:
                    with open(path, "rb") as handle:
                        data = handle.read()
                except FileNotFoundError:
                    self._drop_held_lock(path)
                    raise errors.ThreadNotFound(f"no such thread: {thread}")
                except OSError as exc:
                    raise errors.ThreadCorrupt(
                        f"{path}: cannot be read ({exc.strerror}); remove it by hand")
                try:
                    count = len(_parse(data, path)["messages"])
                except errors.ThreadCorrupt:
                    if not force:
                        raise
                    count = None
                os.unlink(path)
                # Unlinking a lock we hold is safe (see remove_orphan_locks).
                os.unlink(f"{path}.lock")
                fsync_dir(self.chat_dir)
                return count
        except LockTimeout:
            raise errors.StoreBusy()

    def inspect(self):
        """Every entry of the chat folder as (name, verdict, why), verdict one of ok, corrupt,
        foreign (not ours) or leftover (the sweep deletes it)."""
        try:
            names = sorted(os.listdir(self.chat_dir))
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            full = os.path.join(self.chat_dir, name)
            thread = THREAD_FILE_RE.match(name)
            lock = LOCK_FILE_RE.match(name)
            if thread:
                try:
                    self.read(thread.group(1))
                    found.append((name, "ok", "thread"))
                except errors.ThreadCorrupt as exc:
                    found.append((name, "corrupt", str(exc).replace(full + ": ", "")))
            elif lock and os.path.isfile(full):
                found.append((name, "ok" if os.path.lexists(self.path(lock.group(1)))
                              else "leftover", "lock file"))
            elif name.startswith(".") and name.endswith(TMP_SUFFIX) and os.path.isfile(full):
                found.append((name, "leftover", "temporary file of an interrupted write"))
            else:
                found.append((name, "foreign", "not a thread, lock or temporary file"))
        return found

    def remove_orphan_locks(self, older_than_s, now_s=None):
        """Delete `<thread>.json.lock` files whose thread has no file (left by a writer killed
        while it held one, or put there by hand), untouched for `older_than_s`; return how many.

        Safe beside live writers: a lock is removed only while we hold it ourselves and no thread
        file exists, and a writer re-opens the path when the inode it waited on was unlinked
        (`files.Locks`), so two holders never exist on two inodes.
        """
        removed = 0
        for entry in self._old_files(older_than_s, now_s):
            match = LOCK_FILE_RE.match(entry.name)
            if not match or os.path.lexists(self.path(match.group(1))):
                continue
            try:
                with self._try_lock(entry.path):
                    if not os.path.lexists(self.path(match.group(1))):
                        os.unlink(entry.path)
                        removed += 1
            except (LockTimeout, FileNotFoundError):
                pass  # held by a writer right now, or gone already
        return removed

    def remove_stale_tmp(self, older_than_s, now_s=None):
        """Delete temporary files a crashed writer left behind; return how many."""
        removed = 0
        for entry in self._old_files(older_than_s, now_s):
            if entry.name.startswith(".") and entry.name.endswith(TMP_SUFFIX):
                try:
                    os.unlink(entry.path)
                    removed += 1
                except FileNotFoundError:
                    pass
        return removed

    def _old_files(self, older_than_s, now_s):
        """Regular files of the chat folder untouched for `older_than_s` seconds (a directory
        named like one of our files is not ours)."""
        now_s = time.time() if now_s is None else now_s
        try:
            entries = list(os.scandir(self.chat_dir))
        except FileNotFoundError:
            return
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False) and \
                        now_s - entry.stat(follow_symlinks=False).st_mtime > older_than_s:
                    yield entry
            except FileNotFoundError:
                pass


def _appended(data, current, new):
    """The bytes of `new` made from `data`, the file that holds `current`, when `new` only
    appends messages to it: the new messages encoded alone and put in before the file's
    closing bytes, without encoding the others again. None when it is not so simple (a
    retention cut, another member changed, a file not laid out as we write them)."""
    if current is None or not data.endswith(TAIL) or list(current)[-1] != "messages" \
            or new.keys() != current.keys():
        return None
    old, messages = current["messages"], new["messages"]
    if len(messages) <= len(old) or any(new[k] is not current[k] for k in new
                                        if k != "messages"):
        return None
    if any(a is not b for a, b in zip(old, messages)):
        return None
    added = ",".join(map(_encode, messages[len(old):])).encode()
    return b"".join((data[:-len(TAIL)], b"," if old else b"", added, TAIL))


def _extended(old_data, old, data):
    """The document in `data` when it is `old` (held in `old_data`) with messages appended, as
    another worker's post leaves a thread: only the appended messages are parsed and checked.
    None when it is not so simple (then the whole file is parsed)."""
    head = old_data[:-len(TAIL)]
    if not (len(data) > len(old_data) and data.endswith(TAIL) and old_data.endswith(TAIL)
            and data.startswith(head) and list(old)[-1] == "messages"):
        return None
    added = data[len(head):-len(TAIL)]
    if old["messages"]:
        if not added.startswith(b","):
            return None
        added = added[1:]
    try:
        messages = json.loads(b"[%s]" % added)
    except (ValueError, RecursionError):
        return None
    if not messages or any(map(_message_problem, messages)):
        return None
    return {**old, "messages": old["messages"] + messages}


STRING_FIELDS = ("id", "ts", "author", "text")


def _parse(data, path):
    """The thread document in `data`, or ThreadCorrupt saying what is wrong with the file."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise errors.ThreadCorrupt(f"{path}: not valid JSON ({_short(exc)})")
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        raise errors.ThreadCorrupt(f"{path}: not a thread (no messages list)")
    for index, message in enumerate(doc["messages"]):
        problem = _message_problem(message)
        if problem:
            raise errors.ThreadCorrupt(f"{path}: message {index} {problem}")
    return doc


def _message_problem(message):
    """Why `message` is not one we write, or None. A lone surrogate (JSON can escape one, UTF-8
    cannot hold it) would make the thread unprintable and unwritable; only text that is not
    ASCII can hold one, and `isascii` costs nothing."""
    if type(message) is not dict or type(message.get("epoch")) is not int:
        return "is not an object with string id, ts, author, text and integer epoch"
    for name in STRING_FIELDS:
        value = message.get(name)
        if type(value) is not str:
            return "is not an object with string id, ts, author, text and integer epoch"
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return f"holds a lone surrogate in {name} (not valid Unicode)"
    return None


def _short(exc):
    return str(exc)[:120]
