"""Journal segments: each process appends its requests' journal entries to files of its own, so
a request writes its entry without SQLite (no commit, no writer lock); whoever reads the journal
first moves them into the `journal` table (`drain`).

- A global sequence orders entries across processes: a counter file under `flock`, taken and
  the line appended under the same lock, so once a drain holds the lock every entry numbered so
  far is in a file. Its first value continues the table's (`sqlite_sequence`).
- One line per entry (a JSON array), written with a single `write()` before the answer leaves:
  a worker SIGKILLed after answering has handed its entry to the OS already.
- A drain reads every file past the offset it recorded in `journal_segments`, in the same
  transaction as the rows it inserts: each line lands once. A file is deleted by the first
  drain that finds it finished (its process rotated past it, at ROTATE_BYTES, or is gone) and
  read whole by an earlier, committed drain.
- The folder is `<db>-requests/<epoch>/`: the epoch is a random number stored in the database,
  so a database deleted and made anew never takes in an older one's files.
"""
import errno
import fcntl
import json
import logging
import os
import secrets
import shutil
import tempfile
import threading
import weakref
from pathlib import Path

log = logging.getLogger("emulators")

ROTATE_BYTES = 1 << 18
COUNTER = "counter"
SUFFIX = ".log"
_EPOCH = ""  # the `journal_segments` row that holds the folder's epoch, not a file's offset


_OPEN = weakref.WeakValueDictionary()  # database file -> its Segments while a journal uses it
_OPEN_LOCK = threading.Lock()


def for_database(db):
    """The one Segments of a database file in this process, whatever Database objects (and
    services) use it: a process's files are told apart by process id."""
    with _OPEN_LOCK:
        key = db.path if db.path.startswith("file:") else os.path.abspath(db.path)
        segments = _OPEN.get(key)
        if segments is None:
            segments = _OPEN[key] = Segments(db)
        return segments


