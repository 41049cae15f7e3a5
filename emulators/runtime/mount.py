"""Mount WSGI apps under path prefixes (`/emulators/<name>`), and rebase the local URLs a mounted
app answers with: `Location`, `Link`, `Set-Cookie` paths and links in HTML bodies."""
import re
import zlib

PREFIX = re.compile(r"^/(?:[A-Za-z0-9_-]+/)*[A-Za-z0-9_-]+\Z")  # \Z: no trailing newline

_LINK_TARGET = re.compile(r"<([^>]*)>")
_COOKIE_PATH = re.compile(r"(;\s*path\s*=\s*)([^;]*)", re.I)
# `href=`, `action=`, `src=` (not `data-src=`) and CSS `url(`, each followed by a root-relative
# value; protocol-relative `//host/...` values are not matched.
_HTML_URL = re.compile(
    rb"((?<![\w-])(?:href|action|src)\s*=\s*[\"']?|url\(\s*[\"']?)(/(?!/)[^\"'\s>)]*)", re.I)
_CHARSET = re.compile(r";\s*charset\s*=\s*\"?([^\";\s]+)", re.I)
_DECODERS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
_STALE = frozenset(("content-length", "content-encoding", "etag"))
BASE_URL_KEY = "emulators.base_url"  # the runtime's public base URL of a request, when set


class PathDispatcher:
    """Route `/prefix` and `/prefix/...` to a mounted app (prefix moved to SCRIPT_NAME)."""

    def __init__(self, fallback, mounts):
        self.fallback = fallback
        self.mounts = []
        for prefix, app in mounts.items():
            prefix = prefix.rstrip("/")
            if not PREFIX.match(prefix):
                raise ValueError("mount prefix must be an absolute path of plain segments")
            self.mounts.append((prefix, app))
        self.mounts.sort(key=lambda item: -len(item[0]))  # nested prefixes: longest first

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO") or "/"
        for prefix, app in self.mounts:
            if path == prefix or path.startswith(prefix + "/"):
                environ = dict(environ)
                environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + prefix
                environ["PATH_INFO"] = path[len(prefix):] or "/"
                return app(environ, start_response)
        return self.fallback(environ, start_response)


def origin(environ):
    """Return scheme://host[:port] of a WSGI request (what same-origin URLs start with)."""
    scheme = environ.get("wsgi.url_scheme", "http")
    host = environ.get("HTTP_HOST")
    if not host:
        host = environ.get("SERVER_NAME", "127.0.0.1")
        port = environ.get("SERVER_PORT", "")
        if port and port != ("443" if scheme == "https" else "80"):
            host += ":" + port
    return f"{scheme}://{host}"


def public_base(environ):
    """Return the public base URL of a WSGI request: scheme://host[:port] + SCRIPT_NAME (mount
    prefix and path carrier included), unless the runtime set one (BASE_URL_KEY)."""
    return environ.get(BASE_URL_KEY) or origin(environ) + environ.get("SCRIPT_NAME", "")


def rewrite_response(headers, body, environ):
    """Return (headers, body) with local URLs moved under the request's SCRIPT_NAME.

    SCRIPT_NAME is the mount prefix plus any namespace carrier. Rebased: a root-relative or
    same-origin `Location` and `Link` target, each `Set-Cookie` `Path=`, and for a buffered
    (list) `text/html` body its root-relative `href=`/`action=`/`src=` values and CSS `url(...)`.
    Left alone: paths already under the prefix, `//host/...`, other origins, other bodies.
    """
    prefix = environ.get("SCRIPT_NAME", "")
    if not prefix:
        return list(headers), body
    here = origin(environ)
    rewritten, html = [], None
    for name, value in headers:
        lower = name.lower()
        if lower == "location":
            value = rebase_url(value, prefix, here)
        elif lower == "link":
            value = _LINK_TARGET.sub(lambda m: f"<{rebase_url(m.group(1), prefix, here)}>", value)
        elif lower == "set-cookie":
            value = _COOKIE_PATH.sub(lambda m: m.group(1) + rebase_url(m.group(2), prefix), value)
        elif lower == "content-type" and value[:9].lower() == "text/html":
            html = value
        rewritten.append((name, value))
    if html is None or not isinstance(body, list) or environ.get("REQUEST_METHOD") == "HEAD":
        return rewritten, body
    return _rewrite_html(rewritten, body, prefix, html)


def rebase_url(value, prefix, here=None):
    """Prefix a root-relative path, or the path of a URL on origin `here`, unless already under."""
    if value.startswith("/"):
        if value.startswith("//") or _under(value, prefix):
            return value
        return prefix + value
    if here and value[:len(here)].lower() == here.lower():
        rest = value[len(here):]
        if not rest or rest[0] in "?#":
            return here + prefix + "/" + rest
        if rest[0] == "/" and not _under(rest, prefix):
            return here + prefix + rest
    return value


def _under(path, prefix):
    return path.startswith(prefix) and (len(path) == len(prefix) or path[len(prefix)] in "/?#")


def _rewrite_html(headers, body, prefix, content_type):
    charset = _CHARSET.search(content_type)
    if charset and charset.group(1).lower().startswith(("utf-16", "utf-32", "ucs")):
        return headers, body  # not ASCII-compatible: the byte patterns would not apply
    encoding = next((v.strip().lower() for n, v in headers if n.lower() == "content-encoding"),
                    "identity")
    data = b"".join(body)
    if encoding in _DECODERS:
        try:
            data = zlib.decompress(data, _DECODERS[encoding])
        except zlib.error:
            return headers, body
    elif encoding != "identity":
        return headers, body  # br, zstd, …: opaque bytes to us
    raw = prefix.encode("ascii")

    def rebase(match):
        value = match.group(2)
        if _under(value.decode("latin-1"), prefix):
            return match.group(0)
        return match.group(1) + raw + value

    changed = _HTML_URL.sub(rebase, data)
    if changed == data:
        return headers, body  # nothing local to move: keep the validators and the encoding
    kept = [(n, v) for n, v in headers if n.lower() not in _STALE]
    kept.append(("content-length", str(len(changed))))
    return kept, [changed]
