"""Rate-limit windows as rows: how many requests each caller made in its current window, per
namespace and resource, counted by every worker into the same row.

A service decides who a caller is, which resource a request counts against, its limit and the
window's length; this module only counts, on the namespace's clock. A window starts with the
first request counted in it and ends `window_ms` later (on a whole second, as GitHub's
`X-RateLimit-Reset` is in seconds); a window that ended, or that starts after the clock (the
clock was set back), begins anew. Counting is one `UPDATE … RETURNING` while a window holds (an
`INSERT … ON CONFLICT` begins one): within a request's transaction when one is open, else a
statement of its own under the writer lock.
"""
from typing import NamedTuple

from .db import delete_scoped


class Window(NamedTuple):
    """A caller's window of one resource: requests counted in it and when it ends (epoch ms);
    `taken` tells whether the request asking was counted (False: the limit was reached)."""

    used: int
    reset_ms: int
    taken: bool = True


# `:reset` is the end a window starting now would have: a stored end past it means the window
# started after the clock's current time (the clock was set back), so it starts anew too.
_FRESH = "(reset_ms <= :now OR reset_ms > :reset)"
# The common case first: a window that holds the request already has its row, in time.
_COUNT = (
    "UPDATE quotas SET used = used + 1 WHERE service=:service AND namespace=:namespace AND"
    " who=:who AND resource=:resource AND reset_ms > :now AND reset_ms <= :reset AND"
    " used < :limit RETURNING used, reset_ms")
# Else a window begins (none yet, over, or starting after the clock), or the window is full.
_TAKE = (
    "INSERT INTO quotas (service, namespace, who, resource, reset_ms, used) VALUES (:service,"
    " :namespace, :who, :resource, :reset, 1) ON CONFLICT (service, namespace, who, resource)"
    f" DO UPDATE SET used = CASE WHEN {_FRESH} THEN 1 ELSE used + 1 END,"
    f" reset_ms = CASE WHEN {_FRESH} THEN :reset ELSE reset_ms END"
    f" WHERE {_FRESH} OR used < :limit RETURNING used, reset_ms")
_WINDOWS = "SELECT resource, used, reset_ms FROM quotas WHERE service=? AND namespace=? AND who=?"
_WINDOW = _WINDOWS.replace("resource, ", "") + " AND resource=?"


def window_end(now_ms, window_ms):
    """The end of a window starting at `now_ms`: `window_ms` later, up to the next second."""
    return -(-(now_ms + window_ms) // 1000) * 1000


class Quotas:
    """The rate-limit windows of one service's callers, rows shared by every worker."""

    def __init__(self, db, service):
        self._db = db
        self._service = service

    def of(self, namespace, clock):
        """The windows of one namespace, on its clock (`clock()`: epoch ms)."""
        return NamespaceQuotas(self, namespace, clock)

    def take(self, namespace, who, resource, limit, window_ms, now_ms):
        """Count one request of `who` against `resource` unless its window holds `limit`
        already; return the window (`taken` False: not counted, the limit is reached)."""
        reset = window_end(now_ms, window_ms)
        if limit > 0:
            params = {"service": self._service, "namespace": namespace, "who": who,
                      "resource": resource, "reset": reset, "now": now_ms, "limit": limit}
            rows = self._db.write(_COUNT, params) or self._db.write(_TAKE, params)
            if rows:
                return Window(*rows[0])
        return self.peek(namespace, who, resource, window_ms, now_ms)._replace(taken=False)

    def peek(self, namespace, who, resource, window_ms, now_ms):
        """The window of `who` for `resource` as it stands, counting nothing."""
        row = self._db.one(_WINDOW, (self._service, namespace, who, resource))
        return _as_of(row, now_ms, window_ms)

    def windows(self, namespace, who, now_ms, lengths):
        """`{resource: Window}` of `who` for each resource of `lengths` (`{resource:
        window_ms}`), counting nothing: a window not begun, or over, is empty and would end a
        whole window from now."""
        stored = {resource: (used, reset_ms) for resource, used, reset_ms in self._db.all(
            _WINDOWS, (self._service, namespace, who))}
        return {resource: _as_of(stored.get(resource), now_ms, window_ms)
                for resource, window_ms in lengths.items()}

    def reset(self, namespace=None):
        """Forget the windows of one namespace (or of every namespace of the service)."""
        delete_scoped(self._db.execute, "quotas", self._service, namespace=namespace)


def _as_of(row, now_ms, window_ms):
    """A stored `(used, reset_ms)` (or None) as the window stands at `now_ms`: empty and a
    whole window from now when there is none, or it is over, or it starts after the clock."""
    reset = window_end(now_ms, window_ms)
    if row is None or row[1] <= now_ms or row[1] > reset:
        return Window(0, reset)
    return Window(*row)


class NamespaceQuotas:
    """`Quotas` of one namespace on its clock (`Instance.quotas`)."""

    __slots__ = ("_quotas", "_namespace", "_clock")

    def __init__(self, quotas, namespace, clock):
        self._quotas, self._namespace, self._clock = quotas, namespace, clock

    def take(self, who, resource, limit, window_ms):
        """Count one request (see `Quotas.take`)."""
        return self._quotas.take(self._namespace, who, resource, limit, window_ms, self._clock())

    def peek(self, who, resource, window_ms):
        """The window as it stands (see `Quotas.peek`)."""
        return self._quotas.peek(self._namespace, who, resource, window_ms, self._clock())

    def windows(self, who, lengths):
        """Every window of `lengths` (see `Quotas.windows`)."""
        return self._quotas.windows(self._namespace, who, self._clock(), lengths)
