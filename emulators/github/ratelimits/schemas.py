"""The body of `PUT /__admin/github/rate-limits`, read with marshmallow."""
from marshmallow import RAISE, Schema, ValidationError, fields, validate

from ..errors import ControlInvalid
from .quotas import SETTABLE

MAX_LIMIT = 10 ** 9
SHAPE = 'expected {"core": N, "search": N, "graphql": N} (each optional; null: GitHub\'s default)'


class Limit(fields.Integer):
    """A number of requests per window: a whole number from 0 to MAX_LIMIT (a JSON `true` is
    no number), or null."""

    def __init__(self):
        super().__init__(strict=True, allow_none=True,
                         validate=validate.Range(min=0, max=MAX_LIMIT))

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, bool):
            raise self.make_error("invalid")
        return super()._deserialize(value, attr, data, **kwargs)


class RateLimitsBody(Schema):
    """`{"core": N, "search": N, "graphql": N}`; nothing else."""

    class Meta:
        unknown = RAISE

    core = Limit()
    search = Limit()
    graphql = Limit()


def rate_limits(body):
    """The settings a PUT body gives, every settable resource named (None: GitHub's default);
    a bad body is the mock-only 400, naming the first bad field."""
    if not isinstance(body, dict):
        raise ControlInvalid(SHAPE)
    try:
        parsed = RateLimitsBody().load(body)
    except ValidationError as error:
        field, problems = sorted(error.messages.items())[0]
        raise ControlInvalid(f"{field}: {problems[0]} {SHAPE}") from None
    return {resource: parsed.get(resource) for resource in SETTABLE}
