"""The admin plane under the admin prefix (spec §5/§6): a falcon app with one route table
(the standard routes, the route parts of state/credentials/snapshots/ui, the service's own),
the admin key and the namespace check as middleware, and one serializer for every answer.
"""
import functools
import hmac
import json
import logging
import re
import time
from dataclasses import dataclass
from urllib.parse import parse_qs

import falcon

from .bodies import InvalidJSON, TooDeep, loads, read_body
from .clock import parse_duration, parse_instant
from .credentials import CredentialRoutes
from .errors import AdminError, EmulatorError
from .faults import validate_rule
from .instance import MUTATING
from .names import NAME, NAMESPACE_PARAM
from .openapi import admin_document
from .service import AdminCall
from .snapshots import SnapshotRoutes
from .state import StateRoutes
from .timeline import MAIN, TimelineError
from .ui import Page, UiRoutes

log = logging.getLogger("emulators")

JSON = "application/json"
RESET_PARTS = {"faults", "clock", "journal", "metrics"}
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
# What the pipeline hands the admin app in the WSGI environ (Emulator.locate's answers).
NAMESPACE_KEY, BASE_URL_KEY = "emulators.namespace", "emulators.base_url"


class ServiceRouteError(Exception):
    """Carries an EmulatorError out of a service admin route, rendered with its own body()."""

    def __init__(self, error):
        super().__init__(error.message)
        self.error = error


@dataclass
class Request:
    """What an admin handler sees: namespace, params, query (last value wins), parsed body."""

    method: str
    namespace: str
    params: dict
    query: dict
    body: object
    base_url: str

    def flag(self, name):
        return self.query.get(name, "").lower() in ("1", "true", "yes")


class AdminGate:
    """Middleware: the admin key, then the namespace, both before routing (an unknown route
    behind a wrong key is 401, as the reference answers)."""

    def __init__(self, admin_key):
        self.admin_key = admin_key

    def process_request(self, req, resp):
        relative = req.path.rstrip("/")
        open_route = (req.method in ("GET", "HEAD") and relative == "/health") or \
            (req.method == "GET" and relative == "/ui")  # the shell holds no data
        if self.admin_key and not open_route:
            given = req.get_header("x-mockingbird-admin-key") or ""
            if not hmac.compare_digest(given.encode(), self.admin_key.encode()):
                raise AdminError("missing or wrong x-mockingbird-admin-key", status=401)
        if not NAME.match(req.env[NAMESPACE_KEY]):
            raise AdminError(NAMESPACE_PARAM)


