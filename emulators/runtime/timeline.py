"""Checkpoints and branches as rows, stored as deltas so a commit costs what changed, not the
namespace. Ids come from an AUTOINCREMENT column: unique for the life of the database, so a
stale or foreign id is a clean 409, never someone else's state.

Design (why each piece exists):

- A trigger on `records` notes every written or deleted `(key, collection, id)` in
  `record_changes` (scratch keys of `x-mockingbird-at` reads excluded). Since every way a key's
  rows change outside a request (commit, fork, checkout) also moves its branch head, the live rows
  of a key are always "its branch head + the noted changes".
- A checkpoint node stores its full sequences, RNG and clock (a few values) and, in
  `timeline_deltas`, only the rows noted since its `base` (the node its key's state derived from:
  the branch head at commit time) — the row's value, or NULL for a deletion. Then the notes are
  cleared. A node without a base (the first of a namespace) holds every row.
- Restore walks the base chain newest first and takes, per `(collection, id)`, the nearest entry
  (one recursive SQL statement); a NULL value means absent.
- Retention evicts the oldest nodes beyond `max_checkpoints` (branch heads and pinned nodes
  stay): an evicted node is no longer listed nor restorable, but its rows remain while a retained
  node builds on it. An evicted node with one dependant is merged into it (the dependant's few
  rows are upserted into the evicted node's row set, which it then adopts: cost of the newer
  delta, never of the namespace); one with none is deleted; a fork point with several stays as
  hidden storage until its dependants shrink to one.
"""
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


