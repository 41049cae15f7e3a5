"""What a rule object of one area holds, and how it finds one of its records."""
from .. import errors


class Rule:
    """A rule object of one area (refs, pulls, checks...): it reads and writes `store` (its
    transactions too), dates what it writes by `clock`, sends webhooks through `emit`, names
    users through `accounts`, finds repositories through `repos`, and reaches the rule objects
    of other areas through `rules` (the backend), never through a shared self. Each subclass
    says which of them it calls."""

    def __init__(self, store, clock, *, emit, accounts, repos, rules):
        self.store, self.clock, self.emit = store, clock, emit
        self.accounts, self.repos, self.rules = accounts, repos, rules

    def _record(self, collection, repo, id):
        """The record `id` of `collection` in `repo`; 404 when there is none."""
        found = self.store.item(collection, f"{repo['key']}:{id}")
        if found is None:
            raise errors.NotFound()
        return found
