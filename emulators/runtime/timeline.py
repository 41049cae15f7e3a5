"""Checkpoints and branches as rows, stored as deltas so a commit costs what changed, not the
namespace. Ids come from an AUTOINCREMENT column: unique for the life of the database, so a
stale or foreign id is a clean 409, never someone else's state.

Design (why each piece exists; the triggers are in db.py):

- A trigger on `records` notes every written or deleted `(key, collection, id)` in
  `record_changes` (scratch keys of `x-mockingbird-at` reads excluded). Every other way a key's
  rows change (fork, checkout) also sets its branch head and clears the notes, so the live rows of
  a key are always "its branch head + the noted rows".
- A checkpoint node keeps its sequences, RNG and clock whole (a few values) and, in
  `timeline_deltas`, only the noted rows (their value, or NULL for a deletion) on top of its
  `base`: the branch head it was committed on. A node without a base (a namespace's first) holds
  every row. The commit is one INSERT … SELECT (clock, head, sequences, RNG read in SQL); a
  trigger on `timeline_nodes` then moves the notes into the delta and advances the branch head.
- Restore walks the base chain newest first and takes, per `(collection, id)`, the nearest entry
  (one recursive SQL statement); a NULL value means absent.
- Retention evicts the oldest nodes beyond `max_checkpoints` (branch heads and pinned nodes
  stay), in batches: each worker prunes a namespace after every `max_checkpoints // 16` of its
  commits there (1 to 64), so a namespace may briefly hold that many more per worker. Counted
  per namespace, not by the global node number, so namespaces committing in turn all get pruned;
  a batch pays the cut-off search (a walk over `max_checkpoints` index entries) once: an evicted node is no longer listed nor restorable, but its rows stay while a retained
  node builds on it. An evicted node with one dependant is merged into it (the dependant's rows
  are upserted into the evicted node's row set, which it adopts: the cost of the newer delta,
  never of the namespace); one with none is deleted; a fork point with several stays as hidden
  storage until its dependants shrink to one.
"""
import json
import re

from .clock import FROZEN_SQL, NOW_SQL
from .errors import AdminError

CP = re.compile(r"^cp_([0-9a-z]{8,})$")
MAIN = "main"

_COMMIT = (
    "INSERT INTO timeline_nodes (service, namespace, branch, parent, base, at_ms, sequences, rng,"
    " clock_now, clock_frozen) SELECT :service, :namespace, :branch, {head}, {head}, {now},"
    " (SELECT coalesce(json_group_object(name, value), '{{}}') FROM sequences WHERE"
    " service=:service AND key=:key), (SELECT state FROM rngs WHERE service=:service AND"
    " key=:key), {now}, {frozen} {source} RETURNING n, parent, clock_now")
# On top of the branch head (no row when the branch has none), or as a namespace's first node.
COMMIT_ON_HEAD = _COMMIT.format(head="head", now=NOW_SQL, frozen=FROZEN_SQL, source=(
    "FROM branches WHERE service=:service AND namespace=:namespace AND branch=:branch"))
COMMIT_ROOT = _COMMIT.format(head="NULL", now=NOW_SQL, frozen=FROZEN_SQL, source="")


class TimelineError(AdminError):
    """A checkpoint or branch operation that cannot be done (409)."""

    status = 409


