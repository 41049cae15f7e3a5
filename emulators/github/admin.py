"""The GitHub admin controls under `/__admin/github/...` (repositories, a ref someone else moves,
GitHub Apps and their installations) and the ping the runtime's webhook hub sends a newly
registered endpoint.

A control is `handler(call) -> (status, body)`; the admin plane answers a GitHubError raised here
with its own status and mock-only envelope (`{message, code}`).
"""

from . import context, errors, events, shapes, times
from .calls import backend_for, deliveries
from .credentials import rules as rules_of
from .schemas import apps as app_schemas, refs
from .shapes import apps as app_shapes


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


class _Apps:
    """What the App controls share: the App rules, shapes and the App webhooks of one call."""

    def __init__(self, call):
        self.instance = call.instance
        self.rules = rules_of(self.instance)
        self.base = context.public_base(self.instance)
        self.backend = backend_for(self.instance)

    def account_json(self, login):
        return shapes.user(self.base, self.rules.accounts.owner(login))

    def install(self, app, spec):
        """Install (or widen an installation), queue the App's webhook as GitHub sends it on
        installing; return (the installation's JSON, whether it is new)."""
        installation, gained, new = self.rules.install(app, spec)
        shaped = app_shapes.installation(self.base, installation, app,
                                         self.account_json(installation["account"]))
        repos = [self.backend.repos.json(repo) for repo in gained]
        by = self.account_json(app["owner"])
        send = deliveries(self.instance).send
        if new:
            send(app, "installation", events.installed(shaped, repos, by))
        elif repos:
            send(app, "installation_repositories", events.repositories_added(shaped, repos, by))
        return shaped, new


def register_app(call):
    """`POST /__admin/github/apps`: 201 `{app, installations, private_key?}` (the key only when
    the emulator made it)."""
    spec, installs = app_schemas.app_spec(call.body)
    apps = _Apps(call)
    with apps.instance.transaction():
        app, private_key = apps.rules.register(spec)
        installed = [apps.install(app, item)[0] for item in installs]
        shaped = app_shapes.app(apps.base, app, apps.account_json(app["owner"]), len(installed))
    body = {"app": shaped, "installations": installed}
    if private_key is not None:
        body["private_key"] = private_key
    return 201, body


def install_app(call):
    """`POST /__admin/github/apps/{slug}/installations`: 201 a new installation, 200 one that
    reaches more repositories."""
    spec = app_schemas.installation_spec(call.body)
    apps = _Apps(call)
    with apps.instance.transaction():
        app = apps.rules.app(call.params["slug"])
        shaped, new = apps.install(app, spec)
    return (201 if new else 200), {"installation": shaped}


ROUTES = [("POST", "/github/repositories", seed_repository),
          ("POST", "/github/refs/move", move_ref),
          ("POST", "/github/apps", register_app),
          ("POST", "/github/apps/:slug/installations", install_app)]
