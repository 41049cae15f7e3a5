"""The GitHub admin controls under `/__admin/github/...` and the ping the runtime's webhook hub
sends a newly registered endpoint.

A control is `handler(call) -> (status, body)`; the admin plane answers a GitHubError raised here
with its own status and mock-only envelope (`{message, code}`).
"""

from . import context, errors, events, times
from .calls import backend_for
from .schemas import refs


def seed_repository(call):
    """`POST /__admin/github/repositories`: seed one synthetic repository (runtime checkpoints)."""
    repository = backend_for(call.instance).seeding.seed(call.body)
    return 201, {"repository": repository, "simulated": True}


def move_ref(call):
    """`POST /__admin/github/refs/move`: an intervening actor fast-forwards a branch (a
    non-forced update, answered with the control's own errors)."""
    given = refs.move(call.body)
    backend = backend_for(call.instance)
    repo = backend.repos.get(given["owner"], given["repo"])
    if repo is None:
        raise errors.ControlInvalid("Reference does not exist", 422)
    try:
        ref = backend.refs.fast_forward(repo["key"], given["ref"], given["sha"])
    except errors.Unprocessable as exc:
        raise errors.ControlInvalid(exc.message, 422) from None
    return 200, {"reference": backend.repos.ref_json(repo, ref),
                 "checkpoint": context.checkpoint(call.instance), "simulated": True}


def webhook_ping(instance, endpoint):
    """The `ping` a newly registered webhook endpoint is sent (runtime hub hook)."""
    return "ping", events.ping(context.public_base(instance), endpoint,
                               now=times.timestamp(instance.now_ms()))


ROUTES = [("POST", "/github/repositories", seed_repository),
          ("POST", "/github/refs/move", move_ref)]
