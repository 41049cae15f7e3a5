"""The relay's state: per-thread records in `relay/state.json` (schemas.py), replaced atomically.

Only a relay pass holding `relay/state.json.lock` reads and writes it (see passes.py), and the
host's `scripts/chat.py approve`, which records a decision there under the same lock.
"""
import shutil

from ..files import atomic_write, keep_aside
from .schemas import Unfit, dump_saves, dump_state, load_record, load_saves, load_state

REPAIR = ("it must be a file the relay's user can read and write; moving it away starts over "
          "(the questions it held are then settled from Hermes' session transcripts, never "
          "submitted twice)")
SETTLED = "settled from Hermes' session transcripts, never submitted twice"


class StateUnreadable(Exception):
    """The state file cannot be read at all (a folder, another user's file): nothing is
    relayed, and nothing written over it, until it is repaired. The message is one line."""


class RelayState:
    """Per-thread relay records (records.RelayRecord) in one JSON file, replaced atomically
    after every change.

    `since_ms`: the relay's memory of its submissions is whole from then on. A question
    waiting from before it with no record may have been submitted by a state that was lost
    (removed, set aside because it did not fit, or put back from before), so it is settled
    from Hermes' transcript before it is submitted (passes.py, lost_runs.py).

    `saves`: how many times the file has been saved, which relay/saves.json repeats after each
    save. A file with fewer is older than one the relay wrote (a backup put back): what it
    says was submitted is not all that was.
    """

    def __init__(self, path, threads=None, since_ms=0, saves=0):
        self.path = path
        self.threads = threads if threads is not None else {}
        self.since_ms = since_ms
        self.saves = saves

    @classmethod
    def read(cls, path):
        """The state as the file holds it (empty when there is none); StateUnreadable or
        Unfit otherwise. For the host's commands, which repair nothing."""
        raw = _read(path)
        if raw is None:
            return cls(path)
        since_ms, saves, docs = load_state(raw)
        recorded = _recorded_saves(path)
        if _older(saves, recorded):
            raise StateUnreadable(f"relay state {path} {_older_than(saves, recorded)}: nothing "
                                  f"is listed or decided here until the relay's next pass "
                                  f"keeps it aside and starts over")
        return cls(path, {t: load_record(t, doc) for t, doc in docs.items()}, since_ms, saves)

    @classmethod
    def for_pass(cls, path, *, now_ms):
        """(the state a relay pass works on, the lines it says about it).

        Content that does not fit is never written over: the file is kept beside it as
        `state.json.corrupt-<ms>` and the records that fit go on (a host decision that does not
        fit decides nothing); the state then starts its memory now. A file gone after a
        relay ran here (relay/modes.json is there) starts it now too, and so does one older
        than the relay last saved (kept as `state.json.older-<ms>`). StateUnreadable when the
        file cannot be read at all.
        """
        raw = _read(path)
        recorded = _recorded_saves(path)
        if raw is None:
            lost = path.with_name("modes.json").exists()
            state = cls(path, since_ms=now_ms if lost else 0, saves=recorded or 0)
            state.save()  # from now on a missing file is a lost one
            return state, [f"relay state {path} is missing, though a relay ran here "
                           f"(relay/modes.json): started over; the questions waiting from "
                           f"before are {SETTLED}"] if lost else []
        try:
            since_ms, saves, docs = load_state(raw)
        except Unfit as exc:
            aside = keep_aside(path, now_ms)
            state = cls(path, since_ms=now_ms, saves=recorded or 0)
            state.save()
            return state, [f"relay state {path} cannot be read: {exc}; kept as {aside}, and "
                           f"the relay started over: the questions it held are {SETTLED}"]
        if _older(saves, recorded):
            aside = keep_aside(path, now_ms, kind="older")
            state = cls(path, since_ms=now_ms, saves=recorded or saves)
            state.save()
            return state, [f"relay state {path} {_older_than(saves, recorded)} (put back from "
                           f"a backup?): kept as {aside}, and the relay started over: the "
                           f"questions it held are {SETTLED}"]
        return cls._fitting(path, since_ms, saves, docs, now_ms)

    @classmethod
    def _fitting(cls, path, since_ms, saves, docs, now_ms):
        threads, dropped, unfit = {}, [], []
        for thread, doc in docs.items():
            try:
                threads[thread] = load_record(thread, doc)
                continue
            except Unfit as exc:
                unfit.append(exc)
            try:  # a decision that cannot be read decides nothing; the rest of it holds
                if unfit[-1].path[2:3] == ("host",):
                    threads[thread] = load_record(thread, {**doc, "host": None})
                    continue
            except Unfit:
                pass
            dropped.append(thread)
        if not unfit:
            return cls(path, threads, since_ms, saves), []
        aside = f"{path.name}.corrupt-{now_ms}"
        shutil.copy2(path, path.with_name(aside))  # the records that fit go on in the file
        state = cls(path, threads, now_ms if dropped else since_ms, saves)
        state.save()
        then = f"{len(dropped)} malformed record(s) ({', '.join(map(str, dropped[:5]))}) " \
               f"start over: their questions are {SETTLED}" if dropped else \
            "that host decision decides nothing (scripts/chat.py approve decides again)"
        return state, [f"relay state {path}: {unfit[0]}; {then}; the file as it was is kept "
                       f"as {aside}"]

    def save(self):
        """The file, then relay/saves.json (so that one never counts more than the file)."""
        self.saves += 1
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, dump_state(self.since_ms, self.saves, self.threads))
        atomic_write(_saves_path(self.path), dump_saves(self.saves))


def _read(path):
    """The file's bytes, or None when there is none; StateUnreadable when it cannot be read."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StateUnreadable(f"relay state {path} cannot be read ({exc.strerror or exc}): "
                              f"nothing is relayed until it is repaired: {REPAIR}")


def _saves_path(path):
    return path.with_name("saves.json")


def _recorded_saves(path):
    """How many saves relay/saves.json records: None when there is none, or it does not fit
    (then a state that has been saved counts as older: starting over is the safe side)."""
    saves = _saves_path(path)
    raw = _read(saves)
    if raw is None:
        return None
    try:
        return load_saves(raw)
    except Unfit:
        return None


def _older(saves, recorded):
    """Whether a state saved `saves` times is older than the last the relay saved."""
    return saves < recorded if recorded is not None else saves > 0


def _older_than(saves, recorded):
    return (f"is older than the relay last saved it (saved {saves} times; relay/saves.json: "
            f"{recorded})" if recorded is not None else
            f"was saved {saves} times, and relay/saves.json, which counts them, is missing or "
            f"unfit")


def state_path(settings):
    """Where the relay keeps its state."""
    return settings.data_dir / "relay" / "state.json"


def pass_lock_wait_s(settings):
    """How long to wait for the state lock: another pass may hold it for its whole budget."""
    return settings.relay_budget_s + 2 * settings.relay_http_timeout_s
