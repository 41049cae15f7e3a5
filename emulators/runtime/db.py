"""The shared SQLite database: every piece of emulator state is a row, so all workers agree.

WAL journal, busy_timeout, BEGIN IMMEDIATE for writes; one connection per thread, opened lazily
and re-opened after fork. Every table carries `service` and `namespace` columns.
"""
import contextlib
import os
import sqlite3
import threading
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS namespaces (
    service TEXT NOT NULL, namespace TEXT NOT NULL,
    PRIMARY KEY (service, namespace)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS records (
    service TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL,
    collection TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (service, key, collection, id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS records_seq ON records (service, key, collection, seq);
CREATE TABLE IF NOT EXISTS sequences (
    service TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL,
    value INTEGER NOT NULL, PRIMARY KEY (service, key, name)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rngs (
    service TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL, state INTEGER NOT NULL,
    PRIMARY KEY (service, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS clocks (
    service TEXT NOT NULL, namespace TEXT NOT NULL, frozen INTEGER NOT NULL,
    now_ms INTEGER NOT NULL, offset_ms INTEGER NOT NULL,
    PRIMARY KEY (service, namespace)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS fault_ids (n INTEGER PRIMARY KEY AUTOINCREMENT, service TEXT);
CREATE TABLE IF NOT EXISTS faults (
    service TEXT NOT NULL, namespace TEXT NOT NULL, id TEXT NOT NULL, ord INTEGER NOT NULL,
    rule TEXT NOT NULL, remaining INTEGER, hits INTEGER NOT NULL DEFAULT 0,
    seen INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (service, namespace, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, service TEXT NOT NULL, namespace TEXT NOT NULL,
    at_ms INTEGER NOT NULL, operation TEXT, status INTEGER NOT NULL, entry TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS metrics (
    service TEXT NOT NULL, namespace TEXT NOT NULL, operation TEXT NOT NULL,
    method TEXT NOT NULL, path TEXT NOT NULL, status INTEGER NOT NULL,
    count INTEGER NOT NULL, faults INTEGER NOT NULL, duration_ms REAL NOT NULL,
    PRIMARY KEY (service, namespace, operation, method, path, status)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS timeline_nodes (
    n INTEGER PRIMARY KEY AUTOINCREMENT, service TEXT NOT NULL, namespace TEXT NOT NULL,
    branch TEXT NOT NULL, parent TEXT, at_ms INTEGER NOT NULL, pinned INTEGER NOT NULL DEFAULT 0,
    sequences TEXT NOT NULL, rng INTEGER, clock_now INTEGER NOT NULL,
    clock_frozen INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS timeline_records (
    n INTEGER NOT NULL, namespace TEXT NOT NULL, collection TEXT NOT NULL, id TEXT NOT NULL,
    seq INTEGER NOT NULL, value TEXT NOT NULL, PRIMARY KEY (n, collection, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS branches (
    service TEXT NOT NULL, namespace TEXT NOT NULL, branch TEXT NOT NULL, head TEXT NOT NULL,
    PRIMARY KEY (service, namespace, branch)) WITHOUT ROWID;
"""


class Database:
    """Lazily opened per-thread connections to one SQLite file shared by every worker."""

    def __init__(self, path, *, busy_timeout_ms=10000):
        self.path = str(path)
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._pid = None
        self._schema_lock = threading.Lock()
        self._schema_ready = False
        self._memory = None
        if self.path == ":memory:":
            # A single shared in-memory database for one process (threads share it).
            self.path = f"file:emulators-{id(self)}?mode=memory&cache=shared"

    def _open(self):
        if self.path.startswith("file:"):
            conn = sqlite3.connect(self.path, uri=True, isolation_level=None,
                                   check_same_thread=False, timeout=self.busy_timeout_ms / 1000)
            if self._memory is None:
                self._memory = conn  # keeps the shared in-memory database alive
        else:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                   timeout=self.busy_timeout_ms / 1000)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=OFF")
        conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_ms)}")
        with self._schema_lock:
            if not self._schema_ready:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    for statement in SCHEMA.split(";"):
                        if statement.strip():
                            conn.execute(statement)
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                self._schema_ready = True
        return conn

    @property
    def conn(self):
        """This thread's connection, (re)opened in the current process on first use."""
        pid = os.getpid()
        if self._pid != pid:
            # Forked: connections inherited from the parent must never be used.
            self._local = threading.local()
            self._pid = pid
            self._schema_ready = False
            self._memory = None
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._open()
            self._local.depth = 0
        return conn

    @contextlib.contextmanager
    def transaction(self, *, commit_on_error=False, savepoint=True):
        """Run the block as one `BEGIN IMMEDIATE` transaction.

        A nested block is a SAVEPOINT of the outer one (rolled back alone when it raises).
        `commit_on_error` keeps what the block wrote even when it raises (the runtime's batch
        around a mutating request: a handler's writes persist as they would without it).
        `savepoint=False` joins an outer transaction without a savepoint (runtime blocks that
        cannot fail halfway).
        """
        conn = self.conn
        depth = self._local.depth
        if depth and not savepoint:
            yield conn
            return
        if depth:
            name = f"sp{depth}"
            conn.execute(f"SAVEPOINT {name}")
            self._local.depth = depth + 1
            try:
                yield conn
            except BaseException:
                if not commit_on_error:
                    conn.execute(f"ROLLBACK TO {name}")
                conn.execute(f"RELEASE {name}")
                raise
            finally:
                self._local.depth = depth
            conn.execute(f"RELEASE {name}")
            return
        conn.execute("BEGIN IMMEDIATE")
        self._local.depth = 1
        try:
            yield conn
        except BaseException:
            self._local.depth = 0
            conn.execute("COMMIT" if commit_on_error else "ROLLBACK")
            raise
        self._local.depth = 0
        conn.execute("COMMIT")

    def execute(self, sql, params=()):
        """Run one statement (atomic on its own) and return the cursor."""
        return self.conn.execute(sql, params)

    def one(self, sql, params=()):
        """Return the first row of a query, or None."""
        return self.conn.execute(sql, params).fetchone()

    def all(self, sql, params=()):
        """Return every row of a query."""
        return self.conn.execute(sql, params).fetchall()

    def close(self):
        """Close this thread's connection (others close when their thread ends)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
