"""Falcon resources of the Hermes provider routes: thin responders over HermesBackend (runs)
and CompatBackend (health, models, capabilities, chat completions, responses).

Auth runs first in every responder (after routing, as aiohttp answers 404/405 before auth);
CORS runs before routing, as upstream's outermost middleware.
"""
import hmac
import json
import time

from emulators.runtime import instance_of
from emulators.runtime.bodies import MAX_BODY  # upstream's request-size limit too

from . import sse
from .compat import CompatBackend
from .errors import BodyTooLarge, InvalidContentLength, RunNotFound, Unauthorized
from .inputs import Submission
from .models import EFFECT_DROP, HermesBackend

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
    """Shared plumbing: settings, auth, bounded body reads, the backends of the request."""

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

    def backend(self, req):
        self.authorize(req)
        return HermesBackend(instance_of(req))

    def compat(self, req):
        self.authorize(req)
        return CompatBackend(instance_of(req), self.settings)

    @staticmethod
    def read_body(req):
        check_length(req)
        data = req.bounded_stream.read(MAX_BODY + 1)
        if len(data) > MAX_BODY:
            raise BodyTooLarge()
        return data


class Runs(HermesResource):
    """POST /v1/runs (RunCreate)."""

    def on_post(self, req, resp):
        backend = self.backend(req)
        raw = self.read_body(req)
        admission = backend.submit(Submission(
            raw, memory_header=req.get_header("X-Hermes-Session-Key"),
            key_header=req.get_header("Idempotency-Key")))
        instance = backend.instance
        instance.report_ids(runId=admission.run_id)
        if admission.created:
            instance.accept()
            if instance.fault_effect(EFFECT_DROP) is not None:
                instance.drop()
        send_json(resp, 202, admission.body, admission.headers)


class Run(HermesResource):
    """GET /v1/runs/{run_id} (RunGet)."""

    def on_get(self, req, resp, run_id):
        send_json(resp, 200, self.backend(req).get(run_id))


class RunStop(HermesResource):
    """POST /v1/runs/{run_id}/stop (RunStop); the body is ignored."""

    def on_post(self, req, resp, run_id):
        backend = self.backend(req)
        self.read_body(req)
        body, accepted = backend.stop(run_id)
        if accepted:
            backend.instance.report_ids(runId=run_id)
        send_json(resp, 200, body)


class RunApproval(HermesResource):
    """POST /v1/runs/{run_id}/approval (RunApproval)."""

    def on_post(self, req, resp, run_id):
        backend = self.backend(req)
        send_json(resp, 200, backend.approve(run_id, self.read_body(req)))


class RunSteer(HermesResource):
    """POST /v1/runs/{run_id}/steer (RunSteer)."""

    def on_post(self, req, resp, run_id):
        backend = self.backend(req)
        send_json(resp, 200, backend.steer(run_id, self.read_body(req)))


class RunEvents(HermesResource):
    """GET /v1/runs/{run_id}/events: the run's buffered and live events as SSE.

    The stream polls the shared store, so any worker can serve it; it sends keepalive comments
    while idle (which also detects a vanished client), and ends after a terminal event. A
    subscriber that comes while another still holds the stream gets only keepalives, as upstream.
    """

    def on_get(self, req, resp, run_id):
        backend = self.backend(req)
        deadline = time.monotonic() + self.settings.events_wait_s
        # Upstream waits about a second for a run's queue to appear before answering 404.
        while (stream := backend.open_stream(run_id)) is None:
            if time.monotonic() >= deadline:
                raise RunNotFound(run_id)
            time.sleep(min(self.settings.poll_s, 0.05))
        if stream.get("orphan"):
            open_stream(resp, {}, self.keepalives())
        else:
            open_stream(resp, {}, self.frames(backend, stream["run_id"]))

    def keepalives(self):
        """Yield only keepalive comments, until the client leaves."""
        while True:
            time.sleep(self.settings.keepalive_s)
            yield sse.KEEPALIVE

    def frames(self, backend, run_id):
        """Yield SSE frames until the terminal event, a dropped transport, or a gone client."""
        quiet_since = time.monotonic()
        try:
            while True:
                frames, state = backend.take_events(run_id)
                for text in frames:
                    yield text.encode("utf-8")
                if state == "terminal":
                    yield sse.CLOSED
                    return
                if state == "gone":
                    return
                now = time.monotonic()
                if frames:
                    quiet_since = now
                elif now - quiet_since >= self.settings.keepalive_s:
                    yield sse.KEEPALIVE
                    quiet_since = now
                time.sleep(self.settings.poll_s)
        finally:
            backend.close_stream(run_id)


