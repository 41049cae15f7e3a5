"""The GitHub emulator as a runtime `Service`: provider app, OpenAPI, presets, admin controls.

The provider app adds GitHub's API-version rule: an unknown `X-GitHub-Api-Version` is refused
before routing, every other provider answer (errors and the generic 404 included) carries
`x-github-api-version-selected`.
"""
import logging

import falcon

from emulators.runtime import Service, add_fallback_handlers, bodies, instance_of

from . import admin, context, errors, events, media
from .graphql.documents import ENDPOINT as GRAPHQL, operation_id as graphql_operation
from .graphql.resources import GraphQL
from .openapi import DOCUMENT
from .operations import GIT, OPERATIONS, RAW, R
from .presets import PRESETS
from .ratelimits.admin import ROUTES as RATE_LIMIT_ADMIN_ROUTES
from .ratelimits.middleware import AnswerHeaders
from .ratelimits.resources import RateLimit
from .resources import (apps, checks, commits, contents, git_data, issues, labels, merges,
                        protection, pulls, refs, repos, reviews, smart_http, statuses)
from .resources.access import AppAccess

log = logging.getLogger(__name__)

VERSION = "0.1.0"
DEFAULT_PORT = 8828
# path (falcon's template) -> the resource answering there each method the operation table
# (operations.py) names on that path, in the table's order
RESOURCES = {
    R: repos.Repository,
    R + "/git/ref/{ref:path}": refs.Ref,
    R + "/git/matching-refs/{ref:path}": refs.MatchingRefs,
    R + "/git/refs": refs.Refs,
    R + "/git/refs/{ref:path}": refs.RefItem,
    R + "/pulls": pulls.Pulls,
    R + "/pulls/{pull_number}": pulls.Pull,
    R + "/git/matching-refs": refs.MatchingRefs,
    "/{owner}/{repo}/info/refs": smart_http.InfoRefs,
    "/{owner}/{repo}/git-upload-pack": smart_http.UploadPack,
    "/{owner}/{repo}/git-receive-pack": smart_http.ReceivePack,
    R + "/contents/{path:path}": contents.Contents,
    R + "/contents": contents.Contents,
    R + "/readme": contents.Readme,
    R + "/git/blobs": git_data.Blobs,
    R + "/git/blobs/{file_sha}": git_data.Blob,
    R + "/git/trees": git_data.Trees,
    R + "/git/trees/{tree_sha:path}": git_data.Tree,
    R + "/git/commits": git_data.GitCommits,
    R + "/git/commits/{commit_sha}": git_data.GitCommit,
    R + "/commits": commits.Commits,
    R + "/commits/{ref:path}": commits.CommitPaths,  # and the listings below (its TAILS)
    R + "/compare/{basehead:path}": commits.Compare,
    R + "/pulls/{pull_number}/commits": pulls.PullCommits,
    R + "/pulls/{pull_number}/files": pulls.PullFiles,
    "/{owner}/{repo}/raw/{tail:path}": contents.Raw,
    R + "/statuses/{sha}": statuses.Statuses,
    R + "/check-runs": checks.CheckRuns,
    R + "/check-runs/{check_run_id}": checks.CheckRun,
    R + "/check-runs/{check_run_id}/rerequest": checks.CheckRunRerequest,
    R + "/check-suites/{check_suite_id}": checks.CheckSuite,
    R + "/check-suites/{check_suite_id}/check-runs": checks.CheckSuiteRuns,
    R + "/issues": issues.Issues,
    R + "/issues/{issue_number}": issues.Issue,
    R + "/issues/{issue_number}/comments": issues.IssueComments,
    R + "/issues/comments/{comment_id}": issues.IssueComment,
    R + "/issues/{issue_number}/labels": labels.IssueLabels,
    R + "/issues/{issue_number}/labels/{name}": labels.IssueLabel,
    R + "/issues/{issue_number}/assignees": issues.IssueAssignees,
    R + "/labels": labels.Labels,
    R + "/labels/{name}": labels.Label,
    R + "/pulls/{pull_number}/reviews": reviews.Reviews,
    R + "/pulls/{pull_number}/reviews/{review_id}": reviews.Review,
    R + "/pulls/{pull_number}/reviews/{review_id}/events": reviews.ReviewEvents,
    R + "/pulls/{pull_number}/reviews/{review_id}/dismissals": reviews.ReviewDismissals,
    R + "/pulls/{pull_number}/requested_reviewers": reviews.RequestedReviewers,
    R + "/pulls/{pull_number}/merge": merges.PullMerge,
    R + "/merges": merges.Merges,
    R + "/branches": protection.Branches,
    R + "/branches/{branch}": protection.Branch,
    R + "/branches/{branch}/protection": protection.BranchProtection,
    "/app": apps.App,
    "/app/installations": apps.AppInstallations,
    "/app/installations/{installation_id}": apps.AppInstallation,
    "/app/installations/{installation_id}/access_tokens": apps.AccessTokens,
    R + "/installation": apps.RepoInstallation,
    "/orgs/{org}/installation": apps.OrgInstallation,
    "/users/{username}/installation": apps.UserInstallation,
    "/installation/repositories": apps.InstallationRepositories,
    "/installation/token": apps.InstallationToken,
    "/graphql": GraphQL,
    "/rate_limit": RateLimit,
}


