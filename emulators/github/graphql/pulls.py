"""`PullRequest` and its reviews as GraphQL presents them, from REST's shapes: `pulls/get`'s
for what only it carries (mergeability, line counts), the rest from the shape at hand."""
from .. import errors as rest_errors
from . import connections
from .actors import actor
from .checks import Commit
from .context import every, found
from .issues import Conversation
from .resolve import from_rest

MERGEABLE = {True: "MERGEABLE", False: "CONFLICTING", None: "UNKNOWN"}


class PullRequest(Conversation):
    typename = "PullRequest"

    def __init__(self, repository, rest):
        super().__init__(repository, rest)
        from_rest(self, rest, "maintainer_can_modify", id="node_id", database_id="id",
                  is_draft="draft")
        self.state = "MERGED" if rest.get("merged_at") else rest["state"].upper()
        self.merged = bool(rest.get("merged_at"))
        self.merged_at = rest.get("merged_at")
        self.base_ref_name, self.head_ref_name = rest["base"]["ref"], rest["head"]["ref"]
        self.base_ref_oid, self.head_ref_oid = rest["base"]["sha"], rest["head"]["sha"]
        self.is_cross_repository = False  # forks are not modelled
        self.head_repository = self.base_repository = repository
        self.permalink = self.url
        self.is_merge_queue_enabled = False  # no merge queue: gh merges directly
        self.is_in_merge_queue = False
        self.merge_queue_entry = None
        self.auto_merge_request = None
        self.potential_merge_commit = None
        self.viewer_can_merge_as_admin = False
        self._full = rest if "mergeable" in rest else None

    def full(self):
        """`pulls/get`'s answer (a listing's items lack mergeability and counts)."""
        if self._full is None:
            self._full = found(self.backend.pulls.get, self.record, self.number)
        return self._full

    def _record(self):
        """The pull request's record, as the rules take it."""
        return self.backend.pulls.find(self.record, self.number)

    def head_repository_owner(self, info):
        return self.repository.owner(info)

    def base_ref(self, info):
        return self.repository.ref(info, self.base_ref_name)

    def head_ref(self, info):
        return self.repository.ref(info, self.head_ref_name) if self.state == "OPEN" else None

    def merged_by(self, info):
        return actor(self.full()["merged_by"])

    def merge_commit(self, info):
        sha = self.rest.get("merge_commit_sha")
        return Commit(self.repository, sha) if self.merged and sha else None

    def additions(self, info):
        return self.full()["additions"]

    def deletions(self, info):
        return self.full()["deletions"]

    def changed_files(self, info):
        return self.full()["changed_files"]

    def mergeable(self, info):
        return MERGEABLE[self.full()["mergeable"]]

    def merge_state_status(self, info):
        return self.full()["mergeable_state"].upper()

    def review_decision(self, info):
        return self.backend.protection.review_decision(self.record, self._record(),
                                                       self.head_ref_oid)

    def required_contexts(self):
        """The contexts protection of the base requires (`isRequired`)."""
        return self.backend.protection.required_contexts(self.record, self.base_ref_name)

    def commits(self, info, first=None, last=None, after=None, before=None):
        try:
            shas = [c["sha"] for c in every(lambda page: self.backend.commits.of_pull(
                self.record, self._record(), page))]
        except rest_errors.SyntheticRepository:
            shas = []
        if not shas:  # a repository of synthetic SHAs has no listing: its head stands for it
            shas = [self.head_ref_oid]
        nodes = [{"id": f"PRC_{self.id}:{sha}", "url": f"{self.url}/commits/{sha}",
                  "commit": Commit(self.repository, sha, pull=self), "pullRequest": self}
                 for sha in shas]
        return connections.page(nodes, first, last, after, before, field="commits")

    def _reviews(self):
        """Every review the request's user may see (a pending one only to its author)."""
        return [PullRequestReview(self, review) for review in every(
            lambda page: self.backend.reviews.list(self.record, self.number, page))]

    def reviews(self, info, first=None, last=None, after=None, before=None, states=None,
                author=None):
        found = [r for r in self._reviews() if (not states or r.state in states)
                 and (not author or r.author.login.lower() == author.lower())]
        return connections.page(found, first, last, after, before, field="reviews")

    def latest_reviews(self, info, first=None, last=None, after=None, before=None,
                       writers_only=None):
        latest = {}
        for review in self._reviews():
            if review.state != "PENDING":
                latest[review.author.login.lower()] = review
        return connections.page(list(latest.values()), first, last, after, before,
                                field="latestReviews")

    def latest_opinionated_reviews(self, info, first=None, last=None, after=None,
                                   before=None, writers_only=None):
        latest = {}
        for review in self._reviews():
            if review.state in ("APPROVED", "CHANGES_REQUESTED"):
                latest[review.author.login.lower()] = review
        return connections.page(list(latest.values()), first, last, after, before,
                                field="latestOpinionatedReviews")

    def review_requests(self, info, first=None, last=None, after=None, before=None):
        found = [{"id": f"RR_{self.id}:{user['login']}", "asCodeOwner": False,
                  "requestedReviewer": actor(user), "pullRequest": self}
                 for user in self.full()["requested_reviewers"]]
        return connections.page(found, first, last, after, before, field="reviewRequests")


class PullRequestReview:
    typename = "PullRequestReview"

    def __init__(self, pull, rest):
        self.pull_request = pull
        from_rest(self, rest, "author_association", "body", "state", id="node_id",
                  database_id="id", url="html_url")
        self.author = actor(rest["user"])
        self.submitted_at = self.created_at = self.published_at = rest.get("submitted_at")
        self.commit = Commit(pull.repository, rest["commit_id"])
        self.reaction_groups = []
        self.includes_created_edit = False
