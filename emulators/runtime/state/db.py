"""The shared SQLite database: every piece of emulator state is a row, so all workers agree.

WAL journal, busy_timeout, BEGIN IMMEDIATE for writes; one connection per thread, opened lazily
and re-opened after fork. Every table carries `service` and `namespace` columns.
"""
import os
import sqlite3
import threading
import weakref
from pathlib import Path

from ..errors import ConnectionDropped
from . import writer

SCHEMA = """
CREATE TABLE IF NOT EXISTS namespaces (
    service TEXT NOT NULL, namespace TEXT NOT NULL,
    PRIMARY KEY (service, namespace)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS records (
    service TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL,
    collection TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (service, key, collection, id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS records_seq ON records (service, key, collection, seq);
CREATE TABLE IF NOT EXISTS key_versions (
    service TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL,
    PRIMARY KEY (service, key)) WITHOUT ROWID;
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
CREATE TABLE IF NOT EXISTS control_versions (
    service TEXT NOT NULL PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, service TEXT NOT NULL, namespace TEXT NOT NULL,
    at_ms INTEGER NOT NULL, method TEXT NOT NULL, path TEXT NOT NULL, operation TEXT,
    status INTEGER NOT NULL, duration_ms REAL NOT NULL, fault TEXT, extra TEXT);
CREATE TABLE IF NOT EXISTS journal_segments (
    name TEXT NOT NULL PRIMARY KEY, offset INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS metrics (
    service TEXT NOT NULL, namespace TEXT NOT NULL, operation TEXT NOT NULL,
    method TEXT NOT NULL, path TEXT NOT NULL, status INTEGER NOT NULL,
    count INTEGER NOT NULL, faults INTEGER NOT NULL, duration_ms REAL NOT NULL,
    PRIMARY KEY (service, namespace, operation, method, path, status)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS metrics_folded (
    service TEXT NOT NULL PRIMARY KEY, seq INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS checkpoints (
    service TEXT NOT NULL, namespace TEXT NOT NULL, branch TEXT NOT NULL, n INTEGER NOT NULL,
    parent INTEGER, at_ms INTEGER NOT NULL, pinned INTEGER NOT NULL DEFAULT 0,
    sequences TEXT NOT NULL, rng INTEGER, clock_now INTEGER NOT NULL,
    clock_frozen INTEGER NOT NULL,
    PRIMARY KEY (service, namespace, n)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS timeline_undo (
    service TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL, t INTEGER NOT NULL,
    collection TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER, value TEXT,
    PRIMARY KEY (service, key, t, collection, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS branches (
    service TEXT NOT NULL, namespace TEXT NOT NULL, branch TEXT NOT NULL,
    head INTEGER NOT NULL, since INTEGER NOT NULL,
    PRIMARY KEY (service, namespace, branch)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS credentials (
    service TEXT NOT NULL, credential TEXT NOT NULL, namespace TEXT NOT NULL, user TEXT,
    PRIMARY KEY (service, credential)) WITHOUT ROWID;
-- rate-limit windows (quotas.py): requests each caller made in its current window
CREATE TABLE IF NOT EXISTS quotas (
    service TEXT NOT NULL, namespace TEXT NOT NULL, who TEXT NOT NULL, resource TEXT NOT NULL,
    reset_ms INTEGER NOT NULL, used INTEGER NOT NULL,
    PRIMARY KEY (service, namespace, who, resource)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots (
    n INTEGER PRIMARY KEY AUTOINCREMENT, service TEXT NOT NULL, namespace TEXT NOT NULL,
    checkpoint TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS fleet_snapshots (
    id TEXT NOT NULL, service TEXT NOT NULL, namespace TEXT NOT NULL, label TEXT,
    at_ms INTEGER NOT NULL, state TEXT NOT NULL, fleet_now INTEGER NOT NULL,
    fleet_frozen INTEGER NOT NULL, PRIMARY KEY (id, service)) WITHOUT ROWID;
-- webhook hub (webhooks.py): endpoints, the delivery queue and log, armed delivery faults
CREATE TABLE IF NOT EXISTS webhook_endpoints (
    id INTEGER PRIMARY KEY AUTOINCREMENT, service TEXT NOT NULL, namespace TEXT NOT NULL,
    url TEXT NOT NULL, secret TEXT, events TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, service TEXT NOT NULL, namespace TEXT NOT NULL,
    id TEXT NOT NULL, endpoint INTEGER NOT NULL, url TEXT NOT NULL, secret TEXT,
    event TEXT NOT NULL, action TEXT, payload TEXT NOT NULL, status TEXT NOT NULL,
    attempts INTEGER NOT NULL, next_ms INTEGER NOT NULL, created_ms INTEGER NOT NULL,
    delivered_ms INTEGER, response_status INTEGER, headers TEXT);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (service, status, seq);
-- immutable content-addressed objects (objects.py), git's for the GitHub emulator: `links`
-- before `data`, so a graph read never touches a large value's overflow pages
CREATE TABLE IF NOT EXISTS objects (
    service TEXT NOT NULL, namespace TEXT NOT NULL, scope TEXT NOT NULL, id TEXT NOT NULL,
    kind INTEGER NOT NULL, links TEXT, data BLOB NOT NULL,
    PRIMARY KEY (service, namespace, scope, id));
CREATE INDEX IF NOT EXISTS objects_kind ON objects (service, namespace, scope, kind, id, links);
CREATE TABLE IF NOT EXISTS webhook_faults (
    service TEXT NOT NULL, namespace TEXT NOT NULL, mode TEXT NOT NULL,
    remaining INTEGER NOT NULL, PRIMARY KEY (service, namespace)) WITHOUT ROWID;
"""

