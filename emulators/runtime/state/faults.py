"""Fault rules as rows: validation, namespace-scoped storage, and exactly-once evaluation.

A rule's counters (`seen`, `hits`, `remaining`) change inside BEGIN IMMEDIATE, so a one-shot rule
fires once across every worker.
"""
import json
import re

from ..errors import AdminError
from ..names import NAME, SHOWN
from .rng import mulberry32, seed_state

RULE_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}\Z")
HTTP_METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
FIELDS = {"id", "operationId", "method", "path", "pathPrefix", "namespace", "status", "body",
          "headers", "count", "after", "rate", "delayMs", "latencyMs", "drop", "effect", "params",
          "preset", "description"}
MAX_DELAY_MS = 60_000
MAX_COUNT = 2 ** 63 - 1  # SQLite's INTEGER holds `remaining`
DEFAULT_BODY = {"detail": "Injected by Mockingbird"}
NEEDS = "a fault needs a numeric status, a delayMs/latencyMs, drop: true, an effect, or a preset"


def _int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def validate_rule(raw, default_namespace):
    """Return a clean rule dict or raise AdminError naming the first bad field."""
    if not isinstance(raw, dict):
        raise AdminError("expected a JSON object")
    unknown = sorted(set(raw) - FIELDS)
    if unknown:
        raise AdminError(f"unknown fault field(s): {', '.join(unknown)}")
    rule = dict(raw)
    if "latencyMs" in rule:
        rule.setdefault("delayMs", rule.pop("latencyMs"))
        rule.pop("latencyMs", None)
    checks = [
        ("id", lambda v: isinstance(v, str) and RULE_ID.match(v),
         "a string matching ^[A-Za-z0-9_.:-]{1,64}$"),
        ("operationId", lambda v: isinstance(v, str) and v, "a non-empty string"),
        ("method", lambda v: isinstance(v, str) and v.upper() in HTTP_METHODS,
         "one of " + ", ".join(sorted(HTTP_METHODS))),
        ("path", lambda v: isinstance(v, str) and v.startswith("/"), "a path starting with /"),
        ("pathPrefix", lambda v: isinstance(v, str) and v.startswith("/"),
         "a path starting with /"),
        ("namespace", lambda v: isinstance(v, str) and (v == "*" or NAME.match(v)),
         f'"*" or a name matching {SHOWN}'),
        ("status", lambda v: _int(v) and 100 <= v <= 599, "an HTTP status (100-599)"),
        ("headers", lambda v: isinstance(v, dict) and all(
            isinstance(k, str) and isinstance(x, str) for k, x in v.items()),
         "an object of string header values"),
        ("count", lambda v: v is None or (_int(v) and 1 <= v <= MAX_COUNT),
         f"a positive integer or null, at most {MAX_COUNT}"),
        ("after", lambda v: _int(v) and 0 <= v <= MAX_COUNT,
         f"a non-negative integer, at most {MAX_COUNT}"),
        ("rate", lambda v: _number(v) and 0 <= v <= 1, "a number between 0 and 1"),
        ("delayMs", lambda v: _number(v) and 0 <= v <= MAX_DELAY_MS,
         f"a number of ms between 0 and {MAX_DELAY_MS}"),
        ("drop", lambda v: isinstance(v, bool), "true or false"),
        ("effect", lambda v: isinstance(v, str) and v, "a non-empty string"),
        ("params", lambda v: isinstance(v, dict), "an object"),
        ("preset", lambda v: isinstance(v, str), "a string"),
        ("description", lambda v: isinstance(v, str), "a string"),
    ]
    for field, ok, expected in checks:
        if field in rule and not ok(rule[field]):
            raise AdminError(f"{field}: expected {expected}")
    if "method" in rule:
        rule["method"] = rule["method"].upper()
    if not ("status" in rule or "delayMs" in rule or rule.get("drop") is True or "effect" in rule):
        raise AdminError(NEEDS)
    rule.setdefault("namespace", default_namespace)
    return rule


def _template(path):
    pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(path.rstrip("/") or "/"))
    return re.compile("^" + pattern + "/?$")


