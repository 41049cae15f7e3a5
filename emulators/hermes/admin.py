"""The Hermes admin controls under `/__admin/hermes/...`: script run observations, scope,
restart, cache sweep, scripted replies and skills.

A control is `handler(call) -> (status, body)`; a HermesError raised here keeps its Hermes
envelope (the admin plane answers a service route's errors with their own body).
"""
from .management.catalog import Catalog
from .openai_compat.backend import CompatBackend
from .runs.backend import HermesBackend


def _runs(action):
    """A runs control over HermesBackend."""
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
    """Replace the namespace's skills (what GET /v1/skills lists)."""
    return 200, Catalog(call.instance).set_skills(call.body)


def _skills(call):
    """List the namespace's skills."""
    return 200, Catalog(call.instance).skills()


def routes(settings):
    """The admin routes (method, path, handler) of a Hermes service built with `settings`."""
    return [("POST", "/hermes/runs/:id/observe", _runs(_observe)),
            ("POST", "/hermes/scope", _runs(_scope)),
            ("POST", "/hermes/restart", _runs(_restart)),
            ("POST", "/hermes/sweep", _runs(_sweep)),
            ("POST", "/hermes/replies", _replies(settings, _queue_replies)),
            ("GET", "/hermes/replies", _replies(settings, _list_replies)),
            ("DELETE", "/hermes/replies", _replies(settings, _clear_replies)),
            ("POST", "/hermes/skills", _set_skills),
            ("GET", "/hermes/skills", _skills)]
