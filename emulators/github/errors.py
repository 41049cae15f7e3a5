"""GitHub emulator errors: each carries its status and the wire body GitHub (or the reference)
sends.

Models and schemas raise these; the provider app and the admin handlers serialise them once.
A rule does not know which REST operation called it: the provider app names the operation
(`operation`, whose documentation page GitHub's envelope links) of an error raised without one.
"""
from emulators.runtime import EmulatorError

API_VERSION = "2026-03-10"
GENERIC_DOCS = "https://docs.github.com/rest"  # where GitHub's answers name no operation

DOCS = {
    "repos/get": "https://docs.github.com/rest/repos/repos#get-a-repository",
    "git/get-ref": "https://docs.github.com/rest/git/refs#get-a-reference",
    "git/list-matching-refs": "https://docs.github.com/rest/git/refs#list-matching-references",
    # the older listing GitHub still serves answers with the matching-refs page
    "git/list-refs": "https://docs.github.com/rest/git/refs#list-matching-references",
    "git/create-ref": "https://docs.github.com/rest/git/refs#create-a-reference",
    "git/update-ref": "https://docs.github.com/rest/git/refs#update-a-reference",
    "git/delete-ref": "https://docs.github.com/rest/git/refs#delete-a-reference",
    "pulls/list": "https://docs.github.com/rest/pulls/pulls#list-pull-requests",
    "pulls/get": "https://docs.github.com/rest/pulls/pulls#get-a-pull-request",
    "pulls/create": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
    "pulls/update": "https://docs.github.com/rest/pulls/pulls#update-a-pull-request",
    "pulls/list-commits":
        "https://docs.github.com/rest/pulls/pulls#list-commits-on-a-pull-request",
    "pulls/list-files": "https://docs.github.com/rest/pulls/pulls#list-pull-requests-files",
    "repos/get-content": "https://docs.github.com/rest/repos/contents#get-repository-content",
    "repos/create-or-update-file-contents":
        "https://docs.github.com/rest/repos/contents#create-or-update-file-contents",
    "repos/delete-file": "https://docs.github.com/rest/repos/contents#delete-a-file",
    "repos/get-readme":
        "https://docs.github.com/rest/repos/contents#get-a-repository-readme",
    "git/create-blob": "https://docs.github.com/rest/git/blobs#create-a-blob",
    "git/get-blob": "https://docs.github.com/rest/git/blobs#get-a-blob",
    "git/create-tree": "https://docs.github.com/rest/git/trees#create-a-tree",
    "git/get-tree": "https://docs.github.com/rest/git/trees#get-a-tree",
    "git/create-commit": "https://docs.github.com/rest/git/commits#create-a-commit",
    "git/get-commit": "https://docs.github.com/rest/git/commits#get-a-commit-object",
    "repos/list-commits": "https://docs.github.com/rest/commits/commits#list-commits",
    "repos/get-commit": "https://docs.github.com/rest/commits/commits#get-a-commit",
    "repos/compare-commits-with-basehead":
        "https://docs.github.com/rest/commits/commits#compare-two-commits",
}
# a pull request's life: operationId -> GitHub's documentation page and anchor
DOCS.update({op: f"https://docs.github.com/rest/{page}" for op, page in {
    "repos/create-commit-status": "commits/statuses#create-a-commit-status",
    "repos/list-commit-statuses-for-ref":
        "commits/statuses#list-commit-statuses-for-a-reference",
    "repos/get-combined-status-for-ref":
        "commits/statuses#get-the-combined-status-for-a-specific-reference",
    "repos/get-commit": "commits/commits#get-a-commit",
    "checks/create": "checks/runs#create-a-check-run",
    "checks/update": "checks/runs#update-a-check-run",
    "checks/get": "checks/runs#get-a-check-run",
    "checks/rerequest-run": "checks/runs#rerequest-a-check-run",
    "checks/list-for-ref": "checks/runs#list-check-runs-for-a-git-reference",
    "checks/list-for-suite": "checks/runs#list-check-runs-in-a-check-suite",
    "checks/list-suites-for-ref": "checks/suites#list-check-suites-for-a-git-reference",
    "checks/get-suite": "checks/suites#get-a-check-suite",
    "issues/create": "issues/issues#create-an-issue",
    "issues/get": "issues/issues#get-an-issue",
    "issues/update": "issues/issues#update-an-issue",
    "issues/list-for-repo": "issues/issues#list-repository-issues",
    "issues/create-comment": "issues/comments#create-an-issue-comment",
    "issues/list-comments": "issues/comments#list-issue-comments",
    "issues/get-comment": "issues/comments#get-an-issue-comment",
    "issues/update-comment": "issues/comments#update-an-issue-comment",
    "issues/delete-comment": "issues/comments#delete-an-issue-comment",
    "issues/add-labels": "issues/labels#add-labels-to-an-issue",
    "issues/set-labels": "issues/labels#set-labels-for-an-issue",
    "issues/remove-label": "issues/labels#remove-a-label-from-an-issue",
    "issues/remove-all-labels": "issues/labels#remove-all-labels-from-an-issue",
    "issues/list-labels-on-issue": "issues/labels#list-labels-for-an-issue",
    "issues/list-labels-for-repo": "issues/labels#list-labels-for-a-repository",
    "issues/create-label": "issues/labels#create-a-label",
    "issues/get-label": "issues/labels#get-a-label",
    "issues/update-label": "issues/labels#update-a-label",
    "issues/delete-label": "issues/labels#delete-a-label",
    "issues/add-assignees": "issues/assignees#add-assignees-to-an-issue",
    "issues/remove-assignees": "issues/assignees#remove-assignees-from-an-issue",
    "pulls/create-review": "pulls/reviews#create-a-review-for-a-pull-request",
    "pulls/submit-review": "pulls/reviews#submit-a-review-for-a-pull-request",
    "pulls/list-reviews": "pulls/reviews#list-reviews-for-a-pull-request",
    "pulls/get-review": "pulls/reviews#get-a-review-for-a-pull-request",
    "pulls/dismiss-review": "pulls/reviews#dismiss-a-review-for-a-pull-request",
    "pulls/request-reviewers": "pulls/review-requests#request-reviewers-for-a-pull-request",
    "pulls/remove-requested-reviewers":
        "pulls/review-requests#remove-requested-reviewers-from-a-pull-request",
    "pulls/list-requested-reviewers":
        "pulls/review-requests#get-all-requested-reviewers-for-a-pull-request",
    "pulls/merge": "pulls/pulls#merge-a-pull-request",
    "pulls/check-if-merged": "pulls/pulls#check-if-a-pull-request-has-been-merged",
    "repos/merge": "branches/branches#merge-a-branch",
    "repos/get-branch": "branches/branches#get-a-branch",
    "repos/list-branches": "branches/branches#list-branches",
    "repos/get-branch-protection": "branches/branch-protection#get-branch-protection",
    "repos/update-branch-protection": "branches/branch-protection#update-branch-protection",
    "repos/delete-branch-protection": "branches/branch-protection#delete-branch-protection",
    "rate-limit/get": "rate-limit/rate-limit#get-rate-limit-status-for-the-authenticated-user",
}.items()})

