"""An App's webhooks: what happens on its installations' repositories goes to its
`webhook_url`, signed with its secret, each payload with `installation: {id, node_id}`; and
the `installation` and `installation_repositories` events of its own installing.

Deliveries go through the runtime's hub (`Instance.emit_to`), so they are queued in the
request's transaction, logged, retried, replayed and faulted like a repository hook's, with
the headers GitHub sends an App: its hook id, target type `integration` and the App's id.
"""
from . import shapes


def _headers(app):
    return {"X-GitHub-Hook-Installation-Target-Type": "integration",
            "X-GitHub-Hook-Installation-Target-ID": str(app["id"])}


def send(instance, app, event, payload):
    """Queue one event for an App's webhook (nothing when it has no URL)."""
    if app.get("webhook_url"):
        instance.emit_to(event, payload, url=app["webhook_url"], secret=app["webhook_secret"],
                         hook_id=app["hook_id"], headers=_headers(app))


class Fanout:
    """A backend's `emit(event, build)`: the namespace's endpoints as before, and every App
    installed on the event's repository that subscribes to the event (one request's)."""

    def __init__(self, instance, rules):
        self.instance, self.rules = instance, rules
        self._listening = None  # the namespace has an App with a webhook URL (looked up once)

    def __call__(self, event, build):
        if self._listening is None:
            self._listening = any(app.get("webhook_url") for app in self.rules.store.apps())
        if not self._listening:
            self.instance.emit(event, build)
            return
        payload = build()
        self.instance.emit(event, payload)
        repository = payload.get("repository") if isinstance(payload, dict) else None
        if not isinstance(repository, dict):
            return
        repo = {"id": repository["id"], "owner": repository["owner"]["login"].lower()}
        for app, installation in self.rules.installations_reaching(repo):
            if event in app["events"]:
                send(self.instance, app, event,
                     {**payload, "installation": shapes.installation_lite(installation)})


def installed(installation_json, repositories, sender):
    """`installation` `created`: the App was installed (with the repositories it reaches)."""
    return {"action": "created", "installation": installation_json,
            "repositories": [shapes.repository_lite(repo) for repo in repositories],
            "requester": None, "sender": sender}


def repositories_added(installation_json, repositories, sender):
    """`installation_repositories` `added`: an installation reaches more repositories."""
    return {"action": "added", "installation": installation_json,
            "repository_selection": installation_json["repository_selection"],
            "repositories_added": [shapes.repository_lite(repo) for repo in repositories],
            "repositories_removed": [], "requester": None, "sender": sender}
