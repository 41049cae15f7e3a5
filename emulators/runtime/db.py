"""The shared SQLite database: every piece of emulator state is a row, so all workers agree.

WAL journal, busy_timeout, BEGIN IMMEDIATE for writes; one connection per thread, opened lazily
and re-opened after fork. Every table carries `service` and `namespace` columns.
"""
import os
import sqlite3
import threading
import weakref
from pathlib import Path

from .errors import ConnectionDropped

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
CREATE TABLE IF NOT EXISTS fault_versions (
    service TEXT NOT NULL PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID;
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
    branch TEXT NOT NULL, parent INTEGER, at_ms INTEGER NOT NULL,
    pinned INTEGER NOT NULL DEFAULT 0,
    sequences TEXT NOT NULL, rng INTEGER, clock_now INTEGER NOT NULL,
    clock_frozen INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS timeline_nodes_listed
    ON timeline_nodes (service, namespace, n, branch);
CREATE TABLE IF NOT EXISTS timeline_undo (
    service TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL, t INTEGER NOT NULL,
    collection TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER, value TEXT,
    PRIMARY KEY (service, key, t, collection, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS branches (
    service TEXT NOT NULL, namespace TEXT NOT NULL, branch TEXT NOT NULL,
    head INTEGER NOT NULL, PRIMARY KEY (service, namespace, branch)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS credentials (
    service TEXT NOT NULL, credential TEXT NOT NULL, namespace TEXT NOT NULL,
    PRIMARY KEY (service, credential)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots (
    n INTEGER PRIMARY KEY AUTOINCREMENT, service TEXT NOT NULL, namespace TEXT NOT NULL,
    checkpoint TEXT NOT NULL);
"""


# Undo log (timeline.py): the first write of a record row after checkpoint number t (the
# newest node of the database, read from sqlite_sequence) saves the row as it was at t (NULL
# value: absent). `@` marks the scratch keys of historical reads, which never commit.
# ON CONFLICT DO NOTHING, not OR IGNORE: an outer upsert's conflict policy would override a
# trigger's OR IGNORE.
_NOW_T = "coalesce((SELECT seq FROM sqlite_sequence WHERE name='timeline_nodes'), 0)"
TRIGGERS = [f"""
CREATE TRIGGER IF NOT EXISTS records_undo_{event.lower()} AFTER {event} ON records
WHEN instr({row}.key, '@') = 0 BEGIN
    INSERT INTO timeline_undo (service, namespace, key, t, collection, id, seq, value)
    VALUES ({row}.service, {row}.namespace, {row}.key, {_NOW_T}, {row}.collection, {row}.id,
            {old})
    ON CONFLICT DO NOTHING;
END""" for event, row, old in (("INSERT", "NEW", "NULL, NULL"),
                               ("UPDATE", "NEW", "OLD.seq, OLD.value"),
                               ("DELETE", "OLD", "OLD.seq, OLD.value"))]

# Bump a service's fault version when a rule appears, goes or is used up, so a worker can keep
# the rule list between requests and re-read it only when the version moved (faults.py).
_BUMP = ("INSERT INTO fault_versions (service, version) VALUES ({row}.service, 1)"
         " ON CONFLICT (service) DO UPDATE SET version=version+1;")
TRIGGERS += [f"""
CREATE TRIGGER IF NOT EXISTS faults_version_{name} AFTER {event} ON faults{when} BEGIN
    {_BUMP.format(row=row)}
END""" for name, event, row, when in (
    ("insert", "INSERT", "NEW", ""), ("delete", "DELETE", "OLD", ""),
    ("spent", "UPDATE OF remaining", "NEW", " WHEN NEW.remaining = 0"),
    ("edit", "UPDATE OF rule, namespace, id, ord", "NEW", ""))]

# A new checkpoint node becomes its branch head; the records are not touched (timeline.py).
TRIGGERS += [f"""
CREATE TRIGGER IF NOT EXISTS timeline_head AFTER INSERT ON timeline_nodes BEGIN
    INSERT INTO branches (service, namespace, branch, head)
    VALUES (NEW.service, NEW.namespace, NEW.branch, NEW.n)
    ON CONFLICT (service, namespace, branch) DO UPDATE SET head=excluded.head;
END"""]

SCHEMA_VERSION = 5  # 2: checkpoints as deltas; 3: heads and parents as row numbers;
# 4: fault_versions; 5: an undo log instead of deltas (older timelines are discarded, db.py)


def _columns(conn, table):
    return {row[1]: row[2] for row in conn.execute(f"PRAGMA table_info({table})")}


_LEGACY_TRIGGERS = ("records_noted_insert", "records_noted_update", "records_noted_delete",
                    "timeline_commit", "timeline_commit_root", "timeline_commit_delta")
_LEGACY_TABLES = ("timeline_nodes", "timeline_deltas", "timeline_records", "record_changes",
                  "branches")


def _migrate_before(conn):
    """Discard a timeline older than version 5; return the id high-water mark to keep.

    Emulator state is test state: rebuilding old checkpoints as undo entries would cost a full
    restore per node at start-up, so they go (their ids answer 409), as do non-main branches
    and their rows. Main's records, sequences and RNG stay; its next request commits a fresh
    first checkpoint, numbered above every old id.
    """
    if conn.execute("PRAGMA user_version").fetchone()[0] >= 5 \
            or not _columns(conn, "timeline_nodes"):
        return None
    high = conn.execute("SELECT max(n) FROM timeline_nodes").fetchone()[0] or 0
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name='sqlite_sequence'").fetchone():
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name='timeline_nodes'")
        high = max(high, (row.fetchone() or (0,))[0])
    for trigger in _LEGACY_TRIGGERS:
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    for table in _LEGACY_TABLES:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    for table in ("records", "sequences", "rngs"):
        if _columns(conn, table):
            conn.execute(f"DELETE FROM {table} WHERE instr(key, '~') OR instr(key, '@')")
    return high


def _migrate_after(conn, high):
    """Carry the id high-water mark over to the new node table: ids are never reused."""
    if high:
        conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('timeline_nodes', ?)",
                     (high,))


class _Transaction:
    """Database.transaction() as a plain class: it runs several times per request, and a
    generator-based context manager cost more than the SQL of a savepoint."""

    __slots__ = ("_db", "_commit_on_error", "_savepoint", "_conn", "_depth")

    def __init__(self, db, commit_on_error, savepoint):
        self._db = db
        self._commit_on_error = commit_on_error
        self._savepoint = savepoint

    def __enter__(self):
        db = self._db
        conn = self._conn = db.conn
        local = db._local
        depth = self._depth = local.depth
        if depth:
            if self._savepoint:
                conn.execute(f"SAVEPOINT sp{depth}")
                local.depth = depth + 1
        else:
            conn.execute("BEGIN IMMEDIATE")
            local.depth = 1
        return conn

    def __exit__(self, kind, error, traceback):
        depth = self._depth
        if depth and not self._savepoint:
            return False
        conn = self._conn
        self._db._local.depth = depth
        keep = kind is None or self._commit_on_error or issubclass(kind, ConnectionDropped)
        if depth:
            if not keep:
                conn.execute(f"ROLLBACK TO sp{depth}")
            conn.execute(f"RELEASE sp{depth}")
        else:
            conn.execute("COMMIT" if keep else "ROLLBACK")
        return False


class Database:
    """Lazily opened per-thread connections to one SQLite file shared by every worker."""

    def __init__(self, path, *, busy_timeout_ms=10000):
        self.path = str(path)
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._pid = os.getpid()
        self._schema_lock = threading.Lock()
        # Checked at fork rather than with a getpid() on every access (the hot path).
        ref = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: ref() is not None and ref()._forked())
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
                    high = _migrate_before(conn)
                    for statement in SCHEMA.split(";"):
                        if statement.strip():
                            conn.execute(statement)
                    for statement in TRIGGERS:
                        conn.execute(statement)
                    _migrate_after(conn, high)
                    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                self._schema_ready = True
        return conn

    def _forked(self):
        # Connections inherited from the parent must never be used in the child.
        self._local = threading.local()
        self._pid = os.getpid()
        self._schema_ready = False
        self._memory = None

    @property
    def conn(self):
        """This thread's connection, (re)opened in the current process on first use."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._pid != os.getpid():
                self._forked()
            conn = self._local.conn = self._open()
            self._local.depth = 0
        return conn

    def transaction(self, *, commit_on_error=False, savepoint=True):
        """Return a context manager running the block as one `BEGIN IMMEDIATE` transaction.

        A nested block is a SAVEPOINT of the outer one (rolled back alone when it raises).
        `commit_on_error` keeps what the block wrote even when it raises (the runtime's batch
        around a mutating request: a handler's writes persist as they would without it).
        `savepoint=False` joins an outer transaction without a savepoint (runtime blocks that
        cannot fail halfway).
        `instance.drop()` (ConnectionDropped) always keeps the block's writes: a drop loses the
        answer, not the work, and an `accept()` inside the block must stay durable.
        """
        return _Transaction(self, commit_on_error, savepoint)

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