def _routes():
    """(path, resource class, {method: operationId}) of each falcon route. Every row of the
    operation table is routed: at its path, or below a commit by CommitPaths."""
    methods = {}
    for row in OPERATIONS:
        methods.setdefault(row.path, {})[row.method] = row.id
    below_commits = {template for template, _ in commits.CommitPaths.BELOW.values()}
    unrouted = set(methods) - set(RESOURCES) - below_commits
    idle = set(RESOURCES) - set(methods)
    if unrouted or idle:
        raise LookupError(f"paths of operations.py with no resource here: {sorted(unrouted)};"
                          f" resources here at no path of it: {sorted(idle)}")
    return tuple((path, resource, methods[path]) for path, resource in RESOURCES.items())


ROUTES = _routes()
# git's smart HTTP routes and `raw` are not the REST API: no rate limit, no ETag
OUTSIDE_API = tuple(dict.fromkeys(RESOURCES[row.path] for row in OPERATIONS
                                  if row.form in (GIT, RAW)))


class Operations:
    """Name the operation a request calls (`req.context.operation`, from the route table), so
    an error a rule raises links that operation's documentation page."""

    def __init__(self):
        self.of = {}  # resource (as routed) -> {method: operationId}

    def process_resource(self, req, resp, resource, params):
        req.context.operation = self.of.get(id(resource), {}).get(req.method)


class EnterpriseLayout:
    """Serve the REST API (and git) under `/api/v3` too, as GitHub Enterprise Server does:
    probot's `GHE_HOST`, octokit's and PyGithub's `…/api/v3` base URLs work unchanged, and
    every API URL of the answer carries `/api/v3` (context.enter_api_prefix; the web's stay at
    the root, as GHES lays them out: shapes.web)."""

    def process_request(self, req, resp):
        routed = context.enter_api_prefix(req.env)
        if routed != req.path:
            req.path = routed  # falcon routes on req.path as process_request leaves it


class ClockDate:
    """`Date` is the emulator's clock: octokit's App sign-in corrects its own clock from it
    after a JWT time refusal (serve() keeps it; gunicorn puts its own in its place)."""

    def process_response(self, req, resp, resource, req_succeeded):
        resp.set_header("Date", context.http_date(instance_of(req).now_ms()))


class ApiVersion:
    """Refuse versions the emulator does not model; stamp the selected version on answers."""

    def process_request(self, req, resp):
        asked = req.get_header("X-GitHub-Api-Version")
        if asked and asked != errors.API_VERSION:
            raise errors.UnsupportedVersion()

    def process_response(self, req, resp, resource, req_succeeded):
        if not resp.context.get("unversioned"):
            resp.set_header("x-github-api-version-selected", errors.API_VERSION)


