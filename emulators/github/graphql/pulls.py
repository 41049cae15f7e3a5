"""`PullRequest` and its reviews as GraphQL presents them, from REST's shapes: `pulls/get`'s
for what only it carries (mergeability, line counts), the rest from the shape at hand."""
from . import connections
from .actors import actor
from .checks import Commit
from .issues import Conversation

MERGEABLE = {True: "MERGEABLE", False: "CONFLICTING", None: "UNKNOWN"}


class PullRequest(Conversation):
    typename = "PullRequest"

    def __init__(self, repository, rest):
        super().__init__(repository, rest)
        self.id = rest["node_id"]
        self.database_id = rest["id"]
        self.state = "MERGED" if rest.get("merged_at") else rest["state"].upper()
        self.merged = bool(rest.get("merged_at"))
        self.merged_at = rest.get("merged_at")
        self.is_draft = rest["draft"]
        self.base_ref_name, self.head_ref_name = rest["base"]["ref"], rest["head"]["ref"]
        self.base_ref_oid, self.head_ref_oid = rest["base"]["sha"], rest["head"]["sha"]
        self.is_cross_repository = False  # forks are not modelled
        self.maintainer_can_modify = rest["maintainer_can_modify"]
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
            self._full = self.rules.pull(self.repository.rest, self.number)
        return self._full

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
        """GitHub's decision from each reviewer's latest approval or change request: what
        protection asks for when the base requires reviews, else what reviewers said."""
        latest = {}
        for review in self.rules.reviews(self.repository.rest, self.number):
            if review["state"] in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED"):
                latest[review["user"]["login"].lower()] = review["state"]
        states = set(latest.values())
        if "CHANGES_REQUESTED" in states:
            return "CHANGES_REQUESTED"
        protection = self.rules.protection(self.repository.rest, self.base_ref_name) or {}
        wanted = (protection.get("required_pull_request_reviews") or {}).get(
            "required_approving_review_count")
        if wanted is not None:
            approvals = sum(state == "APPROVED" for state in latest.values())
            return "APPROVED" if approvals >= wanted else "REVIEW_REQUIRED"
        return "APPROVED" if "APPROVED" in states else None

    def required_contexts(self):
        """The contexts protection of the base requires (`isRequired`)."""
        protection = self.rules.protection(self.repository.rest, self.base_ref_name) or {}
        return set((protection.get("required_status_checks") or {}).get("contexts") or ())

    def commits(self, info, first=None, last=None, after=None, before=None):
        shas = [c["sha"] for c in self.rules.pull_commits(self.repository.rest, self.number)]
        if not shas:  # a repository of synthetic SHAs has no listing: its head stands for it
            shas = [self.head_ref_oid]
        nodes = [{"id": f"PRC_{self.id}:{sha}", "url": f"{self.url}/commits/{sha}",
                  "commit": Commit(self.repository, sha, pull=self), "pullRequest": self}
                 for sha in shas]
        return connections.page(nodes, first, last, after, before, field="commits")

    def _reviews(self):
        return [PullRequestReview(self, r)
                for r in self.rules.reviews(self.repository.rest, self.number)]

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
        self.id = rest["node_id"]
        self.database_id = rest["id"]
        self.author = actor(rest["user"])
        self.author_association = rest["author_association"]
        self.body = rest["body"]
        self.state = rest["state"]
        self.submitted_at = rest.get("submitted_at")
        self.created_at = self.published_at = rest.get("submitted_at")
        self.url = rest["html_url"]
        self.commit = Commit(pull.repository, rest["commit_id"])
        self.reaction_groups = []
        self.includes_created_edit = False
