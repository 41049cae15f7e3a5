"""The admin plane under the admin prefix: a falcon app with one route table
(the route parts of controls/state/credentials/snapshots/ui/webhooks, then the service's own
routes), the admin key and the namespace check as middleware, and one serializer for every answer.
"""
import functools
import hmac
import json
import logging
import re
from dataclasses import dataclass
from urllib.parse import parse_qs

import falcon

from ..bodies import InvalidJSON, TooDeep, loads, read_body
from ..errors import AdminError, EmulatorError
from ..instance import MUTATING
from ..mount import BASE_URL_KEY
from ..names import NAME, NAMESPACE_PARAM
from ..service import AdminCall
from .controls import Basics, ClockControls, FaultControls, JournalControls, TimelineControls
from .credentials import CredentialRoutes
from .snapshots import SnapshotRoutes
from .state_api import StateRoutes
from .ui import Page, UiRoutes
from .webhooks import WebhookRoutes

log = logging.getLogger("emulators")

JSON = "application/json"
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
# What the pipeline hands the admin app in the WSGI environ (Emulator.locate's answers).
NAMESPACE_KEY = "emulators.namespace"


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
        standard = []
        for part in (Basics(emulator, self.route_keys), ClockControls(emulator),
                     FaultControls(emulator), TimelineControls(emulator),
                     JournalControls(emulator), StateRoutes(emulator),
                     CredentialRoutes(emulator), SnapshotRoutes(emulator),
                     UiRoutes(emulator, self.route_keys), WebhookRoutes(emulator)):
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
        body = (_read_json(req.env, self.emulator.settings.max_admin_body)
                if req.method in MUTATING else None)
        pairs = parse_qs(req.env.get("QUERY_STRING", ""), keep_blank_values=True)
        query = {k: v[-1] for k, v in pairs.items()}
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
            # Every successful control is a point on the timeline,
            # written or not; the handler's own `instance.checkpoint()` is reused when nothing
            # was written since.
            headers.append(("x-mockingbird-checkpoint", instance.checkpoint()))
        return code, payload, headers


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


def _read_json(environ, limit):
    raw = read_body(environ, limit)
    if not raw.strip():
        return None
    try:
        return loads(raw)
    except TooDeep as error:
        raise AdminError(str(error)) from None
    except InvalidJSON:
        raise AdminError("request body is not valid JSON") from None
