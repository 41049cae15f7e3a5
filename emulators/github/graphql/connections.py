"""Connections (`first`/`last`/`after`/`before`, `nodes`, `edges`, `pageInfo`, `totalCount`)
over a list the rules gave, as GitHub pages them: a cursor is the opaque position of an item."""
import base64

from .errors import Unprocessable

MAX_PAGE = 100  # GitHub's limit on `first` and `last`


def cursor(position):
    return base64.b64encode(f"cursor:v2:{position}".encode()).decode()


def _position(text):
    try:
        kind, _, number = base64.b64decode(text, validate=True).decode().rpartition(":")
        if kind == "cursor:v2":
            return int(number)
    except (ValueError, UnicodeDecodeError):
        pass
    raise Unprocessable(f"`{text}` does not appear to be a valid cursor.") from None


def page(items, first=None, last=None, after=None, before=None, *, total=None, field=""):
    """A connection over `items` (already objects of the node type)."""
    for name, value in (("first", first), ("last", last)):
        if value is not None and not 0 <= value <= MAX_PAGE:
            raise Unprocessable(f"Requesting {value} records on the `{field}` connection "
                                f"exceeds the `{name}` limit of {MAX_PAGE} records.")
    start, end = 0, len(items)
    if after is not None:
        start = max(start, _position(after) + 1)
    if before is not None:
        end = min(end, _position(before))
    window = list(range(start, max(start, end)))
    if first is not None:
        window = window[:first]
    if last is not None:
        window = window[-last:] if last else []
    edges = [{"cursor": cursor(i), "node": items[i]} for i in window]
    return {
        "nodes": [items[i] for i in window], "edges": edges,
        "totalCount": len(items) if total is None else total,
        "pageInfo": {"hasNextPage": bool(window) and window[-1] < end - 1,
                     "hasPreviousPage": bool(window) and window[0] > start,
                     "startCursor": edges[0]["cursor"] if edges else None,
                     "endCursor": edges[-1]["cursor"] if edges else None}}