class Admin:
    """Route admin requests to the standard handlers or the service's own routes."""

    def __init__(self, emulator):
        self.emulator = emulator
        standard = [
            ("GET", "/", self.index), ("GET", "/health", self.health),
            ("HEAD", "/health", self.health), ("GET", "/openapi.json", self.openapi),
            ("POST", "/reset", self.reset), ("GET", "/namespaces", self.namespaces),
            ("GET", "/clock", self.clock), ("POST", "/clock", self.set_clock),
            ("GET", "/faults", self.list_faults), ("POST", "/faults", self.add_fault),
            ("DELETE", "/faults", self.delete_faults),
            ("DELETE", "/faults/:id", self.delete_fault),
            ("GET", "/faults/presets", self.presets),
            ("POST", "/faults/presets/:name", self.apply_preset),
            ("GET", "/timeline", self.timeline), ("POST", "/checkpoints", self.checkpoint),
            ("POST", "/branches/:name", self.branch),
            ("POST", "/branches/:name/checkout", self.checkout),
            ("DELETE", "/branches/:name", self.delete_branch),
            ("GET", "/requests", self.requests), ("DELETE", "/requests", self.clear_requests),
            ("GET", "/metrics", self.metrics), ("DELETE", "/metrics", self.clear_metrics),
        ]
        for part in (StateRoutes(emulator), CredentialRoutes(emulator), SnapshotRoutes(emulator),
                     UiRoutes(emulator, self.route_keys)):
            standard += part.routes()
        self.routes = {}
        for method, path, handler in standard:
            self.routes[(method, path)] = (handler, False)
        for method, path, handler in emulator.service.admin_routes:
            key = (method.upper(), path)
            if key in self.routes or path.startswith("/ns"):
                raise ValueError(f"admin route {method} {path} overrides a shared route")
            self.routes[key] = (handler, True)
        self.app = self._falcon_app()

    def route_keys(self):
        """Every route key, sorted."""
        return sorted(f"{method} {path}" for method, path in self.routes)

    def _falcon_app(self):
        app = falcon.App(middleware=[AdminGate(self.emulator.settings.admin_key)])
        app.req_options.strip_url_path_trailing_slash = True
        by_path = {}
        for (method, path), entry in self.routes.items():
            by_path.setdefault(path, {})[method] = (entry, {})
        for path, entries in by_path.items():
            # falcon prefers a literal segment to a field: where a literal path lacks a method
            # a field route has (DELETE /faults/presets vs DELETE /faults/:id), keep the field.
            for method in METHODS:
                if method not in entries:
                    entries.update(self._field_route(method, path))
            app.add_route(re.sub(r":([A-Za-z_]+)", r"{\1}", path), _Route(self, entries))
        app.add_error_handler(Exception, self._internal)
        app.add_error_handler(falcon.HTTPError, self._no_route)  # the router's 404s
        app.add_error_handler(EmulatorError, _admin_error)
        app.add_error_handler(ServiceRouteError, _service_error)
        return app

    def _field_route(self, method, path):
        """{method: (entry, params)} of a `:param` route of `method` that matches `path`."""
        parts = path.strip("/").split("/")
        for (route_method, pattern), entry in self.routes.items():
            wanted = pattern.strip("/").split("/")
            if route_method != method or ":" not in pattern or len(wanted) != len(parts):
                continue
            if all(want.startswith(":") or want == got for want, got in zip(wanted, parts)):
                return {method: (entry, {want[1:]: got for want, got in zip(wanted, parts)
                                         if want.startswith(":")})}
        return {}

    # -- entry point ------------------------------------------------------------------------
    def respond(self, entry, req, resp, **params):
        """Run one admin handler (entry: (handler, is_service), or None: no such route)."""
        if entry is None:
            raise self._missing(req)
        handler, is_service = entry
        _check_path_encoding(req.env.get("PATH_INFO", ""))  # falcon decoded with U+FFFD
        body = _read_json(req.env) if req.method in MUTATING else None
        query = {k: v[-1] for k, v in parse_qs(req.env.get("QUERY_STRING", ""),
                                                keep_blank_values=True).items()}
        request = Request(req.method, req.env[NAMESPACE_KEY], params, query, body,
                          req.env[BASE_URL_KEY])
        if is_service:
            code, payload, headers = self._service_route(handler, request)
        else:
            result = handler(request)
            code, payload = result[0], result[1]
            headers = list(result[2]) if len(result) > 2 else []
        send(resp, code, payload, headers)

    def _missing(self, req):
        return AdminError(f"no admin route {req.method} {req.env.get('PATH_INFO') or '/'}; GET "
                          f"{self.emulator.admin_prefix} lists them", status=404)

    def _no_route(self, req, resp, error, params):
        if isinstance(error, (falcon.HTTPNotFound, falcon.HTTPMethodNotAllowed)) or \
                req.method not in METHODS:  # falcon refuses an unknown method with a 400
            _admin_error(req, resp, self._missing(req), params)
        else:
            send(resp, error.status_code, {"error": {"type": "mockingbird_admin",
                                                     "message": error.title}})

    def _internal(self, req, resp, error, params):
        # A bug: logged, answered like the provider's last resort.
        log.error("emulator %s: unhandled error on admin %s %s", self.emulator.name,
                  req.method, req.path, exc_info=error)
        send(resp, 500, {"error": {"type": "mockingbird_internal", "message": "internal error"}})

    def _service_route(self, handler, request):
        emulator = self.emulator
        instance = emulator.instance(request.namespace, method=request.method,
                                    base_url=request.base_url)
        try:
            result = handler(AdminCall(instance, request.params, request.body, request.query))
        except EmulatorError as error:
            raise ServiceRouteError(error) from error
        code, payload = result[0], result[1]
        headers = list((result[2] if len(result) > 2 else {}).items())
        if request.method in MUTATING and 200 <= code < 400:
            # Every successful control is a point on the timeline (hermes-runs.md §7, §12.6),
            # written or not; the handler's own `instance.checkpoint()` is reused when nothing
            # was written since.
            headers.append(("x-mockingbird-checkpoint", instance.checkpoint()))
        return code, payload, headers

    # -- standard routes --------------------------------------------------------------------
    def index(self, request):
        return 200, {"service": self.emulator.name, "routes": self.route_keys()}

    def health(self, request):
        emulator = self.emulator
        body = {k: v for k, v in emulator.service.describe(
            emulator.instance(request.namespace)).items()}
        body.update({
            "status": "ok", "service": emulator.name, "version": emulator.version,
            "uptimeMs": int((time.monotonic() - emulator.started) * 1000),
            "namespace": request.namespace,
            "clock": emulator.clocks.state(request.namespace),
            "namespaces": len(emulator.namespaces()),
            "adminPrefix": emulator.admin_prefix,
            "adminUi": emulator.admin_prefix + "/ui",
            "adminKey": bool(emulator.settings.admin_key),
        })
        return 200, body

    def openapi(self, request):
        return 200, admin_document(self.emulator, self.route_keys())

    def reset(self, request):
        keep = {part.strip() for part in request.query.get("keep", "").split(",") if part.strip()}
        unknown = keep - RESET_PARTS
        if unknown:
            raise AdminError(f"keep: expected a comma list of {', '.join(sorted(RESET_PARTS))}")
        every = request.flag("all")
        reset = self.emulator.reset(None if every else request.namespace, keep=keep)
        return 200, {"status": "ok", "reset": reset}

    def namespaces(self, request):
        return 200, {"default": "default", "namespaces": self.emulator.namespaces()}

    def clock(self, request):
        self.emulator.touch(request.namespace)
        return 200, self.emulator.clocks.state(request.namespace)

    def set_clock(self, request):
        body = request.body  # an empty body too: the contract asks for an object (spec §6)
        if not isinstance(body, dict):
            raise AdminError("expected a JSON object")
        unknown = sorted(set(body) - {"reset", "set", "advance", "freeze", "resume"})
        if unknown:
            raise AdminError(f"unknown clock field(s): {', '.join(unknown)}")
        changes = {}
        for flag in ("reset", "freeze", "resume"):
            if flag in body:
                if not isinstance(body[flag], bool):
                    raise AdminError(f"{flag}: expected true or false")
        if body.get("reset"):
            changes["reset"] = True
        if "freeze" in body:
            changes["freeze"] = body["freeze"]
        if body.get("resume"):
            if body.get("freeze") is True:
                raise AdminError("freeze and resume contradict each other")
            changes["freeze"] = False
        if "set" in body:
            instant = parse_instant(body["set"])
            if instant is None:
                raise AdminError("set: expected epoch ms or ISO-8601")
            changes["set"] = instant
        if "advance" in body:
            amount = parse_duration(body["advance"])
            if amount is None:
                raise AdminError('advance: expected ms or "15m"-style')
            changes["advance"] = amount
        self.emulator.touch(request.namespace)
        return 200, self.emulator.clocks.apply(request.namespace, changes)

    def list_faults(self, request):
        scope = None if request.flag("all") else request.namespace
        return 200, {"faults": self.emulator.faults.list(scope)}

    def add_fault(self, request):
        body = request.body
        if isinstance(body, dict) and "preset" in body and not any(
                key in body for key in ("status", "delayMs", "latencyMs", "drop", "effect")):
            overrides = {k: v for k, v in body.items() if k != "preset"}
            return self._preset(request, body["preset"], overrides, quoted=True)
        rule = validate_rule(body, request.namespace)
        return 201, self.emulator.faults.add(rule)

    def delete_faults(self, request):
        faults = self.emulator.faults
        rule_id = request.query.get("id")
        every = request.flag("all")
        count = faults.delete(request.namespace, rule_id, everywhere=every)
        if rule_id is not None and not count:
            raise AdminError(f"no fault {rule_id}", status=404)
        return 200, {"status": "ok"}  # exactly (spec §6): the count is GET /faults' business

    def delete_fault(self, request):
        request.query["id"] = request.params["id"]
        return self.delete_faults(request)

    def presets(self, request):
        return 200, {"presets": [{"name": name, **preset}
                                 for name, preset in self.emulator.service.presets.items()]}

    def apply_preset(self, request):
        overrides = request.body if request.body is not None else {}
        return self._preset(request, request.params["name"], overrides, quoted=False)

    def _preset(self, request, name, overrides, *, quoted):
        presets = self.emulator.service.presets
        if not presets:
            raise AdminError(f"{self.emulator.name} has no fault presets")
        if not isinstance(overrides, dict):
            raise AdminError("expected a JSON object of rule overrides")
        if not isinstance(name, str):
            raise AdminError("preset: expected a preset name")
        if name not in presets:
            shown = json.dumps(name) if quoted else name
            raise AdminError(f"no fault preset {shown}"
                             + ("" if quoted else f"; GET {self.emulator.admin_prefix}"
                                "/faults/presets"), status=404)
        rules = presets[name].get("rules", [])
        expanded = []
        for index, base in enumerate(rules, start=1):
            rule = {"namespace": request.namespace, **base,
                    **{k: v for k, v in overrides.items() if k != "id"}, "preset": name}
            rule_id = overrides.get("id", name)
            rule["id"] = f"{rule_id}_{index}" if len(rules) > 1 else rule_id
            expanded.append(validate_rule(rule, request.namespace))
        return 201, {"preset": name, "rules": [self.emulator.faults.add(r) for r in expanded]}

    def timeline(self, request):
        self.emulator.touch(request.namespace)
        return 200, self.emulator.timeline.describe(request.namespace)

    def checkpoint(self, request):
        body = request.body if request.body is not None else {}
        if not isinstance(body, dict):
            raise AdminError('expected {"branch":"<name>"} or no body')
        branch = body.get("branch", MAIN)
        if not isinstance(branch, str) or not NAME.match(branch):
            raise TimelineError(f"bad branch name {json.dumps(branch)}")
        self.emulator.touch(request.namespace)
        timeline = self.emulator.timeline
        with self.emulator.db.transaction():
            checkpoint = timeline.commit(request.namespace, branch)
            return 201, {**checkpoint, "records": timeline.count(request.namespace, branch)}

    def branch(self, request):
        body = request.body if request.body is not None else {}
        name = request.params["name"]
        if not NAME.match(name):
            raise TimelineError(f"bad branch name {json.dumps(name)}")
        if not isinstance(body, dict) or ("at" in body and not isinstance(body["at"], str)):
            raise AdminError('expected {"at":"cp_..."} or no body')
        self.emulator.touch(request.namespace)
        return 201, self.emulator.timeline.branch(request.namespace, name, body.get("at"))

    def checkout(self, request):
        body = request.body
        name = request.params["name"]
        if not isinstance(body, dict) or not isinstance(body.get("checkpoint"), str):
            raise AdminError('expected {"checkpoint":"cp_..."}')
        if not NAME.match(name):
            raise TimelineError(f"bad branch name {json.dumps(name)}")
        self.emulator.touch(request.namespace)
        cp = self.emulator.timeline.checkout(request.namespace, name, body["checkpoint"])
        return 200, {"status": "ok", "branch": name, "checkpoint": cp}

    def delete_branch(self, request):
        self.emulator.timeline.delete_branch(request.namespace, request.params["name"])
        return 200, {"status": "ok"}

    def requests(self, request):
        query = request.query
        filters = {}
        if "operationId" in query:
            filters["operation_id"] = query["operationId"]
        if "status" in query:
            if not re.fullmatch(r"\d{3}", query["status"]) and query["status"] != "0":
                raise AdminError("status: expected an HTTP status")
            filters["status"] = int(query["status"])
        if "since" in query:
            since = parse_instant(query["since"])
            if since is None:
                raise AdminError("since: expected epoch ms or ISO-8601")
            filters["since_ms"] = since
        for name, key in (("limit", "limit"), ("after", "after")):
            if name in query:
                if not re.fullmatch(r"[0-9]+", query[name]):
                    raise AdminError(f"{name}: expected a count")
                # Past SQLite's 64-bit INTEGER no entry is left to skip or cut anyway.
                filters[key] = min(int(query[name]), 2 ** 63 - 1)
        scope = None if request.flag("all") else request.namespace
        journal = self.emulator.journal
        return 200, {"size": journal.size, "requests": journal.entries(scope, **filters)}

    def clear_requests(self, request):
        self.emulator.journal.clear(None if request.flag("all") else request.namespace)
        return 200, {"status": "ok"}

    def metrics(self, request):
        scope = request.query.get("namespace")
        return 200, self.emulator.journal.metrics(scope)

    def clear_metrics(self, request):
        self.emulator.journal.clear_metrics(request.query.get("namespace"))
        return 200, {"status": "ok"}


