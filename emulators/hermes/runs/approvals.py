"""Approvals of dangerous commands in runs, as Hermes Agent 0.19.0 handles them (plain rules).

A run asks with an `approval.request` event: the command guard's payload, then the event
envelope, then the `choices` a person may answer. `POST /v1/runs/{id}/approval` decides it. When
nobody decides within the approval timeout, Hermes denies the command itself (it fails closed).
The tool call the approval gated then ends: `tool.completed`, with `error` true unless the
command was approved. backend.py applies these rules to the stored runs.
"""
import json

from .. import inputs
from ..errors import ApprovalNotActive, ApprovalNotPending, InvalidApprovalChoice, RunNotFound
from ..schemas import TERMINAL

CHOICES = ("once", "session", "always", "deny")
# Upstream accepts these words for `once`.
ALIASES = {"approve": "once", "approved": "once", "allow": "once"}
DEFAULT_TIMEOUT_S = 60  # Hermes' default `approvals.timeout`
# The dangerous-command guard's payload keys, in the order it builds them.
STATE = ("approval", "approval_due")  # kept on the run record, never shown to clients
GUARD_KEYS = ("command", "pattern_key", "pattern_keys", "description", "allow_permanent")
BLOCKED = ("BLOCKED: Command {reason}. The user has NOT consented to this action. Do NOT retry"
           " this command, do NOT rephrase it, and do NOT attempt the same outcome via a"
           " different command. Stop the current workflow and wait for the user to respond"
           " before taking any further destructive or irreversible action.{addendum}")


def guard_payload(scripted):
    """The approval payload as the guard sends it: its five keys first, the rest after.

    A script may give just `command` and `description`; the pattern key defaults to the
    description (as the guard's does) and `allow_permanent` to true.
    """
    description = scripted.get("description", scripted.get("pattern_key", ""))
    pattern_key = scripted.get("pattern_key", description)
    payload = {"command": scripted.get("command", ""), "pattern_key": pattern_key,
               "pattern_keys": scripted.get("pattern_keys", [pattern_key]),
               "description": description,
               "allow_permanent": scripted.get("allow_permanent", True)}
    payload.update((key, value) for key, value in scripted.items() if key not in GUARD_KEYS)
    return payload


def choices(payload):
    """Upstream `_approval_event_choices`: a Smart-DENY override may only be allowed once, and
    `allow_permanent: false` takes `always` away."""
    if payload.get("smart_denied"):
        return ["once", "deny"]
    if payload.get("allow_permanent") is False:
        return ["once", "session", "deny"]
    return list(CHOICES)


def parse_choice(body):
    """Return the choice a decision body names (aliases folded), or raise the upstream 400."""
    raw = inputs.py_str(body.get("choice", "")).strip().lower()
    choice = ALIASES.get(raw, raw)
    if choice not in CHOICES:
        raise InvalidApprovalChoice(
            "Invalid approval choice; expected one of: " + ", ".join(CHOICES))
    return choice


def tool_result(outcome, description="", output=""):
    """The terminal tool's result for an approved, denied or timed-out command, as JSON text.

    This is what the model is handed next, so a script can answer the way a model that echoes
    its tool result would (`outcome` is "approved", "denied" or "timed_out").
    """
    if outcome == "approved":
        note = f"Command required approval ({description}) and was approved by the user."
        return json.dumps({"output": output, "exit_code": 0, "error": None, "approval": note},
                          ensure_ascii=False)
    reason, addendum = {"denied": ("denied by user", ""),
                        "timed_out": ("timed out without user response",
                                      " Silence is not consent.")}[outcome]
    return json.dumps({"output": "", "exit_code": -1,
                       "error": BLOCKED.format(reason=reason, addendum=addendum),
                       "status": "blocked"}, ensure_ascii=False)


class ApprovalSteps:
    """The approval steps of HermesBackend (backend.py), which provides the store, the clock,
    `_hydrate`, `_observe`, `_mark` and `_persist`."""

    def approve(self, run_id, raw):
        """Decide a pending approval. Upstream checks in this order: the run exists (404), the
        body is JSON, the choice is valid (400), the run is still live (409 not active), an
        approval is pending (409 not pending)."""
        scope = self.scope()
        with self.instance.transaction():
            self._hydrate(run_id, scope)
        choice = parse_choice(inputs.json_object(raw, "Invalid JSON"))
        with self.instance.transaction():
            record, owner = self._hydrate(run_id, scope)
            if record["status"] in TERMINAL or not owner["local"]:
                raise ApprovalNotActive(run_id)
            if record["status"] != "waiting_for_approval" or "approval" not in record:
                raise ApprovalNotPending(run_id)
            record = self._mark(record, owner, "approval.responded",
                                {"choice": choice, "resolved": 1})
            self._end_tool(record, error=choice == "deny")
        return {"object": "hermes.run.approval_response", "run_id": run_id, "choice": choice,
                "resolved": 1}

    def _track_tool(self, run_id, owner, name, payload, now):
        """Remember the open tool call (an approval gates it); steer text reaches the agent
        after any tool event."""
        if not name.startswith("tool."):
            return owner
        owner = {**owner, "steer": []} if owner.get("steer") else dict(owner)
        if name == "tool.started":
            owner["open_tool"] = {"tool": payload["tool"], "at": now}
        else:
            owner.pop("open_tool", None)
        self.store.put_owner(run_id, owner)
        return owner

    def _end_tool(self, record, *, error, at=None):
        """Once its approval is decided or timed out, the gated tool call ends (tool.completed:
        an approved command ran, a refused one failed); nothing when no tool call is open."""
        owner = self.store.owner(record["run_id"])
        started = owner.get("open_tool")
        if started is None:
            return record
        at = self.now_s() if at is None else at
        event = ("tool.completed", {"tool": started["tool"],
                                    "duration": round(max(at - started["at"], 0), 3),
                                    "error": error})
        return self._observe(record, owner, {"status": record["status"]}, [event], at=at)

    def _lapse(self, record, owner):
        """Nobody decided in time: Hermes denies the command itself, silently (no
        approval.responded); the run stays `waiting_for_approval` until the model answers."""
        if not self._lapse_due(record):
            return record, owner
        lapsed = {key: value for key, value in record.items() if key not in STATE}
        self.store.put_run(lapsed)
        lapsed = self._end_tool(lapsed, error=True, at=record["approval_due"])
        if owner["keyed"]:
            self._persist(lapsed)
        return lapsed, self.store.owner(record["run_id"])

    def _lapse_due(self, record):
        due = record.get("approval_due")
        return (due is not None and record["status"] == "waiting_for_approval"
                and "approval" in record and self.now_s() >= due)

    def _lapse_for_stream(self, run_id):
        """Apply an approval timeout that falls due while a subscriber waits for events."""
        with self.instance.transaction():
            try:
                self._hydrate(run_id, self.scope())
            except RunNotFound:
                pass  # the scope changed under the stream: it just waits
            stream = self.store.stream(run_id)
            if stream is not None and (stream.get("approval_due") or 0) <= self.now_s():
                stream["approval_due"] = None
                self.store.put_stream(stream)
