"""The GitHub admin controls under `/__admin/github/...` and the ping the runtime's webhook hub
sends a newly registered endpoint.

A control is `handler(call) -> (status, body)`; the admin plane answers a GitHubError raised here
with its own status and mock-only envelope (`{message, code}`).
"""

from . import context, events, times
from .apps.admin import ROUTES as APP_ROUTES
from .resources import backend_for


def seed_repository(call):
    """`POST /__admin/github/repositories`: seed one synthetic repository (runtime checkpoints)."""
    repository = backend_for(call.instance).seed(call.body)
    return 201, {"repository": repository, "simulated": True}


def move_ref(call):
    """`POST /__admin/github/refs/move`: an intervening actor fast-forwards a branch."""
    reference = backend_for(call.instance).move_ref(call.body)
    return 200, {"reference": reference, "checkpoint": context.checkpoint(call.instance),
                 "simulated": True}


def webhook_ping(instance, endpoint):
    """The `ping` a newly registered webhook endpoint is sent (runtime hub hook)."""
    return "ping", events.ping(context.public_base(instance), endpoint,
                               now=times.timestamp(instance.now_ms()))


ROUTES = [("POST", "/github/repositories", seed_repository),
          ("POST", "/github/refs/move", move_ref), *APP_ROUTES]