def open_stream(resp, headers, frames):
    """Start an SSE answer; upstream flushes its headers without the security headers."""
    resp.status = 200
    resp.content_type = "text/event-stream"
    resp.set_headers({**sse.HEADERS, **headers})
    resp.stream = frames


class Health(HermesResource):
    """GET /health and GET /v1/health (Health, HealthV1): no auth, whatever the header says."""

    def on_get(self, req, resp):
        send_json(resp, 200, CompatBackend.health())


class HealthDetailed(HermesResource):
    """GET /health/detailed (HealthDetailed): authenticated."""

    def on_get(self, req, resp):
        send_json(resp, 200, self.compat(req).health_detailed())


class Models(HermesResource):
    """GET /v1/models (ModelList)."""

    def on_get(self, req, resp):
        send_json(resp, 200, self.compat(req).models())


class Capabilities(HermesResource):
    """GET /v1/capabilities (Capabilities)."""

    def on_get(self, req, resp):
        send_json(resp, 200, self.compat(req).capabilities())


class ChatCompletions(HermesResource):
    """POST /v1/chat/completions (ChatCompletionCreate): JSON, or SSE with `stream: true`."""

    def on_post(self, req, resp):
        backend = self.compat(req)
        turn = backend.chat_turn(self.read_body(req),
                                 session_key_header=req.get_header("X-Hermes-Session-Key"),
                                 session_id_header=req.get_header("X-Hermes-Session-Id"))
        if turn.stream:
            headers, frames, delay_s = backend.chat_stream(turn)
            open_stream(resp, headers, sse.paced(frames, delay_s))
            return
        body, headers = backend.chat(turn, req.get_header("Idempotency-Key"))
        send_json(resp, 200, body, headers)


class Responses(HermesResource):
    """POST /v1/responses (ResponseCreate): JSON, or SSE events with `stream: true`."""

    def on_post(self, req, resp):
        backend = self.compat(req)
        turn = backend.response_turn(self.read_body(req),
                                     session_key_header=req.get_header("X-Hermes-Session-Key"))
        if turn.stream:
            headers, events, delay_s = backend.response_stream(turn)
            open_stream(resp, headers, sse.paced(self.frames(backend, turn, events), delay_s))
            return
        body, headers = backend.respond(turn, req.get_header("Idempotency-Key"))
        backend.instance.report_ids(responseId=body["id"])
        send_json(resp, 200, body, headers)

    @staticmethod
    def frames(backend, turn, events):
        """Number the events from 0; store the terminal snapshot before sending it (upstream)."""
        for number, (name, data) in enumerate(events):
            if number == len(events) - 1:
                final = data["response"]
                backend.save(turn, final, final["output"][-1]["content"][0]["text"])
            yield sse.frame({**data, "sequence_number": number}, name)


class Response(HermesResource):
    """GET and DELETE /v1/responses/{response_id} (ResponseGet, ResponseDelete)."""

    def on_get(self, req, resp, response_id):
        send_json(resp, 200, self.compat(req).get_response(response_id))

    def on_delete(self, req, resp, response_id):
        send_json(resp, 200, self.compat(req).delete_response(response_id))
