"""The headers GitHub puts on every API answer, as two falcon middlewares of the provider app.

`RateLimits` (outermost) counts each API request against its caller's window (quotas.py) and
sends the five `X-RateLimit-*` headers, and for a classic token the OAuth scope headers; a full
window is GitHub's 403. A write is counted before its responder runs (a refused write writes
nothing, inside the runtime's transaction for it); a read once its answer is known, because a
304 is not counted. `Conditional` gives a 2xx answer with a body its `ETag`, `Cache-Control`
and `Vary` (GET: `Last-Modified` too), and turns a GET whose `If-None-Match` or
`If-Modified-Since` still matches into a 304 without a body. Git's routes and `raw` (not the
REST API) get none of this.
"""
from emulators.runtime import instance_of

from . import conditional, quotas

READS = frozenset(("GET", "HEAD"))
OUTSIDE = object()  # resp.context["quota"] of a route outside the REST API
NO_CACHE = "no-cache"  # resp.context["cache"] of answers GitHub sends uncached (`rate_limit`)
# GitHub's own Vary, then the one its front end adds to every answer (PyGithub's recordings)
FRONT_VARY = "Accept-Encoding, Accept, X-Requested-With"
VARY = {True: "Accept, Authorization, Cookie, X-GitHub-OTP, " + FRONT_VARY,
        False: "Accept, " + FRONT_VARY}
CACHE_CONTROL = {True: "private, max-age=60, s-maxage=60", False: "public, max-age=60, s-maxage=60"}
# Every token is an administrator here, so a classic token holds every scope GitHub has.
SCOPES = ("admin:enterprise, admin:gpg_key, admin:org, admin:org_hook, admin:public_key,"
          " admin:repo_hook, admin:ssh_signing_key, audit_log, codespace, copilot,"
          " delete:packages, delete_repo, gist, notifications, project, repo, user, workflow,"
          " write:discussion, write:packages")
# Tokens GitHub answers without scope headers: fine-grained and installation tokens
UNSCOPED = ("github_pat_", "ghs_")


def caller(req):
    """Whom a request counts as (quotas.caller), worked out once per request."""
    who = req.context.get("caller")
    if who is None:
        who = req.context["caller"] = quotas.caller(instance_of(req), req.env)
    return who


class RateLimits:
    """Meter each REST request of the caller's window and stamp the result on its answer."""

    def __init__(self, outside_api):
        self._outside = tuple(outside_api)  # resource classes that are not the REST API

    def process_resource(self, req, resp, resource, params):
        if isinstance(resource, self._outside):
            resp.context["quota"] = OUTSIDE
        elif req.method not in READS and "quota" not in resp.context:
            self._meter(req, resp, count=True)  # a full window refuses before the write

    def process_response(self, req, resp, resource, req_succeeded):
        metered = resp.context.get("quota")
        if metered is OUTSIDE:
            return
        if metered is None:
            try:
                metered = self._meter(req, resp, count=resp.status_code != 304)
            except quotas.RateLimitExceeded as refusal:
                _refuse(resp, refusal)
                metered = refusal.metered
        _stamp(req, resp, metered)

    @staticmethod
    def _meter(req, resp, *, count):
        instance = instance_of(req)
        try:
            metered = quotas.meter(instance, caller(req), quotas.resource_of(req.path),
                                   count=count)
        except quotas.RateLimitExceeded as refusal:
            resp.context["quota"] = refusal.metered
            raise
        resp.context["quota"] = metered
        return metered


def _refuse(resp, refusal):
    """Turn an answer already made into the refusal (a read meets a full window only once it
    was answered: it is counted last)."""
    resp.text = resp.data = None
    resp.media = refusal.body()
    resp.content_type = "application/json"
    resp.status = refusal.status
    for name in ("Link", "ETag", "Last-Modified", "Cache-Control"):
        resp.delete_header(name)
    resp.set_header("Vary", FRONT_VARY)


def _stamp(req, resp, metered):
    window = metered.window
    resp.set_header("X-RateLimit-Limit", str(metered.limit))
    resp.set_header("X-RateLimit-Remaining", str(max(metered.limit - window.used, 0)))
    resp.set_header("X-RateLimit-Reset", str(window.reset_ms // 1000))
    resp.set_header("X-RateLimit-Used", str(window.used))
    resp.set_header("X-RateLimit-Resource", metered.resource)
    token = metered.caller.token
    if token is not None and not token.startswith(UNSCOPED) and token.count(".") != 2:
        resp.set_header("X-OAuth-Scopes", SCOPES)
        # GitHub names `repo` for the repository routes it documents so
        resp.set_header("X-Accepted-OAuth-Scopes",
                        "repo" if req.path.startswith("/repos/") else "")


class Conditional:
    """ETag, Last-Modified, Cache-Control and Vary on REST answers; 304 when they still match."""

    def __init__(self, outside_api):
        self._outside = tuple(outside_api)

    def process_response(self, req, resp, resource, req_succeeded):
        if isinstance(resource, self._outside) or resp.stream is not None:
            return
        if resp.context.get("cache") == NO_CACHE:
            resp.set_header("Cache-Control", NO_CACHE)
            resp.set_header("Vary", FRONT_VARY)
            return
        code = resp.status_code
        if not 200 <= code < 300 or code == 204 or \
                quotas.resource_of(req.path) == "graphql":  # GitHub caches no GraphQL answer
            resp.set_header("Vary", FRONT_VARY)
            return
        body_digest = resp.context.get("digest")  # made with a cached answer (resources.py)
        if body_digest is None:
            body_digest = conditional.digest(resp.render_body() or b"")
        token, environ = caller(req).token, req.env
        tag = conditional.etag(body_digest, environ.get("HTTP_ACCEPT"), token)
        resp.set_header("ETag", tag)
        resp.set_header("Cache-Control", CACHE_CONTROL[token is not None])
        resp.set_header("Vary", VARY[token is not None])
        if req.method not in READS or code != 200:
            return
        modified = conditional.last_modified(resp.media)
        if modified is not None:
            resp.set_header("Last-Modified", modified)
        if_none_match = environ.get("HTTP_IF_NONE_MATCH")
        if if_none_match is not None:
            unchanged = conditional.matches(if_none_match, tag)
        else:  # If-Modified-Since counts only without If-None-Match (RFC 9110)
            since = environ.get("HTTP_IF_MODIFIED_SINCE")
            unchanged = since is not None and modified is not None and \
                conditional.unmodified_since(since, modified)
        if unchanged:
            resp.status = 304
            resp.text = resp.data = resp.media = None
            resp.content_type = None
