"""GitHubBackend: one namespace's GitHub as one request sees it.

It owns what every rule shares (the store and its transactions, the clock, the webhook emitter,
the acting user, the base URL) and holds the rule objects, one per area. Each rule object takes
what it uses in its constructor; it reaches a sibling through `rules` (this backend), so a rule
can be read one file at a time and built in a test with a store and a clock.
"""
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
from .protection import ProtectionRules
from .pulls import PullRules
from .refs import RefRules
from .repositories import Repositories
from .reviews import ReviewRules
from .seeding import Seeding
from .statuses import StatusRules


def no_events(event, build):
    """The emitter of a backend nobody listens to."""


class GitHubBackend:
    """The rules of one namespace's GitHub over its records; URLs are built from `base_url`.

    `emit(event, build)` queues a webhook (`build()` makes the payload only if one listens);
    `objects(repository key)` gives the runtime's object rows of a repository (None: synthetic
    repositories only); `actor` is the login the request acts as, or a callable returning it
    (looked up once, when first needed); `named(login)` tells whether the credential map names
    that user."""

    def __init__(self, records, *, now_ms, transaction, base_url, emit=None, objects=None,
                 actor=actors.DEFAULT, named=None):
        self.clock = Clock(now_ms)
        self.transaction = transaction
        self.base_url = base_url.rstrip("/")
        self.emit = emit or no_events
        self.store = store = GitHubStore(records, transaction=transaction, object_rows=objects,
                                         now_s=self.clock.seconds)
        clock = self.clock
        self.accounts = accounts = Accounts(store, self.base_url, actor=actor, named=named)
        self.repos = repos = Repositories(store, self.base_url)
        events = {"emit": self.emit, "accounts": accounts, "repos": repos, "rules": self}
        self.refs = RefRules(store, clock, **events)
        self.pulls = PullRules(store, clock, **events)
        self.commits = CommitRules(store, clock, accounts=accounts, repos=repos)
        self.contents = ContentRules(store, repos=repos, rules=self)
        self.git_data = GitDataRules(repos=repos, rules=self)
        self.statuses = StatusRules(store, clock, **events)
        self.checks = CheckRules(store, clock, **events)
        self.issues = IssueRules(store, clock, **events)
        self.labels = LabelRules(store, clock, **events)
        self.reviews = ReviewRules(store, clock, **events)
        self.protection = ProtectionRules(store, clock, repos=repos, rules=self)
        self.merges = MergeRules(store, clock, **events)
        self.seeding = Seeding(store, clock, repos=repos, refs=self.refs)
