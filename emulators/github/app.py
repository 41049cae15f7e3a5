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
REPO = "/repos/{owner}/{repo}"
ROUTES = (  # path, resource class, {method: the operation it answers}
    (REPO, repos.Repository, {"GET": "repos/get"}),
    (REPO + "/git/ref/{ref:path}", refs.Ref, {"GET": "git/get-ref"}),
    (REPO + "/git/matching-refs", refs.MatchingRefs, {"GET": "git/list-matching-refs"}),
    (REPO + "/git/matching-refs/{ref:path}", refs.MatchingRefs,
     {"GET": "git/list-matching-refs"}),
    (REPO + "/git/refs", refs.Refs, {"GET": "git/list-refs", "POST": "git/create-ref"}),
    (REPO + "/git/refs/{ref:path}", refs.RefItem,
     {"GET": "git/list-refs", "PATCH": "git/update-ref", "DELETE": "git/delete-ref"}),
    (REPO + "/pulls", pulls.Pulls, {"GET": "pulls/list", "POST": "pulls/create"}),
    (REPO + "/pulls/{pull_number}", pulls.Pull, {"GET": "pulls/get", "PATCH": "pulls/update"}),
    (REPO + "/pulls/{pull_number}/commits", pulls.PullCommits, {"GET": "pulls/list-commits"}),
    (REPO + "/pulls/{pull_number}/files", pulls.PullFiles, {"GET": "pulls/list-files"}),
    (REPO + "/contents", contents.Contents, {
        "GET": "repos/get-content", "PUT": "repos/create-or-update-file-contents",
        "DELETE": "repos/delete-file"}),
    (REPO + "/contents/{path:path}", contents.Contents, {
        "GET": "repos/get-content", "PUT": "repos/create-or-update-file-contents",
        "DELETE": "repos/delete-file"}),
    (REPO + "/readme", contents.Readme, {"GET": "repos/get-readme"}),
    (REPO + "/git/blobs", git_data.Blobs, {"POST": "git/create-blob"}),
    (REPO + "/git/blobs/{file_sha}", git_data.Blob, {"GET": "git/get-blob"}),
    (REPO + "/git/trees", git_data.Trees, {"POST": "git/create-tree"}),
    (REPO + "/git/trees/{tree_sha:path}", git_data.Tree, {"GET": "git/get-tree"}),
    (REPO + "/git/commits", git_data.GitCommits, {"POST": "git/create-commit"}),
    (REPO + "/git/commits/{commit_sha}", git_data.GitCommit, {"GET": "git/get-commit"}),
    (REPO + "/commits", commits.Commits, {"GET": "repos/list-commits"}),
    # a commit, and its statuses and checks below it (`CommitPaths.TAILS`)
    (REPO + "/commits/{ref:path}", commits.CommitPaths, {"GET": "repos/get-commit"}),
    (REPO + "/compare/{basehead:path}", commits.Compare,
     {"GET": "repos/compare-commits-with-basehead"}),
    # git's smart HTTP protocol, where `clone_url` points (`{repo}` may end in `.git`)
    ("/{owner}/{repo}/info/refs", smart_http.InfoRefs, {"GET": "git/info-refs"}),
    ("/{owner}/{repo}/git-upload-pack", smart_http.UploadPack, {"POST": "git/upload-pack"}),
    ("/{owner}/{repo}/git-receive-pack", smart_http.ReceivePack, {"POST": "git/receive-pack"}),
    ("/{owner}/{repo}/raw/{tail:path}", contents.Raw, {"GET": "contents/raw"}),
    # a pull request's life: CI results, conversation, review, protection, merge
    (REPO + "/statuses/{sha}", statuses.Statuses, {"POST": "repos/create-commit-status"}),
    (REPO + "/check-runs", checks.CheckRuns, {"POST": "checks/create"}),
    (REPO + "/check-runs/{check_run_id}", checks.CheckRun,
     {"GET": "checks/get", "PATCH": "checks/update"}),
    (REPO + "/check-runs/{check_run_id}/rerequest", checks.CheckRunRerequest,
     {"POST": "checks/rerequest-run"}),
    (REPO + "/check-suites/{check_suite_id}", checks.CheckSuite, {"GET": "checks/get-suite"}),
    (REPO + "/check-suites/{check_suite_id}/check-runs", checks.CheckSuiteRuns,
     {"GET": "checks/list-for-suite"}),
    (REPO + "/issues", issues.Issues, {"GET": "issues/list-for-repo", "POST": "issues/create"}),
    (REPO + "/issues/comments/{comment_id}", issues.IssueComment, {
        "GET": "issues/get-comment", "PATCH": "issues/update-comment",
        "DELETE": "issues/delete-comment"}),
    (REPO + "/issues/{issue_number}", issues.Issue,
     {"GET": "issues/get", "PATCH": "issues/update"}),
    (REPO + "/issues/{issue_number}/comments", issues.IssueComments,
     {"GET": "issues/list-comments", "POST": "issues/create-comment"}),
    (REPO + "/issues/{issue_number}/labels", labels.IssueLabels, {
        "GET": "issues/list-labels-on-issue", "POST": "issues/add-labels",
        "PUT": "issues/set-labels", "DELETE": "issues/remove-all-labels"}),
    (REPO + "/issues/{issue_number}/labels/{name}", labels.IssueLabel,
     {"DELETE": "issues/remove-label"}),
    (REPO + "/issues/{issue_number}/assignees", issues.IssueAssignees,
     {"POST": "issues/add-assignees", "DELETE": "issues/remove-assignees"}),
    (REPO + "/labels", labels.Labels,
     {"GET": "issues/list-labels-for-repo", "POST": "issues/create-label"}),
    (REPO + "/labels/{name}", labels.Label,
     {"GET": "issues/get-label", "PATCH": "issues/update-label", "DELETE": "issues/delete-label"}),
    (REPO + "/pulls/{pull_number}/reviews", reviews.Reviews,
     {"GET": "pulls/list-reviews", "POST": "pulls/create-review"}),
    (REPO + "/pulls/{pull_number}/reviews/{review_id}", reviews.Review,
     {"GET": "pulls/get-review"}),
    (REPO + "/pulls/{pull_number}/reviews/{review_id}/events", reviews.ReviewEvents,
     {"POST": "pulls/submit-review"}),
    (REPO + "/pulls/{pull_number}/reviews/{review_id}/dismissals", reviews.ReviewDismissals,
     {"PUT": "pulls/dismiss-review"}),
    (REPO + "/pulls/{pull_number}/requested_reviewers", reviews.RequestedReviewers, {
        "GET": "pulls/list-requested-reviewers", "POST": "pulls/request-reviewers",
        "DELETE": "pulls/remove-requested-reviewers"}),
    (REPO + "/pulls/{pull_number}/merge", merges.PullMerge,
     {"GET": "pulls/check-if-merged", "PUT": "pulls/merge"}),
    (REPO + "/merges", merges.Merges, {"POST": "repos/merge"}),
    (REPO + "/branches", protection.Branches, {"GET": "repos/list-branches"}),
    (REPO + "/branches/{branch}", protection.Branch, {"GET": "repos/get-branch"}),
    (REPO + "/branches/{branch}/protection", protection.BranchProtection, {
        "GET": "repos/get-branch-protection", "PUT": "repos/update-branch-protection",
        "DELETE": "repos/delete-branch-protection"}),
    *apps.ROUTES,  # GitHub Apps: the App's JWT routes and its installation tokens'
    # GraphQL; GitHub Enterprise Server's `/api/graphql` (where `gh` sends any other host's) is
    # routed here (EnterpriseLayout)
    ("/graphql", GraphQL, {"POST": GRAPHQL}),
    ("/rate_limit", RateLimit, {"GET": "rate-limit/get"}),  # the caller's windows (ratelimits/)
)
# git's smart HTTP routes and `raw` are not the REST API: no rate limit, no ETag
OUTSIDE_API = (smart_http.InfoRefs, smart_http.UploadPack, smart_http.ReceivePack, contents.Raw)


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
