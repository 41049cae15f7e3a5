"""HermesStore: the Hermes collections inside one instance's records (shared SQLite).

Collection names follow the reference (hermes-runs.md §1) so checkpoints, reset and the state
API see the same layout; the event buffers are ours (the reference has no events).
"""

RUNS = "hermes-runs"                 # run cache: run_id -> public run record
OWNERS = "hermes-owners"             # run_id -> {scope, keyed, local, alive} (+ live steer text)
# "<scope>:<key>" -> {scope, key, fingerprint, runId, status, updatedAt, owner}
RESERVATIONS = "hermes-idempotency"
SCOPE = "hermes-scope"               # "current" -> {profile, identity}
RETENTION = "hermes-retention"       # "schedule" -> {nextSweep}
STREAMS = "hermes-streams"           # run_id -> {run_id, created_at, subscribed, delivered, …}
EVENTS = "hermes-events"             # "<run_id>:<seq>" -> {run_id, seq, frame, terminal}
RUN_SEQUENCE = "run_"


class HermesStore:
    """Typed access to the Hermes rows of one storage key; callers own the transactions."""

    def __init__(self, records):
        self.records = records

    # run cache and owners
    def run(self, run_id):
        return self.records.get(RUNS, run_id)

    def put_run(self, record):
        self.records.put(RUNS, record["run_id"], record)

    def owner(self, run_id):
        return self.records.get(OWNERS, run_id)

    def put_owner(self, run_id, owner):
        self.records.put(OWNERS, run_id, owner)

    def forget_run(self, run_id):
        self.records.delete(RUNS, run_id)
        self.records.delete(OWNERS, run_id)

    def cached_runs(self):
        return self.records.list(RUNS)

    # durable reservations
    def reservation(self, scope, key):
        return self.records.get(RESERVATIONS, f"{scope}:{key}")

    def reservation_for_run(self, run_id):
        found = self.records.list(RESERVATIONS, where={"runId": run_id}, limit=1)
        return found[0] if found else None

    def put_reservation(self, reservation):
        self.records.put(RESERVATIONS, f"{reservation['scope']}:{reservation['key']}", reservation)

    def delete_reservation(self, reservation):
        self.records.delete(RESERVATIONS, f"{reservation['scope']}:{reservation['key']}")

    def reservations(self):
        return self.records.list(RESERVATIONS)

    # settings rows
    def scope_setting(self):
        return self.records.get(SCOPE, "current")

    def put_scope_setting(self, value):
        self.records.put(SCOPE, "current", value)

    def next_sweep(self):
        row = self.records.get(RETENTION, "schedule")
        return None if row is None else row["nextSweep"]

    def put_next_sweep(self, when):
        self.records.put(RETENTION, "schedule", {"nextSweep": when})

    def next_run_number(self):
        return self.records.next_id(RUN_SEQUENCE)

    # event buffers
    def stream(self, run_id):
        return self.records.get(STREAMS, run_id)

    def put_stream(self, stream):
        self.records.put(STREAMS, stream["run_id"], stream)

    def streams(self):
        return self.records.list(STREAMS)

    def append_event(self, stream, frame, *, terminal):
        seq = stream["last_seq"] + 1
        stream["last_seq"] = seq
        self.records.put(EVENTS, f"{stream['run_id']}:{seq:08d}",
                         {"run_id": stream["run_id"], "seq": seq, "frame": frame,
                          "terminal": terminal})
        self.put_stream(stream)

    def events_after(self, run_id, seq):
        return [event for event in self.records.list(EVENTS, where={"run_id": run_id},
                                                     order_by="seq")
                if event["seq"] > seq]

    def drop_stream(self, run_id):
        for event in self.records.list(EVENTS, where={"run_id": run_id}):
            self.records.delete(EVENTS, f"{run_id}:{event['seq']:08d}")
        self.records.delete(STREAMS, run_id)
