"""The fleet control listener: `GET <prefix>/health` and the `<prefix>/fleet/*`
controls, with the reference's statuses and `{"error": ...}` bodies, over a running Fleet.

GET /health                                       200 ready / 503 failed (HEAD too)
GET /fleet/metrics, GET /fleet/clock              per-service diagnostics, clocks
GET /fleet/openapi.json                           (ours) this table as OpenAPI 3
POST /fleet/wait-until-idle                       200 idle / 409 busy ({"timeoutMs"} waits)
POST /fleet/clock                                 {set?, advance?, freeze?, services?}
POST /fleet/namespaces/{ns}/reset                 {services?}
POST /fleet/namespaces/{ns}/snapshots             {label?, services?} -> 201 {id, ...}
POST /fleet/namespaces/{ns}/snapshots/{id}/restore
DELETE /fleet/namespaces/{ns}/snapshots/{id}      (ours: snapshots are kept until deleted)
"""
import hmac
import json
import logging
import re
from urllib.parse import parse_qs

import falcon

from ..bodies import loads, read_body
from ..errors import EmulatorError
from ..names import NAME, NAMESPACE_ENVIRON, SHOWN
from ..state.clock import MAX_MS, parse_duration, parse_instant

log = logging.getLogger("emulators")

ROUTE = re.compile(r"^/fleet/namespaces/([^/]+)/(reset|snapshots)(?:/([^/]+)(/restore)?)?\Z")
FIELDS = {"wait": ("services", "timeoutMs"), "clock": ("services", "set", "advance", "freeze"),
          "reset": ("services",), "snapshots": ("services", "label"),
          "restore": ("services",)}
MAX_WAIT_MS = 60_000
MAX_LABEL = 200


class Refused(Exception):
    """A control answered early with a status and an `{"error": ...}` body."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.body = {"error": message}


class FleetControl:
    """The control listener's WSGI app: one falcon route table over a running Fleet."""

    def __init__(self, fleet):
        self.fleet = fleet
        self.prefix = prefix = fleet.plan.admin_prefix
        app = self.app = falcon.App(middleware=[ControlGate(fleet)])
        ns = prefix + "/fleet/namespaces/{namespace}"
        for path, resource in ((prefix + "/health", Health(fleet)),
                               (prefix + "/fleet/metrics", Metrics(fleet)),
                               (prefix + "/fleet/clock", Clock(fleet)),
                               (prefix + "/fleet/openapi.json", OpenApi(prefix)),
                               (prefix + "/fleet/wait-until-idle", WaitUntilIdle(fleet)),
                               (ns + "/reset", Reset(fleet)),
                               (ns + "/snapshots", Snapshots(fleet)),
                               (ns + "/snapshots/{snapshot_id}", Snapshot(fleet)),
                               (ns + "/snapshots/{snapshot_id}/restore", Restore(fleet))):
            app.add_route(path, resource)
        app.add_error_handler(Exception, _internal)
        app.add_error_handler(falcon.HTTPError, _unrouted)
        app.add_error_handler(Refused, _refused)

    def __call__(self, environ, start_response):
        return self.app(environ, start_response)


class ControlGate:
    """Middleware, before routing: health is open; anything else outside /fleet/ is 404, then
    the admin key (401), then the namespace (path, `?namespace=`, header, the fleet's own)."""

    def __init__(self, fleet):
        self.fleet = fleet
        self.prefix = fleet.plan.admin_prefix

    def process_request(self, req, resp):
        full = req.path
        path = full[len(self.prefix):] if full.startswith(self.prefix + "/") else ""
        if path == "/health" and req.method in ("GET", "HEAD"):
            return
        if not path.startswith("/fleet/"):
            raise Refused(404, "not found")
        key = self.fleet.plan.admin_key
        given = req.get_header("x-mockingbird-admin-key") or ""
        if key is not None and not hmac.compare_digest(given.encode(), key.encode()):
            raise Refused(401, "admin key required")
        route = ROUTE.match(path)
        query = parse_qs(req.query_string, keep_blank_values=True)
        if route:
            namespace = route.group(1)
        elif "namespace" in query:
            namespace = query["namespace"][-1]
        else:
            namespace = req.env.get(NAMESPACE_ENVIRON, self.fleet.plan.namespace)
        if not NAME.match(namespace):
            raise Refused(400, "invalid namespace")
        req.context.namespace = namespace


