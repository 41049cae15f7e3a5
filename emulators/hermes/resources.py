"""What every Hermes resource shares: auth, bounded bodies, JSON answers with upstream's security
headers, event streams, CORS and the body limit (the resources are in runs/, openai_compat/ and
management/, which build their backends: this module sits below them).

Auth runs first in every responder (after routing, as aiohttp answers 404/405 before auth);
CORS runs before routing, as upstream's outermost middleware.
"""
import hmac
import json

from emulators.runtime.bodies import MAX_BODY  # upstream's request-size limit too

from . import sse
from .errors import BodyTooLarge, InvalidContentLength, Unauthorized

# Security headers of upstream JSON responses (as Hermes 0.19.0 sends them); never on SSE.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    "Strict-Transport-Security": "max-age=31536000; includeSubDomains",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "X-XSS-Protection": "0",
    "Referrer-Policy": "no-referrer",
}


def send_json(resp, status, body, headers=None):
    """Write a JSON answer the way aiohttp's json_response does."""
    resp.status = status
    resp.content_type = "application/json; charset=utf-8"
    resp.text = json.dumps(body)
    resp.set_headers({**SECURITY_HEADERS, **(headers or {})})


BARE = "x-hermes-bare"  # tells the app to send this answer without any Content-Type
# Upstream _CORS_HEADERS (Hermes' api_server.py) plus Max-Age.
CORS_HEADERS = {"Access-Control-Allow-Methods": "GET, POST, DELETE, OPTIONS",
                "Access-Control-Allow-Headers": "Authorization, Content-Type, Idempotency-Key"}


class Cors:
    """Upstream cors_middleware: a request with a disallowed Origin, and any OPTIONS without an
    allowed one, get 403 with an empty body before routing (oracle get_with_origin_not_allowed,
    options_preflight_*); allowed origins get the CORS headers."""

    def __init__(self, settings):
        self.origins = settings.cors_origins

    def headers_for(self, origin):
        if not origin or not self.origins:
            return None
        if "*" in self.origins:
            return {**CORS_HEADERS, "Access-Control-Allow-Origin": "*",
                    "Access-Control-Max-Age": "600"}
        if origin not in self.origins:
            return None
        return {**CORS_HEADERS, "Access-Control-Allow-Origin": origin, "Vary": "Origin",
                "Access-Control-Max-Age": "600"}

    def process_request(self, req, resp):
        origin = req.get_header("Origin") or ""
        allowed = not origin or "*" in self.origins or origin in self.origins
        headers = self.headers_for(origin)
        if not allowed or (req.method == "OPTIONS" and headers is None):
            resp.status = 403
            resp.data = b""
            resp.set_header(BARE, "1")
            resp.complete = True
        elif req.method == "OPTIONS":
            resp.status = 200
            resp.data = b""
            resp.set_headers({**headers, BARE: "1"})
            resp.complete = True

    def process_response(self, req, resp, resource, req_succeeded):
        headers = self.headers_for(req.get_header("Origin") or "")
        if headers is not None and resp.status not in (403, "403 Forbidden"):
            resp.set_headers(headers)


class BodyLimit:
    """Upstream body_limit_middleware: a POST/PUT/PATCH whose Content-Length is too large (413)
    or not an integer (400) is refused before auth and routing (oracle: even on an unknown
    path)."""

    def process_request(self, req, resp):
        if req.method in ("POST", "PUT", "PATCH"):
            check_length(req)


def check_length(req):
    raw_length = (req.get_header("Content-Length") or "").strip()
    if raw_length:  # WSGI servers pass an empty CONTENT_LENGTH when the header is absent
        if not raw_length.isdigit():
            raise InvalidContentLength()
        if int(raw_length) > MAX_BODY:
            raise BodyTooLarge()


class HermesResource:
    """Shared plumbing: settings, auth, bounded body reads."""

    def __init__(self, settings):
        self.settings = settings

    def authorize(self, req):
        """Upstream _check_auth: exact "Bearer " prefix, stripped token, constant-time compare."""
        key = self.settings.api_key
        if key is not None:
            header = req.get_header("Authorization") or ""
            token = header[len("Bearer "):].strip() if header.startswith("Bearer ") else None
            if token is None or not hmac.compare_digest(token.encode(), key.encode()):
                raise Unauthorized()

    @staticmethod
    def read_body(req):
        check_length(req)
        data = req.bounded_stream.read(MAX_BODY + 1)
        if len(data) > MAX_BODY:
            raise BodyTooLarge()
        return data


def open_stream(resp, headers, frames):
    """Start an SSE answer; upstream flushes its headers without the security headers, at once
    (aiohttp's `prepare()`), before its first frame."""
    resp.status = 200
    resp.content_type = "text/event-stream"
    resp.set_headers({**sse.HEADERS, **headers})
    resp.stream = _headers_first(frames)


def _headers_first(frames):
    """The frames behind an empty first chunk: a WSGI server sends the headers at its first
    write, so a stream idle until its first keepalive (30 s) would otherwise leave its client
    without an answer until then. A generator, so closing it closes `frames`."""
    yield b""
    yield from frames
