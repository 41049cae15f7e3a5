"""The Hermes service: provider routes (runs API, the OpenAI-compatible surface, sessions and
jobs), with its admin controls (admin.py) and presets.

The runtime wraps the Service `create_service(settings)` builds with namespaces, clock, faults,
journal and timeline; this module only wires routes.
"""
import falcon

from emulators.runtime import Service, add_fallback_handlers

from . import admin, resources
from .errors import HermesError
from .management import openapi as management_openapi, resources as management
from .openai_compat import resources as compat
from .openapi import DOCUMENT
from .presets import PRESETS
from .runs import resources as runs
from .settings import HermesSettings

VERSION = "0.1.0"
OPERATIONS = ("RunCreate", "RunGet", "RunStop", "RunEvents", "RunApproval", "RunSteer",
              "Health", "HealthV1", "HealthDetailed", "ModelList", "Capabilities",
              "ChatCompletionCreate", "ResponseCreate", "ResponseGet", "ResponseDelete",
              *management_openapi.OPERATIONS)
ROUTES = (  # path, resource class
    ("/health", compat.Health),
    ("/v1/health", compat.Health),
    ("/health/detailed", compat.HealthDetailed),
    ("/v1/models", compat.Models),
    ("/v1/capabilities", compat.Capabilities),
    ("/v1/chat/completions", compat.ChatCompletions),
    ("/v1/responses", compat.Responses),
    ("/v1/responses/{response_id}", compat.Response),
    ("/v1/runs", runs.Runs),
    ("/v1/runs/{run_id}", runs.Run),
    ("/v1/runs/{run_id}/stop", runs.RunStop),
    ("/v1/runs/{run_id}/events", runs.RunEvents),
    ("/v1/runs/{run_id}/approval", runs.RunApproval),
    ("/v1/runs/{run_id}/steer", runs.RunSteer),
    *management.ROUTES,   # sessions, jobs, skills, toolsets, cron fire, platform events
)


def _hermes_error(req, resp, error, params):
    resources.send_json(resp, error.status, error.body(), error.headers)


def _not_found(req, resp, error, params):
    # Hermes' aiohttp server answers unknown paths itself, in plain text, before auth.
    resp.status = 404
    resp.content_type = "text/plain; charset=utf-8"
    resp.text = "404: Not Found"


def _method_not_allowed(req, resp, error, params):
    allowed = [m for m in (error.headers or {}).get("Allow", "").replace(" ", "").split(",")
               if m and m != "OPTIONS"]
    resp.status = 405
    resp.content_type = "text/plain; charset=utf-8"
    resp.text = "405: Method Not Allowed"
    # aiohttp joins the sorted methods with a bare comma (oracle: Allow: DELETE,GET).
    resp.set_header("Allow", ",".join(sorted(allowed)))


class ProviderApp(falcon.App):
    """A falcon app that can also answer with no Content-Type at all, as upstream's CORS
    middleware does (falcon otherwise fills in its default media type)."""

    def __call__(self, env, start_response):
        def start(status, headers, exc_info=None):
            if any(name.lower() == resources.BARE for name, _ in headers):
                headers = [(name, value) for name, value in headers
                           if name.lower() not in (resources.BARE, "content-type")]
            return start_response(status, headers, exc_info)
        return super().__call__(management.without_profile_prefix(env), start)


def create_provider_app(settings):
    """Return the falcon app of the Hermes provider routes."""
    app = add_fallback_handlers(ProviderApp(
        media_type=falcon.MEDIA_JSON, middleware=[resources.Cors(settings), resources.BodyLimit(),
                                                  management.EmptySegments(),
                                                  runs.SteerRoute()]))
    for path, resource in ROUTES:
        app.add_route(path, resource(settings))
    app.add_error_handler(falcon.HTTPNotFound, _not_found)
    app.add_error_handler(falcon.HTTPMethodNotAllowed, _method_not_allowed)
    app.add_error_handler(HermesError, _hermes_error)
    return app


def describe(instance):
    """Health extras: every provider operation the emulator serves (none unsupported)."""
    return {"operations": list(OPERATIONS), "unsupported": []}


def create_service(settings=None):
    """Build the Hermes Service for the runtime (`settings`: a HermesSettings, or defaults)."""
    settings = settings or HermesSettings()
    return Service(
        name="hermes", version=VERSION, default_port=8827, openapi=DOCUMENT, presets=PRESETS,
        provider_app=lambda: create_provider_app(settings), describe=describe,
        admin_routes=admin.routes(settings), operation_path=management.route_path)


def from_env(environ):
    """Build the Service from an entry point's environment: HERMES_* through HermesSettings."""
    return create_service(HermesSettings.from_env(environ))
