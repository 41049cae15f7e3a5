"""GitHub emulator errors: each carries its status and the wire body GitHub (or the reference)
sends.

Models and schemas raise these; the provider app and the admin handlers serialise them once.
A rule does not know which REST operation called it: the provider app names the operation
(`operation`, whose documentation page GitHub's envelope links) of an error raised without one.
"""
from emulators.runtime import EmulatorError

from .operations import REST_DOCS, by_id

API_VERSION = "2026-03-10"
GENERIC_DOCS = "https://docs.github.com/rest"  # where GitHub's answers name no operation

# operationId -> GitHub's documentation page of it (the operation table's, operations.py)
DOCS = {operation: REST_DOCS + page for operation, page in by_id("docs").items()}
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
