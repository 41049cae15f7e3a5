"""Validation of the Hermes admin control bodies (observe, scope, restart) with exact messages.

The messages and their order are part of the wire contract, so checks
are written out in order; marshmallow covers the plain-shaped bodies (scope, restart).
"""
from marshmallow import RAISE, Schema, ValidationError, fields, validate

from .errors import InvalidRequest

STATUSES = ("queued", "running", "waiting_for_approval", "stopping",
            "completed", "failed", "cancelled", "interrupted")
TERMINAL = frozenset({"completed", "failed", "cancelled", "interrupted"})
OBSERVE_FIELDS = frozenset({"status", "last_event", "output", "usage", "error", "approval",
                            "approval_timeout_s", "pending_steer", "events"})
MAX_SAFE = 2 ** 53 - 1
# Progress events a test may script; lifecycle events (approval.*, run.*) follow from `status`.
PROGRESS_EVENTS = ("message.delta", "reasoning.available", "tool.started", "tool.completed",
                   "subagent.start", "subagent.complete")
ENVELOPE_KEYS = frozenset({"event", "run_id", "timestamp"})


def _bad(message):
    return InvalidRequest("observe: " + message)


def _count(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # the reference (JavaScript) cannot tell 2.0 from 2
    if isinstance(value, int) and 0 <= value <= MAX_SAFE:
        return value
    return None


def _usage(value):
    keys = ("input_tokens", "output_tokens", "total_tokens")
    if not isinstance(value, dict) or set(value) != set(keys):
        raise _bad("usage requires three nonnegative token counts")
    counts = {key: _count(value[key]) for key in keys}
    if any(count is None for count in counts.values()):
        raise _bad("usage requires three nonnegative token counts")
    return counts


def _event(item):
    """Return the payload fields of one scripted progress event, in wire order."""
    if not isinstance(item, dict) or item.get("event") not in PROGRESS_EVENTS:
        raise _bad("events must be objects whose event is one of " + ", ".join(PROGRESS_EVENTS))
    name = item["event"]
    rest = {k: v for k, v in item.items() if k not in ENVELOPE_KEYS}
    if name == "message.delta":
        if not isinstance(rest.get("delta"), str) or set(rest) != {"delta"}:
            raise _bad("message.delta requires exactly a string delta")
        return name, {"delta": rest["delta"]}
    if name == "reasoning.available":
        text = rest.get("text", "")
        if not isinstance(text, str) or set(rest) - {"text"}:
            raise _bad("reasoning.available takes a string text")
        return name, {"text": text}
    if name == "tool.started":
        preview = rest.get("preview")
        if (not isinstance(rest.get("tool"), str) or not isinstance(preview, (str, type(None)))
                or set(rest) - {"tool", "preview"}):
            raise _bad("tool.started requires a string tool and an optional string preview")
        return name, {"tool": rest["tool"], "preview": preview}
    if name == "tool.completed":
        duration, error = rest.get("duration", 0), rest.get("error", False)
        if (not isinstance(rest.get("tool"), str) or isinstance(duration, bool)
                or not isinstance(duration, (int, float)) or duration < 0
                or not isinstance(error, bool) or set(rest) - {"tool", "duration", "error"}):
            raise _bad("tool.completed requires a string tool, a nonnegative duration and a"
                       " boolean error")
        return name, {"tool": rest["tool"], "duration": round(duration, 3), "error": error}
    return name, rest  # subagent.* carry free lifecycle fields upstream


def observation(body):
    """Validate an observe body; return `(fields, events)` or raise InvalidRequest."""
    if not isinstance(body, dict) or body.get("status") not in STATUSES:
        raise _bad("expected a supported status")
    if set(body) - OBSERVE_FIELDS:
        raise _bad("unsupported field")
    for name in ("last_event", "output", "error", "pending_steer"):
        if name in body and not isinstance(body[name], str):
            raise _bad(f"{name} must be a string")
    status = body["status"]
    if any(name in body for name in ("output", "usage", "pending_steer")) and status != "completed":
        raise _bad("result fields require completed status")
    if "error" in body and status not in ("failed", "interrupted"):
        raise _bad("error requires failed or interrupted status")
    if "approval" in body and (status != "waiting_for_approval"
                               or not isinstance(body["approval"], dict)):
        raise _bad("approval requires waiting_for_approval and an object")
    if "approval_timeout_s" in body:
        timeout = body["approval_timeout_s"]
        if (status != "waiting_for_approval" or isinstance(timeout, bool)
                or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_SAFE):
            raise _bad("approval_timeout_s requires waiting_for_approval and a positive number")
    result = {k: v for k, v in body.items() if k != "events"}
    if "usage" in body:
        result["usage"] = _usage(body["usage"])
    events = body.get("events", [])
    if not isinstance(events, list):
        raise _bad("events must be an array")
    return result, [_event(item) for item in events]


class _Scope(Schema):
    class Meta:
        unknown = RAISE

    profile = fields.String(required=True, validate=validate.Regexp(r"^[^\x00]+\Z"))
    identity = fields.String(required=True, validate=validate.Regexp(r"^[^\x00]+\Z"))


class _Restart(Schema):
    class Meta:
        unknown = RAISE

    owner = fields.String(required=True, validate=validate.OneOf(("stale", "alive")))


def scope(body):
    """Validate a scope control body: exactly a nonempty profile and identity."""
    try:
        if not isinstance(body, dict):
            raise ValidationError("not an object")
        return _Scope().load(body)
    except ValidationError:
        raise InvalidRequest(
            "scope: expected nonempty synthetic profile and identity without NUL") from None


def restart(body):
    """Validate a restart control body; return "stale" or "alive"."""
    try:
        if not isinstance(body, dict):
            raise ValidationError("not an object")
        return _Restart().load(body)["owner"]
    except ValidationError:
        raise InvalidRequest("restart: owner must be explicitly stale or alive") from None


REPLY_FIELDS = frozenset({"text", "deltas", "reasoning", "usage", "failed", "partial",
                          "completed", "error", "exception", "delay_ms"})
TOOL_FIELDS = frozenset({"tool", "id", "arguments", "result", "emoji", "label"})
USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens")
MAX_DELAY_MS = 10_000


def _reply_bad(message):
    return InvalidRequest("replies: " + message)


def _tool_step(item, index):
    if set(item) - TOOL_FIELDS or not isinstance(item.get("tool"), str) or not item["tool"]:
        raise _reply_bad(f"deltas[{index}] must be a string or a tool object"
                         " {tool, id?, arguments?, result?, emoji?, label?}")
    for name in ("id", "emoji", "label"):
        if name in item and not isinstance(item[name], str):
            raise _reply_bad(f"deltas[{index}].{name} must be a string")
    if "arguments" in item and not isinstance(item["arguments"], (dict, str)):
        raise _reply_bad(f"deltas[{index}].arguments must be an object or a string")
    return dict(item)


def reply(body):
    """Validate one scripted reply of the chat/responses surface; return a clean dict."""
    if not isinstance(body, dict):
        raise _reply_bad("a reply must be an object")
    unknown = sorted(set(body) - REPLY_FIELDS)
    if unknown:
        raise _reply_bad("unsupported field(s): " + ", ".join(unknown))
    for name in ("text", "reasoning", "error", "exception"):
        if name in body and not isinstance(body[name], str):
            raise _reply_bad(f"{name} must be a string")
    for name in ("failed", "partial", "completed"):
        if name in body and not isinstance(body[name], bool):
            raise _reply_bad(f"{name} must be a boolean")
    clean = dict(body)
    if "deltas" in body:
        if not isinstance(body["deltas"], list):
            raise _reply_bad("deltas must be an array")
        clean["deltas"] = []
        for index, item in enumerate(body["deltas"]):
            if isinstance(item, str):
                clean["deltas"].append(item)
            elif isinstance(item, dict):
                clean["deltas"].append(_tool_step(item, index))
            else:
                raise _reply_bad(f"deltas[{index}] must be a string or a tool object")
    if "usage" in body:
        usage = body["usage"]
        if (not isinstance(usage, dict) or set(usage) != set(USAGE_KEYS)
                or any(_count(usage[key]) is None for key in USAGE_KEYS)):
            raise _reply_bad("usage requires three nonnegative token counts")
        clean["usage"] = {key: _count(usage[key]) for key in USAGE_KEYS}
    if "delay_ms" in body:
        delay = body["delay_ms"]
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not (
                0 <= delay <= MAX_DELAY_MS):
            raise _reply_bad(f"delay_ms must be a number between 0 and {MAX_DELAY_MS}")
    return clean


def replies(body):
    """Validate a replies control body: one reply, or `{"replies": [reply, …]}`."""
    if isinstance(body, dict) and set(body) == {"replies"}:
        if not isinstance(body["replies"], list) or not body["replies"]:
            raise _reply_bad("replies must be a non-empty array")
        return [reply(item) for item in body["replies"]]
    return [reply(body)]
