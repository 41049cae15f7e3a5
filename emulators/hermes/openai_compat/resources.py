"""Falcon resources of the OpenAI-compatible surface (health, models, capabilities, chat
completions, responses): thin responders over CompatBackend."""
from emulators.runtime import instance_of, pauser

from .. import sse
from ..resources import HermesResource, open_stream, send_json
from .backend import CompatBackend


class CompatResource(HermesResource):
    """A route answered by CompatBackend: auth first, then the request's backend."""

    def compat(self, req):
        self.authorize(req)
        return CompatBackend(instance_of(req), self.settings)


class Health(HermesResource):
    """GET /health and GET /v1/health (Health, HealthV1): no auth, whatever the header says."""

    def on_get(self, req, resp):
        send_json(resp, 200, CompatBackend.health())


class HealthDetailed(CompatResource):
    """GET /health/detailed (HealthDetailed): authenticated."""

    def on_get(self, req, resp):
        send_json(resp, 200, self.compat(req).health_detailed())


class Models(CompatResource):
    """GET /v1/models (ModelList)."""

    def on_get(self, req, resp):
        send_json(resp, 200, self.compat(req).models())


class Capabilities(CompatResource):
    """GET /v1/capabilities (Capabilities)."""

    def on_get(self, req, resp):
        send_json(resp, 200, self.compat(req).capabilities())


class ChatCompletions(CompatResource):
    """POST /v1/chat/completions (ChatCompletionCreate): JSON, or SSE with `stream: true`."""

    def on_post(self, req, resp):
        backend = self.compat(req)
        turn = backend.chat_turn(self.read_body(req),
                                 session_key_header=req.get_header("X-Hermes-Session-Key"),
                                 session_id_header=req.get_header("X-Hermes-Session-Id"))
        if turn.stream:
            headers, frames, delay_s = backend.chat_stream(turn)
            open_stream(resp, headers, sse.paced(frames, delay_s, pauser(req.env)))
            return
        body, headers = backend.chat(turn, req.get_header("Idempotency-Key"))
        send_json(resp, 200, body, headers)


class Responses(CompatResource):
    """POST /v1/responses (ResponseCreate): JSON, or SSE events with `stream: true`."""

    def on_post(self, req, resp):
        backend = self.compat(req)
        turn = backend.response_turn(self.read_body(req),
                                     session_key_header=req.get_header("X-Hermes-Session-Key"))
        if turn.stream:
            headers, events, delay_s = backend.response_stream(turn)
            open_stream(resp, headers, sse.paced(self.frames(backend, turn, events), delay_s,
                                                  pauser(req.env)))
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


class Response(CompatResource):
    """GET and DELETE /v1/responses/{response_id} (ResponseGet, ResponseDelete)."""

    def on_get(self, req, resp, response_id):
        send_json(resp, 200, self.compat(req).get_response(response_id))

    def on_delete(self, req, resp, response_id):
        send_json(resp, 200, self.compat(req).delete_response(response_id))
