"""Strict JSON parsing and the Python-compatible canonical JSON behind idempotency fingerprints.

Hermes (Python) fingerprints `json.dumps({...}, sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`; running the same stdlib calls here gives byte-identical canonical text.
"""
import hashlib
import json

from emulators.runtime.bodies import loads


class InvalidJSONText(ValueError):
    """The body is not strict RFC 8259 JSON."""


class LoneSurrogate(ValueError):
    """A string holds an unpaired UTF-16 surrogate, which UTF-8 cannot encode."""


def _reject_constant(name):
    # Kept from the reference emulator: NaN/Infinity literals are invalid JSON (see
    # emulators/hermes/README.md, "Deliberate differences from the reference emulator").
    raise InvalidJSONText(f"non-standard literal {name}")


def decode_body(raw):
    """Decode bytes as the reference does: UTF-8, bad bytes to U+FFFD, one BOM dropped."""
    text = raw.decode("utf-8", "replace")
    return text[1:] if text.startswith("\ufeff") else text


def parse_strict(text):
    """Parse JSON text strictly (no NaN/Infinity, no trailing commas); duplicate keys: last wins."""
    if not text.strip():
        raise InvalidJSONText("empty")
    try:
        return loads(text, parse_constant=_reject_constant)
    except ValueError as exc:  # not JSON, or nested past the runtime's limit
        raise InvalidJSONText(str(exc)) from exc


def canonical(value):
    """Return the canonical text Python's stdlib produces for `value` (sorted keys, compact)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(body, memory_key):
    """Return the lowercase hex SHA-256 fingerprint of a submission, as Hermes computes it."""
    text = canonical({"body": body, "gateway_session_key": memory_key or ""})
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LoneSurrogate(str(exc)) from exc
    return hashlib.sha256(data).hexdigest()


def scope_hash(profile, identity):
    """Return the scope hash of a synthetic (profile, identity) pair."""
    return hashlib.sha256((profile + "\0" + identity).encode("utf-8")).hexdigest()
