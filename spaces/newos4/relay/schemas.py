"""Marshmallow schemas for the files the host side keeps: `relay/state.json`, `relay/access.json`
and `relay/modes.json`. A load gives typed records (records.py) or raises Unfit naming the
first field that does not fit; a dump writes every field the schema names that has a value."""
import json
import re

from marshmallow import (RAISE, Schema, ValidationError, fields, post_dump, post_load,
                         validates_schema)

from ..settings import RELAY_ACCESS_MODES
from ..store import is_thread_name
from .records import (ALPHABET, CHOICE_WORDS, CODE_LENGTH, RELAY_KINDS, AccessState,
                      HostDecision, LetIn, ModeRecord, PendingCode, RelayRecord)

MAX_SHOWN = 40  # characters of a hostile key or value a message shows


class Unfit(Exception):
    """A state file's content does not fit its schema: `path` names the field (an empty tuple:
    the file as a whole), `why` says what is wrong."""

    def __init__(self, path, why):
        self.path, self.why = tuple(path), why
        super().__init__(f'field "{".".join(self.path)}": {why}' if self.path else why)


def shown(value):
    """`value` as a message may quote it: JSON, control characters escaped, cut short."""
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN - 1] + "…"


# -- fields: JSON's own types, nothing coerced (a "5" is not 5, a true is not 1) -----------------

class Value(fields.Field):
    """A field whose JSON type is checked, never coerced; `null` only where allowed."""

    default_error_messages = {"required": "missing", "null": "null where a value is needed"}
    kind, description = object, "a value"

    def _deserialize(self, value, attr, data, **kwargs):
        if type(value) is not self.kind:
            raise ValidationError(f"not {self.description}: {shown(value)}")
        self.check(value)
        return value

    def check(self, value):
        """Raise ValidationError when `value`, of the right type, is not one this field takes."""


class Count(Value):
    """A whole number of at least 0 (counts and epoch milliseconds)."""

    kind, description = int, "a whole number"

    def check(self, value):
        if value < 0:
            raise ValidationError(f"negative: {value}")


class Flag(Value):
    kind, description = bool, "true or false"


class Text(Value):
    """A string; with `pattern`, one it matches whole (`means` says what that is)."""

    kind, description = str, "a string"

    def __init__(self, pattern=None, means=None, **kwargs):
        super().__init__(**kwargs)
        self.pattern = re.compile(pattern) if pattern else None
        self.means = means

    def check(self, value):
        if self.pattern is not None and not self.pattern.fullmatch(value):
            raise ValidationError(f"not {self.means}: {shown(value)}")


class OneOf(Text):
    def __init__(self, words, **kwargs):
        super().__init__(**kwargs)
        self.words = tuple(words)

    def check(self, value):
        if value not in self.words:
            raise ValidationError(f"not one of {'/'.join(self.words)}: {shown(value)}")


class Thread(Text):
    """A thread's name, checked before any path is built from it."""

    def check(self, value):
        if not is_thread_name(value):
            raise ValidationError(f"not a thread name (16 lowercase hex digits): {shown(value)}")


class Words(fields.List):
    """A list of approval words (CHOICE_WORDS)."""

    default_error_messages = {"invalid": "not a list", "null": "null where a value is needed"}

    def __init__(self, **kwargs):
        super().__init__(OneOf(CHOICE_WORDS), **kwargs)


def optional(field_class, *args, **kwargs):
    """A field that may be absent or null (None)."""
    return field_class(*args, allow_none=True, load_default=None, **kwargs)


def by_thread(values):
    """An object whose names are thread names."""
    return fields.Dict(keys=Thread(), values=values, required=True,
                       error_messages={"invalid": "not an object", "required": "missing"})


