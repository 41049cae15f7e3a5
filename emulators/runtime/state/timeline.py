"""Checkpoints and branches as rows, recorded with an undo log so a commit costs one small
INSERT whatever was written. Ids are numbers from a database-wide counter: unique for the life
of the database, so a stale or foreign id is a clean 409, never someone else's state.

Design (why each piece exists; the triggers are in db.py):

- A checkpoint is one row keyed (namespace, number): its branch, its parent, and its
  sequences, RNG and clock whole (a few values). Committing it copies no record and writes no
  other row but the counter (a trigger, db.py), which shares a page with the journal's.
- A branch's head is derived, not stored per commit: a `branches` row keeps the head set by a
  fork or checkout and `since`, the counter at that moment; the head is the branch's newest
  checkpoint numbered after `since`, else that stored head (found walking the namespace's
  checkpoints back from the newest: one step when the branch committed last).
- A trigger on `records` keeps the undo log: the first write of a row (insert, update or
  delete) after checkpoint number t (the counter: the newest checkpoint of the whole
  database) saves the row as it was when t was committed, tagged t (NULL value: absent). So
  the rows of a key at a checkpoint m committed on it are its live rows, overlaid per row by
  the undo entry with the smallest t >= m: nothing wrote that row between m and that entry.
  Every change of a key's rows (fork, checkout, branch deletion) goes through `records`, so
  the log stays exact.
- Retention evicts (deletes) the oldest checkpoints beyond `max_checkpoints` (branch heads and
  pinned ones stay) in batches: each worker prunes a namespace after every
  `max_checkpoints // 16` of its commits there (1 to 64), so a namespace may briefly hold that
  many more per worker. Then it drops the undo entries of each key older than its oldest
  retained checkpoint: none reads them any more.
- Schema 5 replaced per-node deltas with this log (an older database's timeline is discarded
  at start-up, db.py `_migrate_before`); schema 6 derived the heads.
"""
import json
import re

from ..errors import AdminError
from .db import CHECKPOINT_COUNTER

CP = re.compile(r"^cp_([0-9a-z]{8,})\Z")
MAIN = "main"

# The effective head of a branch (see the module docstring), for a `branches` row aliased b.
_HEAD = ("coalesce((SELECT n FROM checkpoints WHERE service=b.service AND"
         " namespace=b.namespace AND n>b.since AND branch=b.branch ORDER BY n DESC LIMIT 1),"
         " b.head)")
# The branch head and the next checkpoint number (no row when the branch has none), then the
# row itself: two plain statements cost less than one INSERT ... SELECT ... RETURNING.
_NEXT = "(SELECT seq + 1 FROM sqlite_sequence WHERE name='" + CHECKPOINT_COUNTER + "')"
HEAD_AND_NEXT = ("SELECT " + _HEAD + ", " + _NEXT + " FROM branches b WHERE service=? AND"
                 " namespace=? AND branch=?")
NEXT = "SELECT NULL, " + _NEXT
# What a provider mutation on main reads first: the control version (clock.py), main's head
# and the next checkpoint number (None, None when main has no checkpoint yet).
START_ON_MAIN = ("SELECT coalesce((SELECT version FROM control_versions WHERE service=?1), 0),"
                 " (SELECT " + _HEAD + " FROM branches b WHERE service=?1 AND namespace=?2"
                 " AND branch='main'), " + _NEXT)
CAPTURE = (  # ?1 service ?2 namespace ?3 branch ?4 n ?5 parent ?6 now ?7 storage key ?8 frozen
    "INSERT INTO checkpoints (service, namespace, branch, n, parent, at_ms, sequences, rng,"
    " clock_now, clock_frozen) VALUES (?1, ?2, ?3, ?4, ?5, ?6, (SELECT coalesce("
    "json_group_object(name, value), '{}') FROM sequences WHERE service=?1 AND key=?7),"
    " (SELECT state FROM rngs WHERE service=?1 AND key=?7), ?6, ?8)")
HEADS = ("SELECT branch, " + _HEAD + " FROM branches b WHERE service=? AND namespace=?"
         " ORDER BY branch")


class TimelineError(AdminError):
    """A checkpoint or branch operation that cannot be done (409)."""

    status = 409


