"""The root fields: the queries (`viewer`, `user`, `repository`, `node`, `nodes`,
`rateLimit`) here, the mutations in mutations.py (the same root value answers both)."""
from .actors import actor
from .errors import Forbidden
from .issues import Issue, Label
from .limits import rate_limit
from .mutations import Mutations
from .pulls import PullRequest, PullRequestReview
from .repository import present


# the REST read an object of each kind a node id names stands for (an App's permission)
READS = {"Repository": "repos/get", "PullRequest": "pulls/get", "Issue": "issues/get",
         "Label": "issues/get-label", "PullRequestReview": "pulls/get-review"}


class Root:
    """The root value of every request; `context` (context.py) acts as the request's user."""

    def __init__(self, context):
        self.context = context
        self.accounts = context.backend.accounts
        self.mutations = Mutations(context, self)

    def __getattr__(self, name):  # a mutation field: composed, not mixed in
        return getattr(self.mutations, name)

    def viewer(self, info):
        if self.context.integration:  # an App's bot is no viewer, as on GitHub
            raise Forbidden()
        return actor(self.accounts.json(self.accounts.actor_login))

    def user(self, info, login):
        found = self.accounts.find(login)
        return actor(found) if found and found["type"] == "User" else None

    def organization(self, info, login):
        found = self.accounts.find(login)
        return actor(found) if found and found["type"] == "Organization" else None

    def repository_owner(self, info, login):
        return actor(self.accounts.find(login))

    def repository(self, info, owner, name, follow_renames=True):
        return present(self.context, self.context.repository(owner, name))

    def node(self, info, id):
        """The object a node id names (a REST answer's `node_id`), or None."""
        backend = self.context.backend
        found = backend.nodes.find(id)
        if found is None:
            return None
        kind, record, parent = found
        if kind == "Account":
            return actor(self.accounts.json(record["login"]))
        if not self.context.visible(parent):
            return None
        self.context.allow(READS[kind], parent)
        repository = present(self.context, parent)
        if kind == "Repository":
            return repository
        if kind == "Label":
            return Label(backend.labels.json(parent, record))
        if kind == "Issue":
            return Issue(repository, backend.issues.get(parent, record["number"]))
        pull = PullRequest(repository, backend.pulls.get(parent, record["number"]))
        if kind == "PullRequest":
            return pull
        return PullRequestReview(pull, backend.reviews.get(parent, record["number"],
                                                           record["id"]))

    def nodes(self, info, ids):
        return [self.node(info, node_id) for node_id in ids]

    def rate_limit(self, info, dry_run=False):
        """The caller's window (limits.py); a dry run counts as any request does."""
        return rate_limit(self.context.quota, info)
