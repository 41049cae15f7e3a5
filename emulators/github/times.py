"""GitHub's timestamps: UTC to the second, `2011-01-26T19:01:12Z`, in every answer and payload.

The runtime clock counts milliseconds and its admin plane shows them; GitHub never sends a
fraction of a second, so every time the GitHub service shows passes through here.
"""
from datetime import datetime, timezone

FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def timestamp(ms):
    """Format epoch milliseconds as GitHub does (the fraction dropped)."""
    return datetime.fromtimestamp(ms // 1000, timezone.utc).strftime(FORMAT)


def epoch_s(text):
    """Return the epoch seconds of an ISO 8601 time (`Z` or an offset; no zone is UTC);
    ValueError when `text` is not one."""
    moment = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp())


def normalized(text):
    """An ISO 8601 time a client sent, as GitHub echoes it (UTC, to the second); ValueError
    when it is not one."""
    return datetime.fromtimestamp(epoch_s(text), timezone.utc).strftime(FORMAT)


class Clock:
    """The runtime clock as the rules read it: `ms()` epoch milliseconds, `now()` GitHub's
    timestamp, `seconds()` what git writes into a commit."""

    def __init__(self, now_ms):
        self.ms = now_ms

    def now(self):
        return timestamp(self.ms())

    def seconds(self):
        return self.ms() // 1000
