"""The newOS4 chat app: route table, one error shape, JSON everywhere but the chat page."""
import logging
from pathlib import Path

import falcon

from . import errors
from .resources import ChatPoll, ChatPost, DirectorySlash, Health, PageFile, Retired
from .service import ChatService

log = logging.getLogger(__name__)

PREFIX = "/spaces/newos4"
POST_PATH = f"{PREFIX}/api/chat/post.php"
POLL_PATH = f"{PREFIX}/api/chat/poll.php"
RETIRED_PATH = f"{PREFIX}/api/debug/agent-replies.php"
# Not a PHP script of the frozen contract, so no .php; under api/ so the proxy's one location
# for the chat API reaches it, apart from the chat page at /spaces/newos4/.
HEALTH_PATH = f"{PREFIX}/api/health"
PAGE_PATH = f"{PREFIX}/"

# The chat page: an explicit list of files (never a folder), so nothing else can be served.
STATIC = Path(__file__).resolve().parent / "static"
PAGE_FILES = {
    PAGE_PATH: ("index.html", "text/html; charset=utf-8"),
    f"{PREFIX}/chat.js": ("chat.js", "text/javascript; charset=utf-8"),
    f"{PREFIX}/messages.js": ("messages.js", "text/javascript; charset=utf-8"),
    f"{PREFIX}/chat.css": ("chat.css", "text/css; charset=utf-8"),
    # Markdown for Hermes' answers, and the sanitizer its HTML goes through (vendor/README.md)
    f"{PREFIX}/vendor/marked.umd.js": ("vendor/marked.umd.js", "text/javascript; charset=utf-8"),
    f"{PREFIX}/vendor/purify.min.js": ("vendor/purify.min.js", "text/javascript; charset=utf-8"),
}


class ChatHTTPError(falcon.HTTPError):
    """The chat wire shape for every error: {"success": false, "error": "…"}."""

    def __init__(self, status, message, headers=None):
        super().__init__(falcon.code_to_http_status(status), headers=headers)
        self.message = message

    def to_dict(self, obj_type=dict):
        return obj_type(success=False, error=self.message)


# Messages for errors falcon raises itself (router, method, malformed headers).
FRAMEWORK_MESSAGES = {404: "not found", 405: "Method not allowed"}


def create_app(settings, *, clock=None, random_hex=None):
    """Build the chat WSGI app over the thread store in `settings.data_dir`."""
    service = ChatService(settings, clock=clock, random_hex=random_hex)
    app = falcon.App(media_type=falcon.MEDIA_JSON)
    app.req_options.strip_url_path_trailing_slash = False
    routes = [
        (POST_PATH, ChatPost(service)),
        (POLL_PATH, ChatPoll(service)),
        (RETIRED_PATH, Retired(POST_PATH)),
        (HEALTH_PATH, Health(service)),
        (PREFIX, DirectorySlash(PAGE_PATH)),
        *((path, PageFile(STATIC / name, kind)) for path, (name, kind) in PAGE_FILES.items()),
    ]
    for path, resource in routes:
        app.add_route(path, resource)
    app.add_error_handler(Exception, _unexpected)
    app.add_error_handler(falcon.HTTPError, _framework_error)
    app.add_error_handler(errors.ChatError, _chat_error)
    app.set_error_serializer(_serialize)
    return app


def _chat_error(req, resp, exc, params):
    if exc.status >= 500:
        log.error("chat error %s on %s %s: %s", exc.status, req.method, req.path, exc)
        raise ChatHTTPError(exc.status, "internal error" if exc.status == 500 else exc.message)
    raise ChatHTTPError(exc.status, exc.message, headers=exc.headers)


def _framework_error(req, resp, exc, params):
    if isinstance(exc, ChatHTTPError):
        raise exc
    status = int(exc.status_code)
    message = FRAMEWORK_MESSAGES.get(status) or (exc.description or exc.title or "error")
    headers = dict(exc.headers or {})
    if "Allow" in headers:
        # The PHP scripts answer OPTIONS with 405 too, so it is never an allowed method.
        headers["Allow"] = ", ".join(
            m.strip() for m in headers["Allow"].split(",") if m.strip() != "OPTIONS")
    raise ChatHTTPError(status, message, headers=headers)


def _unexpected(req, resp, exc, params):
    log.exception("unexpected error on %s %s", req.method, req.path)
    raise ChatHTTPError(500, "internal error")


def _serialize(req, resp, exc):
    resp.content_type = falcon.MEDIA_JSON
    resp.media = exc.to_dict()
