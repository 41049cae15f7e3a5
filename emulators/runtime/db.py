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
    clock_frozen INTEGER NOT NULL, base INTEGER, delta INTEGER,
    evicted INTEGER NOT NULL DEFAULT 0);
DROP INDEX IF EXISTS timeline_nodes_ns;
CREATE INDEX IF NOT EXISTS timeline_nodes_by_namespace
    ON timeline_nodes (service, namespace, evicted, n);
CREATE INDEX IF NOT EXISTS timeline_nodes_base ON timeline_nodes (base);
CREATE TABLE IF NOT EXISTS timeline_deltas (
    delta INTEGER NOT NULL, collection TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER,
    value TEXT, PRIMARY KEY (delta, collection, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS record_changes (
    service TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL, collection TEXT NOT NULL,
    id TEXT NOT NULL, PRIMARY KEY (service, key, collection, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS branches (
    service TEXT NOT NULL, namespace TEXT NOT NULL, branch TEXT NOT NULL,
    head INTEGER NOT NULL, PRIMARY KEY (service, namespace, branch)) WITHOUT ROWID;
"""


# Note every record row written or deleted since its key's branch head (timeline.py); `@` marks
# the scratch keys of historical reads, which never commit. ON CONFLICT DO NOTHING, not OR IGNORE:
# an outer upsert's conflict policy would override a trigger's OR IGNORE.
TRIGGERS = [f"""
CREATE TRIGGER IF NOT EXISTS records_noted_{event.lower()} AFTER {event} ON records
WHEN instr({row}.key, '@') = 0 BEGIN
    INSERT INTO record_changes (service, namespace, key, collection, id)
    VALUES ({row}.service, {row}.namespace, {row}.key, {row}.collection, {row}.id)
    ON CONFLICT DO NOTHING;
END""" for event, row in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD"))]

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

# A new checkpoint node (timeline.py) takes the rows noted since its base into its delta (all
# rows when it has no base), clears the notes and becomes its branch head: one INSERT per commit.
# The key expression is timeline.storage_key in SQL.
_KEY = "CASE NEW.branch WHEN 'main' THEN NEW.namespace ELSE NEW.namespace || '~' || NEW.branch END"
_HEAD = f"""
    DELETE FROM record_changes WHERE service=NEW.service AND key={_KEY};
    INSERT INTO branches (service, namespace, branch, head)
    VALUES (NEW.service, NEW.namespace, NEW.branch, NEW.n)
    ON CONFLICT (service, namespace, branch) DO UPDATE SET head=excluded.head;"""
# Two triggers with WHEN, not one with both captures: a WHERE on NEW.base would still walk
# every row of the key on each commit.
TRIGGERS += ["DROP TRIGGER IF EXISTS timeline_commit", f"""
CREATE TRIGGER IF NOT EXISTS timeline_commit_root AFTER INSERT ON timeline_nodes
WHEN NEW.base IS NULL BEGIN
    INSERT INTO timeline_deltas (delta, collection, id, seq, value)
    SELECT NEW.n, collection, id, seq, value FROM records
    WHERE service=NEW.service AND key={_KEY};{_HEAD}
END""", f"""
CREATE TRIGGER IF NOT EXISTS timeline_commit_delta AFTER INSERT ON timeline_nodes
WHEN NEW.base IS NOT NULL BEGIN
    INSERT INTO timeline_deltas (delta, collection, id, seq, value)
    SELECT NEW.n, c.collection, c.id, r.seq, r.value FROM record_changes c
    LEFT JOIN records r ON r.service=c.service AND r.key=c.key AND r.collection=c.collection
        AND r.id=c.id
    WHERE c.service=NEW.service AND c.key={_KEY};{_HEAD}
END"""]

SCHEMA_VERSION = 4  # 2: checkpoints as deltas; 3: heads and parents as row numbers;
# 4: fault_versions (tables and triggers are IF NOT EXISTS: an older file gains them as is)


def _columns(conn, table):
    return {row[1]: row[2] for row in conn.execute(f"PRAGMA table_info({table})")}


def _migrate_before(conn):
    """Reshape tables of an older schema so SCHEMA can run; return the steps left for after."""
    nodes = _columns(conn, "timeline_nodes")
    steps = set()
    if nodes and "base" not in nodes:  # version 1: a full copy of the rows per checkpoint
        for column in ("base INTEGER", "delta INTEGER", "evicted INTEGER NOT NULL DEFAULT 0"):
            conn.execute(f"ALTER TABLE timeline_nodes ADD COLUMN {column}")
        steps.add("deltas")
    if _columns(conn, "branches").get("head") == "TEXT":  # versions 1-2: heads as "cp_…"
        conn.execute("ALTER TABLE branches RENAME TO branches_v2")
        steps.add("heads")
    return steps


def _number(cp_id):
    return int(cp_id[3:], 36)


def _migrate_after(conn, steps):
    """Move rows of an older schema into SCHEMA: old checkpoints stay restorable, ids go on."""
    if "heads" in steps:
        conn.executemany(
            "INSERT INTO branches (service, namespace, branch, head) VALUES (?, ?, ?, ?)",
            [(*row[:3], _number(row[3])) for row in conn.execute(
                "SELECT service, namespace, branch, head FROM branches_v2").fetchall()])
        conn.execute("DROP TABLE branches_v2")
        conn.executemany("UPDATE timeline_nodes SET parent=? WHERE n=?", [
            (_number(parent), n) for n, parent in conn.execute(
                "SELECT n, parent FROM timeline_nodes WHERE parent LIKE 'cp!_%' ESCAPE '!'")
            .fetchall()])
    if "deltas" in steps:
        # Each old full copy becomes the row set of a node without a base; each branch key
        # notes every row that may differ from its head, so its next commit is exact.
        conn.execute("INSERT INTO timeline_deltas (delta, collection, id, seq, value) SELECT n,"
                     " collection, id, seq, value FROM timeline_records")
        conn.execute("DROP TABLE timeline_records")
        for service, namespace, branch, head in conn.execute(
                "SELECT service, namespace, branch, head FROM branches").fetchall():
            key = namespace if branch == "main" else f"{namespace}~{branch}"
            conn.execute("INSERT OR IGNORE INTO record_changes (service, namespace, key,"
                         " collection, id) SELECT ?, ?, ?, collection, id FROM timeline_deltas"
                         " WHERE delta=?", (service, namespace, key, head))
            conn.execute("INSERT OR IGNORE INTO record_changes (service, namespace, key,"
                         " collection, id) SELECT service, namespace, key, collection, id FROM"
                         " records WHERE service=? AND key=?", (service, key))


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
                    steps = _migrate_before(conn)
                    for statement in SCHEMA.split(";"):
                        if statement.strip():
                            conn.execute(statement)
                    for statement in TRIGGERS:
                        conn.execute(statement)
                    _migrate_after(conn, steps)
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
