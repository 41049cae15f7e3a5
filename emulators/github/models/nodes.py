"""Node ids: which record a global id (a REST answer's `node_id`) names, as GraphQL's
`node(id:)` resolves it.

A node id starts with its type's prefix (`R_` a repository, `U_`/`O_` an account, `PR_` a pull
request, `PRR_` a review, `I_` an issue, `LA_` a label), so one lookup finds it.
"""
from ..store import ISSUES, LABELS, OWNERS, REPOS, REVIEWS

KINDS = (("PR_", "PullRequest"), ("PRR_", "PullRequestReview"), ("LA_", "Label"),
         ("R_", "Repository"), ("U_", "Account"), ("O_", "Account"), ("I_", "Issue"))
COLLECTIONS = {"Issue": ISSUES, "Label": LABELS, "PullRequestReview": REVIEWS}


class Nodes:
    """Find the record of a node id in one namespace's store."""

    def __init__(self, store):
        self.store = store

    def find(self, node_id):
        """(kind, record, the repository record it belongs to or None) of a node id: kind
        `Repository` (record: the repository), `Account` (an owner record), `PullRequest`,
        `PullRequestReview`, `Issue` or `Label`; None when no record has that id."""
        kind = next((kind for prefix, kind in KINDS if node_id.startswith(prefix)), None)
        if kind == "Repository":
            found = self._one(REPOS, node_id)
            return None if found is None else (kind, found, found)
        if kind == "Account":
            found = self._one(OWNERS, node_id)
            return None if found is None else (kind, found, None)
        if kind == "PullRequest":
            found = next(iter(self.store.pulls({"node_id": node_id}, order_by=None, desc=False,
                                               limit=1, offset=0)), None)
        elif kind in COLLECTIONS:
            found = self._one(COLLECTIONS[kind], node_id)
        else:
            return None
        return None if found is None else (kind, found, self.store.repo(found["repo"]))

    def _one(self, collection, node_id):
        return next(iter(self.store.items(collection, {"node_id": node_id}, limit=1)), None)