class Strict(Schema):
    """Every field named, none unknown, nothing null that must have a value."""

    class Meta:
        unknown = RAISE

    error_messages = {"unknown": "unknown field", "type": "not an object"}
    written_when_null = ()  # the fields a dump writes even when null (readers expect them)

    @post_dump
    def _without_nulls(self, data, **kwargs):
        return {name: value for name, value in data.items()
                if value is not None or name in self.written_when_null}


# -- relay/state.json --------------------------------------------------------------------------

class HostSchema(Strict):
    choice = OneOf(CHOICE_WORDS, required=True)
    request = Text(required=True)
    ms = Count(required=True)

    @post_load
    def _record(self, data, **kwargs):
        return HostDecision(**data)


class RecordSchema(Strict):
    """One thread's relay record (records.RelayRecord)."""

    written_when_null = ("run_id", "submitted_ms")

    question = Text(required=True)
    generation = Count(required=True)
    attempts = Count(required=True)
    next_ms = Count(required=True)
    run_id = optional(Text)
    submitted_ms = optional(Count)
    key = optional(Text)
    submitting = optional(Text)
    submitting_ms = optional(Count)
    lost_ms = optional(Count)
    events = optional(OneOf, RELAY_KINDS)
    asked = optional(Text)
    choices = optional(Words)
    offered = optional(Words)
    approvals = Count(load_default=0)
    command = optional(Text)
    reason = optional(Text)
    not_decisions = optional(fields.List, Text())
    deciding = optional(OneOf, CHOICE_WORDS)
    host = optional(fields.Nested, HostSchema)
    by_host = Flag(load_default=False)

    @validates_schema
    def _submitting_has_its_time(self, data, **kwargs):
        if data.get("submitting") is not None and data.get("submitting_ms") is None:
            raise ValidationError("missing (a submission not confirmed has its time)",
                                  "submitting_ms")

    @post_load
    def _record(self, data, **kwargs):
        return RelayRecord(**data)


class StateSchema(Strict):
    """The file: since when the relay's memory is whole, how many times it has been saved
    (`saves`: a file put back from a backup has fewer than relay/saves.json says), and its
    records by thread (each read on its own: one that does not fit is not the others'
    problem)."""

    since_ms = Count(load_default=0)
    saves = Count(load_default=0)
    threads = fields.Dict(keys=fields.String(), values=fields.Raw(), required=True,
                          error_messages={"invalid": "not an object", "required": "missing"})


STATE, RECORD = StateSchema(), RecordSchema()


def load_state(raw):
    """(since_ms, saves, {thread: its record as JSON}) from the bytes of relay/state.json."""
    doc = _load(STATE, raw)
    return doc["since_ms"], doc["saves"], doc["threads"]


def load_record(thread, doc):
    """The RelayRecord `doc` holds for `thread`; Unfit names the field under `threads`."""
    if not is_thread_name(thread):
        raise Unfit(("threads",), f"not a thread name (16 lowercase hex digits): {shown(thread)}")
    try:
        return _fit(RECORD, doc)
    except Unfit as exc:
        raise Unfit(("threads", thread) + exc.path, exc.why)


def dump_state(since_ms, saves, threads):
    """The bytes of relay/state.json."""
    return _dump({"since_ms": since_ms, "saves": saves,
                  "threads": {t: RECORD.dump(r) for t, r in threads.items()}})


class SavesSchema(Strict):
    """relay/saves.json: how many times relay/state.json has been saved, written after it."""

    saves = Count(required=True)


SAVES = SavesSchema()


def load_saves(raw):
    """The count relay/saves.json holds; Unfit otherwise."""
    return _load(SAVES, raw)["saves"]


def dump_saves(saves):
    """The bytes of relay/saves.json."""
    return _dump({"saves": saves})


# -- relay/access.json -------------------------------------------------------------------------

