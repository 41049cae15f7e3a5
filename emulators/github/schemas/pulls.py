"""Pull request writes: `pulls/create` and `pulls/update`, in the reference's order of checks."""
from ..errors import CROSS_REPO
from ..models.pulls import check_title
from .base import (Again, Body, Value, by_rule, check, flag, invalid, load, one_of, text,
                   unsupported)


def _title():
    return text(invalid("title"), validate=by_rule(check_title))


def _branch(field):
    return text(invalid(field), required=True, validate=check(bool, invalid(field)))


class _Common(Body):
    """What both writes check first, when given: `title`, `body`, `maintainer_can_modify`."""

    title = _title()
    body = text(invalid("body"))
    maintainer_can_modify = flag(invalid("maintainer_can_modify"))


class _CreatePull(Body):
    issue = Value(unsupported("Mockingbird does not model issue conversion"), ())
    head_repo = Value(unsupported(CROSS_REPO), ())
    title = _title()
    body = text(invalid("body"))
    maintainer_can_modify = flag(invalid("maintainer_can_modify"))
    title_given = Again("title", invalid("title"), str, required=True,
                        validate=by_rule(check_title))
    head = _branch("head")
    base = _branch("base")
    draft = flag(invalid("draft"))
    head_parts = Again("head", invalid("head"), str,
                       validate=check(lambda v: v.count(":") <= 1, invalid("head")))


class _UpdatePull(_Common):
    state = text(invalid("state"), validate=one_of(("open", "closed"), invalid("state")))
    base = text(invalid("base"), validate=check(bool, invalid("base")))


CREATE, UPDATE = _CreatePull(), _UpdatePull()


def create(body):
    """The fields of a PR to open (`title`, `head`, `base`; `body`, `draft`,
    `maintainer_can_modify` when given)."""
    return load(CREATE, body)


def update(body):
    """The fields a PR update names (`title`, `body`, `state`, `base`,
    `maintainer_can_modify`)."""
    return load(UPDATE, body)
