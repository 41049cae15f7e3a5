"""The root fields: the queries (`viewer`, `user`, `repository`, `node`, `nodes`) here, the
mutations in mutations.py (the same root value answers both)."""
from .actors import actor
from .issues import Issue, Label
from .mutations import Mutations
from .pulls import PullRequest
from .repository import Repository


class Root:
    """The root value of every request; `rules` acts as the request's user."""

    def __init__(self, rules):
        self.rules = rules
        self.mutations = Mutations(rules, self)

    def __getattr__(self, name):  # a mutation field: composed, not mixed in
        return getattr(self.mutations, name)

    def viewer(self, info):
        rules = self.rules
        login = rules.viewer()
        return actor(rules.account(login) or {"login": login, "id": 0, "type": "User",
                                              "node_id": f"U_{login}"})

    def user(self, info, login):
        found = self.rules.account(login)
        return actor(found) if found and found["type"] == "User" else None

    def organization(self, info, login):
        found = self.rules.account(login)
        return actor(found) if found and found["type"] == "Organization" else None

    def repository_owner(self, info, login):
        return actor(self.rules.account(login))

    def repository(self, info, owner, name, follow_renames=True):
        return Repository(self.rules, self.rules.repository(owner, name))

    def node(self, info, id):
        """The object a node id names (a REST answer's `node_id`), or None."""
        found = self.rules.node(id)
        if found is None:
            return None
        kind, rest, parent = found
        if kind == "Repository":
            return Repository(self.rules, rest)
        if kind == "Account":
            return actor(rest)
        if kind == "Label":
            return Label(rest)
        repository = Repository(self.rules, parent)
        return PullRequest(repository, rest) if kind == "PullRequest" \
            else Issue(repository, rest)

    def nodes(self, info, ids):
        return [self.node(info, node_id) for node_id in ids]