def number(cp_id):
    """Return the row number of a well-formed checkpoint id."""
    return int(CP.match(cp_id).group(1), 36)


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
    # Rows move inside SQLite (INSERT … SELECT): no Python round trip per row.
    def _capture(self, conn, namespace, branch, parent, clock):
        key = storage_key(namespace, branch)
        service = self._service
        base = number(parent) if parent else None
        n = conn.execute(
            "INSERT INTO timeline_nodes (service, namespace, branch, parent, at_ms, sequences,"
            " rng, clock_now, clock_frozen, base) VALUES (?, ?, ?, ?, ?, (SELECT"
            " coalesce(json_group_object(name, value), '{}') FROM sequences WHERE service=? AND"
            " key=?), (SELECT state FROM rngs WHERE service=? AND key=?), ?, ?, ?)",
            (service, namespace, branch, parent, clock["now"], service, key, service, key,
             clock["now"], int(clock["frozen"]), base)).lastrowid
        if base is None:
            conn.execute("INSERT INTO timeline_deltas (delta, collection, id, seq, value) SELECT"
                         " ?, collection, id, seq, value FROM records WHERE service=? AND key=?",
                         (n, service, key))
        elif conn.execute(
                "INSERT INTO timeline_deltas (delta, collection, id, seq, value) SELECT ?,"
                " c.collection, c.id, r.seq, r.value FROM record_changes c LEFT JOIN records r"
                " ON r.service=c.service AND r.key=c.key AND r.collection=c.collection AND"
                " r.id=c.id WHERE c.service=? AND c.key=?", (n, service, key)).rowcount == 0:
            return n
        conn.execute("DELETE FROM record_changes WHERE service=? AND key=?", (service, key))
        return n

    def restore_storage(self, conn, namespace, key, node):
        """Replace a key's rows, sequences and RNG with those of a checkpoint node."""
        service = self._service
        conn.execute("DELETE FROM records WHERE service=? AND key=?", (service, key))
        conn.execute("DELETE FROM sequences WHERE service=? AND key=?", (service, key))
        conn.execute(
            "WITH RECURSIVE chain (n, delta, base, depth) AS (SELECT n, coalesce(delta, n), base,"
            " 0 FROM timeline_nodes WHERE n=? UNION ALL SELECT t.n, coalesce(t.delta, t.n),"
            " t.base, chain.depth + 1 FROM timeline_nodes t JOIN chain ON t.n=chain.base)"
            " INSERT INTO records (service, namespace, key, collection, id, seq, value)"
            " SELECT ?, ?, ?, collection, id, seq, value FROM (SELECT d.collection, d.id, d.seq,"
            " d.value, row_number() OVER (PARTITION BY d.collection, d.id ORDER BY chain.depth)"
            " AS nearest FROM chain JOIN timeline_deltas d ON d.delta=chain.delta)"
            " WHERE nearest=1 AND value IS NOT NULL",
            (node["n"], service, namespace, key))
        # The trigger noted the rewrite; the key now equals the node exactly.
        conn.execute("DELETE FROM record_changes WHERE service=? AND key=?", (service, key))
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
            for table in ("records", "sequences", "rngs", "record_changes"):
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
                               " namespace=? AND evicted=0",
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
        n = self._capture(conn, namespace, branch, parent, clock)
        cp = checkpoint_id(n)
        if parent is None:
            conn.execute("INSERT INTO branches (service, namespace, branch, head) VALUES"
                         " (?, ?, ?, ?) ON CONFLICT (service, namespace, branch) DO UPDATE SET"
                         " head=excluded.head", (self._service, namespace, branch, cp))
        else:
            conn.execute("UPDATE branches SET head=? WHERE service=? AND namespace=? AND"
                         " branch=?", (cp, self._service, namespace, branch))
        if n % 16 == 0:
            self._prune(conn, namespace)
        return {"id": cp, "branch": branch, "parent": parent, "at": clock["now"]}

    def _prune(self, conn, namespace):
        """Evict the oldest unpinned checkpoints beyond the limit; branch heads always stay."""
        row = conn.execute("SELECT n FROM timeline_nodes WHERE service=? AND namespace=? AND"
                           " evicted=0 ORDER BY n DESC LIMIT 1 OFFSET ?",
                           (self._service, namespace, self.max_checkpoints)).fetchone()
        if row is None:
            return
        heads = [number(head) for head in self.heads(conn, namespace).values()]
        marks = ",".join("?" * len(heads)) or "NULL"
        doomed = [r[0] for r in conn.execute(
            f"SELECT n FROM timeline_nodes WHERE service=? AND namespace=? AND evicted=0 AND"
            f" pinned=0 AND n<=? AND n NOT IN ({marks})",
            (self._service, namespace, row[0], *heads))]
        conn.executemany("UPDATE timeline_nodes SET evicted=1 WHERE n=?", [(n,) for n in doomed])
        self._collect(conn, doomed)

    @staticmethod
    def _collect(conn, candidates):
        """Drop or merge evicted nodes so only storage some retained node needs is kept."""
        pending = sorted(set(candidates))
        while pending:
            n = pending.pop()
            row = conn.execute("SELECT base, coalesce(delta, n) FROM timeline_nodes WHERE n=?"
                               " AND evicted=1", (n,)).fetchone()
            if row is None:
                continue
            base, delta = row
            children = conn.execute("SELECT n, coalesce(delta, n) FROM timeline_nodes WHERE"
                                    " base=? LIMIT 2", (n,)).fetchall()
            if not children:
                conn.execute("DELETE FROM timeline_deltas WHERE delta=?", (delta,))
                conn.execute("DELETE FROM timeline_nodes WHERE n=?", (n,))
                if base is not None:
                    pending.append(base)  # its base may now have one dependant, or none
            elif len(children) == 1:
                # The dependant's (newer) rows win; it adopts the merged row set and the base.
                child, child_delta = children[0]
                conn.execute("INSERT OR REPLACE INTO timeline_deltas (delta, collection, id, seq,"
                             " value) SELECT ?, collection, id, seq, value FROM timeline_deltas"
                             " WHERE delta=?", (delta, child_delta))
                conn.execute("DELETE FROM timeline_deltas WHERE delta=?", (child_delta,))
                conn.execute("UPDATE timeline_nodes SET base=?, delta=? WHERE n=?",
                             (base, delta, child))
                conn.execute("DELETE FROM timeline_nodes WHERE n=?", (n,))

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
            for table in ("records", "sequences", "rngs", "record_changes"):
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
                                " service=? AND namespace=? AND evicted=0 ORDER BY n",
                                (self._service, namespace)).fetchall()
        return {"branches": heads,
                "checkpoints": [{"id": checkpoint_id(n), "branch": b, "parent": p, "at": at}
                                for n, b, p, at in rows]}

    def count(self, namespace, branch=MAIN):
        """Return how many records a branch holds now (for the admin checkpoint answer)."""
        return self._db.one("SELECT count(*) FROM records WHERE service=? AND key=?",
                            (self._service, storage_key(namespace, branch)))[0]

    def reset(self, namespace=None):
        """Forget the timeline of a namespace, or of all (ids are never reused)."""
        where, params = "service=?", [self._service]
        if namespace is not None:
            where, params = "service=? AND namespace=?", [self._service, namespace]
        self._db.execute(f"DELETE FROM timeline_deltas WHERE delta IN (SELECT coalesce(delta, n)"
                         f" FROM timeline_nodes WHERE {where})", params)
        for table in ("timeline_nodes", "branches", "record_changes"):
            self._db.execute(f"DELETE FROM {table} WHERE {where}", params)
