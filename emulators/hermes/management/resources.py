"""Falcon resources of the real server's management routes (Hermes 0.19.0):
sessions, session chat, jobs, skills, toolsets, cron fire and the platform events ingress.

Thin responders over SessionBook, SessionChat and JobBoard; auth first, as on every route.
"""
import re

import falcon

from emulators.runtime import pauser

from ..errors import InvalidFireToken, InvalidPlatform, PlatformEventsUnsupported
from ..errors import PlatformUnavailable
from ..openai_compat.resources import CompatResource
from ..resources import HermesResource, open_stream, send_json
from ..sse import paced
from .catalog import Catalog
from .chat import SessionChat
from .jobs import JobBoard

PLATFORM_NAME = re.compile(r"^[a-z0-9_]+$")
PROFILE_PREFIX = re.compile(r"^/p/[^/]+(?=/)")
ORIGIN_HEADERS = (("forwarded_for", "X-Forwarded-For", 200), ("real_ip", "X-Real-IP", 200),
                  ("user_agent", "User-Agent", 300))


def route_path(path):
    """Return the route a path stands for: upstream also mounts every route under
    `/p/{profile}/…`, and with profile multiplexing off (the only mode modelled) the prefix is
    ignored (oracle profile_prefix_health). The runtime matches operations on it too."""
    prefix = PROFILE_PREFIX.match(path)
    return path[prefix.end():] if prefix else path


def without_profile_prefix(env):
    """Return the environ with PATH_INFO on the route it stands for (route_path)."""
    path = env.get("PATH_INFO") or ""
    route = route_path(path)
    return {**env, "PATH_INFO": route} if route != path else env


class EmptySegments:
    """aiohttp's `{name}` never matches an empty segment: `/api/sessions/` is a plain 404."""

    def process_resource(self, req, resp, resource, params):
        if any(value == "" for value in params.values()):
            raise falcon.HTTPNotFound()


def query(req):
    """The query string as a dict of first values (upstream reads `request.query.get`)."""
    return {name: (value[0] if isinstance(value, list) else value)
            for name, value in req.params.items()}


class ApiResource(CompatResource):
    """A route of the sessions/jobs API: the job ticker catches up before any answer, so what
    is due on the namespace clock has run (jobs fill cron sessions)."""

    def board(self, req):
        board = JobBoard(self.compat(req))
        board.tick()
        return board

    def sessions(self, req):
        return self.board(req).compat.sessions()


def send_session(resp, status, session):
    """Answer one session in upstream's envelope (`{object: "hermes.session", session}`)."""
    send_json(resp, status, {"object": "hermes.session", "session": session})


class Sessions(ApiResource):
    """GET and POST /api/sessions (SessionList, SessionCreate)."""

    def on_get(self, req, resp):
        send_json(resp, 200, self.sessions(req).page(query(req)))

    def on_post(self, req, resp):
        book = self.sessions(req)
        send_session(resp, 201, book.create(self.read_body(req)))


class Session(ApiResource):
    """GET, PATCH and DELETE /api/sessions/{session_id}."""

    def on_get(self, req, resp, session_id):
        send_session(resp, 200, self.sessions(req).get(session_id))

    def on_patch(self, req, resp, session_id):
        book = self.sessions(req)
        send_session(resp, 200, book.patch(session_id, self.read_body(req)))

    def on_delete(self, req, resp, session_id):
        send_json(resp, 200, self.sessions(req).delete(session_id))


class SessionMessages(ApiResource):
    """GET /api/sessions/{session_id}/messages."""

    def on_get(self, req, resp, session_id):
        send_json(resp, 200, self.sessions(req).messages(session_id))


class SessionFork(ApiResource):
    """POST /api/sessions/{session_id}/fork."""

    def on_post(self, req, resp, session_id):
        book = self.sessions(req)
        send_session(resp, 201, book.fork(session_id, self.read_body(req)))


class ChatResource(CompatResource):
    """A route of one agent turn in a session: the turn is checked before it runs."""

    def turn(self, req, session_id):
        """(the session's SessionChat, the request's turn, validated)."""
        chat = SessionChat(self.compat(req))
        return chat, chat.validate(session_id, self.read_body(req),
                                   session_key_header=req.get_header("X-Hermes-Session-Key"))


class SessionChatTurn(ChatResource):
    """POST /api/sessions/{session_id}/chat: one agent turn, JSON."""

    def on_post(self, req, resp, session_id):
        chat, turn = self.turn(req, session_id)
        body, headers = chat.reply(turn)
        send_json(resp, 200, body, headers)


