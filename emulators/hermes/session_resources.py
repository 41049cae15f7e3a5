"""Falcon resources of the real server's management routes (hermes-real-server.md §10-§13):
sessions, session chat, jobs, skills, toolsets, cron fire and the platform events ingress.

Thin responders over SessionBook, SessionChat and JobBoard; auth first, as on every route.
"""
import falcon

from .resources import HermesResource, open_stream, paced, send_json
from .sessionchat import SessionChat


class EmptySegments:
    """aiohttp's `{name}` never matches an empty segment: `/api/sessions/` is a plain 404."""

    def process_resource(self, req, resp, resource, params):
        if any(value == "" for value in params.values()):
            raise falcon.HTTPNotFound()


def query(req):
    """The query string as a dict of first values (upstream reads `request.query.get`)."""
    return {name: (value[0] if isinstance(value, list) else value)
            for name, value in req.params.items()}


class Sessions(HermesResource):
    """GET and POST /api/sessions (SessionList, SessionCreate)."""

    def on_get(self, req, resp):
        send_json(resp, 200, self.compat(req).sessions().page(query(req)))

    def on_post(self, req, resp):
        book = self.compat(req).sessions()
        session = book.create(self.read_body(req))
        send_json(resp, 201, {"object": "hermes.session", "session": session})


class Session(HermesResource):
    """GET, PATCH and DELETE /api/sessions/{session_id}."""

    def on_get(self, req, resp, session_id):
        session = self.compat(req).sessions().get(session_id)
        send_json(resp, 200, {"object": "hermes.session", "session": session})

    def on_patch(self, req, resp, session_id):
        book = self.compat(req).sessions()
        session = book.patch(session_id, self.read_body(req))
        send_json(resp, 200, {"object": "hermes.session", "session": session})

    def on_delete(self, req, resp, session_id):
        send_json(resp, 200, self.compat(req).sessions().delete(session_id))


class SessionMessages(HermesResource):
    """GET /api/sessions/{session_id}/messages."""

    def on_get(self, req, resp, session_id):
        send_json(resp, 200, self.compat(req).sessions().messages(session_id))


class SessionFork(HermesResource):
    """POST /api/sessions/{session_id}/fork."""

    def on_post(self, req, resp, session_id):
        book = self.compat(req).sessions()
        session = book.fork(session_id, self.read_body(req))
        send_json(resp, 201, {"object": "hermes.session", "session": session})


class SessionChatTurn(HermesResource):
    """POST /api/sessions/{session_id}/chat: one agent turn, JSON."""

    def on_post(self, req, resp, session_id):
        chat = SessionChat(self.compat(req))
        turn = chat.validate(session_id, self.read_body(req),
                             session_key_header=req.get_header("X-Hermes-Session-Key"))
        body, headers = chat.reply(turn)
        send_json(resp, 200, body, headers)


class SessionChatStream(HermesResource):
    """POST /api/sessions/{session_id}/chat/stream: one agent turn as named SSE events."""

    def on_post(self, req, resp, session_id):
        chat = SessionChat(self.compat(req))
        turn = chat.validate(session_id, self.read_body(req),
                             session_key_header=req.get_header("X-Hermes-Session-Key"))
        headers, frames, delay_s = chat.stream(turn)
        open_stream(resp, headers, paced(frames, delay_s))


ROUTES = (  # path, resource class: the rows app.py adds to its route table
    ("/api/sessions", Sessions),
    ("/api/sessions/{session_id}", Session),
    ("/api/sessions/{session_id}/messages", SessionMessages),
    ("/api/sessions/{session_id}/fork", SessionFork),
    ("/api/sessions/{session_id}/chat", SessionChatTurn),
    ("/api/sessions/{session_id}/chat/stream", SessionChatStream),
)