# GitHub Apps: the App's own routes (a JWT) and its installations' (an installation token)
DOCS.update({op: f"https://docs.github.com/rest/apps/{page}" for op, page in {
    "apps/get-authenticated": "apps#get-the-authenticated-app",
    "apps/list-installations": "apps#list-installations-for-the-authenticated-app",
    "apps/get-installation": "apps#get-an-installation-for-the-authenticated-app",
    "apps/create-installation-access-token":
        "apps#create-an-installation-access-token-for-an-app",
    "apps/get-repo-installation": "apps#get-a-repository-installation-for-the-authenticated-app",
    "apps/get-org-installation":
        "apps#get-an-organization-installation-for-the-authenticated-app",
    "apps/get-user-installation": "apps#get-a-user-installation-for-the-authenticated-app",
    "apps/list-repos-accessible-to-installation":
        "installations#list-repositories-accessible-to-the-app-installation",
    "apps/revoke-installation-access-token": "installations#revoke-an-installation-access-token",
}.items()})

TROUBLESHOOTING = "https://docs.github.com/rest/using-the-rest-api/troubleshooting-the-rest-api"
GRAPHQL_DOCS = "https://docs.github.com/graphql"


class GitHubError(EmulatorError):
    """Base of every GitHub emulator error; `body()` is the JSON sent on the wire."""

    status = 500
    message = "Internal Server Error"
    #: whether the provider stamps `x-github-api-version-selected` on this answer
    versioned = True
    #: the REST operation answered (its documentation page), named by the provider app
    operation = None

    def body(self):
        return {"message": self.message}

    @property
    def documentation_url(self):
        return DOCS.get(self.operation, TROUBLESHOOTING)


