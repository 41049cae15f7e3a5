"""What the GitHub service needs from the request context: public URLs, `Link`, checkpoints.

Every URL the emulator returns points back at itself (scheme, host, mount prefix, and the
`<admin prefix>/ns/<name>` path carrier when the request used one or named its namespace by
header: the runtime's base URL), so real clients keep talking to it, in the same namespace.
"""
import base64
from email.utils import formatdate

from emulators.runtime.mount import BASE_URL_KEY

from .shapes.accounts import API_PREFIX
GRAPHQL_PATH = "/api/graphql"  # and its GraphQL API: the same route as `/graphql`

_FORM_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789*-._")


def public_base(instance):
    """Return the base URL the client used for this service (mount prefix and carrier included)."""
    return instance.base_url.rstrip("/")


def route_path(path):
    """The path a request's operation is matched on: the route below `/api/v3`, and `/graphql`
    for `/api/graphql` (the runtime's `operation_path` hook), so a GHES-style call is the same
    operation as a root one."""
    if path == API_PREFIX or path.startswith(API_PREFIX + "/"):
        return path[len(API_PREFIX):] or "/"
    return "/graphql" if path == GRAPHQL_PATH else path


def enter_api_prefix(environ):
    """Serve a request under `/api/v3` as GitHub Enterprise Server lays its API out: move the
    prefix from PATH_INFO into SCRIPT_NAME (and the runtime's public base URL), as a mount
    does, so every API URL the answer carries names `/api/v3` (its web URLs drop it again:
    shapes.web). Return the path to route on
    (`route_path`: `/graphql` for `/api/graphql`, whose URLs stay at the root).

    Runs before anything reads the instance's base URL (the first middleware), in the environ
    the runtime's instance reads it from."""
    path = environ.get("PATH_INFO") or "/"
    routed = route_path(path)
    if routed != path and path != GRAPHQL_PATH:  # GraphQL's URLs are the web's, at the root
        environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + API_PREFIX
        environ["PATH_INFO"] = routed
        if environ.get(BASE_URL_KEY):
            environ[BASE_URL_KEY] += API_PREFIX
    return routed


def http_date(ms):
    """An HTTP `Date` value for epoch milliseconds (the emulator's clock)."""
    return formatdate(ms / 1000, usegmt=True)


def form_encode(pairs):
    """Serialise pairs as WHATWG application/x-www-form-urlencoded (space as `+`)."""
    def enc(text):
        return "".join(chr(b) if b in _FORM_SAFE else "+" if b == 0x20 else f"%{b:02X}"
                       for b in text.encode("utf-8"))
    return "&".join(f"{enc(k)}={enc(v)}" for k, v in pairs)


def link_header(instance, req, pairs, page, last):
    """Build `Link` for a page of `pulls/list` or `git/refs`, or None when no relation
    applies."""
    relations = []
    if page < last:
        relations += [("next", page + 1), ("last", last)]
    if page > 1 and last > 0:
        relations += [("first", 1), ("prev", page - 1)]
    if not relations:
        return None
    base = public_base(instance) + req.path

    def url(target):
        replaced, out = False, []
        for name, value in pairs:
            if name == "page":
                if replaced:
                    continue  # URLSearchParams.set keeps one `page`, at the first position
                value, replaced = str(target), True
            out.append((name, value))
        if not replaced:
            out.append(("page", str(target)))
        return f"{base}?{form_encode(out)}"

    return ", ".join(f'<{url(target)}>; rel="{rel}"' for rel, target in relations)


def checkpoint(instance):
    """Commit a Timeline checkpoint of the instance's current state now; return its id."""
    # The runtime reuses it for `x-mockingbird-checkpoint`, so the body and header agree.
    return instance.checkpoint()


def credential(environ):
    """Return the token a request carries, as GitHub reads it (the credential map's key):
    `Authorization: Bearer <t>` or `token <t>`, or Basic `x-access-token:<t>` (any user name
    with the token as password; a token as user name with an empty or `x-oauth-basic`
    password), which is how git sends a token in the URL. None without one."""
    header = environ.get("HTTP_AUTHORIZATION") or ""
    scheme, _, value = header.strip().partition(" ")
    value = value.strip()
    if scheme.lower() in ("bearer", "token"):
        return value or None
    if scheme.lower() != "basic":
        return None
    try:
        user, _, password = base64.b64decode(value, validate=True).decode("utf-8").partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    if password and password != "x-oauth-basic":
        return password
    return user or None
