"""Request journal (metadata only) and metrics, both rows partitioned by namespace.

A request writes one journal row (columns, plus a JSON `extra` only for the rare fields) and no
metrics row: metrics are the `metrics` table (counts folded in from older journal rows) plus
the journal rows past the service's fold watermark, summed in one read. Each worker folds and
trims the ring after every `trim_every` of its own entries, and always before journal rows are
deleted, so no request is ever counted twice or lost from the counts.
"""
import json

from .clock import iso
from .db import delete_scoped

UNMATCHED = "(unmatched)"
EXTRA = ("ids", "accepted", "checkpoint", "request")  # `checkpoint` only comes with `accepted`

_INSERT = ("INSERT INTO journal (service, namespace, at_ms, method, path, operation, status,"
           " duration_ms, fault, extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
# A journal row's metrics key: the operation, or the path when the request matched none.
_KEY = "coalesce(operation, ''), method, CASE WHEN operation IS NULL THEN path ELSE '' END"
_MARK = "coalesce((SELECT seq FROM metrics_folded WHERE service=:service), 0)"
_FOLD = (
    "INSERT INTO metrics (service, namespace, operation, method, path, status, count, faults,"
    " duration_ms) SELECT service, namespace, " + _KEY + ", status, count(*), count(fault),"
    " sum(duration_ms) FROM journal WHERE service=:service AND seq>" + _MARK + " GROUP BY"
    " namespace, " + _KEY + ", status ON CONFLICT (service, namespace, operation, method, path,"
    " status) DO UPDATE SET count=count+excluded.count, faults=faults+excluded.faults,"
    " duration_ms=duration_ms+excluded.duration_ms")
_FOLDED = ("INSERT INTO metrics_folded (service, seq) SELECT :service, seq FROM sqlite_sequence"
           " WHERE name='journal' ON CONFLICT (service) DO UPDATE SET seq=excluded.seq")
# With the journal off (size 0) nothing is kept to fold: count each request directly.
_COUNT = (
    "INSERT INTO metrics (service, namespace, operation, method, path, status, count, faults,"
    " duration_ms) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT (service, namespace,"
    " operation, method, path, status) DO UPDATE SET count=count+1,"
    " faults=faults+excluded.faults, duration_ms=duration_ms+excluded.duration_ms")


class Journal:
    """Per-namespace ring of request records plus metric counters of one service."""

    def __init__(self, db, service, size=1000, *, has_document=True):
        self._db = db
        self._service = service
        self.size = size
        self._has_document = has_document
        # The fold reads the rows since the last one and the trim scans the namespace's newest
        # `size` rows, so they run once per max(64, size // 4) entries of this worker: a few
        # rows per request, not a whole ring every 64. Rows past `size` in between are never
        # read (entries() keeps the newest `size` per namespace).
        self.trim_every = max(64, size // 4)
        self._since_trim = 0

    def record(self, conn, entry, at_ms):
        """Store one entry (call inside a write transaction); return its seq, or None when
        the journal is off."""
        extra = None
        if "ids" in entry or "accepted" in entry or "request" in entry:
            extra = json.dumps({name: entry[name] for name in EXTRA if name in entry},
                               separators=(",", ":"))
        operation = entry.get("operationId")
        if self.size <= 0:
            conn.execute(_COUNT, (self._service, entry["namespace"], operation or "",
                                  entry["method"], "" if operation else entry["path"],
                                  entry["status"], 1 if entry.get("faultId") else 0,
                                  entry["durationMs"]))
            return None
        seq = conn.execute(_INSERT, (
            self._service, entry["namespace"], at_ms, entry["method"], entry["path"], operation,
            entry["status"], entry["durationMs"], entry.get("faultId"), extra)).lastrowid
        self._since_trim += 1
        if self._since_trim >= self.trim_every:
            self._since_trim = 0
            self._fold(conn)
            conn.execute(
                "DELETE FROM journal WHERE seq IN (SELECT seq FROM journal WHERE service=? AND"
                " namespace=? ORDER BY seq DESC LIMIT -1 OFFSET ?)",
                (self._service, entry["namespace"], self.size))
        return seq

    def _fold(self, conn):
        """Add the journal rows past the watermark to the metrics table; move the watermark."""
        params = {"service": self._service}
        conn.execute(_FOLD, params)
        conn.execute(_FOLDED, params)

    def entries(self, namespace=None, *, operation_id=None, status=None, since_ms=None,
                after=None, limit=None):
        """Return entries oldest first (the newest `size` per namespace), filtered."""
        sql = ("SELECT seq, at_ms, namespace, method, path, operation, status, duration_ms,"
               " fault, extra FROM journal WHERE service=?")
        params = [self._service]
        for condition, value in ((" AND namespace=?", namespace),
                                 (" AND operation=?", operation_id), (" AND status=?", status),
                                 (" AND at_ms>=?", since_ms), (" AND seq>?", after)):
            if value is not None:
                sql += condition
                params.append(value)
        rows = self._db.all(sql + " ORDER BY seq DESC", params)
        kept, per_namespace = [], {}
        for row in rows:
            ns = row[2]
            per_namespace[ns] = per_namespace.get(ns, 0) + 1
            if per_namespace[ns] <= self.size:
                kept.append(row)
        if limit is not None:
            kept = kept[:limit]
        return [self._entry(row) for row in reversed(kept)]

    def _entry(self, row):
        seq, at_ms, namespace, method, path, operation, status, duration, fault, extra = row
        entry = {"service": self._service, "namespace": namespace, "method": method,
                 "path": path}
        if operation is not None:
            entry["operationId"] = operation
        entry["unmatched"] = self._has_document and operation is None
        entry["status"] = status
        if fault is not None:
            entry["faultId"] = fault
        if extra is not None:
            entry.update(json.loads(extra))
        entry.update(durationMs=duration, seq=seq, at=iso(at_ms))
        return entry

    def clear(self, namespace=None):
        """Drop journal entries of a namespace, or of all (their counts stay in the metrics)."""
        with self._db.transaction() as conn:
            self._fold(conn)
            delete_scoped(conn.execute, "journal", self._service, namespace=namespace)

    def metrics(self, namespace=None):
        """Return the metrics report, global or of one namespace."""
        scope = "" if namespace is None else " AND namespace=:namespace"
        rows = self._db.all(
            "SELECT operation, method, path, status, count, faults, duration_ms FROM metrics"
            " WHERE service=:service" + scope + " UNION ALL SELECT " + _KEY + ", status, 1,"
            " fault IS NOT NULL, duration_ms FROM journal WHERE service=:service" + scope +
            " AND seq>" + _MARK, {"service": self._service, "namespace": namespace})
        requests = faults = 0
        total = 0.0
        by_operation, unmatched = {}, {}
        for operation, method, path, status, count, fault_count, duration in rows:
            requests += count
            faults += fault_count
            total += duration
            key = f"{operation or UNMATCHED} {status}"
            by_operation[key] = by_operation.get(key, 0) + count
            if not operation:
                unmatched[(method, path)] = unmatched.get((method, path), 0) + count
        return {
            "requests": requests,
            "byOperation": dict(sorted(by_operation.items())),
            "unmatched": [{"method": m, "path": p, "count": c} for (m, p), c in sorted(
                unmatched.items(), key=lambda item: (-item[1], f"{item[0][0]} {item[0][1]}"))],
            "faults": faults,
            "totalDurationMs": round(total, 2),
        }

    def clear_metrics(self, namespace=None):
        """Drop metric counters of a namespace, or of all (the journal itself stays)."""
        with self._db.transaction() as conn:
            self._fold(conn)
            delete_scoped(conn.execute, "metrics", self._service, namespace=namespace)
