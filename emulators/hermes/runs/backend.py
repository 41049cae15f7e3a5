"""HermesBackend: the runs rules (admission, hydration, state machine, retention, events).

Everything lives in the instance's records (shared SQLite), and every multi-step change runs in
one `instance.transaction()`, so all gunicorn workers see one consistent set of runs.
"""
import math

from .. import canonical, inputs, schemas, sse
from . import approvals
from ..errors import (HermesError, IdempotencyConflict, InvalidIdempotencyKey, InvalidRequest,
                      InvalidSteerInput, RunNotActive, RunNotFound, SteerNotAccepting, TerminalRun,
                      Throttled, Unsupported)
from ..sessions import SessionBook, StoredResult, Turn, input_text
from ..schemas import TERMINAL
from ..store import HermesStore

DEFAULT_PROFILE = "default"
DEFAULT_IDENTITY = "unauthenticated-test-listener"
INTERRUPTED_ERROR = "The gateway restarted before this run settled."
CACHE_TTL = 3600           # upstream keeps settled statuses an hour
RESERVATION_TTL = 86400    # durable idempotency rows: 24 hours
SWEEP_EVERY = 60
STREAM_TTL = 300           # unsubscribed event buffers expire after five minutes (upstream)
EVICTABLE = frozenset({"completed", "failed", "cancelled"})
# What a client sees of a run. The pending approval (`approval`, `approval_due`) is kept beside
# these but never shown: upstream carries the command and choices only in the event stream.
RECORD_ORDER = ("object", "run_id", "status", "updated_at", "created_at", "session_id", "model",
                "last_event", "output", "usage", "error", "pending_steer")
ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
EFFECT_DROP = "hermes.accepted_drop"
EFFECT_THROTTLE = "hermes.throttled"
EFFECT_KEYS_IGNORED = "hermes.keys_ignored"
EFFECT_NO_STEER = "hermes.no_steer"
# An observation with one of these statuses means the agent has started (a run stopped or
# cancelled while still queued never did): it records the run's input in the session then.
AGENT_STARTED = frozenset({"running", "waiting_for_approval", "completed", "failed"})


def _mix(text):
    """32-bit FNV-1a over UTF-16 code units, then the reference's avalanche steps."""
    h = 0x811C9DC5
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h ^= data[i] | data[i + 1] << 8
        h = (h * 0x01000193) & 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    return h


def run_id_for(namespace, counter):
    """Return the deterministic run id of the `counter`-th admission in a namespace."""
    storage = "hermes" if namespace == "default" else f"hermes:{namespace}"
    seed = f"hermes-runs:{storage}:run_:{counter}"
    token, round_ = "", 0
    while len(token) < 16:
        h = _mix(f"{seed}:{round_}")
        for _ in range(5):
            if len(token) == 16:
                break
            token += ALPHABET[h % 62]
            h //= 62
        round_ += 1
    return "run_" + token.encode("ascii").hex()


def ordered(record):
    """Return a run record with its keys in upstream order (storage does not keep order)."""
    return {key: record[key] for key in RECORD_ORDER if key in record}


