"""Errors a GraphQL answer carries in `errors`, with GitHub's `type` (the endpoint's own
refusals, no credential and a body that is not JSON, are errors.py's: they are HTTP answers).

A resolver raises a `Problem`; a REST rule's `GitHubError` raised beneath a resolver is turned
into one (`from_rest`), so GraphQL refuses what REST refuses, in GraphQL's words.
"""
from .. import errors as rest


class Problem(Exception):
    """One entry of a GraphQL answer's `errors`: GitHub's `type` and message (and its
    `extensions`, for the types GitHub adds them to)."""

    type = None
    extensions = None

    def __init__(self, message):
        super().__init__(message)
        self.message = message


class NotFound(Problem):
    type = "NOT_FOUND"


class Forbidden(Problem):
    """What a credential may not do; GitHub's entry carries `extensions: {saml_failure}`
    between `path` and `locations`."""

    type = "FORBIDDEN"
    extensions = {"saml_failure": False}

    def __init__(self, message=rest.Forbidden.message):
        super().__init__(message)


class Unprocessable(Problem):
    type = "UNPROCESSABLE"


class Unmodelled(Problem):
    """A field or argument of GitHub's schema the emulator does not model (the REST side's
    mock-only 501, `mockingbird_unsupported`)."""

    type = "MOCKINGBIRD_UNSUPPORTED"


def could_not_resolve(kind, text):
    """GitHub's NOT_FOUND wording: `Could not resolve to a Repository with the name 'o/r'.`"""
    return NotFound(f"Could not resolve to {_article(kind)} {kind} with {text}.")


def _article(kind):
    return "an" if kind[0] in "AEIOU" else "a"


_TYPES = {403: Forbidden, 404: NotFound}


def from_rest(error):
    """The GraphQL problem of a REST rule's refusal: its status picks the type (404
    NOT_FOUND, 403 FORBIDDEN, any other 4xx UNPROCESSABLE), its message the words (a
    validation failure's own message when it has one)."""
    body = error.body()
    message = body.get("message") or error.message
    items = body.get("errors") or []
    detail = items[0] if items else None
    if isinstance(detail, dict) and detail.get("message"):
        message = detail["message"]
    elif isinstance(detail, str):
        message = detail
    if isinstance(error, rest.MockOnlyError):
        return Unmodelled(message) if error.status == 501 else Unprocessable(message)
    return _TYPES.get(error.status, Unprocessable)(message)
