"""The admin plane's `PUT /github/rate-limits` body: each resource's requests per window, or null
for GitHub's default. A control, not GitHub's API: an unknown key is a typo, refused."""
from marshmallow import pre_load

from .. import errors
from .base import Body, Value, check, fail, load

MAX_LIMIT = 10 ** 9
SHAPE = ('expected {"core": N, "search": N, "graphql": N}, each optional, N from 0 to'
         f' {MAX_LIMIT} or null (GitHub\'s default)')


def _refused(field):
    return lambda: errors.ControlInvalid(f"{field}: {SHAPE}")


def _limit(field):
    """A whole number of requests (a JSON `true` is none), or null."""
    return Value(_refused(field), int, allow_none=True, validate=check(
        lambda value: not isinstance(value, bool) and 0 <= value <= MAX_LIMIT, _refused(field)))


class _RateLimits(Body):
    core = _limit("core")
    search = _limit("search")
    graphql = _limit("graphql")

    @pre_load
    def _known_keys(self, data, **kwargs):
        unknown = sorted(set(data) - set(self.load_fields))
        if unknown:
            fail(_refused(unknown[0]))
        return data


RATE_LIMITS = _RateLimits()


def rate_limits(body):
    """The limits a body sets, `{resource: N or None}` for the resources it names; a bad body
    is the mock-only 400 naming its first bad key, and sets nothing."""
    if not isinstance(body, dict):
        raise errors.ControlInvalid(SHAPE)
    return load(RATE_LIMITS, body)
