"""Request journal (metadata only) and metrics, both rows partitioned by namespace."""
import json

from .clock import iso

UNMATCHED = "(unmatched)"


class Journal:
    """Per-namespace ring of request records plus metric counters of one service."""

    def __init__(self, db, service, size=1000):
        self._db = db
        self._service = service
        self.size = size
        # The ring's trim scans the namespace's newest `size` rows, so it runs once per
        # max(64, size // 4) entries (by global seq): a few rows scanned per request, not a
        # whole ring every 64. The rows past `size` in between are never read (entries() keeps
        # the newest `size` per namespace).
        self.trim_every = max(64, size // 4)

    def record(self, conn, entry, at_ms):
        """Store one entry and count it; call inside a transaction."""
        namespace = entry["namespace"]
        unmatched = entry.get("unmatched", False)
        operation = entry.get("operationId") or ""
        path = entry["path"] if unmatched or not operation else ""
        conn.execute(
            "INSERT INTO metrics (service, namespace, operation, method, path, status, count,"
            " faults, duration_ms) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT (service,"
            " namespace, operation, method, path, status) DO UPDATE SET count=count+1,"
            " faults=faults+excluded.faults, duration_ms=duration_ms+excluded.duration_ms",
            (self._service, namespace, operation, entry["method"], path, entry["status"],
             1 if entry.get("faultId") else 0, entry["durationMs"]))
        if self.size <= 0:
            return None
        seq = conn.execute(
            "INSERT INTO journal (service, namespace, at_ms, operation, status, entry) VALUES"
            " (?, ?, ?, ?, ?, ?)", (self._service, namespace, at_ms, entry.get("operationId"),
                                    entry["status"], json.dumps(entry))).lastrowid
        if seq % self.trim_every == 0:
            conn.execute(
                "DELETE FROM journal WHERE seq IN (SELECT seq FROM journal WHERE service=? AND"
                " namespace=? ORDER BY seq DESC LIMIT -1 OFFSET ?)",
                (self._service, namespace, self.size))
        return seq

    def entries(self, namespace=None, *, operation_id=None, status=None, since_ms=None,
                after=None, limit=None):
        """Return entries oldest first (the newest `size` per namespace), filtered."""
        sql = "SELECT seq, at_ms, entry, namespace FROM journal WHERE service=?"
        params = [self._service]
        if namespace is not None:
            sql += " AND namespace=?"
            params.append(namespace)
        if operation_id is not None:
            sql += " AND operation=?"
            params.append(operation_id)
        if status is not None:
            sql += " AND status=?"
            params.append(status)
        if since_ms is not None:
            sql += " AND at_ms>=?"
            params.append(since_ms)
        if after is not None:
            sql += " AND seq>?"
            params.append(after)
        rows = self._db.all(sql + " ORDER BY seq DESC", params)
        kept, per_namespace = [], {}
        for seq, at_ms, text, ns in rows:
            per_namespace[ns] = per_namespace.get(ns, 0) + 1
            if per_namespace[ns] <= self.size:
                kept.append((seq, at_ms, text))
        if limit is not None:
            kept = kept[:limit]
        return [{**json.loads(text), "seq": seq, "at": iso(at_ms)}
                for seq, at_ms, text in reversed(kept)]

    def clear(self, namespace=None):
        """Drop journal entries of a namespace, or of all."""
        if namespace is None:
            self._db.execute("DELETE FROM journal WHERE service=?", (self._service,))
        else:
            self._db.execute("DELETE FROM journal WHERE service=? AND namespace=?",
                             (self._service, namespace))

    def metrics(self, namespace=None):
        """Return the metrics report, global or of one namespace."""
        sql = ("SELECT operation, method, path, status, count, faults, duration_ms FROM metrics"
               " WHERE service=?")
        params = [self._service]
        if namespace is not None:
            sql += " AND namespace=?"
            params.append(namespace)
        requests = faults = 0
        total = 0.0
        by_operation, unmatched = {}, {}
        for operation, method, path, status, count, fault_count, duration in self._db.all(
                sql, params):
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
        """Drop metric counters of a namespace, or of all."""
        if namespace is None:
            self._db.execute("DELETE FROM metrics WHERE service=?", (self._service,))
        else:
            self._db.execute("DELETE FROM metrics WHERE service=? AND namespace=?",
                             (self._service, namespace))
