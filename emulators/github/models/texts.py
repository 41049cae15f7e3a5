"""GitHub's limits on the text a write holds, and the check the rules make of them.

The rules check what they take (GraphQL's mutations reach them with no other check); REST's
schemas make the same checks, with these functions, in GitHub's order of checks before a rule
runs (schemas/base.py `by_rule`).
"""
from .. import errors

MAX_BODY = 65536  # issue, comment and review bodies
MAX_TITLE = 256  # issue titles
MAX_OUTPUT = 65535  # a check run's output summary and text
MAX_DESCRIPTION = 140  # a commit status's description
MAX_LABEL = 50  # a label's name (its description: 100)


def within(limit, field, resource, value):
    """Refuse text past GitHub's limit: 422 `body is too long (maximum is 65536 characters)`.
    What is not text passes (its kind is the schema's to refuse)."""
    if isinstance(value, str) and len(value) > limit:
        raise errors.ValidationFailed(
            field=field, resource=resource,
            custom=f"{field} is too long (maximum is {limit} characters)")


def nonblank(field, resource, code, value):
    """Refuse text of nothing but white space: `Validation Failed` naming the field with
    `code` (`missing_field`, `invalid`)."""
    if not str(value).strip():
        raise errors.ValidationFailed(field=field, resource=resource, code=code)
