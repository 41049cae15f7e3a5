"""Per-storage-key record store: JSON values in named collections, plus named id sequences."""
import json
import re

FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}\Z")


def _field_path(field):
    if not isinstance(field, str) or not FIELD.match(field):
        raise ValueError("record field names must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$:"
                         f" {field!r}")
    return "$." + field


def _dumps(value):
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


class Records:
    """The rows of one storage key; every call is atomic on its own, or joins `transaction()`."""

    __slots__ = ("_db", "_service", "_namespace", "_key", "_on_write", "_cached")

    def __init__(self, db, service, namespace, key, on_write=None, cached=None):
        self._db = db
        self._service = service
        self._namespace = namespace
        self._key = key
        self._on_write = on_write
        # cached(token, fetch): a read request's stored text of a record at the key's version
        # (Instance), or None. Used only outside a transaction: inside one, reads are fresh.
        self._cached = cached

    def _wrote(self):
        if self._on_write is not None:
            self._on_write()

    def get(self, collection, id):
        """Return the stored value, or None."""
        if self._cached is not None and self._db.joined() is None:
            text = self._cached(("record", collection, str(id)),
                                lambda: self._text(collection, id))
        else:
            text = self._text(collection, id)
        return None if text is None else json.loads(text)

    def _text(self, collection, id):
        row = self._db.one("SELECT value FROM records WHERE service=? AND key=? AND collection=?"
                           " AND id=?", (self._service, self._key, collection, str(id)))
        return None if row is None else row[0]

    def put(self, collection, id, value):
        """Insert or replace a value; a replaced value keeps its first insertion order."""
        self._db.execute(
            "INSERT INTO records (service, namespace, key, collection, id, seq, value) VALUES"
            " (?, ?, ?, ?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM records WHERE service=?"
            " AND key=? AND collection=?), ?) ON CONFLICT (service, key, collection, id)"
            " DO UPDATE SET value=excluded.value",
            (self._service, self._namespace, self._key, collection, str(id),
             self._service, self._key, collection, _dumps(value)))
        self._wrote()
        return value

    def delete(self, collection, id):
        """Remove a value; absent is fine."""
        self._db.execute("DELETE FROM records WHERE service=? AND key=? AND collection=? AND id=?",
                         (self._service, self._key, collection, str(id)))
        self._wrote()

    def _where(self, collection, where):
        sql = " FROM records WHERE service=? AND key=? AND collection=?"
        params = [self._service, self._key, collection]
        for field, value in (where or {}).items():
            path = _field_path(field)
            if value is None:
                sql += " AND json_extract(value, ?) IS NULL"
                params.append(path)
            elif isinstance(value, (dict, list)):
                sql += " AND json(json_extract(value, ?)) = json(?)"
                params += [path, _dumps(value)]
            else:
                # json_extract gives JSON booleans as 1/0, which is how True/False bind.
                sql += " AND json_extract(value, ?) = ?"
                params += [path, value]
        return sql, params

    def list(self, collection, *, where=None, order_by=None, desc=False, limit=None, offset=0):
        """Return values in insertion order, or ordered by a top-level field (ties by insertion)."""
        sql, params = self._where(collection, where)
        direction = "DESC" if desc else "ASC"
        if order_by is not None:
            sql += f" ORDER BY json_extract(value, ?) {direction}, seq {direction}"
            params.append(_field_path(order_by))
        else:
            sql += f" ORDER BY seq {direction}"
        if limit is not None or offset:
            sql += " LIMIT ? OFFSET ?"
            params += [-1 if limit is None else int(limit), int(offset)]
        return [json.loads(row[0]) for row in self._db.all("SELECT value" + sql, params)]

    def count(self, collection, *, where=None):
        """Return the number of matching values."""
        sql, params = self._where(collection, where)
        return self._db.one("SELECT count(*)" + sql, params)[0]

    def next_id(self, sequence):
        """Return the next integer (1, 2, ...) of a named sequence of this key."""
        (row,) = self._db.all(
            "INSERT INTO sequences (service, namespace, key, name, value) VALUES (?, ?, ?, ?, 1)"
            " ON CONFLICT (service, key, name) DO UPDATE SET value=value+1 RETURNING value",
            (self._service, self._namespace, self._key, sequence))
        self._wrote()
        return row[0]

    # -- read helpers of the admin state view (admin/state_api.py)
    def collections(self):
        """Return the names of the collections this key holds rows in, sorted."""
        return [row[0] for row in self._db.all(
            "SELECT DISTINCT collection FROM records WHERE service=? AND key=? ORDER BY"
            " collection", (self._service, self._key))]

    def rows(self, collection, *, desc=False, after=None, limit=None):
        """Return `{id, seq, value}` rows in insertion order (newest first when `desc`),
        only those past the insertion order `after` in that direction."""
        sql = ("SELECT id, seq, value FROM records WHERE service=? AND key=? AND"
               " collection=?")
        params = [self._service, self._key, collection]
        if after is not None:
            sql += " AND seq < ?" if desc else " AND seq > ?"
            params.append(int(after))
        sql += " ORDER BY seq DESC" if desc else " ORDER BY seq"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [{"id": id_, "seq": seq, "value": json.loads(value)}
                for id_, seq, value in self._db.all(sql, params)]

    def row(self, collection, id):
        """Return the `{id, seq, value}` row of a record, or None."""
        found = self._db.one("SELECT seq, value FROM records WHERE service=? AND key=? AND"
                             " collection=? AND id=?",
                             (self._service, self._key, collection, str(id)))
        return None if found is None else {"id": str(id), "seq": found[0],
                                           "value": json.loads(found[1])}
