"""Falcon resources of the runs API (`/v1/runs...`): thin responders over HermesBackend."""
import time

import falcon

from emulators.runtime import instance_of, pauser

from .. import sse
from ..errors import RunNotFound
from ..inputs import Submission
from ..resources import HermesResource, open_stream, send_json
from .backend import EFFECT_DROP, EFFECT_NO_STEER, HermesBackend


class RunResource(HermesResource):
    """A route of the runs API: auth first, then the request's HermesBackend."""

    def backend(self, req):
        self.authorize(req)
        return HermesBackend(instance_of(req))


class Runs(RunResource):
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


class Run(RunResource):
    """GET /v1/runs/{run_id} (RunGet)."""

    def on_get(self, req, resp, run_id):
        send_json(resp, 200, self.backend(req).get(run_id))


class RunStop(RunResource):
    """POST /v1/runs/{run_id}/stop (RunStop); the body is ignored."""

    def on_post(self, req, resp, run_id):
        backend = self.backend(req)
        self.read_body(req)
        body, accepted = backend.stop(run_id)
        if accepted:
            backend.instance.report_ids(runId=run_id)
        send_json(resp, 200, body)


class RunApproval(RunResource):
    """POST /v1/runs/{run_id}/approval (RunApproval)."""

    def on_post(self, req, resp, run_id):
        backend = self.backend(req)
        send_json(resp, 200, backend.approve(run_id, self.read_body(req)))


class RunSteer(RunResource):
    """POST /v1/runs/{run_id}/steer (RunSteer)."""

    def on_post(self, req, resp, run_id):
        backend = self.backend(req)
        send_json(resp, 200, backend.steer(run_id, self.read_body(req)))


class SteerRoute:
    """Hermes 0.19.0 has no steer route: under its preset every method of the path is the
    router's own 404, before auth, as for any unknown path (oracle steer_route)."""

    def process_resource(self, req, resp, resource, params):
        if isinstance(resource, RunSteer) and (
                instance_of(req).fault_effect(EFFECT_NO_STEER) is not None):
            raise falcon.HTTPNotFound()


class RunEvents(RunResource):
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
        pause = pauser(req.env)
        if stream.get("orphan"):
            open_stream(resp, {}, self.keepalives(pause))
        else:
            open_stream(resp, {}, self.frames(backend, stream["run_id"], pause))

    def keepalives(self, pause):
        """Yield only keepalive comments, until the client leaves or the server stops."""
        while not pause(self.settings.keepalive_s):
            yield sse.KEEPALIVE

    def frames(self, backend, run_id, pause):
        """Yield SSE frames until the terminal event, a dropped transport, a gone client, or
        the server's stop (the stream then ends without a terminal event, as a restart cuts
        upstream's)."""
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
                if pause(self.settings.poll_s):
                    return
        finally:
            backend.close_stream(run_id)
