"""The GitHub emulator as a runtime `Service`: provider app, OpenAPI, presets, admin controls.

The provider app adds GitHub's API-version rule: an unknown `X-GitHub-Api-Version` is refused
before routing, every other provider answer (errors and the generic 404 included) carries
`x-github-api-version-selected`.
"""
import logging

import falcon

from emulators.runtime import Service, add_fallback_handlers, bodies
from emulators.runtime.mount import BASE_URL_KEY

from . import admin, context, errors, events, media, resources, smart_http
from .graphql.documents import ENDPOINT as GRAPHQL, operation_id as graphql_operation
from .graphql.resources import GraphQL
from .lifecycle.resources import ROUTES as LIFECYCLE_ROUTES, CommitPaths
from .openapi import DOCUMENT
from .presets import PRESETS

log = logging.getLogger(__name__)

VERSION = "0.1.0"
DEFAULT_PORT = 8828
ROUTES = (  # path, resource class
    ("/repos/{owner}/{repo}", resources.Repository),
    ("/repos/{owner}/{repo}/git/ref/{ref:path}", resources.Ref),
    ("/repos/{owner}/{repo}/git/matching-refs", resources.MatchingRefs),
    ("/repos/{owner}/{repo}/git/matching-refs/{ref:path}", resources.MatchingRefs),
    ("/repos/{owner}/{repo}/git/refs", resources.Refs),
    ("/repos/{owner}/{repo}/git/refs/{ref:path}", resources.RefItem),
    ("/repos/{owner}/{repo}/pulls", resources.Pulls),
    ("/repos/{owner}/{repo}/pulls/{pull_number}", resources.Pull),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/commits", resources.PullCommits),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/files", resources.PullFiles),
    ("/repos/{owner}/{repo}/contents", resources.Contents),
    ("/repos/{owner}/{repo}/contents/{path:path}", resources.Contents),
    ("/repos/{owner}/{repo}/readme", resources.Readme),
    ("/repos/{owner}/{repo}/git/blobs", resources.Blobs),
    ("/repos/{owner}/{repo}/git/blobs/{file_sha}", resources.Blob),
    ("/repos/{owner}/{repo}/git/trees", resources.Trees),
    ("/repos/{owner}/{repo}/git/trees/{tree_sha:path}", resources.Tree),
    ("/repos/{owner}/{repo}/git/commits", resources.GitCommits),
    ("/repos/{owner}/{repo}/git/commits/{commit_sha}", resources.GitCommit),
    ("/repos/{owner}/{repo}/commits", resources.Commits),
    # a commit, and its statuses and checks below it (lifecycle/resources.py)
    ("/repos/{owner}/{repo}/commits/{ref:path}", CommitPaths),
    ("/repos/{owner}/{repo}/compare/{basehead:path}", resources.Compare),
    # git's smart HTTP protocol, where `clone_url` points (`{repo}` may end in `.git`)
    ("/{owner}/{repo}/info/refs", smart_http.InfoRefs),
    ("/{owner}/{repo}/git-upload-pack", smart_http.UploadPack),
    ("/{owner}/{repo}/git-receive-pack", smart_http.ReceivePack),
    ("/{owner}/{repo}/raw/{tail:path}", resources.Raw),  # where download_url points
    *LIFECYCLE_ROUTES,  # a pull request's life: CI results, conversation, review, merge
    ("/graphql", GraphQL),  # api.github.com's GraphQL
    ("/api/graphql", GraphQL),  # GitHub Enterprise Server's (where `gh` sends any other host's)
)
ENTERPRISE = "/api/v3"  # GitHub Enterprise Server serves REST under it, and `gh` asks there


def operation_path(path):
    """The route a path is matched on: `/api/v3/<route>` is `<route>`, `/api/graphql` is
    `/graphql` (GitHub Enterprise Server's layout of the same operations)."""
    if path.startswith(ENTERPRISE + "/"):
        return path[len(ENTERPRISE):]
    return "/graphql" if path == "/api/graphql" else path


class EnterprisePrefix:
    """Serve every REST and git route under `/api/v3` too, as GitHub Enterprise Server does
    REST: the prefix moves into the base URL, so the URLs an answer carries keep it."""

    def process_request(self, req, resp):
        if req.path.startswith(ENTERPRISE + "/"):
            req.path = req.path[len(ENTERPRISE):]
            req.env["SCRIPT_NAME"] = req.env.get("SCRIPT_NAME", "") + ENTERPRISE
            if BASE_URL_KEY in req.env:
                req.env[BASE_URL_KEY] += ENTERPRISE


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
        if not isinstance(resource, resources.MatchingRefs) and "" in params.values():
            raise errors.NotFound("repos/get")


def _github_error(req, resp, exc, params):
    resp.status = exc.status
    resp.media = exc.body()
    for name, value in exc.headers.items():
        resp.set_header(name, value)
    resp.context["unversioned"] = not exc.versioned


def _not_found(req, resp, exc, params):
    # No 405 on GitHub's surface here: any unknown path or method is the generic 404.
    _github_error(req, resp, errors.NotFound("repos/get"), params)


def _too_large(req, resp, exc, params):
    _github_error(req, resp, errors.PayloadTooLarge(), params)


def _unexpected(req, resp, exc, params):
    log.exception("github emulator: unexpected error on %s %s", req.method, req.path)
    resp.status = 500
    resp.media = {"message": "Internal Server Error",
                  "documentation_url": errors.TROUBLESHOOTING, "status": "500"}


def create_provider_app():
    """Build the falcon app with the GitHub operations at the root."""
    middleware = [EnterprisePrefix(), ApiVersion(), MediaType(), EmptySegments()]
    app = add_fallback_handlers(falcon.App(middleware=middleware))
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
                   body_limits={"git/receive-pack": smart_http.MAX_PUSH},
                   operation_path=operation_path,
                   # GraphQL: each query and mutation is journaled and faulted by its name
                   body_operations={GRAPHQL: graphql_operation})


def from_env(environ):
    """Build the Service from an entry point's environment (no GITHUB_* variables yet)."""
    return create_service()
