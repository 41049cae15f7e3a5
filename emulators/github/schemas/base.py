"""What every GitHub schema shares: fields checked in the order they are declared, the first that
fails answered with the error GitHub sends for it, and GitHub's length limits.

GitHub checks a request's fields one after another and answers the first that fails, each with
its own status and body (`Validation Failed` with one `errors` item, `Invalid request.`, a 501
for what the emulator does not model, ...). A field here carries that answer as a `Problem`, a
callable that makes the error; `load` raises the problem of the first field, in declared order,
that failed. A field may read a key a second time further down the order (`Again`), because
GitHub checks some keys twice: whether a given value is valid, and later whether it was given.
"""
import functools

from marshmallow import EXCLUDE, Schema, ValidationError, fields, post_load, pre_load

from .. import errors
from ..models import texts

MAX_SAFE_INTEGER = 2 ** 53 - 1


# problems: what a failed field answers ----------------------------------------------------------

def invalid(field, resource="PullRequest", code="invalid"):
    """`Validation Failed` naming the field (`code`: `invalid`, `missing_field`...)."""
    return functools.partial(errors.ValidationFailed, field=field, resource=resource, code=code)


def missing(field, resource):
    """`Validation Failed`, `missing_field`."""
    return invalid(field, resource, "missing_field")


def custom(message, field=None, resource="PullRequest"):
    """`Validation Failed` with a `custom` item carrying GitHub's message."""
    return functools.partial(errors.ValidationFailed, field=field, resource=resource,
                             custom=message)


def unprocessable(message):
    """A 422 in the basic envelope."""
    return functools.partial(errors.Unprocessable, message)


def not_supplied(field):
    """GitHub's schema validation of a missing field: `Invalid request. "x" wasn't supplied.`"""
    return unprocessable(f'Invalid request.\n\n"{field}" wasn\'t supplied.')


def unsupported(message):
    """The emulator's 501 for what it does not model."""
    return functools.partial(errors.Unsupported, message)


def refused(reason):
    """GitHub's `Unprocessable Entity` about a review, its reason as a string `errors` item."""
    return functools.partial(errors.ReviewRefused, reason)


def fail(problem):
    """Raise `problem` from a validator."""
    raise ValidationError([problem])


# fields and validators --------------------------------------------------------------------------

class Value(fields.Field):
    """A value of one of `kinds` (any value when None), answered by `problem` when it is absent
    (`required`), null (unless `allow_none`) or of another kind; `absent` answers its absence
    instead, when GitHub says so differently."""

    def __init__(self, problem, kinds=None, *, absent=None, **kwargs):
        messages = {key: [problem] for key in ("null", "invalid", "validator_failed")}
        messages["required"] = [absent or problem]
        super().__init__(error_messages=messages, **kwargs)
        self.kinds = kinds

    def _deserialize(self, value, attr, data, **kwargs):
        if self.kinds is not None and not isinstance(value, self.kinds):
            raise self.make_error("invalid")
        return value


class Again(Value):
    """`key` read a second time, further down the order (its value is not loaded again)."""

    def __init__(self, key, problem, kinds=None, **kwargs):
        super().__init__(problem, kinds, data_key=f"\0{key}", **kwargs)
        self.key = key


def text(problem, **kwargs):
    """A string."""
    return Value(problem, str, **kwargs)


def flag(problem, **kwargs):
    """A boolean (a real one: GitHub refuses `"true"` and `1`)."""
    return Value(problem, bool, **kwargs)


def check(predicate, problem):
    """A validator: `predicate(value)` must hold."""
    def validate(value):
        if not predicate(value):
            fail(problem)
    return validate


def by_rule(rule_check):
    """A validator that is a rule's own check (`rule_check(value)` raises the GitHubError
    GitHub answers): REST checks it here, in GitHub's order, and GraphQL through the rule."""
    def validate(value):
        try:
            rule_check(value)
        except errors.GitHubError as error:
            fail(lambda refusal=error: refusal)
    return validate


def nonblank(problem):
    """A validator: a string with something other than white space."""
    return check(lambda value: bool(str(value).strip()), problem)


def at_most(limit, field, resource):
    """A validator: text within GitHub's limit (422 `body is too long (maximum is 65536
    characters)`); what is not text passes (`texts.within`)."""
    return by_rule(functools.partial(texts.within, limit, field, resource))


def one_of(choices, problem):
    """A validator: one of `choices`."""
    return check(lambda value: value in choices, problem)


# schemas ----------------------------------------------------------------------------------------

class Body(Schema):
    """A request body (or query) whose fields are checked in declared order; unknown keys are
    ignored, as GitHub ignores them."""

    class Meta:
        unknown = EXCLUDE

    @pre_load
    def _read_again(self, data, **kwargs):
        again = {f.data_key: f.key for f in self.load_fields.values() if isinstance(f, Again)}
        if not again or not isinstance(data, dict):
            return data
        kept = {k: v for k, v in data.items() if k not in again}
        kept.update((alias, data[key]) for alias, key in again.items() if key in data)
        return kept

    @post_load
    def _drop_again(self, data, **kwargs):
        return {k: v for k, v in data.items()
                if not isinstance(self.load_fields.get(k), Again)}


def load(schema, data):
    """Validate `data` with `schema`; raise the error of its first field (in declared order)
    that fails, or of its schema-wide check."""
    try:
        return schema.load(data)
    except ValidationError as exc:
        raise first_problem(schema, exc.messages)() from None


def first_problem(schema, messages):
    keys = [f.data_key or name for name, f in schema.load_fields.items()] + ["_schema"]
    found = next(messages[key] for key in keys if key in messages)
    while isinstance(found, (list, dict)):
        found = next(iter(found.values() if isinstance(found, dict) else found))
    if not callable(found):  # a message of marshmallow's own: a field without a problem
        raise TypeError(f"{type(schema).__name__}: no GitHub error for {found!r}")
    return found


def first_values(pairs):
    """Keep the first value of each query parameter, like `URLSearchParams.get`."""
    values = {}
    for name, value in pairs:
        values.setdefault(name, value)
    return values
