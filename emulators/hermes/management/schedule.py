"""The cron scheduler's schedule grammar (as Hermes 0.19.0 parses it): intervals, five-field cron
expressions, one-shot timestamps and durations, and when each is next due. Pure functions of
epoch seconds, so the emulator's clock decides everything."""
import datetime
import re

from ..errors import JobError

UTC = datetime.timezone.utc
UNITS = {**dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 1),
         **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 60),
         **dict.fromkeys(("d", "day", "days"), 1440)}
DURATION = re.compile(r"^(\d+)\s*([a-z]+)$")
CRON_FIELD = re.compile(r"^[\d*,/-]+$")
CRON_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
ONE_SHOT_GRACE_S = 120
SEARCH_DAYS = 366 * 5   # a cron expression that never matches within five years never will
INVALID = ("Invalid schedule '{}'. Use:\n  - Duration: '30m', '2h', '1d' (one-shot)\n"
           "  - Interval: 'every 30m', 'every 2h' (recurring)\n"
           "  - Cron: '0 9 * * *' (cron expression)\n"
           "  - Timestamp: '2026-02-03T14:00:00' (one-shot at time)")


def isoformat(epoch):
    """The ISO-8601 text Python gives an aware UTC datetime (microseconds when non-zero)."""
    return datetime.datetime.fromtimestamp(epoch, UTC).isoformat()


def iso_compact(epoch):
    """`YYYYmmdd_HHMMSS`, the suffix of a cron run's session id."""
    return f"{datetime.datetime.fromtimestamp(epoch, UTC):%Y%m%d_%H%M%S}"


def title_time(epoch):
    """`Mon DD HH:MM`, the time in a cron run's session title."""
    return f"{datetime.datetime.fromtimestamp(epoch, UTC):%b %d %H:%M}"


def epoch_of(text):
    return datetime.datetime.fromisoformat(text).timestamp()


def _minutes(text):
    match = DURATION.match(text.lower())
    if match and match.group(2) in UNITS:
        return int(match.group(1)) * UNITS[match.group(2)]
    return None


def _cron_values(field, low, high):
    values = set()
    for part in field.split(","):
        body, _, step = part.partition("/")
        if body == "*":
            start, end = low, high
        elif "-" in body:
            start, _, end = body.partition("-")
            start, end = int(start), int(end)
        else:
            start = end = int(body)
            if step:
                end = high
        step = int(step) if step else 1
        if step < 1 or start < low or end > high or start > end:
            raise ValueError(field)
        values.update(range(start, end + 1, step))
    return values


def parse_cron(expr):
    """The five fields as sets (Sunday is 0; 7 also means Sunday), or ValueError."""
    fields = expr.split()
    if len(fields) != 5 or not all(CRON_FIELD.match(field) for field in fields):
        raise ValueError(expr)
    minutes, hours, days, months, weekdays = (
        _cron_values(field, low, high) for field, (low, high) in zip(fields, CRON_RANGES))
    weekdays = {day % 7 for day in weekdays}
    return minutes, hours, days, months, weekdays, fields[2] != "*", fields[4] != "*"


def next_cron(expr, after):
    """The first whole minute strictly after `after` (epoch s) that `expr` matches, or None."""
    minutes, hours, days, months, weekdays, day_set, weekday_set = parse_cron(expr)
    start = datetime.datetime.fromtimestamp(after, UTC).replace(second=0, microsecond=0)
    start += datetime.timedelta(minutes=1)
    day = start.replace(hour=0, minute=0)
    for _ in range(SEARCH_DAYS):
        by_day, by_weekday = day.day in days, (day.weekday() + 1) % 7 in weekdays
        # cron: when both day fields are restricted, either one matching is enough
        matches = (by_day or by_weekday) if day_set and weekday_set else (by_day and by_weekday)
        if day.month in months and matches:
            for hour in sorted(hours):
                for minute in sorted(minutes):
                    at = day.replace(hour=hour, minute=minute)
                    if at >= start:
                        return at.timestamp()
        day += datetime.timedelta(days=1)
    return None


def parse(text, now):
    """A schedule string -> the schedule object of the job; JobError with upstream's text."""
    text = text.strip()
    lower = text.lower()
    if lower.startswith("every "):
        minutes = _minutes(lower[len("every "):].strip())
        if minutes:
            return {"kind": "interval", "minutes": minutes, "display": f"every {minutes}m"}
        raise JobError(INVALID.format(text))
    parts = text.split()
    if len(parts) == 5 and all(CRON_FIELD.match(part) for part in parts):
        try:
            parse_cron(text)
        except ValueError:
            raise JobError(INVALID.format(text)) from None
        return {"kind": "cron", "expr": text, "display": text}
    if "T" in text or re.match(r"^\d{4}-\d{2}-\d{2}", text):
        try:
            when = datetime.datetime.fromisoformat(text)
        except ValueError:
            raise JobError(INVALID.format(text)) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)  # naive times take the Hermes timezone (UTC here)
        if when.timestamp() < now - ONE_SHOT_GRACE_S:
            raise JobError(f"Requested one-shot time {when.isoformat()} is more than "
                           f"{ONE_SHOT_GRACE_S}s in the past and cannot be scheduled.")
        return {"kind": "once", "run_at": when.isoformat(),
                "display": f"once at {when:%Y-%m-%d %H:%M}"}
    minutes = _minutes(text)
    if minutes:
        return {"kind": "once", "run_at": isoformat(now + minutes * 60),
                "display": f"once in {text}"}
    raise JobError(INVALID.format(text))


def first_run(schedule, now):
    """`next_run_at` (ISO) of a schedule set or resumed at `now`; None when it will not fire."""
    kind = schedule.get("kind")
    if kind == "interval":
        return isoformat(now + schedule["minutes"] * 60)
    if kind == "cron":
        due = next_cron(schedule["expr"], now)
        return None if due is None else isoformat(due)
    return schedule.get("run_at")


def after_run(schedule, ran_at, now):
    """`next_run_at` after a run at `ran_at`; missed periods up to `now` are skipped, as the
    real scheduler fast-forwards instead of replaying them. None: a one-shot is spent."""
    kind = schedule.get("kind")
    if kind == "interval":
        period = schedule["minutes"] * 60
        due = ran_at + period
        while due <= now:
            due += period
        return isoformat(due)
    if kind == "cron":
        due = next_cron(schedule["expr"], max(ran_at, now))
        return None if due is None else isoformat(due)
    return None