class BasicError(GitHubError):
    """GitHub's basic envelope `{message, documentation_url, status}` (status as a string)."""

    def __init__(self, message=None, *, operation=None):
        super().__init__(message)
        self.operation = operation

    def body(self):
        return {"message": self.message, "documentation_url": self.documentation_url,
                "status": str(self.status)}


class NotFound(BasicError, status=404, message="Not Found"):
    """The repository, reference or pull request does not exist (or the route is unknown)."""


class ProblemsParsingJSON(BasicError, status=400, message="Problems parsing JSON"):
    """The request body claims JSON but is not."""


class Unprocessable(BasicError, status=422):
    """A 422 with the basic envelope (ref rules: bad sha, name, fast-forward)."""


class EmptyRepository(BasicError, status=409, message="Git Repository is empty."):
    """Creating a ref in a repository with no branch at all."""


class Conflict(BasicError, status=409):
    """A 409 with the basic envelope (a contents write against a stale blob sha)."""


class ValidationFailed(GitHubError):
    """A 422 `Validation Failed` with one `errors` item (of a pull request unless `resource`
    names another: `Status`, `CheckRun`, `Issue`, `Label`...)."""

    status = 422
    message = "Validation Failed"

    def __init__(self, *, field=None, custom=None, resource="PullRequest", code=None):
        super().__init__()
        if custom is not None:
            self.item = {"resource": resource, "code": "custom",
                         **({"field": field} if field else {}), "message": custom}
        else:
            self.item = {"resource": resource, "code": code or "invalid", "field": field}

    def body(self):
        return {"message": self.message, "errors": [self.item],
                "documentation_url": self.documentation_url, "status": "422"}


class Unmergeable(BasicError, status=405):
    """`pulls/merge` refused: conflicts, protection, a draft, a closed PR."""


class HeadModified(BasicError, status=409,
                   message="Head branch was modified. Review and try the merge again."):
    """`pulls/merge` with a `sha` that is not the head's tip."""


class MergeConflict(BasicError, status=409, message="Merge conflict"):
    """`repos/merge` of branches whose changes conflict."""


class ReviewRefused(GitHubError):
    """A 422 GitHub answers about reviews: `Unprocessable Entity` with string `errors`."""

    status = 422
    message = "Unprocessable Entity"

    def __init__(self, reason):
        super().__init__()
        self.reason = reason

    def __str__(self):
        return self.reason

    def body(self):
        return {"message": self.message, "errors": [self.reason],
                "documentation_url": self.documentation_url, "status": "422"}


class PayloadTooLarge(BasicError, status=413, message="Payload Too Large",
                      documentation_url=TROUBLESHOOTING):
    """413 for a body past the runtime's limit, in the shape of GitHub's other errors."""


class MockOnlyError(GitHubError):
    """An answer only the emulator gives: `{message, code}`, or `{code, message}` where the
    reference GitHub emulator orders the keys so."""

    code = None
    code_first = False

    def __init__(self, message=None, status=None):
        super().__init__(message, status=status)

    def body(self):
        pairs = [("message", self.message), ("code", self.code)]
        return dict(reversed(pairs) if self.code_first else pairs)


