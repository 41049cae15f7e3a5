"""Cron and the watcher must relay with the same policy (NEWOS4_RELAY_ACCESS): each records the
one it uses in `relay/modes.json`, and while they disagree neither relays."""
from ..files import atomic_write, keep_aside
from .records import ModeRecord
from .schemas import Unfit, dump_modes, load_modes

# Cron relays every minute (a pass lasts at most about its budget): a cron record older than
# this is no cron's any more (its crontab line went, or became --sweep-only).
CRON_LIVE_MS = 5 * 60_000


def mode_conflict(path, kind, mode, *, now_ms, watcher_alive):
    """Record that the relay `kind` ("cron" or "watch") relays with `mode` in `path`
    (relay/modes.json; the caller holds the state lock, as every pass does), and say why it must
    not relay when the other kind, still running, relays with another mode; else None.

    Two policies at once are the looser one: a stranger the watcher keeps out would reach
    Hermes through cron, and cron would stop runs the watcher starts. So both refuse, and each
    says how to fix it. The watcher is running while it holds its lock (`watcher_alive()`, asked
    only on a disagreement: trying its lock could turn a watcher starting then away); cron,
    while its record is younger than CRON_LIVE_MS.
    """
    try:
        records = load_modes(path.read_bytes())
    except FileNotFoundError:
        records = {}
    except (OSError, Unfit) as exc:
        return _modes_unreadable(path, kind, mode, now_ms, exc)
    mine = records.get(kind)
    if kind == "cron" or mine is None or mine.mode != mode:
        # The watcher writes only a change (its writes would wake it); no fsync: a record lost
        # in a crash is written again by the next pass of its kind.
        records[kind] = ModeRecord(mode, now_ms)
        atomic_write(path, dump_modes(records), durable=False)
    other = records.get("watch" if kind == "cron" else "cron")
    if other is None or other.mode == mode:
        return None
    if kind == "cron":
        if not watcher_alive():
            return None
        them = f"the running watcher relays with NEWOS4_RELAY_ACCESS={other.mode}"
    else:
        if now_ms - other.ms >= CRON_LIVE_MS:
            return None
        them = f"cron relays with NEWOS4_RELAY_ACCESS={other.mode} (its last run is in " \
               "relay/modes.json)"
    return (f"NEWOS4_RELAY_ACCESS={mode} here, but {them}: cron and the watcher must use the "
            "same value (set it in both the crontab and the watcher's environment, or in "
            "neither); nothing is relayed until they agree")


def _modes_unreadable(path, kind, mode, now_ms, exc):
    """Why a pass must not relay when relay/modes.json cannot be read: the other relay's mode
    is unknown. Content that does not fit is kept aside and this pass's record written in its
    place, so the next passes of both kinds compare again."""
    if isinstance(exc, OSError):
        return (f"relay modes {path} cannot be read ({exc.strerror or exc}): nothing is "
                "relayed until it is repaired: it must be a file the relay's user can read and "
                "write (removing it is safe: each pass records its NEWOS4_RELAY_ACCESS again)")
    aside = keep_aside(path, now_ms)
    atomic_write(path, dump_modes({kind: ModeRecord(mode, now_ms)}), durable=False)
    return (f"relay modes {path} cannot be read: {exc}; kept as {aside}; nothing is relayed "
            "this pass (the other relay's NEWOS4_RELAY_ACCESS is unknown until it records it "
            "again)")
