"""Checkpoints and branches as rows. Ids come from an AUTOINCREMENT column: unique for the life
of the database, so a stale or foreign id is a clean 409, never someone else's state."""
import json
import re

from .errors import AdminError

CP = re.compile(r"^cp_([0-9a-z]{8,})$")
MAIN = "main"


class TimelineError(AdminError):
    """A checkpoint or branch operation that cannot be done (409)."""

    status = 409


def checkpoint_id(n):
    """Format a checkpoint row number: cp_ + base36, zero-padded to 8."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while n:
        n, rest = divmod(n, 36)
        text = digits[rest] + text
    return "cp_" + text.rjust(8, "0")


def storage_key(namespace, branch=MAIN):
    """Return the storage key of a namespace's branch (main is the namespace itself)."""
    return namespace if branch == MAIN else f"{namespace}~{branch}"


class Timeline:
    """The checkpoint DAG of every namespace of one service."""

    def __init__(self, db, service, clocks, seed_state, max_checkpoints=1000):
        self._db = db
        self._service = service
        self._clocks = clocks
        self._seed_state = seed_state
        self.max_checkpoints = max_checkpoints

    # -- capture and restore ------------------------------------------------------------
    # Checkpoint rows are copied inside SQLite (INSERT … SELECT): no Python round trip per row.
    def _capture(self, conn, namespace, branch, parent, clock):
        key = storage_key(namespace, branch)
        service = self._service
        n = conn.execute(
            "INSERT INTO timeline_nodes (service, namespace, branch, parent, at_ms, sequences,"
            " rng, clock_now, clock_frozen) VALUES (?, ?, ?, ?, ?, (SELECT"
            " coalesce(json_group_object(name, value), '{}') FROM sequences WHERE service=? AND"
            " key=?), (SELECT state FROM rngs WHERE service=? AND key=?), ?, ?)",
            (service, namespace, branch, parent, clock["now"], service, key, service, key,
             clock["now"], int(clock["frozen"]))).lastrowid
        count = conn.execute(
            "INSERT INTO timeline_records (n, namespace, collection, id, seq, value) SELECT ?,"
            " namespace, collection, id, seq, value FROM records WHERE service=? AND key=?",
            (n, service, key)).rowcount
        return n, count

    def restore_storage(self, conn, namespace, key, node):
        """Replace a key's rows, sequences and RNG with those of a checkpoint node."""
        service = self._service
        conn.execute("DELETE FROM records WHERE service=? AND key=?", (service, key))
        conn.execute("DELETE FROM sequences WHERE service=? AND key=?", (service, key))
        conn.execute("INSERT INTO records (service, namespace, key, collection, id, seq, value)"
                     " SELECT ?, ?, ?, collection, id, seq, value FROM timeline_records WHERE"
                     " n=?", (service, namespace, key, node["n"]))
        conn.executemany(
            "INSERT INTO sequences (service, namespace, key, name, value) VALUES (?, ?, ?, ?, ?)",
            [(service, namespace, key, name, v) for name, v in node["sequences"].items()])
        conn.execute("INSERT INTO rngs (service, namespace, key, state) VALUES (?, ?, ?, ?)"
                     " ON CONFLICT (service, key) DO UPDATE SET state=excluded.state",
                     (service, namespace, key,
                      self._seed_state if node["rng"] is None else node["rng"]))

    def drop_storage(self, key):
        """Delete a scratch key's rows."""
        with self._db.transaction() as conn:
            for table in ("records", "sequences", "rngs"):
                conn.execute(f"DELETE FROM {table} WHERE service=? AND key=?",
                             (self._service, key))

    # -- the DAG --------------------------------------------------------------------------
    def heads(self, conn, namespace):
        """Return {branch: head id} of a namespace."""
        return dict(conn.execute("SELECT branch, head FROM branches WHERE service=? AND"
                                 " namespace=? ORDER BY branch", (self._service, namespace)))

    def find(self, conn, namespace, cp_id):
        """Return the node of a checkpoint of this namespace, or raise 409."""
        match = CP.match(cp_id) if isinstance(cp_id, str) else None
        row = None
        if match:
            row = conn.execute("SELECT n, branch, parent, at_ms, sequences, rng, clock_now,"
                               " clock_frozen FROM timeline_nodes WHERE n=? AND service=? AND"
                               " namespace=?",
                               (int(match.group(1), 36), self._service, namespace)).fetchone()
        if row is None:
            raise TimelineError(f"no checkpoint {cp_id}")
        n, branch, parent, at, sequences, rng, now, frozen = row
        return {"id": checkpoint_id(n), "n": n, "branch": branch, "parent": parent, "at": at,
                "sequences": json.loads(sequences), "rng": rng,
                "clock": {"now": now, "frozen": bool(frozen)}}

    def _ensure(self, conn, namespace):
        """Create the namespace timeline lazily: its first checkpoint is the current main state."""
        heads = self.heads(conn, namespace)
        if MAIN not in heads:
            self._commit(conn, namespace, MAIN, None)
            heads = self.heads(conn, namespace)
        return heads

    def _commit(self, conn, namespace, branch, parent, clock=None):
        clock = clock or self._clocks.state(namespace)
        n, count = self._capture(conn, namespace, branch, parent, clock)
        cp = checkpoint_id(n)
        conn.execute("INSERT INTO branches (service, namespace, branch, head) VALUES (?, ?, ?, ?)"
                     " ON CONFLICT (service, namespace, branch) DO UPDATE SET head=excluded.head",
                     (self._service, namespace, branch, cp))
        if n % 16 == 0:
            self._prune(conn, namespace)
        return {"id": cp, "branch": branch, "parent": parent, "at": clock["now"],
                "records": count}

    def _prune(self, conn, namespace):
        """Evict the oldest unpinned checkpoints beyond the limit; branch heads always stay."""
        row = conn.execute("SELECT n FROM timeline_nodes WHERE service=? AND namespace=? ORDER"
                           " BY n DESC LIMIT 1 OFFSET ?",
                           (self._service, namespace, self.max_checkpoints)).fetchone()
        if row is None:
            return
        heads = [int(CP.match(head).group(1), 36)
                 for head in self.heads(conn, namespace).values()]
        marks = ",".join("?" * len(heads)) or "NULL"
        doomed = [r[0] for r in conn.execute(
            f"SELECT n FROM timeline_nodes WHERE service=? AND namespace=? AND pinned=0 AND n<=?"
            f" AND n NOT IN ({marks})", (self._service, namespace, row[0], *heads))]
        conn.executemany("DELETE FROM timeline_nodes WHERE n=?", [(n,) for n in doomed])
        conn.executemany("DELETE FROM timeline_records WHERE n=?", [(n,) for n in doomed])

    def commit(self, namespace, branch=MAIN, clock=None):
        """Commit the current state of a branch (forking it from main first when new)."""
        with self._db.transaction(savepoint=False) as conn:
            row = conn.execute("SELECT head FROM branches WHERE service=? AND namespace=? AND"
                               " branch=?", (self._service, namespace, branch)).fetchone()
            if row is not None:  # the common case: one query, no timeline bookkeeping
                return self._commit(conn, namespace, branch, row[0], clock)
            heads = self._ensure(conn, namespace)
            if branch not in heads:
                self._fork(conn, namespace, branch, heads[MAIN])
                heads = self.heads(conn, namespace)
            return self._commit(conn, namespace, branch, heads[branch], clock)

    def _fork(self, conn, namespace, branch, at):
        node = self.find(conn, namespace, at)
        self.restore_storage(conn, namespace, storage_key(namespace, branch), node)
        conn.execute("INSERT INTO branches (service, namespace, branch, head) VALUES (?, ?, ?, ?)",
                     (self._service, namespace, branch, node["id"]))

    def branch(self, namespace, branch, at=None):
        """Return the head of a branch, forking it from `at` (default main's fresh head) if new.

        `at` on an existing branch whose head differs is refused (it would silently rewind it).
        """
        with self._db.transaction() as conn:
            heads = self._ensure(conn, namespace)
            if branch in heads:
                if at is not None and at != heads[branch]:
                    self.find(conn, namespace, at)
                    raise TimelineError(f"branch {branch} exists at {heads[branch]}; use POST "
                                        f"/branches/{branch}/checkout to move it")
            else:
                if at is None:
                    at = self._commit(conn, namespace, MAIN, heads[MAIN])["id"]
                self._fork(conn, namespace, branch, at)
            node = self.find(conn, namespace, self.heads(conn, namespace)[branch])
            return {"id": node["id"], "branch": branch, "parent": node["parent"],
                    "at": node["at"]}

    def checkout(self, namespace, branch, cp_id):
        """Move a branch head to a checkpoint; restore its storage, RNG and the namespace clock."""
        with self._db.transaction() as conn:
            self._ensure(conn, namespace)
            node = self.find(conn, namespace, cp_id)
            cp = node["id"]
            self.restore_storage(conn, namespace, storage_key(namespace, branch), node)
            self._clocks.restore(namespace, node["clock"])
            conn.execute("INSERT INTO branches (service, namespace, branch, head) VALUES"
                         " (?, ?, ?, ?) ON CONFLICT (service, namespace, branch) DO UPDATE SET"
                         " head=excluded.head", (self._service, namespace, branch, cp))
            return cp

    def view(self, namespace, cp_id, scratch_key):
        """Restore a checkpoint into a scratch key for one read-only historical request."""
        with self._db.transaction() as conn:
            self._ensure(conn, namespace)
            self.restore_storage(conn, namespace, scratch_key, self.find(conn, namespace, cp_id))

    def delete_branch(self, namespace, branch):
        """Remove a branch head and its storage (not main)."""
        if branch == MAIN:
            raise TimelineError("the main branch cannot be deleted")
        with self._db.transaction() as conn:
            gone = conn.execute("DELETE FROM branches WHERE service=? AND namespace=? AND"
                                " branch=?", (self._service, namespace, branch)).rowcount
            if not gone:
                raise TimelineError(f"no branch {branch}", status=404)
            key = storage_key(namespace, branch)
            for table in ("records", "sequences", "rngs"):
                conn.execute(f"DELETE FROM {table} WHERE service=? AND key=?",
                             (self._service, key))

    def has_branch(self, namespace, branch):
        """Tell whether a branch exists."""
        return self._db.one("SELECT 1 FROM branches WHERE service=? AND namespace=? AND branch=?",
                            (self._service, namespace, branch)) is not None

    def describe(self, namespace):
        """Return `{branches, checkpoints}` oldest retained first."""
        with self._db.transaction() as conn:
            heads = self._ensure(conn, namespace)
            rows = conn.execute("SELECT n, branch, parent, at_ms FROM timeline_nodes WHERE"
                                " service=? AND namespace=? ORDER BY n",
                                (self._service, namespace)).fetchall()
        return {"branches": heads,
                "checkpoints": [{"id": checkpoint_id(n), "branch": b, "parent": p, "at": at}
                                for n, b, p, at in rows]}

    def reset(self, namespace=None):
        """Forget the timeline of a namespace, or of all (ids are never reused)."""
        where, params = "service=?", [self._service]
        if namespace is not None:
            where, params = "service=? AND namespace=?", [self._service, namespace]
        self._db.execute(f"DELETE FROM timeline_records WHERE n IN (SELECT n FROM timeline_nodes"
                         f" WHERE {where})", params)
        for table in ("timeline_nodes", "branches"):
            self._db.execute(f"DELETE FROM {table} WHERE {where}", params)
