"""GitHub's primary rate limits as rules: which resource a request counts against, whom it
counts as, the limit and window each kind of caller gets, and the words of the refusal.

Plain Python over an instance (its records hold the namespace's settings, its `quotas` count);
the middleware (middleware.py) applies them to each request. GitHub's own numbers: 60 requests
an hour without a token (by address), 5,000 a user; search 30 a minute (10 without a token);
GraphQL 5,000 an hour and none without a token. `GET /rate_limit` lists every resource GitHub
lists (`RESOURCES`); routes here count against `core`, `search`, `code_search` and `graphql`.
"""
from typing import NamedTuple

from .. import errors
from ..context import route_path
from ..credentials import Anonymous, identify
from ..store import GitHubStore

HOUR, MINUTE = 3_600_000, 60_000
# resource: (window ms, limit without a token, limit with one), in the order GitHub lists them
# (PyGithub's recorded `GET /rate_limit`)
RESOURCES = {
    "core": (HOUR, 60, 5000),
    "search": (MINUTE, 10, 30),
    "graphql": (HOUR, 0, 5000),
    "integration_manifest": (HOUR, 5000, 5000),
    "source_import": (MINUTE, 100, 100),
    "code_scanning_upload": (HOUR, 1000, 1000),
    "code_scanning_autofix": (MINUTE, 10, 10),
    "actions_runner_registration": (HOUR, 10000, 10000),
    "scim": (HOUR, 15000, 15000),
    "dependency_snapshots": (MINUTE, 100, 100),
    "audit_log": (HOUR, 1750, 1750),
    "audit_log_streaming": (HOUR, 15, 15),
    "code_search": (MINUTE, 10, 10),
}
WINDOWS = {resource: window for resource, (window, _, _) in RESOURCES.items()}
SETTABLE = ("core", "search", "graphql")  # what `PUT /__admin/github/rate-limits` sets
SETTINGS = ("rate_limits", "limits")  # the record (collection, id) that holds the settings
DOCS = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"
ANONYMOUS, USER = "anonymous", "user"  # the credential kinds (credentials.py) named here
GRAPHQL_PATHS = ("/graphql", "/api/graphql")  # api.github.com's, GitHub Enterprise Server's
# Resources GitHub serves only with a token: a request without one is refused as
# unauthenticated (401) before any window, so it is not metered
TOKEN_ONLY = ("graphql",)


class Caller(NamedTuple):
    """Whom a request counts as: its credential's `kind` (`anonymous`, `user`,
    `installation`, `app`), the `key` of its windows, the `name` a refusal gives (an address,
    a login, an installation's or an App's id) and its `token` (None without one)."""

    kind: str
    key: str
    name: str
    token: str | None


def caller(instance, environ):
    """Whom a request counts as: its credential (credentials.py), keyed as it says, so two
    tokens of one user share a window, an installation's tokens share its installation's,
    and an App's JWT counts apart. A credential GitHub refuses (its 401 answers the request)
    counts as no credential, by address."""
    try:
        credential = identify(instance, environ)
    except errors.Unauthorized:
        credential = Anonymous(environ.get("REMOTE_ADDR") or "unknown")
    kind = credential.kind
    if kind == ANONYMOUS:
        name = credential.address
    elif kind == "installation":
        name = str(credential.installation_id)
    elif kind == "app":
        name = str(credential.app["id"])
    else:
        name = credential.login
    return Caller(kind, credential.key, name, getattr(credential, "token", None))


def resource_of(path):
    """The resource a request to `path` counts against."""
    path = route_path(path)  # `/api/v3/...`: the same route
    if path in GRAPHQL_PATHS:
        return "graphql"
    if path == "/search/code":
        return "code_search"
    return "search" if path.startswith("/search/") else "core"


def settings(records):
    """The namespace's settings `{resource: limit or None}` (None: GitHub's default)."""
    stored = records.get(*SETTINGS) or {}
    return {resource: stored.get(resource) for resource in SETTABLE}


def settings_of(instance):
    """The settings as a request sees them: read once per change of the namespace's records
    (`Instance.cached`), as every request reads them. Not to be changed by the caller."""
    return instance.cached(SETTINGS, lambda: settings(instance.records), size=lambda _: 64)


def limit(caller_kind, resource, stored):
    """The limit of `resource` for a caller of `caller_kind`, under the settings `stored`."""
    if stored.get(resource) is not None:
        return stored[resource]
    _, anonymous, authenticated = RESOURCES[resource]
    return anonymous if caller_kind == ANONYMOUS else authenticated


def overview(windows, caller_kind, stored):
    """`GET /rate_limit`'s body: every resource's `{limit, used, remaining, reset}` and
    `rate` (core's), from the caller's windows (`{resource: Window}`)."""
    resources = {}
    for resource, window in windows.items():
        most = limit(caller_kind, resource, stored)
        resources[resource] = {"limit": most, "used": window.used,
                               "remaining": max(most - window.used, 0),
                               "reset": window.reset_ms // 1000}
    return {"resources": resources, "rate": resources["core"]}


class Metered(NamedTuple):
    """How a request was metered: its caller, the resource, the caller's limit there and its
    window as the request left it."""

    caller: Caller
    resource: str
    limit: int
    window: object  # runtime Window: used, reset_ms, taken


def meter(instance, who, resource, *, count=True):
    """Count a request of `who` against `resource` (or only look, `count=False`: a 304, `GET
    /rate_limit`); return how it was metered. Raise RateLimitExceeded when the window is full."""
    most = limit(who.kind, resource, settings_of(instance))
    if who.kind == ANONYMOUS and resource in TOKEN_ONLY:
        return Metered(who, resource, most, instance.quotas.peek(who.key, resource,
                                                                 WINDOWS[resource]))
    if count:
        window = instance.quotas.take(who.key, resource, most, WINDOWS[resource])
    else:
        window = instance.quotas.peek(who.key, resource, WINDOWS[resource])
        window = window._replace(taken=window.used < most)
    metered = Metered(who, resource, most, window)
    if not window.taken:
        raise exceeded(instance, metered)
    return metered


class RateLimitExceeded(errors.GitHubError):
    """A primary rate limit reached: GitHub's 403, its words for an address or a user."""

    status = 403

    def __init__(self, message, metered):
        super().__init__(message)
        self.metered = metered

    def body(self):
        return {"message": self.message, "documentation_url": DOCS}


def exceeded(instance, metered):
    """The refusal of a caller whose window is full (`metered` rides along for the headers).
    GitHub names a user by account id; a token whose user the emulator has no account for yet
    (it never wrote) is named by login."""
    who = metered.caller
    if who.kind == ANONYMOUS:
        return RateLimitExceeded(
            f"API rate limit exceeded for {who.name}. (But here's the good news: Authenticated"
            " requests get a higher rate limit. Check out the documentation for more details.)",
            metered)
    if who.kind != USER:  # `installation ID 7`, `app ID 3`
        return RateLimitExceeded(f"API rate limit exceeded for {who.kind} ID {who.name}.",
                                 metered)
    account = GitHubStore(instance.records, transaction=instance.transaction).owner(who.name)
    if account is None:
        return RateLimitExceeded(f"API rate limit exceeded for user {who.name}.", metered)
    return RateLimitExceeded(f"API rate limit exceeded for user ID {account['id']}.", metered)