class PendingSchema(Strict):
    salt = Text(required=True, pattern="[0-9a-f]{32}", means="32 lowercase hex digits")
    hash = Text(required=True, pattern="[0-9a-f]{64}", means="a SHA-256 in lowercase hex")
    created_ms = Count(required=True)
    told = Flag(required=True)
    code = optional(Text, pattern=f"[{ALPHABET}]{{{CODE_LENGTH}}}",
                    means=f"{CODE_LENGTH} characters of {ALPHABET}")

    @validates_schema
    def _code_until_told(self, data, **kwargs):
        if not data.get("told") and data.get("code") is None:
            raise ValidationError("missing (a code not shown yet is kept until it is)", "code")

    @post_load
    def _record(self, data, **kwargs):
        return PendingCode(**data)


class LetInSchema(Strict):
    since_ms = Count(required=True)
    by = OneOf(("code", "allow"), required=True)
    release = Flag(required=True)

    @post_load
    def _record(self, data, **kwargs):
        return LetIn(**data)


class AccessSchema(Strict):
    """relay/access.json (records.AccessState)."""

    pending = by_thread(fields.Nested(PendingSchema))
    allowed = by_thread(fields.Nested(LetInSchema))
    refused = by_thread(Count())
    failures = Count(required=True)
    locked_until_ms = Count(required=True)

    @post_load
    def _record(self, data, **kwargs):
        return AccessState(**data)


ACCESS = AccessSchema()


def load_access(raw):
    """The AccessState in the bytes of relay/access.json."""
    return _load(ACCESS, raw)


def dump_access(state):
    """The bytes of relay/access.json."""
    return _dump(ACCESS.dump(state))


# -- relay/modes.json --------------------------------------------------------------------------

class ModeSchema(Strict):
    mode = OneOf(RELAY_ACCESS_MODES, required=True)
    ms = Count(required=True)

    @post_load
    def _record(self, data, **kwargs):
        return ModeRecord(**data)


class ModesSchema(Strict):
    """relay/modes.json: the mode each kind of relay last said it relays with."""

    cron = optional(fields.Nested, ModeSchema)
    watch = optional(fields.Nested, ModeSchema)

    @post_load
    def _records(self, data, **kwargs):
        return {kind: record for kind, record in data.items() if record is not None}


MODES = ModesSchema()


def load_modes(raw):
    """{kind: ModeRecord} from the bytes of relay/modes.json."""
    return _load(MODES, raw)


def dump_modes(records):
    """The bytes of relay/modes.json."""
    return _dump(MODES.dump(records))


# -- reading and writing -----------------------------------------------------------------------

def _load(schema, raw):
    """`raw` (a file's bytes) parsed and loaded with `schema`; Unfit otherwise."""
    if not raw.strip():
        raise Unfit((), f"empty ({len(raw)} bytes)")
    try:
        doc = json.loads(raw)
    except UnicodeDecodeError as exc:
        raise Unfit((), f"not UTF-8 (byte {exc.start})")
    except ValueError as exc:
        raise Unfit((), f"not JSON, or cut short ({exc})")
    except RecursionError:
        raise Unfit((), "not JSON we read (nested too deep)")
    return _fit(schema, doc)


def _fit(schema, doc):
    if not isinstance(doc, dict):
        raise Unfit((), f"not an object: {shown(doc)}")
    try:
        return schema.load(doc)
    except ValidationError as exc:
        raise Unfit(*_first(exc.messages))


def _first(messages, path=()):
    """(path, message) of the first problem in marshmallow's nested error messages."""
    if isinstance(messages, list):
        return path, "; ".join(str(m) for m in messages if not isinstance(m, (dict, list))) \
            or _first(messages[0], path)[1]
    name, inner = next(iter(messages.items()))
    if name == "_schema":
        return _first(inner, path)
    if isinstance(inner, dict) and set(inner) <= {"key", "value"}:
        if "key" in inner:
            return path, _first(inner["key"])[1]
        return _first(inner["value"], path + (str(name),))
    return _first(inner, path + (str(name),))


def _dump(doc):
    return json.dumps(doc, indent=1, sort_keys=True).encode()