# Checkpoint numbers come from the `checkpoints` row of sqlite_sequence, which this code owns
# (the table is WITHOUT ROWID, so SQLite keeps no counter of its own for it; a trigger moves
# it): it shares its page with the journal's AUTOINCREMENT counter, so a request that journals
# and checkpoints dirties one counter page, and the table needs no second index.
CHECKPOINT_COUNTER = "checkpoints"


# Undo log (timeline.py): the first write of a record row after checkpoint number t (the
# newest node of the database) saves the row as it was at t (NULL value: absent). `@` marks
# the scratch keys of historical reads, which never commit.
# ON CONFLICT DO NOTHING, not OR IGNORE: an outer upsert's conflict policy would override a
# trigger's OR IGNORE.
_NOW_T = "coalesce((SELECT seq FROM sqlite_sequence WHERE name='checkpoints'), 0)"
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

# A storage key's version moves with every write of its records (shapes.py: answers built
# once per version). Rows are never deleted, so a version never comes back.
TRIGGERS += [f"""
CREATE TRIGGER IF NOT EXISTS records_version_{event.lower()} AFTER {event} ON records
WHEN instr({row}.key, '@') = 0 BEGIN
    INSERT INTO key_versions (service, key, version) VALUES ({row}.service, {row}.key, 1)
    ON CONFLICT (service, key) DO UPDATE SET version=version+1;
END""" for event, row in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD"))]

TRIGGERS += ["""
CREATE TRIGGER IF NOT EXISTS checkpoints_counted AFTER INSERT ON checkpoints BEGIN
    UPDATE sqlite_sequence SET seq=NEW.n WHERE name='checkpoints' AND seq<NEW.n;
END"""]

# Bump a service's control version when a fault rule appears, goes or is used up, or a clock
# changes, so a worker can keep rules and clocks between requests and re-read them only when
# the version moved (faults.py, clock.py): one primary-key read per request for both.
_BUMP = ("INSERT INTO control_versions (service, version) VALUES ({row}.service, 1)"
         " ON CONFLICT (service) DO UPDATE SET version=version+1;")
TRIGGERS += [f"""
CREATE TRIGGER IF NOT EXISTS {table}_version_{name} AFTER {event} ON {table}{when} BEGIN
    {_BUMP.format(row=row)}
END""" for table, name, event, row, when in (
    ("faults", "insert", "INSERT", "NEW", ""), ("faults", "delete", "DELETE", "OLD", ""),
    ("faults", "spent", "UPDATE OF remaining", "NEW", " WHEN NEW.remaining = 0"),
    ("faults", "edit", "UPDATE OF rule, namespace, id, ord", "NEW", ""),
    ("clocks", "insert", "INSERT", "NEW", ""), ("clocks", "delete", "DELETE", "OLD", ""),
    ("clocks", "edit", "UPDATE", "NEW", ""))]

SCHEMA_VERSION = 6  # 2: checkpoints as deltas; 3: heads and parents as row numbers;
# 4: fault_versions; 5: an undo log instead of deltas (older timelines are discarded, db.py);
# 6: checkpoints keyed by branch, heads derived, journal columns, metrics folded, clock cached


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


def _migrate_v6(conn):
    """Carry older tables over to version 6 (after SCHEMA created the new ones), keeping every
    checkpoint and journal entry; return the checkpoint number high-water mark, or None.

    Each step looks at the table's shape, not the version number, so any older database
    converges. Checkpoint rows move to the branch-keyed table (numbers unchanged); branches
    record `since` = the newest number, so heads stay where they are; journal entries are split
    into columns, and the metrics watermark starts past every old entry (each was counted when
    it was written); fault versions become control versions (clocks bump them too).
    """
    high = None
    if _columns(conn, "timeline_nodes"):
        high = conn.execute("SELECT max(n) FROM timeline_nodes").fetchone()[0] or 0
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name='timeline_nodes'")
        high = max(high, (row.fetchone() or (0,))[0])
        conn.execute("INSERT INTO checkpoints (service, namespace, branch, n, parent, at_ms,"
                     " pinned, sequences, rng, clock_now, clock_frozen) SELECT service,"
                     " namespace, branch, n, parent, at_ms, pinned, sequences, rng, clock_now,"
                     " clock_frozen FROM timeline_nodes")
        conn.execute("DROP TABLE timeline_nodes")  # its index and head trigger go with it
    if "since" not in _columns(conn, "branches"):
        conn.execute("ALTER TABLE branches RENAME TO branches_v5")
        conn.execute(f"CREATE TABLE branches {_table_body('branches')}")
        conn.execute("INSERT INTO branches SELECT service, namespace, branch, head, ? FROM"
                     " branches_v5", (high or 0,))
        conn.execute("DROP TABLE branches_v5")
    if "entry" in _columns(conn, "journal"):
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name='journal'").fetchone()
        journal_high = row[0] if row else 0
        conn.execute("ALTER TABLE journal RENAME TO journal_v5")
        conn.execute(f"CREATE TABLE journal {_table_body('journal')}")
        conn.execute(
            "INSERT INTO journal SELECT seq, service, namespace, at_ms, json_extract(entry,"
            " '$.method'), json_extract(entry, '$.path'), operation, status, coalesce("
            "json_extract(entry, '$.durationMs'), 0), json_extract(entry, '$.faultId'),"
            " nullif(json_remove(entry, '$.service', '$.namespace', '$.method', '$.path',"
            " '$.operationId', '$.unmatched', '$.status', '$.faultId', '$.durationMs'), '{}')"
            " FROM journal_v5")
        conn.execute("INSERT INTO metrics_folded SELECT service, max(seq) FROM journal_v5"
                     " GROUP BY service")
        conn.execute("DROP TABLE journal_v5")
        conn.execute("UPDATE sqlite_sequence SET seq=max(seq, ?) WHERE name='journal'",
                     (journal_high,))
    if "user" not in _columns(conn, "credentials"):  # the user a credential acts as
        conn.execute("ALTER TABLE credentials ADD COLUMN user TEXT")
    if "headers" not in _columns(conn, "webhook_deliveries"):  # a delivery's own headers
        conn.execute("ALTER TABLE webhook_deliveries ADD COLUMN headers TEXT")
    if _columns(conn, "fault_versions"):
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger' AND"
                                    " name LIKE 'faults_version_%'").fetchall():
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("INSERT INTO control_versions SELECT service, version + 1 FROM"
                     " fault_versions")
        conn.execute("DROP TABLE fault_versions")
    return high


