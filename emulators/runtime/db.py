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
    service TEXT NOT NULL, namespace TEXT NOT NULL, PRIMARY KEY (service, namespace));
CREATE TABLE IF NOT EXISTS records (
    service TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL,
    collection TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (service, key, collection, id));
CREATE INDEX IF NOT EXISTS records_seq ON records (service, key, collection, seq);
CREATE INDEX IF NOT EXISTS records_ns ON records (service, namespace);
CREATE TABLE IF NOT EXISTS sequences (
    service TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL,
    value INTEGER NOT NULL, PRIMARY KEY (service, key, name));
CREATE INDEX IF NOT EXISTS sequences_ns ON sequences (service, namespace);
CREATE TABLE IF NOT EXISTS rngs (
    service TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL, state INTEGER NOT NULL,
    PRIMARY KEY (service, key));
CREATE INDEX IF NOT EXISTS rngs_ns ON rngs (service, namespace);
CREATE TABLE IF NOT EXISTS clocks (
    service TEXT NOT NULL, namespace TEXT NOT NULL, frozen INTEGER NOT NULL,
    now_ms INTEGER NOT NULL, offset_ms INTEGER NOT NULL, PRIMARY KEY (service, namespace));
CREATE TABLE IF NOT EXISTS fault_ids (n INTEGER PRIMARY KEY AUTOINCREMENT, service TEXT);
CREATE TABLE IF NOT EXISTS faults (
    service TEXT NOT NULL, namespace TEXT NOT NULL, id TEXT NOT NULL, ord INTEGER NOT NULL,
    rule TEXT NOT NULL, remaining INTEGER, hits INTEGER NOT NULL DEFAULT 0,
    seen INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (service, namespace, id));
CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, service TEXT NOT NULL, namespace TEXT NOT NULL,
    at_ms INTEGER NOT NULL, operation TEXT, status INTEGER NOT NULL, entry TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS journal_ns ON journal (service, namespace, seq);
CREATE TABLE IF NOT EXISTS metrics (
    service TEXT NOT NULL, namespace TEXT NOT NULL, operation TEXT NOT NULL,
    method TEXT NOT NULL, path TEXT NOT NULL, status INTEGER NOT NULL,
    count INTEGER NOT NULL, faults INTEGER NOT NULL, duration_ms REAL NOT NULL,
    PRIMARY KEY (service, namespace, operation, method, path, status));
CREATE TABLE IF NOT EXISTS checkpoints (
    n INTEGER PRIMARY KEY AUTOINCREMENT, service TEXT NOT NULL, namespace TEXT NOT NULL,
    branch TEXT NOT NULL, parent TEXT, at_ms INTEGER NOT NULL, pinned INTEGER NOT NULL DEFAULT 0,
    value TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS checkpoints_ns ON checkpoints (service, namespace, n);
CREATE TABLE IF NOT EXISTS branches (
    service TEXT NOT NULL, namespace TEXT NOT NULL, branch TEXT NOT NULL, head TEXT NOT NULL,
    PRIMARY KEY (service, namespace, branch));
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
            conn.execute("PRAGMA synchronous=NORMAL")
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
    def transaction(self):
        """Run the block as one `BEGIN IMMEDIATE` transaction; nested blocks join the outer one."""
        conn = self.conn
        if self._local.depth:
            self._local.depth += 1
            try:
                yield conn
            finally:
                self._local.depth -= 1
            return
        conn.execute("BEGIN IMMEDIATE")
        self._local.depth = 1
        try:
            yield conn
        except BaseException:
            self._local.depth = 0
            conn.execute("ROLLBACK")
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