class SessionChatStream(ChatResource):
    """POST /api/sessions/{session_id}/chat/stream: one agent turn as named SSE events."""

    def on_post(self, req, resp, session_id):
        chat, turn = self.turn(req, session_id)
        headers, frames, delay_s = chat.stream(turn)
        open_stream(resp, headers, paced(frames, delay_s, pauser(req.env)))


class Jobs(ApiResource):
    """GET and POST /api/jobs (JobList, JobCreate)."""

    def on_get(self, req, resp):
        flag = (req.get_param("include_disabled") or "").lower()
        send_json(resp, 200, self.board(req).listing(flag in ("true", "1")))

    def on_post(self, req, resp):
        board = self.board(req)
        send_json(resp, 200, board.create(self.read_body(req), origin(req)))


class Job(ApiResource):
    """GET, PATCH and DELETE /api/jobs/{job_id}."""

    def on_get(self, req, resp, job_id):
        send_json(resp, 200, self.board(req).get(job_id))

    def on_patch(self, req, resp, job_id):
        board = self.board(req)
        send_json(resp, 200, board.patch(job_id, self.read_body(req)))

    def on_delete(self, req, resp, job_id):
        send_json(resp, 200, self.board(req).delete(job_id))


class JobPause(ApiResource):
    """POST /api/jobs/{job_id}/pause (the body is ignored)."""

    def on_post(self, req, resp, job_id):
        send_json(resp, 200, self.board(req).pause(job_id))


class JobResume(ApiResource):
    """POST /api/jobs/{job_id}/resume."""

    def on_post(self, req, resp, job_id):
        send_json(resp, 200, self.board(req).resume(job_id))


class JobRun(ApiResource):
    """POST /api/jobs/{job_id}/run: due now; the next ticker instant runs it."""

    def on_post(self, req, resp, job_id):
        send_json(resp, 200, self.board(req).run_now(job_id))


def origin(req):
    """Where a job was created from (upstream `origin`: client address, then proxy headers)."""
    address = req.remote_addr or "127.0.0.1"
    found = {"platform": "api_server", "chat_id": "api", "source_ip": address,
             "peer_ip": address}
    for name, header, limit in ORIGIN_HEADERS:
        value = req.get_header(header)
        if value:
            found[name] = value.replace("\r", "").replace("\n", "")[:limit]
    return found


class Skills(CompatResource):
    """GET /v1/skills (SkillList): the namespace's scripted skills."""

    def on_get(self, req, resp):
        send_json(resp, 200, Catalog(self.compat(req).instance).skills())


class Toolsets(CompatResource):
    """GET /v1/toolsets (ToolsetList)."""

    def on_get(self, req, resp):
        self.compat(req)  # authorizes
        send_json(resp, 200, Catalog.toolsets())


class CronFire(HermesResource):
    """POST /api/cron/fire: authenticated by NAS-minted fire tokens, never by the API key; the
    emulator mints none, so every call is 401 `invalid fire token`."""

    def on_post(self, req, resp):
        raise InvalidFireToken()


class PlatformEvents(HermesResource):
    """POST /api/platforms/{platform}/events: the callback ingress of other adapters. Only the
    api_server adapter is connected here, and it takes no HTTP events (oracle platform_events_*)."""

    def on_post(self, req, resp, platform):
        name = platform.lower().replace("-", "_")
        if not PLATFORM_NAME.match(name):
            raise InvalidPlatform()
        if name == "api_server":
            raise PlatformEventsUnsupported()
        raise PlatformUnavailable()


ROUTES = (  # path, resource class: the rows app.py adds to its route table
    ("/api/sessions", Sessions),
    ("/api/sessions/{session_id}", Session),
    ("/api/sessions/{session_id}/messages", SessionMessages),
    ("/api/sessions/{session_id}/fork", SessionFork),
    ("/api/sessions/{session_id}/chat", SessionChatTurn),
    ("/api/sessions/{session_id}/chat/stream", SessionChatStream),
    ("/api/jobs", Jobs),
    ("/api/jobs/{job_id}", Job),
    ("/api/jobs/{job_id}/pause", JobPause),
    ("/api/jobs/{job_id}/resume", JobResume),
    ("/api/jobs/{job_id}/run", JobRun),
    ("/v1/skills", Skills),
    ("/v1/toolsets", Toolsets),
    ("/api/cron/fire", CronFire),
    ("/api/platforms/{platform}/events", PlatformEvents),
)