class Unsupported(MockOnlyError, status=501, code="mockingbird_unsupported", code_first=True):
    """Something the emulator deliberately does not model (mock-only 501)."""


class UnsupportedVersion(MockOnlyError):
    """An `X-GitHub-Api-Version` the emulator does not serve (answered before routing)."""

    status = 501
    code = "mockingbird_unsupported"
    versioned = False

    def __init__(self):
        super().__init__(f"Mockingbird only models GitHub API {API_VERSION}")


class SeedInvalid(MockOnlyError, status=400, code="mockingbird_seed_invalid", versioned=False):
    """A fixture the seeding control refuses (mock-only)."""


class ControlInvalid(MockOnlyError, status=400, code="mockingbird_control_invalid",
                     code_first=True, versioned=False):
    """A refs/move the intervening-actor control refuses (mock-only)."""


CROSS_REPO = "Mockingbird does not model cross-repository heads"
SYNTHETIC = ("Mockingbird: this repository was seeded with synthetic SHAs (commit ids and parents,"
             " no objects), so it has no files or git objects to serve; seed it with `files` or"
             " a `bundle`, or seed it empty and push to it")


class SyntheticRepository(MockOnlyError, status=409, code="mockingbird_synthetic_repository"):
    """A git or content operation on a repository seeded with synthetic SHAs (mock-only)."""

    def __init__(self):
        super().__init__(SYNTHETIC)


class RefRejected(GitHubError):
    """A ref write `RefRules.write` refuses; `message` is git's reason (`non-fast-forward`,
    `stale info`, `failed to lock`...), which a push reports as `ng <ref> <reason>`."""

    status = 422

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


class GraphQLEndpointError(GitHubError):
    """A refusal of the GraphQL endpoint itself, before any query runs, in the envelope GitHub's
    GraphQL API answers it with (no `status`)."""

    documentation_url = GRAPHQL_DOCS

    def body(self):
        return {"message": self.message, "documentation_url": self.documentation_url}


class RequiresAuthentication(GraphQLEndpointError, status=401,
                             message="This endpoint requires you to be authenticated."):
    """GitHub's GraphQL API answers no request without a credential (REST answers many)."""

    documentation_url = ("https://docs.github.com/graphql/guides/forming-calls-with-graphql"
                         "#authenticating-with-graphql")


class GraphQLBodyUnparsed(GraphQLEndpointError, status=400, message="Problems parsing JSON"):
    """A GraphQL request whose body is not a JSON object."""


class GraphQLUnauthorized(GraphQLEndpointError, status=401):
    """A credential GitHub refuses (`Bad credentials`, a JWT's complaint), on GraphQL's route."""


class NotFoundMessage(BasicError, status=404):
    """A 404 whose message says what is missing (`Branch x not found`, `This repository is
    empty.`), as GitHub's contents API words them."""



class RouteNotFound(BasicError, status=404, message="Not Found", documentation_url=GENERIC_DOCS):
    """GitHub's generic 404: a route (or method) it does not serve names no operation."""


class Unauthorized(BasicError, status=401, documentation_url=GENERIC_DOCS):
    """401 for credentials GitHub refuses (`Bad credentials`, a JWT's exact complaint), with
    its generic documentation link, as GitHub sends them."""


class BadCredentials(Unauthorized, message="Bad credentials"):
    """An installation token that expired, was revoked or was never issued."""


class NotAnIntegration(Unauthorized, message="A JSON web token could not be decoded"):
    """A route only an App's JWT may call, called with anything else (or a bad JWT)."""


class Forbidden(BasicError, status=403, message="Resource not accessible by integration"):
    """An App's credential without the permission an operation needs."""


class AppRefused(MockOnlyError, status=400, code="mockingbird_app_invalid", versioned=False):
    """An App or installation the admin control refuses (mock-only)."""