def checkpoint_id(n):
    """Format a checkpoint row number: cp_ + base36, zero-padded to 8."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    n = int(n)
    while n:
        n, rest = divmod(n, 36)
        text = digits[rest] + text
    return "cp_" + text.rjust(8, "0")


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

    # -- capture and restore ------------------------------------------------------------
    def _commit(self, conn, namespace, branch, *, root=False):
        """Commit a branch on its head (or as the first node): None when it has no head."""
        rows = conn.execute(COMMIT_ROOT if root else COMMIT_ON_HEAD, {
            "service": self._service, "namespace": namespace, "branch": branch,
            "key": storage_key(namespace, branch), "wall": self._clocks.wall()}).fetchall()
        if not rows:
            return None
        n, parent, at = rows[0]
        count = self._unpruned.get(namespace, 0) + 1
        if count >= self._prune_every:
            self._prune(conn, namespace)
            count = 0
        elif len(self._unpruned) >= 4096 and namespace not in self._unpruned:
            self._unpruned.clear()
        self._unpruned[namespace] = count
        return {"id": checkpoint_id(n), "branch": branch, "parent": _id(parent), "at": at}

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
        return {branch: checkpoint_id(head) for branch, head in conn.execute(
            "SELECT branch, head FROM branches WHERE service=? AND namespace=? ORDER BY branch",
            (self._service, namespace))}

    def _set_head(self, conn, namespace, branch, n):
        conn.execute("INSERT INTO branches (service, namespace, branch, head) VALUES (?, ?, ?, ?)"
                     " ON CONFLICT (service, namespace, branch) DO UPDATE SET head=excluded.head",
                     (self._service, namespace, branch, n))

    def find(self, conn, namespace, cp_id):
        """Return the retained node of a checkpoint of this namespace, or raise 409."""
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
        """Evict the oldest unpinned checkpoints beyond the limit; branch heads always stay."""
        row = conn.execute("SELECT n FROM timeline_nodes WHERE service=? AND namespace=? AND"
                           " evicted=0 ORDER BY n DESC LIMIT 1 OFFSET ?",
                           (self._service, namespace, self.max_checkpoints)).fetchone()
        if row is None:
            return
        doomed = {n: (base, delta) for n, base, delta in conn.execute(
            "SELECT n, base, coalesce(delta, n) FROM timeline_nodes WHERE service=? AND"
            " namespace=? AND evicted=0 AND pinned=0 AND n<=? AND n NOT IN (SELECT head FROM"
            " branches WHERE service=? AND namespace=?)",
            (self._service, namespace, row[0], self._service, namespace))}
        self._collect(conn, namespace, doomed)

    @staticmethod
    def _dependants(conn, namespace, bases):
        """Return {base: [(n, delta)]} of the nodes built on `bases` (bases never cross
        namespaces)."""
        found = {base: [] for base in bases}
        for n, base, delta in conn.execute(
                "SELECT n, base, coalesce(delta, n) FROM timeline_nodes WHERE base IN (SELECT"
                " value FROM json_each(?))", (json.dumps(bases),)):
            found[base].append((n, delta))
        return found

    def _evicted(self, conn, numbers, doomed):
        """Return {n: (base, delta)} of the evicted (or now `doomed`) nodes among `numbers`."""
        return {n: (base, delta) for n, base, delta in conn.execute(
            "SELECT n, base, coalesce(delta, n) FROM timeline_nodes WHERE n IN (SELECT value"
            " FROM json_each(?)) AND (evicted=1 OR n IN (SELECT value FROM json_each(?)))",
            (json.dumps(numbers), json.dumps(doomed)))}

    def _collect(self, conn, namespace, doomed):
        """Evict `doomed` ({n: (base, delta)}): drop or merge evicted nodes so only storage some retained node needs
        is kept; only a doomed node that stays (a fork point) is marked evicted.

        Worked out in memory first, then a few statements per prune: a run of evicted nodes
        folds into its one dependant with a single INSERT OR REPLACE, oldest row set first.
        Marking only the survivors spares an index move per node that is deleted anyway.
        """
        nodes = dict(doomed)
        pending = sorted(nodes)
        doomed = pending[:]
        dependants = self._dependants(conn, namespace, pending)
        folded, rebased = {}, {}  # survivor -> row sets newest first; survivor -> new base
        dropped, gone = [], []
        while pending:
            n = pending.pop()
            if n not in nodes:
                nodes.update(self._evicted(conn, [n], doomed))
                if n not in nodes:
                    continue  # retained, or already gone
            base, delta = nodes.pop(n)
            if n not in dependants:
                dependants.update(self._dependants(conn, namespace, [n]))
            children = dependants.pop(n)
            if not children:
                dropped.append(n)
                gone += folded.pop(n, [delta])
                rebased.pop(n, None)
                if base is not None:
                    if base in dependants:
                        dependants[base] = [c for c in dependants[base] if c[0] != n]
                    pending.append(base)  # its base may now have one dependant, or none
            elif len(children) == 1:
                # The dependant adopts this node's base and row sets; its own rows stay newest.
                child, child_delta = children[0]
                folded[child] = folded.get(child, [child_delta]) + folded.pop(n, [delta])
                rebased[child] = base
                rebased.pop(n, None)
                dropped.append(n)
                if child in nodes:
                    nodes[child] = (base, delta)
                if base in dependants:
                    dependants[base] = [(child, delta) if c[0] == n else c
                                        for c in dependants[base]]
        for survivor, sets in folded.items():
            owner, newer = sets[-1], sets[-2::-1]
            conn.execute("INSERT OR REPLACE INTO timeline_deltas (delta, collection, id, seq,"
                         " value) SELECT ?, d.collection, d.id, d.seq, d.value FROM json_each(?)"
                         " AS j JOIN timeline_deltas d ON d.delta=j.value ORDER BY j.key",
                         (owner, json.dumps(newer)))
            gone += newer
            conn.execute("UPDATE timeline_nodes SET base=?, delta=? WHERE n=?",
                         (rebased[survivor], owner, survivor))
        conn.execute("DELETE FROM timeline_deltas WHERE delta IN (SELECT value FROM json_each(?))",
                     (json.dumps(gone),))
        conn.execute("DELETE FROM timeline_nodes WHERE n IN (SELECT value FROM json_each(?))",
                     (json.dumps(dropped),))
        kept = sorted(set(doomed) - set(dropped))
        if kept:
            conn.execute("UPDATE timeline_nodes SET evicted=1 WHERE n IN (SELECT value FROM"
                         " json_each(?))", (json.dumps(kept),))

    def commit(self, namespace, branch=MAIN):
        """Commit the current state of a branch (forking it from main first when new)."""
        with self._db.transaction(savepoint=False) as conn:
            done = self._commit(conn, namespace, branch)
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
                "checkpoints": [{"id": checkpoint_id(n), "branch": b, "parent": _id(p), "at": at}
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
