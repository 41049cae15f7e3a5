"""The admin controls of GitHub Apps: register an App (with its installations) and install
it later. Each installing sends the App's `installation` (or `installation_repositories`)
webhook, as GitHub does when a user installs it."""
from .. import context, shapes as github_shapes
from ..auth.credentials import rules as rules_of
from ..resources import backend_for
from . import events, schemas, shapes


class _Admin:
    def __init__(self, call):
        self.instance = call.instance
        self.rules = rules_of(self.instance)
        self.base = context.public_base(self.instance)
        self.backend = backend_for(self.instance)

    def account_json(self, login):
        return github_shapes.user(self.base, self.rules.accounts.owner(login))

    def install(self, app, spec):
        """Install (or widen an installation); queue its webhook; return (json, new)."""
        installation, gained, new = self.rules.install(app, spec)
        shaped = shapes.installation(self.base, installation, app,
                                     self.account_json(installation["account"]))
        repos = [self.backend.repo_json(repo) for repo in gained]
        sender = self.account_json(app["owner"])
        if new:
            events.send(self.instance, app, "installation",
                        events.installed(shaped, repos, sender))
        elif repos:
            events.send(self.instance, app, "installation_repositories",
                        events.repositories_added(shaped, repos, sender))
        return shaped, new


def register_app(call):
    """`POST /__admin/github/apps`: 201 `{app, private_key?, installations}`."""
    spec, installs = schemas.app_spec(call.body)
    admin = _Admin(call)
    with admin.instance.transaction():
        app, private_key = admin.rules.register(spec)
        installed = [admin.install(app, item)[0] for item in installs]
        shaped = shapes.app(admin.base, app, admin.account_json(app["owner"]), len(installed))
    body = {"app": shaped, "installations": installed}
    if private_key is not None:
        body["private_key"] = private_key
    return 201, body


def install_app(call):
    """`POST /__admin/github/apps/{slug}/installations`: 201 a new installation, 200 one that
    reaches more repositories."""
    spec = schemas.installation_spec(call.body)
    admin = _Admin(call)
    with admin.instance.transaction():
        app = admin.rules.app(call.params["slug"])
        shaped, new = admin.install(app, spec)
    return (201 if new else 200), {"installation": shaped}


ROUTES = [("POST", "/github/apps", register_app),
          ("POST", "/github/apps/:slug/installations", install_app)]
