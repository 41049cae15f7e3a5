"""Request bodies by kind: what a body's content type and bytes hold, and what each family of
operations makes of a body that is not a JSON object (GitHub differs by family).
"""
from emulators.runtime.bodies import loads

from .. import errors

NON_JSON_PULL = "Mockingbird does not model non-JSON pull request bodies"


def classify(content_type, raw):
    """Classify a request body by its content-type essence: (kind, parsed value or None).

    kind is `empty`, `json`, `invalid` (claims JSON, does not parse), `form`, `text` or `bytes`.
    """
    if not raw:
        return "empty", None
    if not content_type:
        return "bytes", None
    essence = content_type.split(";", 1)[0].strip().lower()
    if essence in ("application/json", "text/json") or essence.endswith("+json"):
        try:
            return "json", loads(raw.decode("utf-8"))
        except ValueError:  # not UTF-8, not JSON, or nested too deep
            return "invalid", None
    if essence == "application/x-www-form-urlencoded":
        return "form", None
    if essence.startswith("text/"):
        return "text", None
    return "bytes", None


def json_object(body):
    """The JSON object of a request body (`{}` when empty); 400 `Problems parsing JSON` for
    anything else, as GitHub answers a body that is not an object."""
    kind, value = body
    if kind == "empty":
        return {}
    if kind != "json" or not isinstance(value, dict):
        raise errors.ProblemsParsingJSON()
    return value


def object_or_empty(body):
    """Ref writes treat anything but a JSON object as `{}` (so a missing sha is 422)."""
    kind, value = body
    return value if kind == "json" and isinstance(value, dict) else {}


def git_object(body):
    """A git database or contents write: invalid JSON is 400, anything but an object `{}`."""
    kind, value = body
    if kind == "invalid":
        raise errors.ProblemsParsingJSON()
    return value if kind == "json" and isinstance(value, dict) else {}


def pull_object(body):
    """A pull request write: invalid JSON is 400, a non-object 422, a form, text or bytes body
    501, an empty body `{}`."""
    kind, value = body
    if kind == "invalid":
        raise errors.ProblemsParsingJSON()
    if kind == "json" and not isinstance(value, dict):
        raise errors.ValidationFailed(field="body")
    if kind in ("form", "text", "bytes"):
        raise errors.Unsupported(NON_JSON_PULL)
    return value if kind == "json" else {}


def json_value(body):
    """Any JSON value but null (`[]` when empty): labels come as an array or an object; 400
    for the rest."""
    kind, value = body
    if kind == "empty":
        return []
    if kind != "json" or value is None:
        raise errors.ProblemsParsingJSON()
    return value
