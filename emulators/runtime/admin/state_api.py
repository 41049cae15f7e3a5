"""The state API under `/state`: browse and edit a namespace's main records.

Every successful write commits a main checkpoint (`x-mockingbird-checkpoint`), as controls do.
"""
import json
import math
import re

from ..errors import AdminError

# fullmatch: `$` would let a trailing newline through.
COLLECTION = re.compile(r"[A-Za-z0-9_.@:-]{1,200}")
RECORD_ID = re.compile(r"[^\s/]{1,256}")
INTEGER = re.compile(r"-?[0-9]+")
SAMPLE = 25      # rows the field shapes are inferred from, newest first
MAX_DEPTH = 8    # nested object levels described; deeper values are reported as `object`
BODY = 'expected {"id?": "<id>", "value": <json>}'
VALUE_BODY = 'expected {"value": <json>}'


def humanize(name):
    """Return a collection's label: `hermes-runs` -> `Hermes runs`."""
    words = re.sub(r"[@:_-]+", " ", name).strip()
    return words[:1].upper() + words[1:] if words else name


def kind_of(value):
    """Return the field kind of a JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "number"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else "unknown"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "unknown"


class _Field:
    """What the sampled rows tell about one field: its kinds, how often present, nested fields."""

    __slots__ = ("name", "kinds", "present", "nested")

    def __init__(self, name):
        self.name, self.kinds, self.present, self.nested = name, set(), 0, {}

    def absorb(self, value, depth):
        self.kinds.add(kind_of(value))
        self.present += 1
        if isinstance(value, dict) and depth < MAX_DEPTH:
            for key, child in value.items():
                self.nested.setdefault(key, _Field(key)).absorb(child, depth + 1)

    def finish(self, samples):
        # A field missing from some rows, or null in some, is optional.
        field = {"name": self.name,
                 "kind": next(iter(self.kinds)) if len(self.kinds) == 1 else "unknown",
                 "optional": self.present < samples or "null" in self.kinds}
        if self.nested:
            field["fields"] = [child.finish(self.present)
                               for _, child in sorted(self.nested.items())]
        return field


def infer_fields(values):
    """Describe the fields of sampled values (objects by key; scalars as one `(value)`)."""
    if not values:
        return []
    objects = [value for value in values if isinstance(value, dict)]
    if not objects:
        kinds = {kind_of(value) for value in values}
        return [{"name": "(value)", "kind": kinds.pop() if len(kinds) == 1 else "unknown",
                 "optional": False}]
    root = {}
    for value in objects:
        for key, child in value.items():
            root.setdefault(key, _Field(key)).absorb(child, 1)
    return [field.finish(len(objects)) for _, field in sorted(root.items())]


def _storable(text):
    """Tell whether a string can be stored (a lone surrogate cannot be encoded as UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _collection(request):
    name = request.params["collection"]
    if not COLLECTION.fullmatch(name):
        raise AdminError("collection name is not allowed")
    return name


def _record_id(text, message):
    if not isinstance(text, str) or not RECORD_ID.fullmatch(text) or not _storable(text):
        raise AdminError(message)
    return text


def _json_value(value):
    """Refuse what cannot travel as strict JSON (NaN, Infinity)."""
    try:
        json.dumps(value, allow_nan=False)
    except (ValueError, RecursionError):
        raise AdminError("value must be JSON") from None
    return value


def _integer(query, name, message):
    text = query.get(name)
    if text is None:
        return None
    if not INTEGER.fullmatch(text):
        raise AdminError(message)
    return max(-2 ** 63, min(int(text), 2 ** 63 - 1))  # what SQLite can bind


class StateRoutes:
    """`/state` routes over the main records of the admin namespace."""

    def __init__(self, emulator):
        self.emulator = emulator

    def routes(self):
        """Return (method, path, handler) of every state route."""
        return [("GET", "/state", self.overview),
                ("GET", "/state/:collection", self.page),
                ("POST", "/state/:collection", self.create),
                ("GET", "/state/:collection/:id", self.read),
                ("PUT", "/state/:collection/:id", self.replace),
                ("PATCH", "/state/:collection/:id", self.patch),
                ("DELETE", "/state/:collection/:id", self.delete)]

    def _instance(self, request):
        return self.emulator.instance(request.namespace, method=request.method)

    def overview(self, request):
        instance = self._instance(request)
        records = instance.records
        collections = []
        for name in records.collections():
            if not COLLECTION.fullmatch(name):
                continue  # not addressable through /state/:collection
            sample = [row["value"] for row in records.rows(name, desc=True, limit=SAMPLE)]
            collections.append({"name": name, "label": humanize(name),
                                "count": records.count(name), "source": "inferred",
                                "fields": infer_fields(sample)})
        return 200, {"namespace": request.namespace, "storageNamespace": instance.key,
                     "collections": collections}

    def page(self, request):
        name = _collection(request)
        limit = _integer(request.query, "limit", "limit: expected an integer")
        after = _integer(request.query, "after", "after: expected a sequence number")
        order = request.query.get("order", "newest")
        if limit is None:
            limit = 50
        elif not 1 <= limit <= 200:
            raise AdminError("limit must be an integer from 1 to 200")
        if order not in ("newest", "oldest"):
            raise AdminError('order must be "newest" or "oldest"')
        records = self._instance(request).records
        rows = records.rows(name, desc=order == "newest", after=after, limit=limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        return 200, {"collection": name, "count": records.count(name), "records": rows,
                     "next": rows[-1]["seq"] if more else None}

    def read(self, request):
        name = _collection(request)
        record_id = _record_id(request.params["id"], "record id is not allowed")
        row = self._instance(request).records.row(name, record_id)
        if row is None:
            raise AdminError(f"no record {record_id} in {name}", status=404)
        return 200, row

    def create(self, request):
        body = request.body
        if not isinstance(body, dict) or "value" not in body:
            raise AdminError(BODY)
        if "id" in body and not isinstance(body["id"], str):
            raise AdminError("id must be a string")
        name = _collection(request)
        value = _json_value(body["value"])
        instance = self._instance(request)
        records = instance.records
        with self.emulator.db.transaction():
            if "id" in body:
                record_id = _record_id(body["id"], "id must be a single path segment")
                if records.row(name, record_id) is not None:
                    raise AdminError(f"record {record_id} already exists", status=409)
            else:
                # `<collection>_<seq>` of the new row; numbers a client already took as
                # explicit ids are skipped (the reference answered 409 to its own default).
                newest = records.rows(name, desc=True, limit=1)
                number = newest[0]["seq"] + 1 if newest else 1
                while records.row(name, f"{name}_{number}") is not None:
                    number += 1
                record_id = f"{name}_{number}"
            records.put(name, record_id, value)
            return self._written(instance, 201, records.row(name, record_id))

    def replace(self, request):
        return self._update(request, merge=False)

    def patch(self, request):
        return self._update(request, merge=True)

    def _update(self, request, *, merge):
        body = request.body
        if not isinstance(body, dict) or "value" not in body:
            raise AdminError(VALUE_BODY)
        name = _collection(request)
        record_id = _record_id(request.params["id"],
                               "id must be a single path segment")
        value = _json_value(body["value"])
        instance = self._instance(request)
        records = instance.records
        with self.emulator.db.transaction():
            current = records.row(name, record_id)
            if current is None:
                raise AdminError(f"no record {record_id} in {name}", status=404)
            if merge and isinstance(current["value"], dict) and isinstance(value, dict):
                value = {**current["value"], **value}  # shallow: one level of keys
            records.put(name, record_id, value)
            return self._written(instance, 200, records.row(name, record_id))

    def delete(self, request):
        name = _collection(request)
        record_id = _record_id(request.params["id"],
                               "id must be a single path segment")
        instance = self._instance(request)
        records = instance.records
        with self.emulator.db.transaction():
            if records.row(name, record_id) is None:
                raise AdminError(f"no record {record_id} in {name}", status=404)
            records.delete(name, record_id)
            return self._written(instance, 200, {"id": record_id})

    @staticmethod
    def _written(instance, status, body):
        # Every successful write is a point on main's timeline, committed with the write.
        return status, body, [("x-mockingbird-checkpoint", instance.checkpoint())]
