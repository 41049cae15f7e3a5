"""Conditional requests as GitHub answers them: a weak `ETag` made from what an answer shows,
`Last-Modified` from a resource's `updated_at`, and whether `If-None-Match` or
`If-Modified-Since` still match (then the answer is a 304).

The ETag digests the body's bytes, the media type asked for and the credential (GitHub's answers
vary by `Accept` and `Authorization`): an answer that shows anything else has another ETag, in
every worker and namespace, with nothing stored. Plain functions; the middleware applies them.
"""
import functools
import hashlib
import re
from datetime import datetime, timezone
from email.utils import format_datetime, parsedate_to_datetime

GITHUB_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)Z\Z")


def digest(data):
    """The digest of a body's bytes (made once per cached answer: resources.py)."""
    return hashlib.sha256(data).digest()


def etag(body_digest, accept, token):
    """The weak ETag of a body (by its digest) asked for with `accept`, by `token` (or None)."""
    mixed = hashlib.sha256(body_digest)
    mixed.update(b"\0" + (accept or "").strip().lower().encode())
    mixed.update(b"\0" + (token or "").encode())
    return f'W/"{mixed.hexdigest()}"'


def matches(if_none_match, tag):
    """Tell whether an `If-None-Match` value names `tag` (weak comparison: `W/` aside) or is
    `*`."""
    wanted = tag.removeprefix("W/")
    for item in if_none_match.split(","):
        item = item.strip()
        if item == "*" or item.removeprefix("W/") == wanted:
            return True
    return False


def last_modified(body):
    """`Last-Modified` of a resource whose answer carries `updated_at` (GitHub's
    `2023-11-14T22:13:20Z`), or None (lists, and resources without one)."""
    if not isinstance(body, dict) or not isinstance(body.get("updated_at"), str):
        return None
    return _http_date(body["updated_at"])


@functools.lru_cache(maxsize=4096)
def _http_date(github_time):
    """GitHub's time as an HTTP date (kept: a resource is read far more often than it moves,
    and strptime costs more than the rest of a cached answer)."""
    match = GITHUB_TIME.match(github_time)
    if match is None:
        return None
    try:
        moment = datetime(*map(int, match.groups()), tzinfo=timezone.utc)
    except ValueError:
        return None
    return format_datetime(moment, usegmt=True)


def unmodified_since(if_modified_since, modified):
    """Tell whether a resource last modified at `modified` (an HTTP date) is unchanged since
    the `If-Modified-Since` date (False for a date that does not parse)."""
    try:
        since = parsedate_to_datetime(if_modified_since)
    except (TypeError, ValueError, IndexError):
        return False
    if since.tzinfo is None:
        return False
    return parsedate_to_datetime(modified) <= since
