"""Request parsing for the GitHub provider: body classification and the `pulls/list` query.

Plain functions rather than marshmallow schemas: the reference's checks are ordered (first failure
wins, each with its own status), which a declarative schema would not preserve.
"""
import re
from dataclasses import dataclass

from emulators.runtime.bodies import loads

from . import errors

_POSITIVE = re.compile(r"^[1-9][0-9]*\Z")
MAX_SAFE_INTEGER = 2 ** 53 - 1


def classify_body(content_type, raw):
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


def json_object_or_empty(parsed):
    """Ref writes treat anything but a JSON object as `{}` (so a missing sha is 422)."""
    kind, value = parsed
    return value if kind == "json" and isinstance(value, dict) else {}


# GitHub's length limits on text fields, in characters
MAX_BODY = 65536  # issue, comment and review bodies
MAX_TITLE = 256  # issue titles
MAX_OUTPUT = 65535  # a check run's output summary and text
MAX_DESCRIPTION = 140  # a commit status's description
MAX_LABEL = 50  # a label's name (its description: 100)


def check_length(value, limit, op, resource, field):
    """Refuse text past GitHub's limit with its 422 (`body is too long (maximum is 65536
    characters)`)."""
    if isinstance(value, str) and len(value) > limit:
        raise errors.ValidationFailed(op, resource=resource, field=field,
                                      custom=f"{field} is too long (maximum is {limit} "
                                             "characters)")


def json_object(parsed, op):
    """The JSON object of a request body (`{}` when empty); 400 `Problems parsing JSON` for
    anything else, as GitHub answers a body that is not an object."""
    kind, value = parsed
    if kind == "empty":
        return {}
    if kind != "json" or not isinstance(value, dict):
        raise errors.ProblemsParsingJSON(op)
    return value


@dataclass(frozen=True)
class PullListQuery:
    """A validated `pulls/list` query."""

    state: str
    sort: str
    direction: str
    page: int
    per_page: int
    base: str | None
    head: str | None


def first_values(pairs):
    """Keep the first value of each query parameter, like `URLSearchParams.get`."""
    values = {}
    for name, value in pairs:
        values.setdefault(name, value)
    return values


def pull_list_query(pairs):
    """Validate `state`, `sort`, `direction`, `page`, `per_page`, in this order (first bad wins)."""
    q = first_values(pairs)
    op = "pulls/list"
    state = q.get("state", "open")
    if state not in ("open", "closed", "all"):
        raise errors.ValidationFailed(op, field="state")
    sort = q.get("sort", "created")
    if sort in ("popularity", "long-running"):
        raise errors.Unsupported(f"Mockingbird does not model {sort} sorting")
    if sort not in ("created", "updated"):
        raise errors.ValidationFailed(op, field="sort")
    direction = q.get("direction", "desc" if sort == "created" else "asc")
    if direction not in ("asc", "desc"):
        raise errors.ValidationFailed(op, field="direction")
    page = _positive(q, "page", 1)
    per_page = min(_positive(q, "per_page", 30), 100)
    return PullListQuery(state, sort, direction, page, per_page, q.get("base"), q.get("head"))


def page_query(pairs):
    """Return (page, per_page) for listings that, like GitHub's, ignore unusable values."""
    q = first_values(pairs)

    def number(name, default):
        raw = q.get(name, "")
        return int(raw) if _POSITIVE.match(raw) and int(raw) <= MAX_SAFE_INTEGER else default
    return number("page", 1), min(number("per_page", 30), 100)


def page_of(items, pairs):
    """Return (the page of `items` a query asks for, that page's number, the last page's)."""
    page, per_page = page_query(pairs)
    start = (page - 1) * per_page
    return items[start:start + per_page], page, -(-len(items) // per_page)


def _positive(q, name, default):
    if name not in q:
        return default
    raw = q[name]
    if not _POSITIVE.match(raw) or int(raw) > MAX_SAFE_INTEGER:
        raise errors.ValidationFailed("pulls/list", field=name)
    return int(raw)
