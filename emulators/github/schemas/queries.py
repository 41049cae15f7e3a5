"""Query strings: paging, and the filters of the listings that check theirs (first bad wins).

A query arrives as pairs (a name may repeat); the first value of each name counts, as
`URLSearchParams.get` reads it.
"""
import re

from marshmallow import post_load

from .. import times
from ..inputs import Page
from .base import (MAX_SAFE_INTEGER, Body, check, first_values, invalid, load, one_of, text,
                   unsupported)

_POSITIVE = re.compile(r"^[1-9][0-9]*\Z")


def _positive(raw):
    return bool(_POSITIVE.match(raw)) and int(raw) <= MAX_SAFE_INTEGER


def page(pairs):
    """The page a listing asks for; like GitHub's listings, unusable values are ignored."""
    q = first_values(pairs)

    def number(name, default):
        raw = q.get(name, "")
        return int(raw) if _positive(raw) else default
    return Page(number("page", 1), min(number("per_page", 30), 100))


def paged(pairs):
    """Whether the query names a page at all (a comparison lists 250 commits unless it does)."""
    return any(name in ("page", "per_page") for name, _value in pairs)


class _PullList(Body):
    state = text(invalid("state"), load_default="open",
                 validate=one_of(("open", "closed", "all"), invalid("state")))
    sort = text(invalid("sort"), load_default="created", validate=[
        check(lambda v: v != "popularity",
              unsupported("Mockingbird does not model popularity sorting")),
        check(lambda v: v != "long-running",
              unsupported("Mockingbird does not model long-running sorting")),
        one_of(("created", "updated"), invalid("sort"))])
    direction = text(invalid("direction"), validate=one_of(("asc", "desc"),
                                                           invalid("direction")))
    page = text(invalid("page"), validate=check(_positive, invalid("page")), load_default="1")
    per_page = text(invalid("per_page"), validate=check(_positive, invalid("per_page")),
                    load_default="30")
    base = text(invalid("base"), load_default=None)
    head = text(invalid("head"), load_default=None)

    @post_load
    def _typed(self, data, **kwargs):
        data.setdefault("direction", "desc" if data["sort"] == "created" else "asc")
        data["page"] = Page(int(data["page"]), min(int(data.pop("per_page")), 100))
        return data


PULL_LIST = _PullList()


def pull_list(pairs):
    """`pulls/list`: `state`, `sort`, `direction`, `page`, `per_page`, checked in this order
    (422 naming the field; 501 for the sorts the emulator does not model), and `base`,
    `head`."""
    return load(PULL_LIST, first_values(pairs))


def _issue(field, choices):
    return text(invalid(field, "Issue"), validate=one_of(choices, invalid(field, "Issue")),
                load_default=choices[0])


class _IssueList(Body):
    state = _issue("state", ("open", "closed", "all"))
    sort = _issue("sort", ("created", "updated", "comments"))
    direction = _issue("direction", ("desc", "asc"))
    labels = text(invalid("labels", "Issue"), load_default="")
    creator = text(invalid("creator", "Issue"), load_default=None)
    assignee = text(invalid("assignee", "Issue"), load_default=None)

    @post_load
    def _typed(self, data, **kwargs):
        data["labels"] = [n.strip() for n in data["labels"].split(",") if n.strip()]
        return data


ISSUE_LIST = _IssueList()


def issue_list(pairs):
    """`issues/list-for-repo`: `state`, `sort`, `direction` (422 naming the first bad one),
    and the `labels` (comma-separated), `creator` and `assignee` filters."""
    return load(ISSUE_LIST, first_values(pairs))


def _time(value):
    try:
        return times.normalized(value)
    except ValueError:
        return None


class _Since(Body):
    since = text(invalid("since", "IssueComment"), load_default=None,
                 validate=check(lambda v: not v or _time(v), invalid("since", "IssueComment")))

    @post_load
    def _typed(self, data, **kwargs):
        # stored times are GitHub's, to the second: compared as text once alike
        return {"since": _time(data["since"]) if data["since"] else None}


SINCE = _Since()


def since(pairs):
    """`issues/list-comments`: `since`, an ISO 8601 time (GitHub's, to the second) or None."""
    return load(SINCE, first_values(pairs))["since"]


class _RunFilter(Body):
    filter = text(invalid("filter", "CheckRun"), load_default="latest",
                  validate=one_of(("latest", "all"), invalid("filter", "CheckRun")))
    check_name = text(invalid("check_name", "CheckRun"), load_default=None)
    status = text(invalid("status", "CheckRun"), load_default=None)


RUN_FILTER = _RunFilter()


def run_filter(pairs):
    """The check run listings' `filter` (`latest` or `all`), `check_name` and `status`."""
    found = load(RUN_FILTER, first_values(pairs))
    return {"latest": found["filter"] == "latest", "name": found["check_name"],
            "status": found["status"]}
