"""What every resolver of one request shares: the backend acting as whom the request's
credential names (its rule objects are what resolvers and mutations call, with typed
arguments), that credential, the instance a write is journaled on, and the few lookups GraphQL
makes in its own terms.

A rule's refusal is a `GitHubError`; the answer turns it into GraphQL's (errors.from_rest), so
GraphQL refuses what REST refuses. A read GraphQL answers with `null` where REST answers 404
goes through `found`. An App's credential is held to the permission of the REST operation a
field or mutation stands for (`allow`), by the verdict REST's middleware gives.
"""
from .. import calls, errors as rest
from ..credentials import AppJwt, InstallationToken
from ..inputs import Page
from ..permissions import FORBIDDEN, HIDDEN, verdict
from .errors import Forbidden, could_not_resolve

PAGE = 100  # items per page when a resolver reads every item of a listing
_COMMIT = "repos/get-commit"
# (type, field) -> the REST operations whose App permission the field needs (its answer is
# theirs); a field not named here needs what reaching its object needed
FIELDS = {
    ("Repository", "pullRequest"): ("pulls/get",),
    ("Repository", "pullRequests"): ("pulls/list",),
    ("Repository", "issue"): ("issues/get",),
    ("Repository", "issueOrPullRequest"): ("issues/get",),
    ("Repository", "issues"): ("issues/list-for-repo",),
    ("Repository", "label"): ("issues/get-label",),
    ("Repository", "labels"): ("issues/list-labels-for-repo",),
    ("Repository", "defaultBranchRef"): ("repos/get-branch",),
    ("Repository", "ref"): ("repos/get-branch",),
    ("Ref", "branchProtectionRule"): ("repos/get-branch-protection",),
    **{("Commit", name): (_COMMIT,) for name in (
        "message", "messageHeadline", "messageBody", "author", "authors", "committer",
        "authoredDate", "committedDate")},
    ("Commit", "status"): ("repos/get-combined-status-for-ref",),
    ("Commit", "statusCheckRollup"): ("repos/get-combined-status-for-ref",
                                      "checks/list-for-ref"),
    ("PullRequest", "commits"): ("pulls/list-commits",),
    **{("PullRequest", name): ("pulls/list-reviews",) for name in (
        "reviews", "latestReviews", "latestOpinionatedReviews", "reviewDecision")},
    ("PullRequest", "reviewRequests"): ("pulls/list-requested-reviewers",),
    ("PullRequest", "comments"): ("issues/list-comments",),
    ("Issue", "comments"): ("issues/list-comments",),
}


class Context:
    """One request's backend (`backend`), credential (credentials.py), instance and how it
    was metered (`quota`: ratelimits' Metered, None when nothing metered it), and the
    repositories it has found."""

    def __init__(self, backend, credential, instance, quota=None):
        self.backend = backend
        self.credential = credential
        self.instance = instance
        self.quota = quota
        self.repositories = {}  # repository key -> its GraphQL object (repository.present)
        # whether an App's credential (an installation token or its JWT) makes the request
        self.integration = isinstance(credential, (InstallationToken, AppJwt))

    def repository(self, owner, name):
        """The repository record `owner/name`, as the credential may see it; GraphQL's
        NOT_FOUND when there is none or when it is outside an installation token's reach."""
        record = self.backend.repos.get(owner, name)
        if record is None or not self.visible(record):
            raise could_not_resolve("Repository", f"the name '{owner}/{name}'")
        self.allow("repos/get", record)
        return record

    def visible(self, record):
        """Whether the credential reaches a repository record (an installation token reaches
        only its own; an App's JWT none, which `allow` refuses)."""
        return not isinstance(self.credential, InstallationToken) or \
            self.credential.reaches(record)

    def allow(self, operation, record):
        """Refuse (FORBIDDEN, GitHub's `Resource not accessible by integration`) what an App's
        credential may not do: the REST `operation` on the repository `record`, as REST's
        middleware judges it (permissions.verdict). Users' tokens may do all of it."""
        if isinstance(self.credential, AppJwt):
            raise Forbidden()  # an App as itself reaches no repository
        if isinstance(self.credential, InstallationToken):
            found = verdict(self.credential, operation, record)
            if found == HIDDEN:
                raise could_not_resolve("Repository", f"the name '{record['key']}'")
            if found == FORBIDDEN:
                raise Forbidden()

    def guard(self, source, info):
        """Hold an App's credential to the permission a field of a repository's object needs
        (`FIELDS`; the field resolver asks before it resolves one)."""
        if not self.integration:
            return
        needed = FIELDS.get((info.parent_type.name, info.field_name))
        if needed is not None:
            record = source.record if hasattr(source, "record") else source.repository.record
            for operation in needed:
                self.allow(operation, record)

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
