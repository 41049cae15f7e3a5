"""Request bodies: the size limits and the one JSON nesting limit of every emulator route.

The pipeline guards `wsgi.input` of every provider request (`guard`, with the provider limit)
and the admin planes read through `read_body` (with the admin limit, which fits seeding a
large history), so a declared body past its limit is refused before a byte of it is read and
no route can take more than its limit into memory or SQLite. Settings (EMULATORS_MAX_BODY,
EMULATORS_MAX_ADMIN_BODY) choose the limits; these are the defaults.
"""
import json

from .errors import AdminError

# Provider routes: Hermes upstream's request-size middleware refuses bodies over 10,000,000
# bytes; no GitHub request comes near it (the largest body it models is a few kB).
MAX_BODY = 10_000_000
# Admin planes: seeding a 100,000-commit history is about 11 MB of JSON; this leaves room for
# several times that.
MAX_ADMIN_BODY = 64_000_000
# Ruby's JSON parser (GitHub) refuses nesting past 100 levels by default; Python's json gives up
# with a RecursionError near 1000, and our recursive walks would fail long before that.
MAX_DEPTH = 100


class BodyTooLarge(AdminError):
    """413: the declared or streamed body is larger than the route's limit.

    Services map it to their own envelope with `app.add_error_handler(BodyTooLarge, ...)`.
    """

    status = 413

    def __init__(self, limit):
        super().__init__(f"request body is larger than {limit} bytes")


class BadLength(AdminError):
    """400: a Content-Length that is not a non-negative integer."""

    message = "bad content-length"


class InvalidJSON(ValueError):
    """A body that is not JSON (a ValueError, as json's own errors)."""


class TooDeep(InvalidJSON):
    """JSON nested deeper than MAX_DEPTH levels."""

    def __init__(self):
        super().__init__(f"request body nests deeper than {MAX_DEPTH} levels")


def declared_length(environ):
    """Return the declared Content-Length (None when absent), refusing a malformed one."""
    text = (environ.get("CONTENT_LENGTH") or "").strip()
    if not text:
        return None
    if not text.isdigit():
        raise BadLength()
    return int(text)


class LimitedInput:
    """A `wsgi.input` that refuses a declared or streamed body past `limit` bytes."""

    def __init__(self, stream, declared, limit=MAX_BODY):
        self._stream = stream
        self._left = declared  # None: chunked (the server terminates the stream)
        self._limit = limit
        self._count = 0

    def read(self, size=-1):
        if self._left is not None and self._left + self._count > self._limit:
            # before reading anything: the client may still be sending
            raise BodyTooLarge(self._limit)
        room = self._limit + 1 - self._count
        if self._left is not None:
            room = min(room, self._left)
        if size is None or size < 0 or size > room:
            size = room
        data = self._stream.read(size) if size > 0 else b""
        self._count += len(data)
        if self._left is not None:
            self._left -= len(data)
        if self._count > self._limit:
            raise BodyTooLarge(self._limit)
        return data

    def readline(self, size=-1):
        return self.read(size)  # no route reads lines; bounded all the same

    def __iter__(self):
        chunk = self.read(65536)
        while chunk:
            yield chunk
            chunk = self.read(65536)


def guard(environ, limit=MAX_BODY):
    """Replace `wsgi.input` by a LimitedInput when the request may carry a body."""
    declared = declared_length(environ)
    if declared or (declared is None and environ.get("wsgi.input_terminated")):
        environ["wsgi.input"] = LimitedInput(environ["wsgi.input"], declared, limit)


def read_body(environ, limit=MAX_ADMIN_BODY):
    """Return the whole body (b"" when none), refusing one past `limit` before reading it."""
    declared = declared_length(environ)
    if declared is None and not environ.get("wsgi.input_terminated"):
        return b""
    if declared == 0:
        return b""
    return LimitedInput(environ["wsgi.input"], declared, limit).read()


def loads(raw, **options):
    """Parse JSON like `json.loads`; InvalidJSON when it is not JSON, TooDeep past MAX_DEPTH."""
    try:
        value = json.loads(raw, **options)
    except RecursionError:
        raise TooDeep() from None
    except ValueError as error:
        raise InvalidJSON(str(error)) from error
    if _brackets(raw) > MAX_DEPTH and _deeper_than(value, MAX_DEPTH):
        raise TooDeep()
    return value


def _brackets(raw):
    """An upper bound of the nesting depth, counted at C speed (most bodies stop here)."""
    if isinstance(raw, str):
        return raw.count("[") + raw.count("{")
    return raw.count(b"[") + raw.count(b"{")


def _deeper_than(value, limit):
    stack = [(value, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            value = value.values()
        elif not isinstance(value, list):
            continue
        if depth > limit:
            return True
        stack.extend((item, depth + 1) for item in value)
    return False