class Hit:
    """One fired rule: its id, and what it does."""

    def __init__(self, rule):
        self.id = rule["id"]
        self.rule = rule
        self.delay_ms = rule.get("delayMs") or 0
        self.drop = rule.get("drop") is True
        self.status = rule.get("status")
        self.effect = rule.get("effect")
        self.params = rule.get("params") or {}

    @property
    def terminal(self):
        return self.drop or self.status is not None

    def response(self):
        """Return (status, headers list, body bytes) of a canned response."""
        rule = self.rule
        headers = {"content-type": "application/json"}
        headers.update({k.lower(): v for k, v in (rule.get("headers") or {}).items()})
        if "body" not in rule:
            body = json.dumps(DEFAULT_BODY).encode()
        elif rule["body"] is None:
            body = b""
            if "content-type" not in {k.lower() for k in rule.get("headers") or {}}:
                headers.pop("content-type")
        elif isinstance(rule["body"], str):
            body = rule["body"].encode()
        else:
            body = json.dumps(rule["body"]).encode()
        return rule["status"], list(headers.items()), body


class Faults:
    """The fault rules of one service in the shared database."""

    def __init__(self, db, service, seed=0):
        self._db = db
        self._service = service
        self._seed = seed_state(seed)
        self._parsed = {}
        self._active = {}  # namespace -> (fault version, [(id, namespace, text)])

    def add(self, rule):
        """Store a validated rule; an existing id in the same namespace is replaced in place."""
        with self._db.transaction() as conn:
            namespace = rule["namespace"]
            if "id" not in rule:
                cur = conn.execute("INSERT INTO fault_ids (service) VALUES (?)", (self._service,))
                rule = {"id": f"fault_{cur.lastrowid}", **rule}
            row = conn.execute("SELECT ord FROM faults WHERE service=? AND namespace=? AND id=?",
                               (self._service, namespace, rule["id"])).fetchone()
            if row is None:
                order = conn.execute("INSERT INTO fault_ids (service) VALUES (?)",
                                     (self._service,)).lastrowid
            else:
                order = row[0]
            conn.execute(
                "INSERT OR REPLACE INTO faults (service, namespace, id, ord, rule, remaining, hits,"
                " seen) VALUES (?, ?, ?, ?, ?, ?, 0, 0)",
                (self._service, namespace, rule["id"], order, json.dumps(rule),
                 rule.get("count")))
        return self.view(rule, rule.get("count"), 0, 0)

    @staticmethod
    def view(rule, remaining, hits, seen):
        """Return the listed form of a rule."""
        return {**rule, "remaining": remaining, "hits": hits, "matched": seen,
                "retired": remaining == 0}

    def list(self, namespace=None):
        """Return rules for a namespace (its own and `*`), or every rule when None."""
        sql = "SELECT rule, remaining, hits, seen FROM faults WHERE service=?"
        params = [self._service]
        if namespace is not None:
            sql += " AND namespace IN (?, '*')"
            params.append(namespace)
        rows = self._db.all(sql + " ORDER BY ord", params)
        return [self.view(json.loads(rule), remaining, hits, seen)
                for rule, remaining, hits, seen in rows]

    def delete(self, namespace, rule_id=None, *, everywhere=False):
        """Delete one rule visible to the namespace, or all of its own rules; return the count."""
        if everywhere:
            sql, params = "DELETE FROM faults WHERE service=?", [self._service]
            if rule_id is not None:
                sql += " AND id=?"
                params.append(rule_id)
            return self._db.execute(sql, params).rowcount
        if rule_id is None:
            return self._db.execute("DELETE FROM faults WHERE service=? AND namespace=?",
                                    (self._service, namespace)).rowcount
        return self._db.execute("DELETE FROM faults WHERE service=? AND namespace IN (?, '*')"
                                " AND id=?", (self._service, namespace, rule_id)).rowcount

    def reset(self, namespace=None):
        """Forget the rules and fault RNG of one namespace, or of every namespace."""
        if namespace is None:
            self._db.execute("DELETE FROM faults WHERE service=?", (self._service,))
            self._db.execute("DELETE FROM rngs WHERE service=? AND key LIKE '!faults:%'",
                             (self._service,))
        else:
            self.delete(namespace)
            self._db.execute("DELETE FROM rngs WHERE service=? AND key=?",
                             (self._service, "!faults:" + namespace))

    def _rule(self, text):
        rule = self._parsed.get(text)
        if rule is None:
            rule = json.loads(text)
            if "path" in rule:
                rule["_path"] = _template(rule["path"])
            if len(self._parsed) > 4096:
                self._parsed.clear()
            self._parsed[text] = rule
        return rule

    def _rules(self, namespace, version):
        """Return the live rules of a namespace (its own and `*`), parsed, in order.

        Kept per namespace for one control version (a trigger bumps it when a rule is added,
        edited, deleted or used up, in any worker; the caller reads it once per request): no
        rule query while nothing changed. A rule used up since is skipped by evaluate's re-read
        inside its transaction.
        """
        cached = self._active.get(namespace)
        if cached is not None and cached[0] == version:
            return cached[1]
        # Read after the version: the rules are at least as new as the version they are kept
        # for, so a rule added since moves the version past it and is seen next request.
        rows = [(rule_id, rule_ns, self._rule(text)) for rule_id, rule_ns, text in self._db.all(
            "SELECT id, namespace, rule FROM faults WHERE service=? AND namespace IN (?, '*')"
            " AND (remaining IS NULL OR remaining > 0) ORDER BY ord", (self._service, namespace))]
        if len(self._active) > 4096:
            self._active.clear()
        self._active[namespace] = (version, rows)
        return rows

    @staticmethod
    def _matches(rule, operation_id, method, path):
        if "operationId" in rule and rule["operationId"] != operation_id:
            return False
        if "method" in rule and rule["method"] != method:
            return False
        if "pathPrefix" in rule and not path.startswith(rule["pathPrefix"]):
            return False
        if "_path" in rule and not rule["_path"].match(path):
            return False
        return True

    def evaluate(self, namespace, operation_id, method, path, version):
        """Return the hits for a request: effect/delay hits layer, the first terminal one stops.

        `version` is the control version the caller read for this request (Clocks.version).
        """
        rules = self._rules(namespace, version)
        if not rules:
            return []
        matches = self._matches
        candidates = [(rid, ns) for rid, ns, rule in rules
                      if matches(rule, operation_id, method, path)]
        if not candidates:
            return []
        hits = []
        rng_key = "!faults:" + namespace
        with self._db.transaction() as conn:
            row = conn.execute("SELECT state FROM rngs WHERE service=? AND key=?",
                               (self._service, rng_key)).fetchone()
            state = self._seed if row is None else row[0]
            for rule_id, rule_ns in candidates:
                row = conn.execute(
                    "SELECT rule, remaining, hits, seen FROM faults WHERE service=? AND"
                    " namespace=? AND id=?", (self._service, rule_ns, rule_id)).fetchone()
                if row is None or row[1] == 0:
                    continue  # deleted or exhausted by another worker meanwhile
                text, remaining, count, seen = row
                rule = json.loads(text)
                seen += 1
                fire = seen > rule.get("after", 0)
                if fire:
                    # Draw even at rate 1 so seeded probability streams stay aligned.
                    draw, state = mulberry32(state)
                    fire = draw < rule.get("rate", 1)
                if fire:
                    count += 1
                    remaining = None if remaining is None else remaining - 1
                conn.execute("UPDATE faults SET seen=?, hits=?, remaining=? WHERE service=? AND"
                             " namespace=? AND id=?",
                             (seen, count, remaining, self._service, rule_ns, rule_id))
                if fire:
                    hit = Hit(rule)
                    hits.append(hit)
                    if hit.terminal:
                        break
            conn.execute("INSERT INTO rngs (service, namespace, key, state) VALUES (?, ?, ?, ?)"
                         " ON CONFLICT (service, key) DO UPDATE SET state=excluded.state",
                         (self._service, namespace, rng_key, state))
        return hits
