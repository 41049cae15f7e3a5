"""The GitHub emulator as a runtime `Service`: provider app, OpenAPI, presets, admin controls.

The provider app adds GitHub's API-version rule: an unknown `X-GitHub-Api-Version` is refused
before routing, every other provider answer (errors and the generic 404 included) carries
`x-github-api-version-selected`.
"""
import logging

import falcon

from emulators.runtime import Service, add_fallback_handlers, bodies

from . import admin, context, errors, events, media
from .openapi import DOCUMENT
from .presets import PRESETS
from .resources import (checks, commits, contents, git_data, issues, labels, merges, protection,
                        pulls, refs, repos, reviews, smart_http, statuses)

log = logging.getLogger(__name__)

VERSION = "0.1.0"
DEFAULT_PORT = 8828
ROUTES = (  # path, resource class (each names the operation of each method it answers)
    ("/repos/{owner}/{repo}", repos.Repository),
    ("/repos/{owner}/{repo}/git/ref/{ref:path}", refs.Ref),
    ("/repos/{owner}/{repo}/git/matching-refs", refs.MatchingRefs),
    ("/repos/{owner}/{repo}/git/matching-refs/{ref:path}", refs.MatchingRefs),
    ("/repos/{owner}/{repo}/git/refs", refs.Refs),
    ("/repos/{owner}/{repo}/git/refs/{ref:path}", refs.RefItem),
    ("/repos/{owner}/{repo}/pulls", pulls.Pulls),
    ("/repos/{owner}/{repo}/pulls/{pull_number}", pulls.Pull),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/commits", pulls.PullCommits),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/files", pulls.PullFiles),
    ("/repos/{owner}/{repo}/contents", contents.Contents),
    ("/repos/{owner}/{repo}/contents/{path:path}", contents.Contents),
    ("/repos/{owner}/{repo}/readme", contents.Readme),
    ("/repos/{owner}/{repo}/git/blobs", git_data.Blobs),
    ("/repos/{owner}/{repo}/git/blobs/{file_sha}", git_data.Blob),
    ("/repos/{owner}/{repo}/git/trees", git_data.Trees),
    ("/repos/{owner}/{repo}/git/trees/{tree_sha:path}", git_data.Tree),
    ("/repos/{owner}/{repo}/git/commits", git_data.GitCommits),
    ("/repos/{owner}/{repo}/git/commits/{commit_sha}", git_data.GitCommit),
    ("/repos/{owner}/{repo}/commits", commits.Commits),
    # a commit, and its statuses and checks below it (`CommitPaths.TAILS`)
    ("/repos/{owner}/{repo}/commits/{ref:path}", commits.CommitPaths),
    ("/repos/{owner}/{repo}/compare/{basehead:path}", commits.Compare),
    # git's smart HTTP protocol, where `clone_url` points (`{repo}` may end in `.git`)
    ("/{owner}/{repo}/info/refs", smart_http.InfoRefs),
    ("/{owner}/{repo}/git-upload-pack", smart_http.UploadPack),
    ("/{owner}/{repo}/git-receive-pack", smart_http.ReceivePack),
    ("/{owner}/{repo}/raw/{tail:path}", contents.Raw),  # where download_url points
    # a pull request's life: CI results, conversation, review, protection, merge
    ("/repos/{owner}/{repo}/statuses/{sha}", statuses.Statuses),
    ("/repos/{owner}/{repo}/check-runs", checks.CheckRuns),
    ("/repos/{owner}/{repo}/check-runs/{check_run_id}", checks.CheckRun),
    ("/repos/{owner}/{repo}/check-runs/{check_run_id}/rerequest", checks.CheckRunRerequest),
    ("/repos/{owner}/{repo}/check-suites/{check_suite_id}", checks.CheckSuite),
    ("/repos/{owner}/{repo}/check-suites/{check_suite_id}/check-runs", checks.CheckSuiteRuns),
    ("/repos/{owner}/{repo}/issues", issues.Issues),
    ("/repos/{owner}/{repo}/issues/comments/{comment_id}", issues.IssueComment),
    ("/repos/{owner}/{repo}/issues/{issue_number}", issues.Issue),
    ("/repos/{owner}/{repo}/issues/{issue_number}/comments", issues.IssueComments),
    ("/repos/{owner}/{repo}/issues/{issue_number}/labels", labels.IssueLabels),
    ("/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", labels.IssueLabel),
    ("/repos/{owner}/{repo}/issues/{issue_number}/assignees", issues.IssueAssignees),
    ("/repos/{owner}/{repo}/labels", labels.Labels),
    ("/repos/{owner}/{repo}/labels/{name}", labels.Label),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/reviews", reviews.Reviews),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}", reviews.Review),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/events",
     reviews.ReviewEvents),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/dismissals",
     reviews.ReviewDismissals),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers",
     reviews.RequestedReviewers),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/merge", merges.PullMerge),
    ("/repos/{owner}/{repo}/merges", merges.Merges),
    ("/repos/{owner}/{repo}/branches", protection.Branches),
    ("/repos/{owner}/{repo}/branches/{branch}", protection.Branch),
    ("/repos/{owner}/{repo}/branches/{branch}/protection", protection.BranchProtection),
)


class Operations:
    """Name the operation a request calls (`req.context.operation`, from its resource's
    `operations`), so an error a rule raises links that operation's documentation page."""

    def process_resource(self, req, resp, resource, params):
        req.context.operation = getattr(resource, "operations", {}).get(req.method)


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
            raise errors.NotFound(operation="repos/get")


def _github_error(req, resp, exc, params):
    if exc.operation is None:
        exc.operation = req.context.get("operation")
    resp.status = exc.status
    resp.media = exc.body()
    for name, value in exc.headers.items():
        resp.set_header(name, value)
    resp.context["unversioned"] = not exc.versioned


def _not_found(req, resp, exc, params):
    # No 405 on GitHub's surface here: any unknown path or method is the generic 404.
    _github_error(req, resp, errors.NotFound(operation="repos/get"), params)


def _too_large(req, resp, exc, params):
    _github_error(req, resp, errors.PayloadTooLarge(), params)


def _unexpected(req, resp, exc, params):
    log.exception("github emulator: unexpected error on %s %s", req.method, req.path)
    resp.status = 500
    resp.media = {"message": "Internal Server Error",
                  "documentation_url": errors.TROUBLESHOOTING, "status": "500"}


def create_provider_app():
    """Build the falcon app with the GitHub operations at the root."""
    app = add_fallback_handlers(falcon.App(middleware=[ApiVersion(), MediaType(), Operations(),
                                                       EmptySegments()]))
    app.req_options.strip_url_path_trailing_slash = False
    for path, resource in ROUTES:
        app.add_route(path, resource())
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
                   admin_routes=admin.ROUTES,
                   # REST and git alike: a token routes through the credential map
                   credential=context.credential,
                   read_operations={"git/upload-pack"}, own_transactions={"git/receive-pack"},
                   body_limits={"git/receive-pack": smart_http.MAX_PUSH})


def from_env(environ):
    """Build the Service from an entry point's environment (no GITHUB_* variables yet)."""
    return create_service()