class HermesBackend(approvals.ApprovalSteps):
    """The runs rules over one emulator instance (namespace or branch)."""

    def __init__(self, instance):
        self.instance = instance
        self.store = HermesStore(instance.records)

    # clock and scope
    def now_s(self):
        return self.instance.now_ms() / 1000

    def scope_setting(self):
        default = {"profile": DEFAULT_PROFILE, "identity": DEFAULT_IDENTITY}
        return self.store.scope_setting() or default

    def scope(self):
        setting = self.scope_setting()
        return canonical.scope_hash(setting["profile"], setting["identity"])

    # retention
    def _sweep_cache(self, at):
        removed = 0
        for record in self.store.cached_runs():
            if record["status"] in EVICTABLE and at - record["updated_at"] > CACHE_TTL:
                self.store.forget_run(record["run_id"])
                removed += 1
        for stream in self.store.streams():
            if not stream["subscribed"] and at - stream["created_at"] > STREAM_TTL:
                self.store.drop_stream(stream["run_id"])
        return removed

    def _tick(self):
        """Evaluate the lazy 60-second sweep schedule."""
        now = self.now_s()
        due = self.store.next_sweep()
        if due is None:
            self.store.put_next_sweep(now + SWEEP_EVERY)
        elif now >= due:
            tick = due + SWEEP_EVERY * math.floor((now - due) / SWEEP_EVERY)
            self._sweep_cache(tick)
            self.store.put_next_sweep(tick + SWEEP_EVERY)

    def _prune(self):
        """Delete terminal reservations older than 24 hours."""
        horizon = self.now_s() - RESERVATION_TTL
        for reservation in self.store.reservations():
            if reservation["status"]["status"] in TERMINAL and reservation["updatedAt"] < horizon:
                self.store.delete_reservation(reservation)

    # hydration
    def _hydrate(self, run_id, scope):
        """Return the run's (record, owner), loaded back if need be, its timeouts applied."""
        return self._lapse(*self._load(run_id, scope))

    def _load(self, run_id, scope):
        record, owner = self.store.run(run_id), self.store.owner(run_id)
        if record is not None and owner is not None and owner["scope"] == scope:
            return record, owner
        reservation = self.store.reservation_for_run(run_id)
        if reservation is None or reservation["scope"] != scope:
            raise RunNotFound(run_id)
        record, owner = dict(reservation["status"]), dict(reservation["owner"])
        if not owner["alive"] and record["status"] not in TERMINAL:
            record.update(status="interrupted", error=INTERRUPTED_ERROR,
                          last_event="run.interrupted", updated_at=self.now_s())
            reservation.update(status=record, updatedAt=self.now_s())
            self.store.put_reservation(reservation)
        self.store.put_run(record)
        self.store.put_owner(run_id, owner)
        return record, owner

    def _visible(self, run_id, scope):
        """True when the run belongs to this scope, without hydrating it (events)."""
        owner = self.store.owner(run_id)
        if owner is not None and self.store.run(run_id) is not None:
            return owner["scope"] == scope
        reservation = self.store.reservation_for_run(run_id)
        return reservation is not None and reservation["scope"] == scope

    # observations, persistence and events
    def _emit(self, run_id, name, fields, *, terminal=False, at=None, due=None, lead=None):
        """Queue one event: `lead` keys, then the envelope (event, run_id, timestamp), then
        `fields` (upstream adds the envelope to an approval payload, after its keys)."""
        stream = self.store.stream(run_id)
        if stream is None:
            return  # nobody will ever read it (consumed, expired or lost on restart)
        if due is not None:
            stream["approval_due"] = due  # lets the stream's poll notice the timeout
        payload = {**(lead or {}), "event": name, "run_id": run_id,
                   "timestamp": self.now_s() if at is None else at, **fields}
        self.store.append_event(stream, sse.frame(payload), terminal=terminal)

    def _observe(self, record, owner, fields, events=(), at=None):
        """Apply one observation and publish the matching events."""
        run_id, previous = record["run_id"], record["status"]
        fields = dict(fields)
        timeout_s = fields.pop("approval_timeout_s", approvals.DEFAULT_TIMEOUT_S)
        status = fields["status"]
        now = self.now_s() if at is None else at
        new = {**record, **fields, "updated_at": now}
        progress = [name for name, _ in events if name != "message.delta"]
        if progress and "last_event" not in fields:
            new["last_event"] = progress[-1]  # upstream tool progress updates last_event
        asks = status == "waiting_for_approval" and (previous != status or "approval" in fields)
        if asks:
            new["approval"] = approvals.guard_payload(fields.get("approval", {}))
            new["approval_due"] = now + timeout_s
            new["last_event"] = fields.get("last_event", "approval.request")
        elif status != "waiting_for_approval":
            for key in approvals.STATE:
                new.pop(key, None)
        if status in TERMINAL or status == "stopping":
            new["last_event"] = fields.get("last_event", f"run.{status}")
        if status == "completed":
            new.setdefault("output", "")
            new.setdefault("usage", {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0})
            if "pending_steer" not in fields and owner.get("steer"):
                new["pending_steer"] = "\n".join(owner["steer"])
        elif status == "failed":
            new.setdefault("error", "agent run failed")
        elif status == "interrupted":
            new.setdefault("error", INTERRUPTED_ERROR)
        if status in AGENT_STARTED and not record.get("agent_started"):
            new["agent_started"] = True  # kept beside the record (durable), never shown
            self._begin_turn(new, owner, now)
        for name, payload in events:
            self._emit(run_id, name, payload, at=at)
            owner = self._track_tool(run_id, owner, name, payload, now)
            if name == "message.delta" and new.get("agent_started"):
                owner = {**owner, "streamed": owner.get("streamed", "") + payload["delta"]}
                self.store.put_owner(run_id, owner)
        if asks:
            self._emit(run_id, "approval.request", {"choices": approvals.choices(new["approval"])},
                       lead=new["approval"], due=new["approval_due"])
        if status in TERMINAL and previous not in TERMINAL:
            self._emit(run_id, f"run.{status}", terminal_fields(new), terminal=True)
            self._end_turn(new, owner, now)
        self.store.put_run(new)
        durable = {"output", "error", "usage", "pending_steer"}
        if owner["keyed"] and (status != previous or status in TERMINAL or durable & set(fields)):
            self._persist(new)
        return new

    def _begin_turn(self, record, owner, at):
        """The agent starts: the run's input is in its session at once (0.19.0 shows it about
        half a second after the 202, `finish_reason` null, long before the answer)."""
        if "input" in owner:
            SessionBook(self.instance).begin_turn(record["session_id"], owner["input"],
                                                  model=record["model"], at=at)

    def _end_turn(self, record, owner, at):
        """The agent ends: a completed run's answer follows its input; a run that ended
        otherwise keeps the text it had streamed, cut short (`finish_reason` null), or
        nothing (0.19.0)."""
        if not record.get("agent_started") or "input" not in owner:
            return
        book = SessionBook(self.instance)
        if record["status"] == "completed":
            book.finish_turn(record["session_id"],
                             StoredResult(record.get("output") or "", record.get("usage")),
                             model=record["model"], at=at)
        elif owner.get("streamed"):
            book.finish_turn(record["session_id"], StoredResult(owner["streamed"], None),
                             model=record["model"], finish_reason=None, at=at)

    def _persist(self, record):
        reservation = self.store.reservation_for_run(record["run_id"])
        if reservation is not None:
            reservation.update(status=record, updatedAt=self.now_s())
            self.store.put_reservation(reservation)

    # operations
    def submit(self, submission):
        """Admit a run or replay one; return an Admission."""
        memory_key = inputs.memory_key_of(submission.memory_header)
        # Hermes 0.19.0 does not read Idempotency-Key at all (preset hermes_run_keys_ignored):
        # every submission is a new run, and an invalid key is no error.
        honoured = self.instance.fault_effect(EFFECT_KEYS_IGNORED) is None
        key = (submission.key_header or "").strip() if honoured else ""
        if not submission.raw:
            raise InvalidRequest("Invalid JSON")
        try:
            body, fingerprint = self._validated(submission.raw, key, memory_key)
        except HermesError:
            with self.instance.transaction():
                self._tick()  # the sweep tick happens even when validation then fails
            raise
        scope = self.scope()
        if key:
            with self.instance.transaction():  # committed on its own: survives a 409
                self._tick()
                self._prune()
        with self.instance.transaction():
            if not key:
                self._tick()
            else:
                reservation = self.store.reservation(scope, key)
                if reservation is not None:
                    if reservation["fingerprint"] != fingerprint:
                        raise IdempotencyConflict()
                    record, _ = self._hydrate(reservation["runId"], scope)
                    return inputs.Admission(record["run_id"], record["status"],
                                            replayed=True, memory_key=memory_key)
            if self.instance.fault_effect(EFFECT_THROTTLE) is not None:
                # Upstream checks capacity only for a genuinely new run, after the replay lookup.
                raise Throttled()
            record = self._create(body, scope, key, fingerprint)
        return inputs.Admission(record["run_id"], "started", replayed=False, memory_key=memory_key,
                                says_replayed=honoured)

    @staticmethod
    def _validated(raw, key, memory_key):
        """Parse, key rules, body rules, fingerprint, in this order; no side effects."""
        try:
            body = canonical.parse_strict(canonical.decode_body(raw))
        except canonical.InvalidJSONText:
            raise InvalidRequest("Invalid JSON") from None
        if key and not inputs.valid_idempotency_key(key):
            raise InvalidIdempotencyKey()
        inputs.validate_submission(body)
        if not key:
            return body, None
        try:
            return body, canonical.fingerprint(body, memory_key)
        except canonical.LoneSurrogate:
            raise Unsupported(
                "lone Unicode surrogates cannot be fingerprinted by the pinned provider") from None

    def _create(self, body, scope, key, fingerprint):
        now = self.now_s()
        run_id = run_id_for(self.instance.namespace, self.store.next_run_number())
        record = {"object": "hermes.run", "run_id": run_id, "status": "queued",
                  "updated_at": now, "created_at": now,
                  "session_id": body.get("session_id") or run_id,
                  "model": body["model"] if "model" in body else "hermes-agent"}
        owner = {"scope": scope, "keyed": bool(key), "local": True, "alive": True,
                 "input": input_text(body["input"])}
        self.store.put_run(record)
        self.store.put_owner(run_id, owner)
        if key:
            self.store.put_reservation({"scope": scope, "key": key, "fingerprint": fingerprint,
                                        "runId": run_id, "status": record, "updatedAt": now,
                                        "owner": owner})
        self.store.put_stream({"run_id": run_id, "created_at": now, "subscribed": False,
                               "delivered": 0, "last_seq": 0})
        return record

    def get(self, run_id):
        """Return the visible run record."""
        due = self.store.next_sweep()
        if due is not None and self.now_s() < due:
            # Fast path without the write lock: nothing to sweep and the run is cached here.
            record, owner = self.store.run(run_id), self.store.owner(run_id)
            if (record is not None and owner is not None and owner["scope"] == self.scope()
                    and not self._lapse_due(record)):
                return ordered(record)
        with self.instance.transaction():
            self._tick()
            record, _ = self._hydrate(run_id, self.scope())
        return ordered(record)

    def stop(self, run_id):
        """Request a stop; return (body, accepted)."""
        with self.instance.transaction():
            self._tick()
            record, owner = self._hydrate(run_id, self.scope())
            if record["status"] in TERMINAL:
                return ordered(record), False
            if not owner["local"]:
                raise RunNotActive(run_id)
            self._observe(record, owner, {"status": "stopping", "last_event": "run.stopping"})
        return {"run_id": run_id, "status": "stopping"}, True

    def observe(self, run_id, body):
        """Script a lifecycle observation (plus scripted progress `events`)."""
        scope = self.scope()
        with self.instance.transaction():
            self._tick()
            self._hydrate(run_id, scope)  # a stale interruption persists even if the body fails
        fields, events = schemas.observation(body)
        with self.instance.transaction():
            record, owner = self._hydrate(run_id, scope)
            if record["status"] in TERMINAL:
                raise TerminalRun()
            return ordered(self._observe(record, owner, fields, events))

    def set_scope(self, body):
        setting = schemas.scope(body)
        with self.instance.transaction():
            self.store.put_scope_setting(setting)
        return {**setting, "simulated": True}

    def restart(self, body):
        """Logical gateway restart: cache and live transports go, reservations stay."""
        mode = schemas.restart(body)
        with self.instance.transaction():
            reservations = self.store.reservations()
            reserved = {reservation["runId"] for reservation in reservations}
            discarded = 0
            for record in self.store.cached_runs():
                discarded += record["run_id"] not in reserved
                self.store.forget_run(record["run_id"])
            for reservation in reservations:
                reservation["owner"] = {**reservation["owner"], "local": False,
                                        "alive": mode == "alive"}
                self.store.put_reservation(reservation)
            for stream in self.store.streams():
                self.store.drop_stream(stream["run_id"])
            self.store.put_next_sweep(self.now_s() + SWEEP_EVERY)
        return {"owner": mode, "retained": len(reservations), "discarded": discarded,
                "simulated": True}

    def sweep(self):
        with self.instance.transaction():
            removed = self._sweep_cache(self.now_s())
        return {"cacheRemoved": removed, "simulated": True}

    def steer(self, run_id, raw):
        """Accept steer text for a running run (`/steer`, as Hermes' newer source has it)."""
        scope = self.scope()
        with self.instance.transaction():
            record, owner = self._hydrate(run_id, scope)
        if record["status"] != "running" or not owner["local"]:
            raise SteerNotAccepting(run_id)
        body = inputs.json_object(raw, "Invalid JSON in request body")
        text = inputs.steer_text(body)
        if not text:
            raise InvalidSteerInput()
        with self.instance.transaction():
            record, owner = self._hydrate(run_id, scope)
            if record["status"] != "running" or not owner["local"]:
                raise SteerNotAccepting(run_id)
            owner = {**owner, "steer": [*owner.get("steer", []), text]}
            self.store.put_owner(run_id, owner)
            self._mark(record, owner, "run.steered", {"accepted": True})
        return {"object": "hermes.run.steer", "run_id": run_id, "accepted": True}

    def _mark(self, record, owner, name, fields):
        """Upstream `_mark_run_event`: the run is running again, last_event set, event queued."""
        record = self._observe(record, owner, {"status": "running", "last_event": name})
        self._emit(record["run_id"], name, fields)
        return record

    # event streams
    def open_stream(self, run_id):
        """Claim the run's event buffer for a subscriber; None when there is none (yet)."""
        with self.instance.transaction():
            if not self._visible(run_id, self.scope()):
                raise RunNotFound(run_id)
            stream = self.store.stream(run_id)
            if stream is None:
                return None
            if stream["subscribed"]:
                # Upstream hands a second subscriber the same queue, whose events the first
                # subscriber's handler still takes (and loses, when its client is gone): the
                # newcomer hears nothing but keepalives and is never closed.
                return {**stream, "orphan": True}
            if self.now_s() - stream["created_at"] > STREAM_TTL:
                self.store.drop_stream(run_id)
                return None
            stream["subscribed"] = True
            self.store.put_stream(stream)
        # The stream outlives its request, whose clock reading the runtime keeps: from now on
        # read the clock afresh, or a moved emulator clock would never time an approval out.
        self.instance.version = None
        return stream

    def take_events(self, run_id):
        """Return undelivered frames and the stream state: "open", "terminal" or "gone"."""
        peek = self.store.stream(run_id)  # cheap unlocked look first: most polls find nothing
        if peek is not None and peek.get("approval_due") is not None:
            if self.now_s() >= peek["approval_due"]:
                self._lapse_for_stream(run_id)
                peek = None
        if peek is not None and peek["last_seq"] == peek["delivered"]:
            return [], "open"
        with self.instance.transaction():
            stream = self.store.stream(run_id)
            if stream is None:
                return [], "gone"
            events = self.store.events_after(run_id, stream["delivered"])
            if events:
                stream["delivered"] = events[-1]["seq"]
                self.store.put_stream(stream)
            terminal = any(event["terminal"] for event in events)
            return [event["frame"] for event in events], "terminal" if terminal else "open"

    def close_stream(self, run_id):
        """Drop the run's transport once its subscriber is gone (upstream behaviour)."""
        with self.instance.transaction():
            self.store.drop_stream(run_id)


def terminal_fields(record):
    """Payload of the run.<status> event, in upstream key order."""
    status = record["status"]
    if status == "completed":
        fields = {"output": record["output"], "usage": record["usage"]}
        if record.get("pending_steer"):
            fields["pending_steer"] = record["pending_steer"]
        return fields
    if status in ("failed", "interrupted"):
        return {"error": record["error"]}
    return {}
