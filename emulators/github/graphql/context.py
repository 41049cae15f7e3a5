"""What every resolver of one request shares: the backend acting as the request's user (its rule
objects are what resolvers and mutations call, with typed arguments), the instance a write is
journaled on, and the few lookups GraphQL makes in its own terms.

A rule's refusal is a `GitHubError`; the answer turns it into GraphQL's (errors.from_rest), so
GraphQL refuses what REST refuses. A read GraphQL answers with `null` where REST answers 404
goes through `found`.
"""
from .. import calls, errors as rest
from ..inputs import Page
from .errors import could_not_resolve

PAGE = 100  # items per page when a resolver reads every item of a listing


class Context:
    """One request's backend (`backend`) and instance, and the repositories it has found."""

    def __init__(self, backend, instance):
        self.backend = backend
        self.instance = instance
        self.repositories = {}  # repository key -> its GraphQL object (repository.present)

    def repository(self, owner, name):
        """The repository record `owner/name`; GraphQL's NOT_FOUND when there is none."""
        record = self.backend.repos.get(owner, name)
        if record is None:
            raise could_not_resolve("Repository", f"the name '{owner}/{name}'")
        return record

    def accepted(self, **ids):
        """Journal the request's write as accepted, with its ids (as REST's writes are)."""
        calls.accepted(self.instance, **ids)


def found(read, *args, **kwargs):
    """What a rule reads, or None where it answers 404."""
    try:
        return read(*args, **kwargs)
    except rest.NotFound:
        return None


def every(listing):
    """Every item of a paged listing: `listing(page)` gives an `inputs.Listing`."""
    items, number = [], 1
    while True:
        page = listing(Page(number, PAGE))
        items += page.items
        if len(items) >= page.total or not page.items:
            return items
        number += 1
