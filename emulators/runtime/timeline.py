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
    def capture(self, conn, namespace, key):
        """Return the value of a checkpoint: rows, sequences, clock and RNG of a key."""
        rows = conn.execute("SELECT collection, id, seq, value FROM records WHERE service=? AND"
                            " key=? ORDER BY collection, seq", (self._service, key)).fetchall()
        sequences = dict(conn.execute("SELECT name, value FROM sequences WHERE service=? AND"
                                      " key=?", (self._service, key)).fetchall())
        rng = conn.execute("SELECT state FROM rngs WHERE service=? AND key=?",
                           (self._service, key)).fetchone()
        clock = self._clocks.state(namespace)
        return {"records": [list(row) for row in rows], "sequences": sequences,
                "rng": self._seed_state if rng is None else rng[0],
                "clock": {"now": clock["now"], "frozen": clock["frozen"]}}

    def restore_storage(self, conn, namespace, key, value):
        """Replace a key's rows, sequences and RNG with a checkpoint value."""
        service = self._service
        conn.execute("DELETE FROM records WHERE service=? AND key=?", (service, key))
        conn.execute("DELETE FROM sequences WHERE service=? AND key=?", (service, key))
        conn.executemany(
            "INSERT INTO records (service, namespace, key, collection, id, seq, value) VALUES"
            " (?, ?, ?, ?, ?, ?, ?)",
            [(service, namespace, key, c, i, s, v) for c, i, s, v in value["records"]])
        conn.executemany(
            "INSERT INTO sequences (service, namespace, key, name, value) VALUES (?, ?, ?, ?, ?)",
            [(service, namespace, key, name, n) for name, n in value["sequences"].items()])
        conn.execute("INSERT INTO rngs (service, namespace, key, state) VALUES (?, ?, ?, ?)"
                     " ON CONFLICT (service, key) DO UPDATE SET state=excluded.state",
                     (service, namespace, key, value["rng"]))

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
        """Return (id, branch, parent, at_ms, value) of a checkpoint of this namespace, or 409."""
        match = CP.match(cp_id) if isinstance(cp_id, str) else None
        row = None
        if match:
            row = conn.execute("SELECT n, branch, parent, at_ms, value FROM checkpoints WHERE"
                               " n=? AND service=? AND namespace=?",
                               (int(match.group(1), 36), self._service, namespace)).fetchone()
        if row is None:
            raise TimelineError(f"no checkpoint {cp_id}")
        return (checkpoint_id(row[0]), row[1], row[2], row[3], json.loads(row[4]))

    def _ensure(self, conn, namespace):
        """Create the namespace timeline lazily: its first checkpoint is the current main state."""
        heads = self.heads(conn, namespace)
        if MAIN not in heads:
            self._commit(conn, namespace, MAIN, None)
            heads = self.heads(conn, namespace)
        return heads

    def _commit(self, conn, namespace, branch, parent):
        key = storage_key(namespace, branch)
        at = self._clocks.now_ms(namespace)
        value = self.capture(conn, namespace, key)
        n = conn.execute("INSERT INTO checkpoints (service, namespace, branch, parent, at_ms,"
                         " value) VALUES (?, ?, ?, ?, ?, ?)",
                         (self._service, namespace, branch, parent, at,
                          json.dumps(value, separators=(",", ":")))).lastrowid
        cp = checkpoint_id(n)
        conn.execute("INSERT INTO branches (service, namespace, branch, head) VALUES (?, ?, ?, ?)"
                     " ON CONFLICT (service, namespace, branch) DO UPDATE SET head=excluded.head",
                     (self._service, namespace, branch, cp))
        if n % 16 == 0:
            self._prune(conn, namespace)
        return {"id": cp, "branch": branch, "parent": parent, "at": at,
                "records": len(value["records"])}

    def _prune(self, conn, namespace):
        heads = set(self.heads(conn, namespace).values())
        rows = conn.execute("SELECT n FROM checkpoints WHERE service=? AND namespace=? AND"
                            " pinned=0 ORDER BY n", (self._service, namespace)).fetchall()
        total = conn.execute("SELECT count(*) FROM checkpoints WHERE service=? AND namespace=?",
                             (self._service, namespace)).fetchone()[0]
        excess = total - self.max_checkpoints
        doomed = [n for (n,) in rows if checkpoint_id(n) not in heads][:max(excess, 0)]
        conn.executemany("DELETE FROM checkpoints WHERE n=?", [(n,) for n in doomed])

    def commit(self, namespace, branch=MAIN):
        """Commit the current state of a branch (forking it from main first when new)."""
        with self._db.transaction() as conn:
            heads = self._ensure(conn, namespace)
            if branch not in heads:
                self._fork(conn, namespace, branch, heads[MAIN])
                heads = self.heads(conn, namespace)
            return self._commit(conn, namespace, branch, heads[branch])

    def _fork(self, conn, namespace, branch, at):
        cp, _, _, _, value = self.find(conn, namespace, at)
        self.restore_storage(conn, namespace, storage_key(namespace, branch), value)
        conn.execute("INSERT INTO branches (service, namespace, branch, head) VALUES (?, ?, ?, ?)",
                     (self._service, namespace, branch, cp))

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
            head = self.heads(conn, namespace)[branch]
            cp, _, parent, at_ms, _ = self.find(conn, namespace, head)
            return {"id": cp, "branch": branch, "parent": parent, "at": at_ms}

    def checkout(self, namespace, branch, cp_id):
        """Move a branch head to a checkpoint; restore its storage, RNG and the namespace clock."""
        with self._db.transaction() as conn:
            self._ensure(conn, namespace)
            cp, _, _, _, value = self.find(conn, namespace, cp_id)
            self.restore_storage(conn, namespace, storage_key(namespace, branch), value)
            self._clocks.restore(namespace, value["clock"])
            conn.execute("INSERT INTO branches (service, namespace, branch, head) VALUES"
                         " (?, ?, ?, ?) ON CONFLICT (service, namespace, branch) DO UPDATE SET"
                         " head=excluded.head", (self._service, namespace, branch, cp))
            return cp

    def view(self, namespace, cp_id, scratch_key):
        """Restore a checkpoint into a scratch key for one read-only historical request."""
        with self._db.transaction() as conn:
            self._ensure(conn, namespace)
            _, _, _, _, value = self.find(conn, namespace, cp_id)
            self.restore_storage(conn, namespace, scratch_key, value)

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
            rows = conn.execute("SELECT n, branch, parent, at_ms FROM checkpoints WHERE"
                                " service=? AND namespace=? ORDER BY n",
                                (self._service, namespace)).fetchall()
        return {"branches": heads,
                "checkpoints": [{"id": checkpoint_id(n), "branch": b, "parent": p, "at": at}
                                for n, b, p, at in rows]}

    def reset(self, namespace=None):
        """Forget the timeline of a namespace, or of all (ids are never reused)."""
        for table in ("checkpoints", "branches"):
            if namespace is None:
                self._db.execute(f"DELETE FROM {table} WHERE service=?", (self._service,))
            else:
                self._db.execute(f"DELETE FROM {table} WHERE service=? AND namespace=?",
                                 (self._service, namespace))
