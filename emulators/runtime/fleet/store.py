"""Fleet snapshots as rows (table `fleet_snapshots`, state/db.py): per service, a copy of one
namespace's main state (records, sequences, RNG, clock, its own fault rules with their counters
and fault RNG, its webhooks: endpoints, delivery log, armed delivery fault), plus the fleet
clock. A copy, not a checkpoint reference: it outlives a reset of
the namespace and the process that took it, until deleted."""
import json

SAVE = ("INSERT INTO fleet_snapshots (id, service, namespace, label, at_ms, state, fleet_now,"
        " fleet_frozen) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
# The hub's rows of a namespace (webhooks.py), ids and sequence numbers kept: a restored
# endpoint keeps its X-GitHub-Hook-ID and the delivery log its order. A snapshot is taken only
# when nothing is pending (quiescence), so the restored log holds no delivery to send again.
WEBHOOK_TABLES = {
    "webhook_endpoints": ("id", "url", "secret", "events"),
    "webhook_deliveries": ("seq", "id", "endpoint", "url", "secret", "event", "action",
                           "payload", "status", "attempts", "next_ms", "created_ms",
                           "delivered_ms", "response_status"),
    "webhook_faults": ("mode", "remaining"),
}
FIND = ("SELECT service, namespace, label, state, fleet_now, fleet_frozen FROM fleet_snapshots"
        " WHERE id=? ORDER BY service")


class Snapshot:
    """A stored fleet snapshot: namespace, label, fleet clock, and each service's state."""

    def __init__(self, snapshot_id, namespace, label, clock, states):
        self.id = snapshot_id
        self.namespace = namespace
        self.label = label
        self.clock = clock  # {"now", "frozen"} of the fleet clock when it was taken
        self.states = states  # {service: what capture() returned}


class FleetSnapshots:
    """Save, find and forget fleet snapshots in the shared database."""

    def __init__(self, db):
        self._db = db

    def save(self, conn, snapshot_id, service, namespace, label, at_ms, state, clock):
        """Store one service's part of a snapshot inside the caller's transaction."""
        conn.execute(SAVE, (snapshot_id, service, namespace, label, at_ms,
                            json.dumps(state, separators=(",", ":")), int(clock["now"]),
                            1 if clock["frozen"] else 0))

    def find(self, snapshot_id):
        """Return the Snapshot with this id, or None."""
        rows = self._db.all(FIND, (snapshot_id,))
        if not rows:
            return None
        _, namespace, label, _, now, frozen = rows[0]
        return Snapshot(snapshot_id, namespace, label, {"now": now, "frozen": bool(frozen)},
                        {service: json.loads(state) for service, _, _, state, *_ in rows})

    def forget(self, snapshot_id):
        """Delete every part of a snapshot; return how many rows went."""
        return self._db.execute("DELETE FROM fleet_snapshots WHERE id=?",
                                (snapshot_id,)).rowcount


def capture(conn, service, namespace, clock):
    """Return a service's main state in a namespace: records, sequences, RNG, its own fault
    rules (with counters) and fault RNG; `clock` is the namespace clock `{now, frozen}`."""
    key = namespace  # main's storage key (timeline.storage_key)
    records = [list(row) for row in conn.execute(
        "SELECT collection, id, seq, value FROM records WHERE service=? AND key=?",
        (service, key))]
    sequences = dict(conn.execute("SELECT name, value FROM sequences WHERE service=? AND key=?",
                                  (service, key)).fetchall())
    faults = [list(row) for row in conn.execute(
        "SELECT id, ord, rule, remaining, hits, seen FROM faults WHERE service=? AND"
        " namespace=? ORDER BY ord", (service, namespace))]
    return {"records": records, "sequences": sequences, "rng": _rng(conn, service, key),
            "clock": {"now": clock["now"], "frozen": clock["frozen"]}, "faults": faults,
            "faultRng": _rng(conn, service, "!faults:" + namespace),
            "webhooks": {table: [list(row) for row in conn.execute(
                f"SELECT {', '.join(columns)} FROM {table} WHERE service=? AND namespace=?",
                (service, namespace))] for table, columns in WEBHOOK_TABLES.items()}}


def restore(conn, service, namespace, state):
    """Put back what capture() returned (the clock is the caller's: Clocks.restore)."""
    key = namespace
    conn.execute("DELETE FROM records WHERE service=? AND key=?", (service, key))
    conn.executemany("INSERT INTO records (service, namespace, key, collection, id, seq, value)"
                     " VALUES (?, ?, ?, ?, ?, ?, ?)",
                     [(service, namespace, key, *row) for row in state["records"]])
    conn.execute("DELETE FROM sequences WHERE service=? AND key=?", (service, key))
    conn.executemany("INSERT INTO sequences (service, namespace, key, name, value) VALUES"
                     " (?, ?, ?, ?, ?)", [(service, namespace, key, name, value)
                                          for name, value in state["sequences"].items()])
    conn.execute("DELETE FROM faults WHERE service=? AND namespace=?", (service, namespace))
    conn.executemany("INSERT INTO faults (service, namespace, id, ord, rule, remaining, hits,"
                     " seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     [(service, namespace, *rule) for rule in state["faults"]])
    _set_rng(conn, service, namespace, key, state["rng"])
    _set_rng(conn, service, namespace, "!faults:" + namespace, state["faultRng"])
    webhooks = state.get("webhooks")
    if webhooks is not None:  # None: a snapshot stored before snapshots held webhooks
        for table, columns in WEBHOOK_TABLES.items():
            conn.execute(f"DELETE FROM {table} WHERE service=? AND namespace=?",
                         (service, namespace))
            conn.executemany(
                f"INSERT INTO {table} (service, namespace, {', '.join(columns)}) VALUES"
                f" (?, ?{', ?' * len(columns)})",
                [(service, namespace, *row) for row in webhooks[table]])


def _rng(conn, service, key):
    row = conn.execute("SELECT state FROM rngs WHERE service=? AND key=?",
                       (service, key)).fetchone()
    return None if row is None else row[0]


def _set_rng(conn, service, namespace, key, value):
    if value is None:  # never drawn: the seed's state again
        conn.execute("DELETE FROM rngs WHERE service=? AND key=?", (service, key))
    else:
        conn.execute("INSERT INTO rngs (service, namespace, key, state) VALUES (?, ?, ?, ?)"
                     " ON CONFLICT (service, key) DO UPDATE SET state=excluded.state",
                     (service, namespace, key, value))