class _Route:
    """The falcon resource of one admin path: a responder for every method, so a method the
    path does not declare is the admin 404 (not falcon's 405, nor its default OPTIONS)."""

    def __init__(self, admin, entries):
        for method in METHODS:
            entry, params = entries.get(method, (None, {}))
            setattr(self, f"on_{method.lower()}",
                    functools.partial(admin.respond, entry, **params))


def send(resp, code, payload, headers=()):
    """The one serializer of the admin plane: compact JSON, or a Page as it is."""
    resp.status = code
    if isinstance(payload, Page):
        resp.content_type = payload.content_type
        resp.data = payload.body
    else:
        resp.content_type = JSON
        resp.data = json.dumps(payload, separators=(",", ":")).encode()
    for name, value in headers:
        resp.append_header(name, value)


def _admin_error(req, resp, error, params):
    send(resp, error.status, {"error": {
        "type": error.type if isinstance(error, AdminError) else (error.type or
                                                                  "mockingbird_admin"),
        "message": error.message}}, (error.headers or {}).items())


def _service_error(req, resp, failure, params):
    # A service's own control speaks its API's envelope, as its provider routes do.
    error = failure.error
    send(resp, error.status, error.body(), (error.headers or {}).items())


def _check_path_encoding(raw):
    """Refuse a path that is not UTF-8 (WSGI hands PATH_INFO over as latin-1 of the bytes)."""
    try:
        raw.encode("latin-1").decode("utf-8")
    except UnicodeEncodeError:
        pass  # a server that already decoded it
    except UnicodeDecodeError:
        raise AdminError("invalid path encoding") from None


def _read_json(environ):
    raw = read_body(environ)
    if not raw.strip():
        return None
    try:
        return loads(raw)
    except TooDeep as error:
        raise AdminError(str(error)) from None
    except InvalidJSON:
        raise AdminError("request body is not valid JSON") from None