def _table_body(table):
    """The column list of a table in SCHEMA (for the migrations that rebuild a table)."""
    marker = f"CREATE TABLE IF NOT EXISTS {table} ("
    start = SCHEMA.index(marker) + len(marker) - 1
    return SCHEMA[start:SCHEMA.index(";", start)]


def _migrate_after(conn, high):
    """Start the checkpoint counter (past `high`, the old ids): ids are never reused."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name=?",
                       (CHECKPOINT_COUNTER,)).fetchone()
    if row is None:
        conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)",
                     (CHECKPOINT_COUNTER, high or 0))
    elif high and row[0] < high:
        conn.execute("UPDATE sqlite_sequence SET seq=? WHERE name=?", (high, CHECKPOINT_COUNTER))


class _Transaction:
    """Database.transaction() as a plain class: it runs several times per request, and a
    generator-based context manager cost more than the SQL of a savepoint.

    A block nested right inside a transaction that has written nothing yet (the runtime's
    batch around a request, before the handler's first block) needs no SAVEPOINT: if it
    raises, rolling the whole transaction back and beginning a new one undoes exactly the
    block. `total_changes` (every row written on this connection) tells it is clean.
    """

    __slots__ = ("_db", "_commit_on_error", "_savepoint", "_conn", "_depth", "_whole")

    def __init__(self, db, commit_on_error, savepoint):
        self._db = db
        self._commit_on_error = commit_on_error
        self._savepoint = savepoint

    def __enter__(self):
        db = self._db
        conn = self._conn = db.conn
        local = db._local
        depth = self._depth = local.depth
        self._whole = False
        if depth:
            if self._savepoint:
                if depth == 1 and conn.total_changes == local.clean:
                    self._whole = True
                else:
                    conn.execute(f"SAVEPOINT sp{depth}")
                local.depth = depth + 1
        else:
            writer = db._writer
            if writer is not None:
                writer.acquire()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except BaseException:
                if writer is not None:
                    writer.release()
                raise
            local.depth = 1
            local.clean = conn.total_changes
        return conn

    def __exit__(self, kind, error, traceback):
        depth = self._depth
        if depth and not self._savepoint:
            return False
        conn = self._conn
        local = self._db._local
        local.depth = depth
        keep = kind is None or self._commit_on_error or issubclass(kind, ConnectionDropped)
        if self._whole:
            if not keep:
                conn.execute("ROLLBACK")
                conn.execute("BEGIN IMMEDIATE")
                local.clean = conn.total_changes
                local.restarts += 1  # what the transaction read before may be stale now
        elif depth:
            if not keep:
                conn.execute(f"ROLLBACK TO sp{depth}")
            conn.execute(f"RELEASE sp{depth}")
        else:
            try:
                conn.execute("COMMIT" if keep else "ROLLBACK")
            finally:
                if self._db._writer is not None:
                    self._db._writer.release()
            after = local.after
            if after:
                local.after = None
                for callback in after:
                    callback()
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
        self._writer = writer.for_path(self.path)  # transactions take turns (writer.py)

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
                    moved = _migrate_v6(conn)
                    high = moved if high is None else high
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
            self._local.clean = -1
            self._local.after = None
            self._local.restarts = 0
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

    def restarts(self):
        """Count this thread's transactions begun anew after a clean first block raised: a
        value read earlier in a transaction holds while the count stands."""
        return self._local.restarts if getattr(self._local, "conn", None) else 0

    def joined(self):
        """This thread's connection if it has a transaction open, else None (a statement run
        on it joins that transaction)."""
        local = self._local
        return local.conn if getattr(local, "depth", 0) else None

    def after_transaction(self, callback):
        """Call `callback()` once this thread's outermost transaction has ended (now if none
        is open): work that must not hold the write lock, such as writing a log line."""
        local = self._local
        if getattr(local, "depth", 0):
            if local.after is None:
                local.after = []
            local.after.append(callback)
        else:
            callback()

    def execute(self, sql, params=()):
        """Run one statement (atomic on its own) and return the cursor."""
        return self.conn.execute(sql, params)

    def write(self, sql, params=()):
        """Run one writing statement as a transaction of its own, taking turns with other
        writers (writer.py), and return its rows (`RETURNING`); inside this thread's open
        transaction it joins it. A write of one statement needs no BEGIN and COMMIT of its own:
        the lock alone spares it SQLite's sleeping retries."""
        conn = self.conn
        if self._local.depth or self._writer is None:
            return conn.execute(sql, params).fetchall()
        self._writer.acquire()
        try:
            return conn.execute(sql, params).fetchall()  # fetched whole: the statement ends
        finally:
            self._writer.release()

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


def delete_scoped(execute, table, service, **match):
    """Delete `service`'s rows of `table`, only those matching the `match` columns not None.

    `execute` is `Database.execute` or a transaction's `conn.execute`; names come from code.
    """
    match = {column: value for column, value in match.items() if value is not None}
    where = "".join(f" AND {column}=?" for column in match)
    execute(f"DELETE FROM {table} WHERE service=?{where}", (service, *match.values()))
