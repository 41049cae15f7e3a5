"""Immutable content-addressed objects (git's, for the GitHub emulator) as rows of `objects`.

An object is written once and never changed, so objects sit beside the timeline, not in it: a
checkpoint restore moves the records that name them (refs) and leaves the objects, as git
leaves unreachable objects behind. A namespace reset deletes them (unless a fleet snapshot of
the namespace may bring back records that name them). Each row belongs to a `scope` (a
repository) of a namespace, so namespaces never see each other's objects.
"""

# SQLite caps the number of bound parameters per statement; lookups go in slices of this size.
_SLICE = 500


class Objects:
    """The objects of one scope of one namespace: `(kind, data)` by id, plus their links.

    `kind` is a small integer the service chooses (git's type numbers), `links` the ids an
    object points to that a graph walk needs without reading `data` (a commit's parents).
    Every call is atomic on its own, or joins the caller's `transaction()`.
    """

    __slots__ = ("_db", "_service", "_namespace", "_scope")

    def __init__(self, db, service, namespace, scope):
        self._db = db
        self._service = service
        self._namespace = namespace
        self._scope = scope

    @property
    def scope(self):
        return self._scope

    def _args(self, *more):
        return (self._service, self._namespace, self._scope, *more)

    def get(self, id):
        """Return `(kind, data)` of an object, or None."""
        row = self._db.one("SELECT kind, data FROM objects WHERE service=? AND namespace=? AND"
                           " scope=? AND id=?", self._args(id))
        return None if row is None else (row[0], bytes(row[1]))

    def get_many(self, ids):
        """Return `{id: (kind, data)}` for the ids that exist."""
        ids = list(dict.fromkeys(ids))
        found = {}
        for start in range(0, len(ids), _SLICE):
            part = ids[start:start + _SLICE]
            marks = ",".join("?" * len(part))
            for id_, kind, data in self._db.all(
                    f"SELECT id, kind, data FROM objects WHERE service=? AND namespace=? AND"
                    f" scope=? AND id IN ({marks})", self._args(*part)):
                found[id_] = (kind, bytes(data))
        return found

    def kind(self, id):
        """Return the kind of an object, or None when it does not exist (its data unread)."""
        row = self._db.one("SELECT kind FROM objects WHERE service=? AND namespace=? AND"
                           " scope=? AND id=?", self._args(id))
        return None if row is None else row[0]

    def missing(self, ids):
        """Return the ids among `ids` that do not exist, in the order given."""
        ids = list(dict.fromkeys(ids))
        present = set()
        for start in range(0, len(ids), _SLICE):
            part = ids[start:start + _SLICE]
            marks = ",".join("?" * len(part))
            present.update(row[0] for row in self._db.all(
                f"SELECT id FROM objects WHERE service=? AND namespace=? AND scope=? AND"
                f" id IN ({marks})", self._args(*part)))
        return [id_ for id_ in ids if id_ not in present]

    def add(self, rows):
        """Store `(id, kind, links, data)` rows (`links` a list of ids); existing ids are kept
        as they are (an id names its content). One transaction, or the caller's."""
        rows = [(self._service, self._namespace, self._scope, id_, kind,
                 " ".join(links) if links else None, data) for id_, kind, links, data in rows]
        if not rows:
            return
        with self._db.transaction():
            self._db.conn.executemany(
                "INSERT INTO objects (service, namespace, scope, id, kind, links, data) VALUES"
                " (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", rows)

    def links(self, kind):
        """Return `{id: [linked ids]}` of every object of `kind` (the whole commit graph)."""
        return {id_: links.split() if links else [] for id_, links in self._db.all(
            "SELECT id, links FROM objects WHERE service=? AND namespace=? AND scope=? AND"
            " kind=?", self._args(kind))}

    def ids(self):
        """Return every object id of the scope."""
        return [row[0] for row in self._db.all(
            "SELECT id FROM objects WHERE service=? AND namespace=? AND scope=?", self._args())]

    def count(self):
        """Return the number of objects of the scope."""
        return self._db.one("SELECT count(*) FROM objects WHERE service=? AND namespace=? AND"
                            " scope=?", self._args())[0]


def delete_namespace(db, service, namespace=None):
    """Delete a namespace's objects (every namespace's when None), sparing a namespace a fleet
    snapshot may restore: its records would name objects that are gone."""
    where, args = "service=?", [service]
    if namespace is not None:
        where += " AND namespace=?"
        args.append(namespace)
    db.execute(f"DELETE FROM objects WHERE {where} AND NOT EXISTS (SELECT 1 FROM fleet_snapshots"
               " f WHERE f.service=objects.service AND f.namespace=objects.namespace)", args)