class Control:
    """A control resource: the fleet, and the checked body of a POST."""

    def __init__(self, fleet):
        self.fleet = fleet

    def on_options(self, req, resp, **params):
        raise falcon.HTTPMethodNotAllowed([])  # no default OPTIONS answer: the reference's 405

    def body(self, req, kind):
        """Return (the JSON object body, the selected service names), fields checked."""
        body = _read_object(req.env)
        names = self.select(body)
        unknown = [field for field in body if field not in FIELDS[kind]]
        if unknown:
            raise Refused(400, f"unknown field {json.dumps(unknown[0])}")
        return body, names

    def select(self, body):
        """Return the selected service names (every one when `services` is absent)."""
        if "services" not in body:
            return list(self.fleet.children)
        chosen = body["services"]
        if not isinstance(chosen, list) or not chosen:
            raise Refused(400, "services must be a nonempty list")
        names = []
        for name in chosen:
            if not isinstance(name, str) or name not in self.fleet.children:
                raise Refused(400, "unknown service in selection")
            if name not in names:
                names.append(name)
        return names


class Health(Control):
    """GET|HEAD <prefix>/health: 200 ready, 503 not (no key needed)."""

    def on_get(self, req, resp):
        ready, body = self.fleet.health()
        send(resp, 200 if ready else 503, body)

    on_head = on_get


class Metrics(Control):
    """GET /fleet/metrics: per-service quiescence counters of a namespace."""

    def on_get(self, req, resp):
        namespace = req.context.namespace
        send(resp, 200, {"namespace": namespace, "services": self.fleet.metrics(namespace)})


class Clock(Control):
    """GET /fleet/clock, POST /fleet/clock {set?, advance?, freeze?, services?}."""

    def on_get(self, req, resp):
        send(resp, 200, self.fleet.clock(req.context.namespace))

    def on_post(self, req, resp):
        namespace = req.context.namespace
        body, names = self.body(req, "clock")
        send(resp, *self.fleet.set_clock(namespace, names,
                                         **_clock_changes(body, self.fleet, namespace)))


class OpenApi(Control):
    """GET /fleet/openapi.json: this table as OpenAPI 3."""

    def __init__(self, prefix):
        super().__init__(None)
        self.prefix = prefix

    def on_get(self, req, resp):
        send(resp, 200, document(self.prefix))


class WaitUntilIdle(Control):
    """POST /fleet/wait-until-idle {timeoutMs?, services?}: 200 idle, 409 busy."""

    def on_post(self, req, resp):
        namespace = req.context.namespace
        body, names = self.body(req, "wait")
        wait = body.get("timeoutMs", 0)
        if isinstance(wait, bool) or not isinstance(wait, int) or not 0 <= wait <= MAX_WAIT_MS:
            raise Refused(400, f"timeoutMs must be an integer from 0 to {MAX_WAIT_MS}")
        idle, services = self.fleet.wait_until_idle(namespace, names, wait)
        send(resp, 200 if idle else 409, {"status": "idle" if idle else "busy",
                                          "namespace": namespace, "services": services})


class Reset(Control):
    """POST /fleet/namespaces/{ns}/reset {services?}."""

    def on_post(self, req, resp, namespace):
        _, names = self.body(req, "reset")
        send(resp, *self.fleet.reset(req.context.namespace, names))


class Snapshots(Control):
    """POST /fleet/namespaces/{ns}/snapshots {label?, services?} -> 201."""

    def on_post(self, req, resp, namespace):
        body, names = self.body(req, "snapshots")
        label = body.get("label")
        if label is not None and (not isinstance(label, str) or len(label) > MAX_LABEL):
            raise Refused(400, f"label must be a string of at most {MAX_LABEL} characters")
        send(resp, *self.fleet.snapshot(req.context.namespace, names, label))


class Snapshot(Control):
    """DELETE /fleet/namespaces/{ns}/snapshots/{id}."""

    def on_delete(self, req, resp, namespace, snapshot_id):
        send(resp, *self.fleet.delete_snapshot(req.context.namespace, snapshot_id))


class Restore(Control):
    """POST /fleet/namespaces/{ns}/snapshots/{id}/restore {services?}."""

    def on_post(self, req, resp, namespace, snapshot_id):
        self.body(req, "restore")
        send(resp, *self.fleet.restore(req.context.namespace, snapshot_id))


def send(resp, status, body):
    """The one serializer of the control listener: compact JSON, never cached."""
    resp.status = status
    resp.content_type = "application/json"
    resp.data = json.dumps(body, separators=(",", ":")).encode()
    resp.set_header("cache-control", "no-store")


def _refused(req, resp, refused, params):
    send(resp, refused.status, refused.body)


def _unrouted(req, resp, error, params):
    # The reference's statuses: under /fleet/, a POST to no control is 404, any other method
    # on a path without it 405.
    if isinstance(error, (falcon.HTTPNotFound, falcon.HTTPMethodNotAllowed)):
        _refused(req, resp, Refused(404, "not found") if req.method == "POST" else
                 Refused(405, "method not allowed"), params)
    else:
        send(resp, error.status_code, {"error": error.title})


