"""One resource per PHP script of /spaces/newos4/api, and the chat page's files: thin, the rules
live in service.py."""
import hashlib
import json

import falcon

from . import errors, schemas
from .service import client_address, thread_of

READ_CHUNK = 65536


class ChatPost:
    """POST /spaces/newos4/api/chat/post.php: append a browser message."""

    def __init__(self, service):
        self.service = service

    def on_post(self, req, resp):
        thread = thread_of(req.get_header("X-Chat-Token"))
        raw = read_body(req, self.service.settings.max_body, self.service.settings.max_text)
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):  # deep nesting is a malformed body, not a 500
            raise errors.BadRequest("body must be a JSON object")
        body = schemas.load(schemas.POST_BODY, data)
        address = client_address(req.remote_addr, req.get_header("X-Forwarded-For"),
                                 self.service.settings.trusted_networks)
        message = self.service.post(thread, body["text"], body["kind"], address)
        resp.status = falcon.HTTP_201
        resp.media = {"success": True, "id": message["id"], "epoch": message["epoch"],
                      "ts": message["ts"], "thread": thread}

    def on_options(self, req, resp):
        raise falcon.HTTPMethodNotAllowed(["POST"])


class ChatPoll:
    """GET /spaces/newos4/api/chat/poll.php?since=<epoch ms>: read the token's thread."""

    def __init__(self, service):
        self.service = service

    def on_get(self, req, resp):
        thread = thread_of(req.get_header("X-Chat-Token"))
        since = req.params.get("since")
        if isinstance(since, list):
            since = since[-1]  # PHP keeps the last of repeated query parameters
        resp.media = self.service.poll(thread, schemas.parse_since(since))

    def on_options(self, req, resp):
        raise falcon.HTTPMethodNotAllowed(["GET"])


class Health:
    """GET /spaces/newos4/api/health: 200 when the data directory is readable and writable, else
    503; for the reverse proxy and monitors. Cheap (no thread is read) and says nothing secret."""

    def __init__(self, service):
        self.service = service

    def on_get(self, req, resp):
        resp.cache_control = ["no-store"]
        resp.media = self.service.health()

    on_head = on_get


class Retired:
    """A PHP endpoint that is gone: 410 with a pointer to its replacement."""

    def __init__(self, replacement):
        self.replacement = replacement

    def on_post(self, req, resp):
        raise errors.Gone(f"gone: use {self.replacement}")

    def on_options(self, req, resp):
        raise falcon.HTTPMethodNotAllowed(["POST"])


class PageFile:
    """GET/HEAD of one file of the chat page, read once; browsers revalidate it by ETag."""

    # The page runs only its own script and talks only to its own origin.
    HEADERS = {
        "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                                   "connect-src 'self'; img-src 'self' data:; base-uri 'none'; "
                                   "form-action 'none'; frame-ancestors 'none'",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-cache",
    }

    def __init__(self, path, content_type):
        self.body = path.read_bytes()
        self.content_type = content_type
        self.etag = hashlib.sha256(self.body).hexdigest()[:20]

    def on_get(self, req, resp):
        resp.etag = self.etag
        resp.set_headers(self.HEADERS)
        if any(tag == "*" or tag == self.etag for tag in req.if_none_match or ()):
            resp.status = falcon.HTTP_304
            resp.content_type = None  # a 304 has no content to type
            return
        resp.content_type = self.content_type
        resp.data = self.body

    on_head = on_get  # falcon drops the body of a HEAD answer and keeps its headers


class DirectorySlash:
    """The page's folder named without its slash: 301 to it, as Apache's mod_dir answers."""

    def __init__(self, location):
        self.location = location

    def on_get(self, req, resp):
        resp.status = falcon.HTTP_301
        resp.location = self.location
        resp.content_type = falcon.MEDIA_TEXT

    on_head = on_get


def read_body(req, max_body, max_text):
    """The raw body, refused with 413 past `max_body`: by Content-Length before reading, and
    while reading a chunked body."""
    length = req.content_length
    if length is not None and length > max_body:
        raise errors.TooLarge(max_text)
    if length is None and req.env.get("wsgi.input_terminated"):
        stream = req.stream  # chunked: the server ends the input for us
    else:
        stream = req.bounded_stream
    chunks, size = [], 0
    while True:
        chunk = stream.read(min(READ_CHUNK, max_body + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > max_body:
            raise errors.TooLarge(max_text)
    return b"".join(chunks)
