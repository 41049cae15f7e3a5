"""The Hermes service: provider routes (runs API and the OpenAI-compatible surface), Hermes
admin controls and presets.

The runtime wraps the Service `create_service(settings)` builds with namespaces, clock, faults,
journal and timeline; this module only wires routes.
"""
import falcon

from emulators.runtime import Service, add_fallback_handlers

from . import openapi_sessions, resources, session_resources
from .catalog import Catalog
from .compat import CompatBackend
from .errors import HermesError
from .models import HermesBackend
from .openapi import DOCUMENT
from .presets import PRESETS
from .settings import HermesSettings

VERSION = "0.1.0"
OPERATIONS = ("RunCreate", "RunGet", "RunStop", "RunEvents", "RunApproval", "RunSteer",
              "Health", "HealthV1", "HealthDetailed", "ModelList", "Capabilities",
              "ChatCompletionCreate", "ResponseCreate", "ResponseGet", "ResponseDelete",
              *openapi_sessions.OPERATIONS)
ROUTES = (  # path, resource class
    ("/health", resources.Health),
    ("/v1/health", resources.Health),
    ("/health/detailed", resources.HealthDetailed),
    ("/v1/models", resources.Models),
    ("/v1/capabilities", resources.Capabilities),
    ("/v1/chat/completions", resources.ChatCompletions),
    ("/v1/responses", resources.Responses),
    ("/v1/responses/{response_id}", resources.Response),
    ("/v1/runs", resources.Runs),
    ("/v1/runs/{run_id}", resources.Run),
    ("/v1/runs/{run_id}/stop", resources.RunStop),
    ("/v1/runs/{run_id}/events", resources.RunEvents),
    ("/v1/runs/{run_id}/approval", resources.RunApproval),
    ("/v1/runs/{run_id}/steer", resources.RunSteer),
    *session_resources.ROUTES,   # sessions, jobs, skills, toolsets, cron fire, platform events
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
        return super().__call__(session_resources.without_profile_prefix(env), start)


def create_provider_app(settings):
    """Return the falcon app of the Hermes provider routes."""
    app = add_fallback_handlers(ProviderApp(
        media_type=falcon.MEDIA_JSON, middleware=[resources.Cors(settings), resources.BodyLimit(),
                                                  session_resources.EmptySegments()]))
    for path, resource in ROUTES:
        app.add_route(path, resource(settings))
    app.add_error_handler(falcon.HTTPNotFound, _not_found)
    app.add_error_handler(falcon.HTTPMethodNotAllowed, _method_not_allowed)
    app.add_error_handler(HermesError, _hermes_error)
    return app


def _runs(action):
    """A runs control over HermesBackend; a HermesError keeps its Hermes envelope (the admin
    plane answers a service route's errors with their own body)."""
    return lambda call: (200, action(HermesBackend(call.instance), call))


def _replies(settings, action):
    """A scripted-replies control over CompatBackend."""
    return lambda call: (200, action(CompatBackend(call.instance, settings), call))


def _observe(backend, call):
    """Script one lifecycle observation of a run."""
    return backend.observe(call.params["id"], call.body)


def _scope(backend, call):
    """Select the synthetic profile/identity scope."""
    return backend.set_scope(call.body)


def _restart(backend, call):
    """Logical gateway restart with a stale or alive owner."""
    return backend.restart(call.body)


def _sweep(backend, call):
    """Run one cache sweep now."""
    return backend.sweep()


def _queue_replies(backend, call):
    """Queue scripted replies for the next chat completions / responses of the namespace."""
    return backend.queue_replies(call.body)


def _list_replies(backend, call):
    """List the queued scripted replies."""
    return backend.queued()


def _clear_replies(backend, call):
    """Drop every queued scripted reply."""
    return backend.clear_replies()


def _set_skills(call):
    """Replace the namespace's skills (what GET /v1/skills lists); a HermesError keeps its
    Hermes envelope (the admin plane answers it with its own body)."""
    return 200, Catalog(call.instance).set_skills(call.body)


def _skills(call):
    """List the namespace's skills."""
    return 200, Catalog(call.instance).skills()


def describe(instance):
    """Health extras: every provider operation the emulator serves (none unsupported)."""
    return {"operations": list(OPERATIONS), "unsupported": []}


def create_service(settings=None):
    """Build the Hermes Service for the runtime (`settings`: a HermesSettings, or defaults)."""
    settings = settings or HermesSettings()
    return Service(
        name="hermes", version=VERSION, default_port=8827, openapi=DOCUMENT, presets=PRESETS,
        provider_app=lambda: create_provider_app(settings), describe=describe,
        admin_routes=[("POST", "/hermes/runs/:id/observe", _runs(_observe)),
                      ("POST", "/hermes/scope", _runs(_scope)),
                      ("POST", "/hermes/restart", _runs(_restart)),
                      ("POST", "/hermes/sweep", _runs(_sweep)),
                      ("POST", "/hermes/replies", _replies(settings, _queue_replies)),
                      ("GET", "/hermes/replies", _replies(settings, _list_replies)),
                      ("DELETE", "/hermes/replies", _replies(settings, _clear_replies)),
                      ("POST", "/hermes/skills", _set_skills),
                      ("GET", "/hermes/skills", _skills)])


def from_env(environ):
    """Build the Service from an entry point's environment: HERMES_* through HermesSettings."""
    return create_service(HermesSettings.from_env(environ))