def _internal(req, resp, error, params):
    log.error("fleet control: unhandled error", exc_info=error)
    send(resp, 500, {"error": "internal error"})


def _clock_changes(body, fleet, namespace):
    """Validate `{set?, advance?, freeze?}` before anything changes (nothing half-applied)."""
    changes = {}
    if "set" in body:
        changes["instant"] = parse_instant(body["set"])
        if changes["instant"] is None:
            raise Refused(400, "set must be epoch ms or ISO-8601")
    if "advance" in body:
        changes["advance"] = parse_duration(body["advance"])
        if changes["advance"] is None:
            raise Refused(400, "invalid advance")
    if "freeze" in body:
        if not isinstance(body["freeze"], bool):
            raise Refused(400, "freeze must be boolean")
        changes["freeze"] = body["freeze"]
    if "advance" in changes:
        start = changes.get("instant")
        if start is None:
            start = fleet.clocks.state(namespace)["now"]
        if not -MAX_MS <= start + changes["advance"] <= MAX_MS:
            raise Refused(400, "invalid advance")
    return changes


def _read_object(environ):
    """Return the JSON object of a POST body (empty: {}), or refuse with 400."""
    try:
        raw = read_body(environ)
        value = loads(raw, parse_constant=_no_constant) if raw else {}
    except EmulatorError as error:  # a bad length, or a body past the limit
        raise Refused(error.status, error.message) from None
    except ValueError:
        raise Refused(400, "expected JSON object") from None
    if not isinstance(value, dict):
        raise Refused(400, "expected JSON object")
    return value


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def document(prefix):
    """Return the OpenAPI 3 document of the control listener under `prefix`."""
    error = {"description": "error", "content": {"application/json": {"schema": {
        "type": "object", "properties": {"error": {"type": "string"}}}}}}
    namespace = {"name": "namespace", "in": "query", "required": False,
                 "schema": {"type": "string", "pattern": SHOWN}}

    def operation(op_id, summary, *, body=None, path_params=(), query=True, answers=None):
        spec = {"operationId": op_id, "summary": summary, "tags": ["fleet"],
                "responses": {**(answers or {"200": {"description": "ok"}}), "400": error,
                              "401": error, "404": error, "409": error}}
        params = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                  for name in path_params] + ([namespace] if query else [])
        if params:
            spec["parameters"] = params
        if body is not None:
            spec["requestBody"] = {"required": False, "content": {"application/json": {
                "schema": {"type": "object", "properties": {
                    "services": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                    **body}}}}}
        return spec
    instant = {"oneOf": [{"type": "number"}, {"type": "string"}]}
    ns, snap = f"{prefix}/fleet/namespaces/{{ns}}", ["ns"]
    return {"openapi": "3.0.3", "info": {"title": "emulator fleet control", "version": "1"},
            "paths": {
                f"{prefix}/health": {"get": operation(
                    "fleet_health", "every service's readiness", query=False,
                    answers={"200": {"description": "ready"}, "503": error})},
                f"{prefix}/fleet/metrics": {"get": operation(
                    "fleet_metrics", "per-service quiescence counters of a namespace")},
                f"{prefix}/fleet/clock": {
                    "get": operation("fleet_clock", "the fleet clock and each service's"),
                    "post": operation("fleet_set_clock", "move every selected clock at once",
                                      body={"set": instant, "advance": instant,
                                            "freeze": {"type": "boolean"}})},
                f"{prefix}/fleet/wait-until-idle": {"post": operation(
                    "fleet_wait_until_idle", "200 idle, 409 busy", body={"timeoutMs": {
                        "type": "integer", "minimum": 0, "maximum": MAX_WAIT_MS}})},
                f"{prefix}/fleet/openapi.json": {"get": operation(
                    "fleet_openapi", "this document", query=False)},
                f"{ns}/reset": {"post": operation(
                    "fleet_reset", "reset the namespace in every selected service", body={},
                    path_params=snap, query=False)},
                f"{ns}/snapshots": {"post": operation(
                    "fleet_snapshot", "copy the namespace's state in every selected service",
                    body={"label": {"type": "string", "maxLength": MAX_LABEL}},
                    path_params=snap, query=False,
                    answers={"201": {"description": "created"}})},
                f"{ns}/snapshots/{{id}}/restore": {"post": operation(
                    "fleet_restore", "put a snapshot back", body={}, path_params=["ns", "id"],
                    query=False)},
                f"{ns}/snapshots/{{id}}": {"delete": operation(
                    "fleet_delete_snapshot", "forget a snapshot", path_params=["ns", "id"],
                    query=False)}}}
