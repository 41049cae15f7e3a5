"""Request journal (metadata only) and metrics, both rows partitioned by namespace.

A request's entry is appended to this process's journal segment file (segments.py): no SQLite
write, no writer lock in the request. Whoever reads the journal or the metrics first drains
every segment into the `journal` table (one row per entry, columns plus a JSON `extra` only for
the rare fields), folds the rows into the `metrics` table and trims each namespace's ring, in
one transaction: metrics are the `metrics` table plus the journal rows past the service's fold
watermark, summed in one read, so no request is ever counted twice or lost from the counts.
"""
import json
import threading

from .clock import iso
from .db import delete_scoped
from .segments import for_database

UNMATCHED = "(unmatched)"
EXTRA = ("ids", "accepted", "checkpoint", "request")  # `checkpoint` only comes with `accepted`

_INSERT = ("INSERT INTO journal (seq, service, namespace, at_ms, method, path, operation,"
           " status, duration_ms, fault, extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
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
# Entries a drain counts without keeping them (past a namespace's ring).
_COUNT = (
    "INSERT INTO metrics (service, namespace, operation, method, path, status, count, faults,"
    " duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (service, namespace,"
    " operation, method, path, status) DO UPDATE SET count=count+excluded.count,"
    " faults=faults+excluded.faults, duration_ms=duration_ms+excluded.duration_ms")
_TRIM = ("DELETE FROM journal WHERE seq IN (SELECT seq FROM journal WHERE service=? AND"
         " namespace=? ORDER BY seq DESC LIMIT -1 OFFSET ?)")


class Journal:
    """Per-namespace ring of request records plus metric counters of one service."""

    def __init__(self, db, service, size=1000, *, has_document=True):
        self._db = db
        self._service = service
        self.size = size
        self._has_document = has_document
        self._segments = for_database(db)
        self._segments.sizes[service] = size
        self._draining = threading.Lock()
        self._drainer = None  # the thread draining a full segment, joined by close()

    def record(self, entry, at_ms):
        """Append one entry to this process's segment (after a mutation's commit, before its
        answer leaves); return its seq. A full segment is drained by a thread of its own."""
        extra = None
        if "ids" in entry or "accepted" in entry or "request" in entry:
            extra = json.dumps({name: entry[name] for name in EXTRA if name in entry},
                               separators=(",", ":"))
        seq, full = self._segments.append((
            self._service, entry["namespace"], at_ms, entry["method"], entry["path"],
            entry.get("operationId"), entry["status"], entry["durationMs"],
            entry.get("faultId"), extra))
        if full and self._draining.acquire(blocking=False):
            self._drainer = threading.Thread(target=self._drain_in_background, daemon=True,
                                             name=f"emulators-journal-{self._service}")
            self._drainer.start()
        return seq

    def close(self):
        """Wait for a background drain to finish (what it drained is committed)."""
        drainer = self._drainer
        if drainer is not None and drainer is not threading.current_thread():
            drainer.join()

    def _drain_in_background(self):
        try:
            with self._db.transaction() as conn:
                self.drain(conn)
        finally:
            self._draining.release()

    def drain(self, conn=None):
        """Move every segment's entries into the journal table (inside the caller's write
        transaction, or one of its own); fold this service's metrics and trim its rings."""
        if conn is None:
            with self._db.transaction() as conn:
                return self.drain(conn)
        rows = self._segments.drain(conn)
        if not rows:
            return
        # Only the newest `size` of a namespace become rows; older ones are only counted.
        sizes, kept, counted, counts = self._segments.sizes, [], {}, {}
        for row in reversed(rows):  # [seq, service, namespace, at, method, path, operation,
            service, namespace = row[1], row[2]  # status, duration, fault, extra]
            n = counted.get((service, namespace), 0)
            if n < sizes.get(service, self.size):
                counted[service, namespace] = n + 1
                kept.append(row)
                continue
            operation = row[6]
            key = (service, namespace, operation or "", row[4],
                   row[5] if operation is None else "", row[7])
            count = counts.setdefault(key, [0, 0, 0.0])
            count[0] += 1
            count[1] += row[9] is not None
            count[2] += row[8]
        conn.executemany(_INSERT, kept)
        conn.executemany(_COUNT, [(*key, *count) for key, count in counts.items()])
        for service in sorted({row[1] for row in rows}):  # every service's: one may never read
            _fold(conn, service)
            for namespace in sorted({row[2] for row in rows if row[1] == service}):
                conn.execute(_TRIM, (service, namespace, max(sizes.get(service, self.size), 0)))

    def entries(self, namespace=None, *, operation_id=None, status=None, since_ms=None,
                after=None, limit=None, seq=None):
        """Return entries oldest first (the newest `size` per namespace), filtered (`seq`: the
        one entry of that number, as a service's request id header names it)."""
        self.drain()
        sql = ("SELECT seq, at_ms, namespace, method, path, operation, status, duration_ms,"
               " fault, extra FROM journal WHERE service=?")
        params = [self._service]
        for condition, value in ((" AND namespace=?", namespace),
                                 (" AND operation=?", operation_id), (" AND status=?", status),
                                 (" AND at_ms>=?", since_ms), (" AND seq>?", after),
                                 (" AND seq=?", seq)):
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
            self.drain(conn)
            _fold(conn, self._service)
            delete_scoped(conn.execute, "journal", self._service, namespace=namespace)

    def metrics(self, namespace=None):
        """Return the metrics report, global or of one namespace."""
        self.drain()
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
            self.drain(conn)
            _fold(conn, self._service)
            delete_scoped(conn.execute, "metrics", self._service, namespace=namespace)


def _fold(conn, service):
    """Add a service's journal rows past its watermark to the metrics table; move the mark."""
    params = {"service": service}
    conn.execute(_FOLD, params)
    conn.execute(_FOLDED, params)
