"""What clients send the runs API, checked before it touches any state.

Submission bodies of `/v1/runs`, session and idempotency keys, approval and steer bodies.
"""
import json

from . import canonical
from .errors import InvalidRequest, InvalidSessionKey, Unsupported


class Submission:
    """What the HTTP layer hands to admission: raw bytes and the two raw header values."""

    def __init__(self, raw, *, memory_header=None, key_header=None):
        self.raw = raw
        self.memory_header = memory_header
        self.key_header = key_header


class Admission:
    """The outcome of a submission: body, status, headers, and whether a run was created."""

    def __init__(self, run_id, status, *, replayed, memory_key, says_replayed=True):
        """`says_replayed=False`: the body has no `replayed` (0.19.0, which has no replays)."""
        self.run_id = run_id
        self.body = {"run_id": run_id, "status": status}
        if says_replayed:
            self.body["replayed"] = replayed
        self.headers = {}
        if replayed:
            self.headers["Idempotency-Replayed"] = "true"
        if memory_key:
            self.headers["X-Hermes-Session-Key"] = memory_key
        self.created = not replayed


def memory_key_of(header):
    """Strip and check X-Hermes-Session-Key (as Hermes does: 256 chars at most, no CR/LF/NUL)."""
    key = (header or "").strip()
    if any(ch in key for ch in "\r\n\0"):
        raise InvalidSessionKey("Invalid session key")
    if len(key) > 256:
        raise InvalidSessionKey("Session key too long")
    return key


def validate_submission(body):
    """Apply the `/v1/runs` body rules in order (Python truthiness)."""
    if not isinstance(body, dict):
        raise Unsupported("non-object submission roots are outside the verified subset")
    if "hosted_room_dispatch" in body or "_room_execution_policy" in body:
        raise Unsupported("hosted-room dispatch is outside the peer-run subset")
    raw_input = body.get("input")
    if not raw_input:
        raise InvalidRequest("Missing 'input' field")
    if isinstance(raw_input, list) and not isinstance(raw_input[-1], dict):
        raise Unsupported("malformed input elements are outside the verified subset")
    if isinstance(raw_input, str):
        message = raw_input
    elif isinstance(raw_input, list):
        message = raw_input[-1].get("content")
    else:
        message = ""
    if not message:
        raise InvalidRequest("No user message found in input")
    checked_history(body)


def checked_history(body):
    """Return the body's `conversation_history` ([] when absent), each entry role and content."""
    history = body.get("conversation_history")
    if not history:
        return []
    if not isinstance(history, list):
        raise InvalidRequest("'conversation_history' must be an array of message objects")
    for i, entry in enumerate(history):
        if not isinstance(entry, dict) or "role" not in entry or "content" not in entry:
            raise InvalidRequest(
                f"conversation_history[{i}] must have 'role' and 'content' fields")
    return history


def valid_idempotency_key(key):
    """True when a stripped key is 1-255 visible ASCII characters."""
    return len(key) <= 255 and all(33 <= ord(ch) <= 126 for ch in key)


def steer_text(body):
    """Return the steer text from `input`, `message` or `text` (string or content parts)."""
    raw = body.get("input") or body.get("message") or body.get("text") or ""
    if isinstance(raw, list):
        raw = " ".join(part if isinstance(part, str) else str(part.get("text", ""))
                       for part in raw if isinstance(part, (str, dict)))
    return (raw if isinstance(raw, str) else str(raw)).strip()


def json_object(raw, invalid_message):
    """Parse a request body that must be one JSON object (400 otherwise)."""
    try:
        body = canonical.parse_strict(canonical.decode_body(raw or b""))
    except canonical.InvalidJSONText:
        raise InvalidRequest(invalid_message) from None
    if not isinstance(body, dict):
        raise InvalidRequest("Request body must be a JSON object")
    return body


def py_str(value):
    """Python's str() of a JSON value, as upstream applies to `choice`."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return str(value)
    return value if isinstance(value, str) else json.dumps(value)
