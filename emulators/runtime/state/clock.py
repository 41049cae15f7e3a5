"""Per-namespace mock clocks stored as rows: `{now, frozen, offsetMs}` shared by every worker."""
import math
import re
import time
from datetime import datetime, timedelta, timezone

from ..errors import AdminError
from .db import delete_scoped

DURATION = re.compile(r"^(-?\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\Z")
UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
# A JavaScript Date's range (±100,000,000 days), the reference runtime's; it also keeps every
# clock value far inside SQLite's 64-bit INTEGER.
MAX_MS = 8_640_000_000_000_000
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _ms(value):
    """Return a finite number as int ms within ±MAX_MS, else None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    value = int(value)
    return value if -MAX_MS <= value <= MAX_MS else None


def wall_ms():
    """Return real time in epoch milliseconds."""
    return int(time.time() * 1000)


def iso(ms):
    """Format epoch milliseconds like JavaScript's `Date.toISOString()` (UTC, milliseconds)."""
    moment = EPOCH + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_instant(value):
    """Return epoch ms from a number or an ISO-8601 string; None when it is neither."""
    return _number_or_text(value, _instant_text)


def parse_duration(value):
    """Return milliseconds from a number or a "15m"-style string; None when it is neither."""
    return _number_or_text(value, _duration_text)


def _number_or_text(value, parse_text):
    """Return ms from a number (a bool is not one) or, by `parse_text`, a stripped string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return _ms(value)
    if isinstance(value, str):
        return parse_text(value.strip())
    return None


def _instant_text(text):
    if text.isascii() and text.isdigit():
        return _ms(int(text))
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return int(parsed.timestamp() * 1000)


def _duration_text(text):
    match = DURATION.match(text)
    return _ms(float(match.group(1)) * UNITS[match.group(2)]) if match else None


VERSION = "SELECT version FROM control_versions WHERE service=?"


class Clocks:
    """Read and change the clock of a namespace; absent row means live time with no offset.

    A worker keeps each namespace's clock row between requests, valid for one control version
    (db.py: a trigger bumps it whenever any clock row changes, in any worker), so the request
    path reads the clock without a query while nothing moved it.
    """

    def __init__(self, db, service, wall=wall_ms):
        self._db = db
        self._service = service
        self.wall = wall
        self._rows = {}  # namespace -> (control version, frozen, now_ms, offset_ms)

    def version(self, conn=None):
        """Return the service's control version (moves with every fault or clock change)."""
        row = (conn or self._db.conn).execute(VERSION, (self._service,)).fetchone()
        return 0 if row is None else row[0]

    def state(self, namespace):
        """Return `{now, frozen, offsetMs}` of the namespace clock."""
        row = self._db.one("SELECT frozen, now_ms, offset_ms FROM clocks WHERE service=? AND"
                           " namespace=?", (self._service, namespace))
        if row is None:
            return {"now": self.wall(), "frozen": False, "offsetMs": 0}
        frozen, now_ms, offset_ms = row
        if frozen:
            return {"now": now_ms, "frozen": True, "offsetMs": now_ms - self.wall()}
        return {"now": self.wall() + offset_ms, "frozen": False, "offsetMs": offset_ms}

    def current(self, namespace, version):
        """Return (now, frozen) of a namespace as of control `version` (read this request)."""
        cached = self._rows.get(namespace)
        if cached is None or cached[0] != version:
            row = self._db.one("SELECT frozen, now_ms, offset_ms FROM clocks WHERE service=?"
                               " AND namespace=?", (self._service, namespace))
            if len(self._rows) >= 4096:
                self._rows.clear()
            # Read after the version: the row is at least as new as the version it is kept for.
            cached = self._rows[namespace] = (version, *(row or (0, 0, 0)))
        if cached[1]:
            return cached[2], True
        return self.wall() + cached[3], False

    def now_ms(self, namespace):
        """Return the namespace's current instant in epoch ms."""
        return self.state(namespace)["now"]

    def write(self, namespace, *, frozen, now, offset):
        """Store a clock state (frozen at `now`, or live with `offset`)."""
        self._db.execute(
            "INSERT INTO clocks (service, namespace, frozen, now_ms, offset_ms) VALUES"
            " (?, ?, ?, ?, ?) ON CONFLICT (service, namespace) DO UPDATE SET"
            " frozen=excluded.frozen, now_ms=excluded.now_ms, offset_ms=excluded.offset_ms",
            (self._service, namespace, int(bool(frozen)), int(now), int(offset)))

    def restore(self, namespace, state):
        """Put back a captured `{now, frozen}`: a frozen clock at `now`, or live time at `now`."""
        now = int(state["now"])
        if state.get("frozen"):
            self.write(namespace, frozen=True, now=now, offset=0)
        else:
            self.write(namespace, frozen=False, now=now, offset=now - self.wall())

    def apply(self, namespace, changes):
        """Apply validated `{reset, freeze, set, advance}` in the documented order, atomically."""
        with self._db.transaction():
            state = self.state(namespace)
            frozen, now = state["frozen"], state["now"]
            if changes.get("reset"):
                frozen, now = False, self.wall()
            if changes.get("freeze") is True:
                frozen = True
            if "set" in changes:
                now = changes["set"]
            if "advance" in changes:
                now += changes["advance"]
            if changes.get("freeze") is False:
                frozen = False
            if not -MAX_MS <= now <= MAX_MS:
                raise AdminError(f"the clock would leave the date range (±{MAX_MS} ms)")
            self.write(namespace, frozen=frozen, now=now,
                       offset=0 if frozen else now - self.wall())
            return self.state(namespace)

    def reset(self, namespace=None):
        """Forget one namespace's clock (or every clock of the service): live time again."""
        delete_scoped(self._db.execute, "clocks", self._service, namespace=namespace)
