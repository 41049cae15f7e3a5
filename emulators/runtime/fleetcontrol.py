"""The fleet control listener (spec §15): `GET <prefix>/health` and the `<prefix>/fleet/*`
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

from .bodies import loads, read_body
from .clock import MAX_MS, parse_duration, parse_instant
from .errors import EmulatorError
from .names import NAME

log = logging.getLogger("emulators")

ROUTE = re.compile(r"^/fleet/namespaces/([^/]+)/(reset|snapshots)(?:/([^/]+)(/restore)?)?\Z")
FIELDS = {"/fleet/wait-until-idle": ("services", "timeoutMs"),
          "/fleet/clock": ("services", "set", "advance", "freeze"),
          "reset": ("services",), "snapshots": ("services", "label"),
          "restore": ("services",)}
MAX_WAIT_MS = 60_000
MAX_LABEL = 200


class _Refused(Exception):
    """A control answered early with a status and an `{"error": ...}` body."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.body = {"error": message}


class FleetControl:
    """The control listener's WSGI app."""

    def __init__(self, fleet):
        self.fleet = fleet
        self.prefix = fleet.plan.admin_prefix

    def __call__(self, environ, start_response):
        try:
            status, body = self.handle(environ)
        except _Refused as refused:
            status, body = refused.status, refused.body
        except Exception:
            log.exception("fleet control: unhandled error")
            status, body = 500, {"error": "internal error"}
        payload = json.dumps(body, separators=(",", ":")).encode()
        start_response(falcon.code_to_http_status(status), [("content-type", "application/json"),
                                             ("content-length", str(len(payload))),
                                             ("cache-control", "no-store")])
        return [] if environ.get("REQUEST_METHOD") == "HEAD" else [payload]

    def handle(self, environ):
        """Answer one control request: (status, body)."""
        fleet = self.fleet
        method = environ.get("REQUEST_METHOD", "GET").upper()
        full = environ.get("PATH_INFO") or "/"
        path = full[len(self.prefix):] if full.startswith(self.prefix + "/") else ""
        if path == "/health" and method in ("GET", "HEAD"):
            ready, body = fleet.health()
            return (200 if ready else 503), body
        if not path.startswith("/fleet/"):
            raise _Refused(404, "not found")
        key = fleet.plan.admin_key
        given = environ.get("HTTP_X_MOCKINGBIRD_ADMIN_KEY", "")
        if key is not None and not hmac.compare_digest(given.encode(), key.encode()):
            raise _Refused(401, "admin key required")
        route = ROUTE.match(path)
        query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        if route:
            namespace = route.group(1)
        elif "namespace" in query:
            namespace = query["namespace"][-1]
        else:
            namespace = environ.get("HTTP_X_MOCKINGBIRD_NAMESPACE", fleet.plan.namespace)
        if not NAME.match(namespace):
            raise _Refused(400, "invalid namespace")
        if method == "GET" and path == "/fleet/metrics":
            return 200, {"namespace": namespace, "services": fleet.metrics(namespace)}
        if method == "GET" and path == "/fleet/clock":
            return 200, fleet.clock(namespace)
        if method == "GET" and path == "/fleet/openapi.json":
            return 200, document(self.prefix)
        snapshot_id = route.group(3) if route and route.group(2) == "snapshots" else None
        if method == "DELETE" and snapshot_id and not route.group(4):
            return fleet.delete_snapshot(namespace, snapshot_id)
        if method != "POST":
            raise _Refused(405, "method not allowed")
        body = _read_object(environ)
        names = self._select(body)
        kind = path if not route else ("restore" if route.group(4) else route.group(2))
        if kind in FIELDS:
            unknown = [field for field in body if field not in FIELDS[kind]]
            if unknown:
                raise _Refused(400, f"unknown field {json.dumps(unknown[0])}")
        if path == "/fleet/wait-until-idle":
            wait = body.get("timeoutMs", 0)
            if isinstance(wait, bool) or not isinstance(wait, int) or \
                    not 0 <= wait <= MAX_WAIT_MS:
                raise _Refused(400, f"timeoutMs must be an integer from 0 to {MAX_WAIT_MS}")
            idle, services = fleet.wait_until_idle(namespace, names, wait)
            return (200 if idle else 409), {"status": "idle" if idle else "busy",
                                            "namespace": namespace, "services": services}
        if path == "/fleet/clock":
            return fleet.set_clock(namespace, names, **_clock_changes(body, fleet, namespace))
        if not route or (route.group(3) and not route.group(4)) or \
                (route.group(2) == "reset" and route.group(3)):
            raise _Refused(404, "not found")
        if route.group(2) == "reset":
            return fleet.reset(namespace, names)
        if snapshot_id:
            return fleet.restore(namespace, snapshot_id)
        label = body.get("label")
        if label is not None and (not isinstance(label, str) or len(label) > MAX_LABEL):
            raise _Refused(400, f"label must be a string of at most {MAX_LABEL} characters")
        return fleet.snapshot(namespace, names, label)

    def _select(self, body):
        """Return the selected service names (every one when `services` is absent)."""
        if "services" not in body:
            return list(self.fleet.children)
        chosen = body["services"]
        if not isinstance(chosen, list) or not chosen:
            raise _Refused(400, "services must be a nonempty list")
        names = []
        for name in chosen:
            if not isinstance(name, str) or name not in self.fleet.children:
                raise _Refused(400, "unknown service in selection")
            if name not in names:
                names.append(name)
        return names


def _clock_changes(body, fleet, namespace):
    """Validate `{set?, advance?, freeze?}` before anything changes (spec §19.2)."""
    changes = {}
    if "set" in body:
        changes["instant"] = parse_instant(body["set"])
        if changes["instant"] is None:
            raise _Refused(400, "set must be epoch ms or ISO-8601")
    if "advance" in body:
        changes["advance"] = parse_duration(body["advance"])
        if changes["advance"] is None:
            raise _Refused(400, "invalid advance")
    if "freeze" in body:
        if not isinstance(body["freeze"], bool):
            raise _Refused(400, "freeze must be boolean")
        changes["freeze"] = body["freeze"]
    if "advance" in changes:
        start = changes.get("instant")
        if start is None:
            start = fleet.clocks.state(namespace)["now"]
        if not -MAX_MS <= start + changes["advance"] <= MAX_MS:
            raise _Refused(400, "invalid advance")
    return changes


def _read_object(environ):
    """Return the JSON object of a POST body (empty: {}), or refuse with 400."""
    try:
        raw = read_body(environ)
        value = loads(raw, parse_constant=_no_constant) if raw else {}
    except EmulatorError as error:  # a bad length, or a body past the limit
        raise _Refused(error.status, error.message) from None
    except ValueError:
        raise _Refused(400, "expected JSON object") from None
    if not isinstance(value, dict):
        raise _Refused(400, "expected JSON object")
    return value


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def document(prefix):
    """Return the OpenAPI 3 document of the control listener under `prefix`."""
    error = {"description": "error", "content": {"application/json": {"schema": {
        "type": "object", "properties": {"error": {"type": "string"}}}}}}
    namespace = {"name": "namespace", "in": "query", "required": False,
                 "schema": {"type": "string", "pattern": NAME.pattern}}

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