_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
_PAIRS = [a + b for a in _DIGITS for b in _DIGITS]  # base36 two digits at a time


_LAST_HIGH = [(0, "")]  # (n // 1296, its base36 digits) of the previous call, swapped whole


def checkpoint_id(n):
    """Format a checkpoint number: cp_ + base36, zero-padded to 8.

    The digits above the last two are kept from the previous call (consecutive numbers share
    them); the pair is replaced in one store, so threads never see half of it.
    """
    n = int(n)
    high, low = divmod(n, 1296)
    last = _LAST_HIGH[0]
    if last[0] != high:
        text, rest = "", high
        while rest:
            rest, digits = divmod(rest, 1296)
            text = _PAIRS[digits] + text
        last = _LAST_HIGH[0] = (high, text)
    return "cp_" + (last[1] + _PAIRS[low]).lstrip("0").rjust(8, "0")


def _id(n):
    return None if n is None else checkpoint_id(n)


def storage_key(namespace, branch=MAIN):
    """Return the storage key of a namespace's branch (main is the namespace itself).

    The commit trigger in db.py computes the same key in SQL.
    """
    return namespace if branch == MAIN else f"{namespace}~{branch}"


class Timeline:
    """The checkpoint DAG of every namespace of one service."""

    def __init__(self, db, service, clocks, seed_state, max_checkpoints=1000):
        self._db = db
        self._service = service
        self._clocks = clocks
        self._seed_state = seed_state
        self.max_checkpoints = max_checkpoints
        self._prune_every = max(1, min(64, max_checkpoints // 16))
        self._unpruned = {}  # namespace -> commits by this worker since it last pruned it
        # Commits and head changes by this process: a head read earlier in a write transaction
        # is still the head while the count stands (no other thread or process writes until
        # that transaction ends; one that counted meanwhile only costs a re-read).
        self.moves = 0

    def _moved(self):
        self.moves += 1

    # -- capture and restore ------------------------------------------------------------
    def capture(self, conn, namespace, branch, clock=None, *, root=False, head=None):
        """Commit a branch on its head (or as the first checkpoint) inside the caller's write
        transaction; return (number, parent number, at) or None when the branch has no head.

        `clock` is the namespace's (now, frozen) when the caller holds it (the request path
        reads it from the worker's cache); otherwise it is read here. `head` is (head, next
        number) when the caller read them in this transaction with no move since (`moves`).
        """
        if clock is None:
            state = self._clocks.state(namespace)
            clock = state["now"], state["frozen"]
        now, frozen = clock
        service = self._service
        row = head or conn.execute(NEXT if root else HEAD_AND_NEXT,
                                   () if root else (service, namespace, branch)).fetchone()
        if row is None:
            return None
        parent, n = row
        self._moved()
        conn.execute(CAPTURE, (service, namespace, branch, n, parent, now,
                               namespace if branch == MAIN else f"{namespace}~{branch}",
                               1 if frozen else 0))
        if root:
            conn.execute("INSERT INTO branches (service, namespace, branch, head, since) VALUES"
                         " (?, ?, ?, ?, ?)", (service, namespace, branch, n, n))
        count = self._unpruned.get(namespace, 0) + 1
        if count >= self._prune_every:
            self._prune(conn, namespace)
            count = 0
        elif len(self._unpruned) >= 4096 and namespace not in self._unpruned:
            self._unpruned.clear()
        self._unpruned[namespace] = count
        return n, parent, now

    def _commit(self, conn, namespace, branch, *, root=False, clock=None, head=None):
        """Commit a branch on its head (or as the first node): None when it has no head."""
        done = self.capture(conn, namespace, branch, clock, root=root, head=head)
        if done is None:
            return None
        n, parent, at = done
        return {"id": checkpoint_id(n), "branch": branch, "parent": _id(parent), "at": at}

    def restore_storage(self, conn, namespace, key, node):
        """Replace a key's rows, sequences and RNG with those of a checkpoint node."""
        service = self._service
        source = storage_key(namespace, node["branch"])
        undone = {}
        # Newest first, so the entry with the smallest t >= n is the one kept.
        for collection, id_, seq, value in conn.execute(
                "SELECT collection, id, seq, value FROM timeline_undo WHERE service=? AND key=?"
                " AND t>=? ORDER BY t DESC", (service, source, node["n"])):
            undone[collection, id_] = (seq, value)
        rows = [(service, namespace, key, collection, id_, seq, value)
                for collection, id_, seq, value in conn.execute(
                    "SELECT collection, id, seq, value FROM records WHERE service=? AND key=?",
                    (service, source)) if (collection, id_) not in undone]
        rows += [(service, namespace, key, collection, id_, seq, value)
                 for (collection, id_), (seq, value) in undone.items() if value is not None]
        conn.execute("DELETE FROM records WHERE service=? AND key=?", (service, key))
        conn.executemany("INSERT INTO records (service, namespace, key, collection, id, seq,"
                         " value) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        conn.execute("DELETE FROM sequences WHERE service=? AND key=?", (service, key))
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
        return {branch: checkpoint_id(head) for branch, head in conn.execute(
            HEADS, (self._service, namespace))}

    def _set_head(self, conn, namespace, branch, n):
        """Point a branch at checkpoint n: checkpoints of it numbered up to now no longer count."""
        self._moved()
        conn.execute("INSERT INTO branches (service, namespace, branch, head, since) SELECT ?, ?,"
                     " ?, ?, seq FROM sqlite_sequence WHERE name=? ON CONFLICT (service,"
                     " namespace, branch) DO UPDATE SET head=excluded.head,"
                     " since=excluded.since",
                     (self._service, namespace, branch, n, CHECKPOINT_COUNTER))

    def find(self, conn, namespace, cp_id):
        """Return the retained node of a checkpoint of this namespace, or raise 409."""
        match = CP.match(cp_id) if isinstance(cp_id, str) else None
        row = None
        # An id past SQLite's 64-bit INTEGER names no row (and would not bind at all).
        if match and int(match.group(1), 36) < 2 ** 63:
            row = conn.execute("SELECT n, branch, parent, at_ms, sequences, rng, clock_now,"
                               " clock_frozen FROM checkpoints WHERE service=? AND namespace=?"
                               " AND n=?",
                               (self._service, namespace, int(match.group(1), 36))).fetchone()
        if row is None:
            raise TimelineError(f"no checkpoint {cp_id}")
        n, branch, parent, at, sequences, rng, now, frozen = row
        return {"id": checkpoint_id(n), "n": n, "branch": branch, "parent": _id(parent),
                "at": at, "sequences": json.loads(sequences), "rng": rng,
                "clock": {"now": now, "frozen": bool(frozen)}}

    def _ensure(self, conn, namespace):
        """Create the namespace timeline lazily: its first checkpoint is the current main state."""
        heads = self.heads(conn, namespace)
        if MAIN not in heads:
            self._commit(conn, namespace, MAIN, root=True)
            heads = self.heads(conn, namespace)
        return heads

    def _prune(self, conn, namespace):
        """Evict the oldest unpinned checkpoints beyond the limit; branch heads always stay.

        Then drop each key's undo entries older than its oldest retained node.
        """
        service = self._service
        row = conn.execute("SELECT n FROM checkpoints WHERE service=? AND namespace=?"
                           " ORDER BY n DESC LIMIT 1 OFFSET ?",
                           (service, namespace, self.max_checkpoints)).fetchone()
        if row is None:
            return
        heads = dict(conn.execute(HEADS, (service, namespace)))  # branch -> head number
        gone = {branch for branch, in conn.execute(
            "SELECT DISTINCT branch FROM checkpoints WHERE service=? AND namespace=? AND n<=?",
            (service, namespace, row[0]))}
        # A range of the primary key, heads and pinned ones skipped (no RETURNING: it costs
        # several times the delete itself).
        conn.execute("DELETE FROM checkpoints WHERE service=? AND namespace=? AND n<=? AND"
                     " pinned=0 AND n NOT IN (SELECT value FROM json_each(?))",
                     (service, namespace, row[0], json.dumps(list(heads.values()))))
        # Live branches too: a fork's copy is logged before the branch's first node.
        self._collect(conn, namespace, gone | set(heads))

    def _collect(self, conn, namespace, branches):
        """Drop the undo entries of `branches`' keys that no retained node reads."""
        for branch in branches:
            # Its oldest retained checkpoint: main's is usually the namespace's first row.
            row = conn.execute("SELECT n FROM checkpoints WHERE service=? AND namespace=? AND"
                               " branch=? ORDER BY n LIMIT 1",
                               (self._service, namespace, branch)).fetchone()
            conn.execute("DELETE FROM timeline_undo WHERE service=? AND key=? AND t<?",
                         (self._service, storage_key(namespace, branch),
                          1 << 62 if row is None else row[0]))

    def commit(self, namespace, branch=MAIN, *, clock=None, head=None):
        """Commit the current state of a branch (forking it from main first when new).

        `clock` and `head` as for `capture` (the request path knows both)."""
        with self._db.transaction(savepoint=False) as conn:
            done = self._commit(conn, namespace, branch, clock=clock, head=head)
            if done is not None:  # the common case: one statement
                return done
            heads = self._ensure(conn, namespace)
            if branch not in heads:
                self._fork(conn, namespace, branch, heads[MAIN])
            return self._commit(conn, namespace, branch)

    def _fork(self, conn, namespace, branch, at):
        node = self.find(conn, namespace, at)
        self.restore_storage(conn, namespace, storage_key(namespace, branch), node)
        self._set_head(conn, namespace, branch, node["n"])

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
                    at = self._commit(conn, namespace, MAIN)["id"]
                self._fork(conn, namespace, branch, at)
            node = self.find(conn, namespace, self.heads(conn, namespace)[branch])
            return {"id": node["id"], "branch": branch, "parent": node["parent"],
                    "at": node["at"]}

    def checkout(self, namespace, branch, cp_id):
        """Move a branch head to a checkpoint; restore its storage, RNG and the namespace clock."""
        with self._db.transaction() as conn:
            self._ensure(conn, namespace)
            node = self.find(conn, namespace, cp_id)
            self.restore_storage(conn, namespace, storage_key(namespace, branch), node)
            self._clocks.restore(namespace, node["clock"])
            self._set_head(conn, namespace, branch, node["n"])
            return node["id"]

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
            self._moved()
            gone = conn.execute("DELETE FROM branches WHERE service=? AND namespace=? AND"
                                " branch=?", (self._service, namespace, branch)).rowcount
            if not gone:
                raise TimelineError(f"no branch {branch}", status=404)
            key = storage_key(namespace, branch)
            for table in ("records", "sequences", "rngs"):
                conn.execute(f"DELETE FROM {table} WHERE service=? AND key=?",
                             (self._service, key))
            # The deletion was logged: retained nodes of the branch stay restorable.
            self._collect(conn, namespace, [branch])

    def pin(self, namespace, cp_id, by=1):
        """Spare a checkpoint from retention (counted: each `pin` needs its own `unpin`)."""
        with self._db.transaction() as conn:
            conn.execute("UPDATE checkpoints SET pinned=max(pinned+?, 0) WHERE service=? AND"
                         " namespace=? AND n=?",
                         (by, self._service, namespace, self.find(conn, namespace, cp_id)["n"]))

    def unpin(self, namespace, cp_id):
        """Undo one `pin`: the checkpoint is evicted again once retention reaches it."""
        self.pin(namespace, cp_id, by=-1)

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
                "checkpoints": [{"id": checkpoint_id(n), "branch": b, "parent": _id(p), "at": at}
                                for n, b, p, at in rows]}

    def count(self, namespace, branch=MAIN):
        """Return how many records a branch holds now (for the admin checkpoint answer)."""
        return self._db.one("SELECT count(*) FROM records WHERE service=? AND key=?",
                            (self._service, storage_key(namespace, branch)))[0]

    def reset(self, namespace=None):
        """Forget the timeline of a namespace, or of all (ids are never reused)."""
        self._moved()
        where, params = "service=?", [self._service]
        if namespace is not None:
            where, params = "service=? AND namespace=?", [self._service, namespace]
        for table in ("checkpoints", "branches"):
            self._db.execute(f"DELETE FROM {table} WHERE {where}", params)
        if namespace is None:
            self._db.execute("DELETE FROM timeline_undo WHERE service=?", params)
        else:  # by key range (the primary key), not a scan of every namespace's log
            self._db.execute("DELETE FROM timeline_undo WHERE service=? AND (key=? OR key"
                             " GLOB ?)", (self._service, namespace, namespace + "~*"))
