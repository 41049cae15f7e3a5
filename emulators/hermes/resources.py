"""Falcon resources of the Hermes runs API: thin responders over HermesBackend.

Auth runs first in every responder (after routing, as aiohttp answers 404/405 before auth).
"""
import hmac
import json
import time

from emulators.runtime import instance_of

from .errors import BodyTooLarge, InvalidContentLength, RunNotFound, Unauthorized
from .models import EFFECT_DROP, HermesBackend, Submission

MAX_BODY = 10_000_000  # upstream request-size middleware
# Security headers of upstream JSON responses (hermes-real-server.md §2); never on SSE.
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


class RunsResource:
    """Shared plumbing: settings, auth, bounded body reads, the backend of the request."""

    def __init__(self, settings):
        self.settings = settings

    def backend(self, req):
        key = self.settings.api_key
        if key is not None:
            header = req.get_header("Authorization") or ""
            token = header[len("Bearer "):].strip() if header.startswith("Bearer ") else None
            if token is None or not hmac.compare_digest(token.encode(), key.encode()):
                raise Unauthorized()
        return HermesBackend(instance_of(req))

    @staticmethod
    def read_body(req):
        raw_length = (req.get_header("Content-Length") or "").strip()
        if raw_length:  # WSGI servers pass an empty CONTENT_LENGTH when the header is absent
            if not raw_length.isdigit():
                raise InvalidContentLength()
            if int(raw_length) > MAX_BODY:
                raise BodyTooLarge()
        data = req.bounded_stream.read(MAX_BODY + 1)
        if len(data) > MAX_BODY:
            raise BodyTooLarge()
        return data


class Runs(RunsResource):
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


class Run(RunsResource):
    """GET /v1/runs/{run_id} (RunGet)."""

    def on_get(self, req, resp, run_id):
        send_json(resp, 200, self.backend(req).get(run_id))


class RunStop(RunsResource):
    """POST /v1/runs/{run_id}/stop (RunStop); the body is ignored."""

    def on_post(self, req, resp, run_id):
        backend = self.backend(req)
        self.read_body(req)
        body, accepted = backend.stop(run_id)
        if accepted:
            backend.instance.report_ids(runId=run_id)
        send_json(resp, 200, body)


class RunApproval(RunsResource):
    """POST /v1/runs/{run_id}/approval (RunApproval)."""

    def on_post(self, req, resp, run_id):
        backend = self.backend(req)
        send_json(resp, 200, backend.approve(run_id, self.read_body(req)))


class RunSteer(RunsResource):
    """POST /v1/runs/{run_id}/steer (RunSteer)."""

    def on_post(self, req, resp, run_id):
        backend = self.backend(req)
        send_json(resp, 200, backend.steer(run_id, self.read_body(req)))


class RunEvents(RunsResource):
    """GET /v1/runs/{run_id}/events: the run's buffered and live events as SSE.

    The stream polls the shared store, so any worker can serve it; it sends keepalive comments
    while idle (which also detects a vanished client), and ends after a terminal event.
    """

    def on_get(self, req, resp, run_id):
        backend = self.backend(req)
        deadline = time.monotonic() + self.settings.events_wait_s
        # Upstream waits about a second for a run's queue to appear before answering 404.
        while (stream := backend.open_stream(run_id)) is None:
            if time.monotonic() >= deadline:
                raise RunNotFound(run_id)
            time.sleep(min(self.settings.poll_s, 0.05))
        resp.status = 200
        resp.content_type = "text/event-stream"
        resp.set_header("Cache-Control", "no-cache")
        resp.set_header("X-Accel-Buffering", "no")
        resp.stream = self.frames(backend, stream["run_id"])

    def frames(self, backend, run_id):
        """Yield SSE frames until the terminal event, a dropped transport, or a gone client."""
        quiet_since = time.monotonic()
        try:
            while True:
                frames, state = backend.take_events(run_id)
                for text in frames:
                    yield text.encode("utf-8")
                if state == "terminal":
                    yield b": stream closed\n\n"
                    return
                if state == "gone":
                    return
                now = time.monotonic()
                if frames:
                    quiet_since = now
                elif now - quiet_since >= self.settings.keepalive_s:
                    yield b": keepalive\n\n"
                    quiet_since = now
                time.sleep(self.settings.poll_s)
        finally:
            backend.close_stream(run_id)
