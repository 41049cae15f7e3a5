"""HermesStore: the Hermes collections inside one instance's records (shared SQLite).

Collection names follow the reference emulator's so checkpoints, reset and the state
API see the same layout; the event buffers are ours (the reference has no events).
"""

import json

RUNS = "hermes-runs"                 # run cache: run_id -> public run record
OWNERS = "hermes-owners"             # run_id -> {scope, keyed, local, alive} (+ live steer text)
# "<scope>:<key>" -> {scope, key, fingerprint, runId, status, updatedAt, owner}
RESERVATIONS = "hermes-idempotency"
SCOPE = "hermes-scope"               # "current" -> {profile, identity}
RETENTION = "hermes-retention"       # "schedule" -> {nextSweep}
STREAMS = "hermes-streams"           # run_id -> {run_id, created_at, subscribed, delivered, …}
EVENTS = "hermes-events"             # "<run_id>:<seq>" -> {run_id, seq, frame, terminal}
RUN_SEQUENCE = "run_"
# The OpenAI-compatible surface (ours; the reference has none).
REPLIES = "hermes-replies"           # "<seq>" -> {seq, reply}: scripted replies, FIFO
# response_id -> {id, used, stored}: `stored` is JSON text, since records do not keep key order
RESPONSES = "hermes-responses"
CONVERSATIONS = "hermes-conversations"  # name -> {response_id}
RESULTS = "hermes-result-cache"      # Idempotency-Key -> {fingerprint, result, at}
REPLY_SEQUENCE = "reply"
USE_SEQUENCE = "response-use"        # LRU clock of the responses store


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

    # scripted replies (FIFO)
    def queue_reply(self, reply):
        seq = self.records.next_id(REPLY_SEQUENCE)
        self.records.put(REPLIES, f"{seq:010d}", {"seq": seq, "reply": reply})
        return seq

    def queued_replies(self):
        return self.records.list(REPLIES, order_by="seq")

    def take_reply(self):
        """Remove and return the oldest queued reply, or None (caller holds a transaction)."""
        first = self.records.list(REPLIES, order_by="seq", limit=1)
        if not first:
            return None
        self.records.delete(REPLIES, f"{first[0]['seq']:010d}")
        return first[0]["reply"]

    def clear_replies(self):
        for row in self.records.list(REPLIES):
            self.records.delete(REPLIES, f"{row['seq']:010d}")

    # stored responses (upstream ResponseStore: LRU by access, at most `limit` rows)
    def response(self, response_id):
        row = self.records.get(RESPONSES, response_id)
        return None if row is None else json.loads(row["stored"])

    def touch_response(self, stored):
        response_id = stored["response"]["id"]
        self.records.put(RESPONSES, response_id, {
            "id": response_id, "used": self.records.next_id(USE_SEQUENCE),
            "stored": json.dumps(stored)})

    def put_response(self, stored, *, limit):
        self.touch_response(stored)
        excess = self.records.count(RESPONSES) - limit
        if excess > 0:
            for old in self.records.list(RESPONSES, order_by="used", limit=excess):
                self.delete_response(old["id"])

    def delete_response(self, response_id):
        """Delete a stored response and the conversation names pointing at it; True if found."""
        for row in self.records.list(CONVERSATIONS, where={"response_id": response_id}):
            self.records.delete(CONVERSATIONS, row["name"])
        found = self.records.get(RESPONSES, response_id) is not None
        self.records.delete(RESPONSES, response_id)
        return found

    def conversation(self, name):
        row = self.records.get(CONVERSATIONS, name)
        return None if row is None else row["response_id"]

    def put_conversation(self, name, response_id):
        self.records.put(CONVERSATIONS, name, {"name": name, "response_id": response_id})

    # the non-stream idempotency cache of chat completions and responses
    def cached_result(self, key):
        return self.records.get(RESULTS, key)

    def put_cached_result(self, key, entry, *, limit, ttl, now):
        self.records.put(RESULTS, key, {**entry, "key": key, "at": now})
        for old in self.records.list(RESULTS):
            if now - old["at"] > ttl:
                self.records.delete(RESULTS, old["key"])
        excess = self.records.count(RESULTS) - limit
        if excess > 0:
            for old in self.records.list(RESULTS, order_by="at", limit=excess):
                self.records.delete(RESULTS, old["key"])