class Segments:
    """The journal segment files of one database, for this process."""

    def __init__(self, db):
        self._db = db
        path = db.path
        if path.startswith("file:"):  # in memory: one process; its files go with the object
            self._root = Path(tempfile.mkdtemp(prefix="emulators-requests-"))
            weakref.finalize(self, shutil.rmtree, str(self._root), True)
        else:
            self._root = Path(path + "-requests")
        self._lock = threading.Lock()  # this process's threads share one flock description
        self._fds = {}  # counter, segment: closed when the last journal lets go of this object
        weakref.finalize(self, _close_all, self._fds)
        self._pid = None
        self.folder = None
        self.sizes = {}  # service -> its journal ring size, for the services of this process

    # -- writing --------------------------------------------------------------------------
    def _start(self, conn=None):
        """(Re)open this process's files: first use, or first use after a fork. `conn`: the
        caller's open write transaction (on any Database object of the file), if any.

        The epoch is read (or written) before `_lock` is taken: a thread holding `_lock` never
        waits for the database, so a drain (which holds the database first) never deadlocks."""
        if self._pid == os.getpid():
            return
        folder = self._root / str(self._epoch(conn))
        with self._lock:
            if self._pid == os.getpid():
                return
            self.folder = folder
            self.folder.mkdir(parents=True, exist_ok=True)
            _close_all(self._fds)  # a fork's copies of the parent's
            self._counter = self._fds["counter"] = os.open(
                self.folder / COUNTER, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            self._name = f"{os.getpid()}-{secrets.token_hex(4)}"
            self._number = 0
            self._open_segment()
            self._pid = os.getpid()

    def _open_segment(self):
        self._number += 1
        path = self.folder / f"{self._name}-{self._number:06d}{SUFFIX}"
        self._fd = self._fds["segment"] = os.open(
            path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._written = 0

    def _epoch(self, conn):
        select = "SELECT offset FROM journal_segments WHERE name=?"
        row = (conn.execute(select, (_EPOCH,)).fetchone() if conn is not None
               else self._db.one(select, (_EPOCH,)))
        if row is None:
            with self._db.transaction() if conn is None else _Joined(conn) as writer:
                writer.execute("INSERT OR IGNORE INTO journal_segments (name, offset) VALUES"
                               " (?, ?)", (_EPOCH, secrets.randbits(62)))
                row = writer.execute(select, (_EPOCH,)).fetchone()
            for old in self._root.glob("*") if self._root.is_dir() else ():
                if old.name != str(row[0]):  # a former database's files
                    shutil.rmtree(old, ignore_errors=True)
        return row[0]

    def append(self, fields):
        """Number an entry and append it (fields without the number); return (number, whether
        this process's file is full and a drain is due)."""
        self._start()
        with self._lock:
            fcntl.flock(self._counter, fcntl.LOCK_EX)
            try:
                raw = os.pread(self._counter, 8, 0)
                seq = (int.from_bytes(raw, "little") if len(raw) == 8 else self._first()) + 1
                os.pwrite(self._counter, seq.to_bytes(8, "little"), 0)
                line = (json.dumps([seq, *fields], separators=(",", ":")) + "\n").encode()
                os.write(self._fd, line)
            finally:
                fcntl.flock(self._counter, fcntl.LOCK_UN)
            self._written += len(line)
            full = self._written >= ROTATE_BYTES
            if full:
                os.close(self._fds.pop("segment"))
                self._open_segment()
        return seq, full

    def _first(self):
        """The number before the first entry of a new counter: past every row of the table."""
        row = self._db.one("SELECT seq FROM sqlite_sequence WHERE name='journal'")
        return row[0] if row else 0

    # -- draining -------------------------------------------------------------------------
    def drain(self, conn):
        """Read every entry not yet read (inside the caller's write transaction, which records
        the offsets); return them as lists [seq, *fields], oldest first."""
        self._start(conn)
        folder = self.folder
        offsets = dict(conn.execute("SELECT name, offset FROM journal_segments WHERE name!=?",
                                    (_EPOCH,)))
        # An fd of its own: flock excludes this process's writers too (another description).
        lock = os.open(folder / COUNTER, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        entries, moved, gone = [], {}, []
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            names = sorted(name for name in os.listdir(folder) if name.endswith(SUFFIX))
            for name in names:
                start = offsets.pop(name, 0)
                with open(folder / name, "rb") as file:
                    file.seek(start)
                    data = file.read()
                finished = self._finished(name, names)
                if finished and not data:  # read whole by a drain that committed: delete
                    gone.append(name)
                    continue
                # A finished file's last line may have been cut short by a kill: read it too.
                end = len(data) if finished else data.rfind(b"\n") + 1
                for line in data[:end].splitlines():
                    try:
                        entries.append(json.loads(line))
                    except ValueError:
                        log.warning("emulators: skipped a damaged journal line in %s", name)
                if end:
                    moved[name] = start + end
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            os.close(lock)
        conn.executemany("INSERT INTO journal_segments (name, offset) VALUES (?, ?) ON CONFLICT"
                         " (name) DO UPDATE SET offset=excluded.offset", moved.items())
        conn.executemany("DELETE FROM journal_segments WHERE name=?",
                         [(name,) for name in [*gone, *offsets]])  # offsets: files gone
        for name in gone:
            _unlink(folder / name)
        entries.sort(key=lambda entry: entry[0])
        return entries

    def _finished(self, name, names):
        """A file no process appends to any more: its process rotated past it, or is gone."""
        stem = name[:-len(SUFFIX)]
        owner, _, number = stem.rpartition("-")
        if any(other.startswith(owner + "-") and other[:-len(SUFFIX)] > stem
               for other in names):
            return True
        pid = int(owner.split("-")[0])
        if pid == os.getpid():  # one Segments per database and process (for_database)
            return owner != self._name
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False


def _unlink(path):
    try:
        os.unlink(path)
    except OSError as error:
        if error.errno != errno.ENOENT:
            raise


class _Joined:
    """A caller's open transaction, used as `with`: nothing to begin or end."""

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        return self.conn

    def __exit__(self, *exc):
        return False


def _close_all(fds):
    while fds:
        try:
            os.close(fds.popitem()[1])
        except OSError:
            pass
