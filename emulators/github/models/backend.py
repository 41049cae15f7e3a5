"""GitHubBackend: one namespace's GitHub as one request sees it.

It owns what every rule shares (the store and its transactions, the clock, the webhook emitter,
the acting user, the base URL) and holds the rule objects, one per area. Each rule object takes
what it uses in its constructor; it reaches a sibling through `rules` (this backend), so a rule
can be read one file at a time and built in a test with a store and a clock.
"""
from functools import cached_property

from .. import actors
from ..store import GitHubStore
from ..times import Clock
from .accounts import Accounts
from .checks import CheckRules
from .commits import CommitRules
from .contents import ContentRules
from .git_data import GitDataRules
from .issues import IssueRules
from .labels import LabelRules
from .merges import MergeRules
from .nodes import Nodes
from .protection import ProtectionRules
from .pulls import PullRules
from .refs import RefRules
from .repositories import Repositories
from .reviews import ReviewRules
from .seeding import Seeding
from .statuses import StatusRules


def no_events(event, build):
    """The emitter of a backend nobody listens to."""


def _rule(area):
    """The rule object of an area (a `Rule` subclass), made when a request first reaches it,
    with all a Rule takes from its backend."""
    return cached_property(lambda backend: area(
        backend.store, backend.clock, emit=backend.emit, accounts=backend.accounts,
        repos=backend.repos, rules=backend))


class GitHubBackend:
    """The rules of one namespace's GitHub over its records; URLs are built from `base_url`.

    `emit(event, build)` queues a webhook (`build()` makes the payload only if one listens);
    `objects(repository key)` gives the runtime's object rows of a repository (None: synthetic
    repositories only); `actor` is the login the request acts as, or a callable returning it
    (looked up once, when first needed); `named(login)` tells whether the credential map names
    that user. A rule object is made when a request first reaches its area (a backend lives
    for one request, and most requests reach two or three areas)."""

    def __init__(self, records, *, now_ms, transaction, base_url, emit=None, objects=None,
                 actor=actors.DEFAULT, named=None):
        self.clock = Clock(now_ms)
        self.transaction = transaction
        self.base_url = base_url.rstrip("/")
        self.emit = emit or no_events
        self.store = GitHubStore(records, transaction=transaction, object_rows=objects,
                                 now_s=self.clock.seconds)
        self.accounts = Accounts(self.store, self.base_url, actor=actor, named=named)
        self.repos = Repositories(self.store, self.base_url)

    refs = _rule(RefRules)
    pulls = _rule(PullRules)

    @cached_property
    def commits(self):
        return CommitRules(self.store, self.clock, accounts=self.accounts, repos=self.repos)

    @cached_property
    def contents(self):
        return ContentRules(self.store, repos=self.repos, rules=self)

    @cached_property
    def git_data(self):
        return GitDataRules(repos=self.repos, rules=self)

    statuses = _rule(StatusRules)
    checks = _rule(CheckRules)
    issues = _rule(IssueRules)
    labels = _rule(LabelRules)
    reviews = _rule(ReviewRules)

    @cached_property
    def protection(self):
        return ProtectionRules(self.store, self.clock, repos=self.repos, rules=self)

    merges = _rule(MergeRules)

    @cached_property
    def nodes(self):
        return Nodes(self.store)

    @cached_property
    def seeding(self):
        return Seeding(self.store, self.clock, repos=self.repos, refs=self.refs)
