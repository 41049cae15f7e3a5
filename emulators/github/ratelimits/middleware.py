"""The headers GitHub puts on every REST answer, as one falcon middleware of the provider app
(outermost, so it sees the final status).

Each request is counted against its caller's window (quotas.py): a write before its responder
runs (a refused write writes nothing, inside the runtime's transaction for it), a read once its
answer is known, because a 304 is not counted; a full window is GitHub's 403. A 2xx answer with
a body gets `Cache-Control` and `Vary` (a GET's its `ETag` and `Last-Modified` too), and a GET whose
`If-None-Match` or `If-Modified-Since` still matches becomes a 304 without a body. Every answer
gets the five `X-RateLimit-*` headers, and one to a classic token the OAuth scope headers. Git's
routes and `raw` (not the REST API) get none of this. One pass, every header set at once: this
runs on every request.
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
# A user's token GitHub answers without scope headers: a fine-grained one (as it answers an
# installation's token and an App's JWT)
FINE_GRAINED = "github_pat_"


def caller(req):
    """Whom a request counts as (quotas.caller), worked out once per request."""
    context = req.context
    who = context.get("caller")
    if who is None:
        who = context["caller"] = quotas.caller(instance_of(req), req.env)
    return who


class AnswerHeaders:
    """Meter each REST request against its caller's window, answer conditional GETs, and put
    GitHub's rate limit, cache and scope headers on the answer."""

    def __init__(self, outside_api):
        self._outside = tuple(outside_api)  # resource classes that are not the REST API

    def process_resource(self, req, resp, resource, params):
        if isinstance(resource, self._outside):
            resp.context["quota"] = OUTSIDE
        elif req.method not in READS:
            _meter(req, resp, count=True)  # a full window refuses before the write

    def process_response(self, req, resp, resource, req_succeeded):
        metered = resp.context.get("quota")
        if metered is OUTSIDE:
            return
        headers = _cache_headers(req, resp)
        if metered is None:
            try:
                metered = _meter(req, resp, count=resp.status_code != 304)
            except quotas.RateLimitExceeded as refusal:
                _refuse(resp, refusal)
                metered, headers = refusal.metered, [("vary", FRONT_VARY)]
        window = metered.window
        headers += (("x-ratelimit-limit", str(metered.limit)),
                    ("x-ratelimit-remaining", str(max(metered.limit - window.used, 0))),
                    ("x-ratelimit-reset", str(window.reset_ms // 1000)),
                    ("x-ratelimit-used", str(window.used)),
                    ("x-ratelimit-resource", metered.resource))
        who = metered.caller
        if who.kind == quotas.USER and not who.token.startswith(FINE_GRAINED):
            # GitHub names `repo` for the repository routes it documents so
            headers += (("x-oauth-scopes", SCOPES), ("x-accepted-oauth-scopes",
                        "repo" if req.path.startswith("/repos/") else ""))
        resp.set_headers(headers)


def _meter(req, resp, *, count):
    """Meter the request (quotas.meter), remembering how in the answer's context."""
    try:
        metered = quotas.meter(instance_of(req), caller(req), quotas.resource_of(req.path),
                               count=count)
    except quotas.RateLimitExceeded as refusal:
        resp.context["quota"] = refusal.metered
        raise
    resp.context["quota"] = metered
    return metered


def _cache_headers(req, resp):
    """The cache headers of an answer (a list to add to); a GET that still matches what the
    client holds becomes a 304 here. A write's answer gets no ETag (GitHub sends one, but no
    client revalidates a write, and digesting its body would hold the write lock longer)."""
    if resp.context.get("cache") == NO_CACHE:
        return [("cache-control", NO_CACHE), ("vary", FRONT_VARY)]
    code = resp.status_code
    if not 200 <= code < 300 or code == 204 or resp.stream is not None or \
            quotas.resource_of(req.path) == "graphql":  # GitHub caches no GraphQL answer
        return [("vary", FRONT_VARY)]
    token, environ = caller(req).token, req.env
    headers = [("cache-control", CACHE_CONTROL[token is not None]),
               ("vary", VARY[token is not None])]
    if req.method not in READS or code != 200:
        return headers
    body_digest = resp.context.get("digest")  # made with a cached answer (resources/request.py)
    if body_digest is None:
        body_digest = conditional.digest(resp.render_body() or b"")
    tag = conditional.etag(body_digest, environ.get("HTTP_ACCEPT"), token)
    headers.append(("etag", tag))
    modified = conditional.last_modified(resp.media)
    if modified is not None:
        headers.append(("last-modified", modified))
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
    return headers


def _refuse(resp, refusal):
    """Turn an answer already made into the refusal (a read meets a full window only once it
    was answered: it is counted last)."""
    resp.text = resp.data = None
    resp.media = refusal.body()
    resp.content_type = "application/json"
    resp.status = refusal.status
    resp.delete_header("Link")
