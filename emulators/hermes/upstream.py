"""Upstream-compatible helpers of the OpenAI-compatible surface: how the real server coerces
flags, flattens content, fingerprints requests and names sessions (as Hermes 0.19.0 does).

Plain functions over parsed JSON, beside `canonical.py` (the runs API's JSON rules).
"""
import hashlib
import json

TRUE_STRINGS = {"1", "true", "yes", "on"}   # upstream _coerce_request_bool
FALSE_STRINGS = {"0", "false", "no", "off"}
TEXT_PARTS = {"text", "input_text", "output_text"}
IMAGE_PARTS = {"image_url", "input_image"}


def json_type(value):
    """Name a parsed JSON value's type as OpenAI's errors do."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "a string" if isinstance(value, str) else "an array"


def coerce_bool(value, default):
    """Upstream `_coerce_request_bool`: bools, bool-ish strings and numbers; else the default."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        return True if text in TRUE_STRINGS else False if text in FALSE_STRINGS else default
    if isinstance(value, (int, float)):
        return bool(value)
    return default


def flatten(content):
    """Plain text of message content (string, or a list of text parts), as upstream flattens."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, str) and item:
                parts.append(item)
            elif isinstance(item, dict) and str(item.get("type") or "").lower() in TEXT_PARTS:
                if item.get("text"):
                    parts.append(str(item["text"]))
            elif isinstance(item, list):
                parts.append(flatten(item))
        return "\n".join(part for part in parts if part)
    return str(content)


def normalize(content):
    """Text-only content becomes a string; content with images stays a list of parts."""
    if isinstance(content, list) and any(
            isinstance(part, dict) and str(part.get("type") or "").lower() in IMAGE_PARTS
            for part in content):
        return content
    return flatten(content)


def visible(content):
    """Upstream `_content_has_visible_payload`: any non-blank text, or an image part."""
    if isinstance(content, str):
        return bool(content.strip())
    return isinstance(content, list) and any(
        isinstance(part, dict) and (
            str(part.get("type") or "").lower() in IMAGE_PARTS
            or (str(part.get("type") or "").lower() in TEXT_PARTS
                and str(part.get("text") or "").strip()))
        for part in content)


def fingerprint(body, keys):
    """Upstream `_make_request_fingerprint`: sha256 of the repr of the selected body keys."""
    return hashlib.sha256(repr({key: body.get(key) for key in keys}).encode("utf-8")).hexdigest()


def derive_session_id(system_prompt, first_user):
    """Upstream `_derive_chat_session_id`: api- + 16 hex of sha256("<system>\\n<first user>")."""
    seed = f"{system_prompt or ''}\n{first_user}"
    return "api-" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:16]


def path_unsafe(value):
    """Upstream gateway.session._is_path_unsafe: traversal, separators or a drive prefix."""
    if ".." in value or "/" in value or "\\" in value:
        return True
    return len(value) >= 2 and value[0].isalpha() and value[1] == ":"


def words(text):
    return len(text.split())


def chat_usage(usage):
    return {"prompt_tokens": usage.get("input_tokens", 0),
            "completion_tokens": usage.get("output_tokens", 0),
            "total_tokens": usage.get("total_tokens", 0)}


def arguments_text(step):
    arguments = step.get("arguments", {})
    return json.dumps(arguments) if isinstance(arguments, dict) else str(arguments)


def result_text(step):
    result = step.get("result", "")
    return result if isinstance(result, str) else json.dumps(result)


def message_item(text):
    return {"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": text}]}