class MediaType:
    """Name the media type served (`X-GitHub-Media-Type`), as GitHub does on every answer."""

    def process_response(self, req, resp, resource, req_succeeded):
        if not resp.context.get("unversioned"):
            resp.set_header("X-GitHub-Media-Type", media.served(resp.context.get("media")))


class EmptySegments:
    """Treat an empty path parameter (`/pulls/`, `/git/ref/`) as an unknown route.

    Only matching-refs takes an empty tail (`/git/matching-refs/` lists every ref).
    """

    def process_resource(self, req, resp, resource, params):
        if not isinstance(resource, refs.MatchingRefs) and "" in params.values():
            raise errors.RouteNotFound()


def _github_error(req, resp, exc, params):
    if exc.operation is None:
        exc.operation = req.context.get("operation")
    resp.status = exc.status
    resp.media = exc.body()
    for name, value in exc.headers.items():
        resp.set_header(name, value)
    resp.context["unversioned"] = not exc.versioned


def _not_found(req, resp, exc, params):
    # No 405 on GitHub's surface here: any unknown path or method is the generic 404, which
    # names no operation.
    _github_error(req, resp, errors.RouteNotFound(), params)


def _too_large(req, resp, exc, params):
    _github_error(req, resp, errors.PayloadTooLarge(), params)


def _unexpected(req, resp, exc, params):
    log.exception("github emulator: unexpected error on %s %s", req.method, req.path)
    resp.status = 500
    resp.media = {"message": "Internal Server Error",
                  "documentation_url": errors.TROUBLESHOOTING, "status": "500"}


def create_provider_app():
    """Build the falcon app with the GitHub operations at the root."""
    operations = Operations()
    # AnswerHeaders last: a write is counted once AppAccess let it through (a refused one when
    # it is answered), and its answer headers are made over the final status
    app = add_fallback_handlers(falcon.App(middleware=[
        EnterpriseLayout(), ApiVersion(), MediaType(), ClockDate(), operations, EmptySegments(),
        AppAccess(), AnswerHeaders(OUTSIDE_API)]))
    app.req_options.strip_url_path_trailing_slash = False
    for path, resource, methods in ROUTES:
        routed = resource()
        operations.of[id(routed)] = methods
        app.add_route(path, routed)
    app.add_error_handler(Exception, _unexpected)
    app.add_error_handler(falcon.HTTPError, _not_found)
    app.add_error_handler(errors.GitHubError, _github_error)
    app.add_error_handler(bodies.BodyTooLarge, _too_large)
    app.add_error_handler(smart_http.GitAnswer, smart_http.git_error)
    return app


def create_service(settings=None):
    """Build the GitHub Service for the runtime (GitHub has no options of its own: `settings`
    is None, the parameter keeps the factory shape every service shares)."""
    return Service(name="github", version=VERSION, default_port=DEFAULT_PORT, openapi=DOCUMENT,
                   provider_app=create_provider_app, presets=PRESETS,
                   describe=lambda instance: {"apiVersion": errors.API_VERSION},
                   # the runtime's hub (emulators/runtime/webhooks.py); events from models.py
                   webhooks=True, webhook_ping=admin.webhook_ping,
                   webhook_headers=events.delivery_headers,
                   webhook_user_agent="GitHub-Hookshot/mockingbird",
                   admin_routes=admin.ROUTES + RATE_LIMIT_ADMIN_ROUTES,
                   # REST and git alike: a token routes through the credential map
                   credential=context.credential,
                   read_operations={"git/upload-pack"}, own_transactions={"git/receive-pack"},
                   body_limits={"git/receive-pack": smart_http.MAX_PUSH},
                   # `/api/v3/...` is the same operation as the root route, `/api/graphql` is
                   # `/graphql` (EnterpriseLayout)
                   operation_path=context.route_path,
                   # GraphQL: each query and mutation is journaled and faulted by its name
                   body_operations={GRAPHQL: graphql_operation},
                   # each answer names its journal entry, as GitHub names a request
                   request_id_header="X-GitHub-Request-Id")


def from_env(environ):
    """Build the Service from an entry point's environment (no GITHUB_* variables yet)."""
    return create_service()
