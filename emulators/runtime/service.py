"""`Service`: what a service hands to the runtime (see emulators/runtime/README.md for the contract)."""
from dataclasses import dataclass


@dataclass
class AdminCall:
    """The arguments of a service admin route handler."""

    instance: object
    params: dict
    body: object
    query: dict


class Service:
    """Declare a service: name, version, port, OpenAPI document, presets, routes and hooks.

    Pass callables as keyword arguments or subclass and override the methods.
    """

    # Optional `credential(environ) -> str | None`: the vendor credential of a request (bearer
    # token, API key...). Declared, it routes requests that name no namespace through the
    # credential map (`PUT /__admin/credentials`); None keeps that lookup off.
    credential = None
    # Optional `operation_path(path) -> str`: the path a provider request's operation is matched
    # on, when a service also serves its routes under other paths (Hermes' `/p/{profile}/…`
    # mirrors); the journal and fault rules by path keep the path the client asked for.
    operation_path = None
    # Webhooks: `webhooks=True` gives the service a hub (webhooks.py) and its admin routes;
    # `webhook_ping(instance, endpoint) -> (event, payload)` is sent to each new endpoint;
    # `webhook_headers(event, payload) -> dict` adds headers to each delivery.
    webhooks = False
    webhook_ping = None
    webhook_headers = None
    webhook_user_agent = "Mockingbird-Hookshot/1"
    # Operations whose method says "write" but which write nothing (git's upload-pack is a POST
    # that only reads): no transaction, no checkpoint, as for a GET.
    read_operations = frozenset()
    # Writes that run their own transactions (git's receive-pack reads a whole pack before it
    # writes anything: holding the write lock while a slow client uploads would stall every
    # other writer). They commit with `instance.transaction()` and `instance.accept()`.
    own_transactions = frozenset()
    # {operationId: bytes}: a larger body limit than Settings.max_body for these operations
    body_limits = {}
    # {operationId: name(body bytes) -> (operationId, reads)}: operations whose body says what
    # they do (GraphQL: every query and mutation is a POST to one route). The runtime reads the
    # body first and uses the operationId `name` gives wherever one is used; `reads` True runs
    # it as a read (no transaction, no checkpoint). `name` must not raise.
    body_operations = {}
    # The header that carries each provider answer's journal number (`seq`), so a client's
    # log leads to the journal entry (github: `X-GitHub-Request-Id`); None sends none.
    request_id_header = None

    def __init__(self, *, name, version="0.0.0-development", default_port=0, openapi=None,
                 provider_app=None, presets=None, admin_routes=(), describe=None, reset=None,
                 credential=None, webhooks=False, webhook_ping=None, webhook_headers=None,
                 webhook_user_agent=None, read_operations=(), own_transactions=(),
                 body_limits=None, operation_path=None, body_operations=None,
                 request_id_header=None):
        self.name = name
        self.version = version
        self.default_port = default_port
        self.openapi = openapi or {"openapi": "3.0.3", "info": {"title": name, "version": version},
                                   "paths": {}}
        self.presets = dict(presets or {})
        self.admin_routes = list(admin_routes)
        self._provider_app = provider_app
        self._describe = describe
        self._reset = reset
        if credential is not None:
            self.credential = credential
        if operation_path is not None:
            self.operation_path = operation_path
        self.webhooks = webhooks
        if webhook_ping is not None:
            self.webhook_ping = webhook_ping
        if webhook_headers is not None:
            self.webhook_headers = webhook_headers
        if webhook_user_agent is not None:
            self.webhook_user_agent = webhook_user_agent
        self.read_operations = frozenset(read_operations)
        self.own_transactions = frozenset(own_transactions)
        self.body_limits = dict(body_limits or {})
        self.body_operations = dict(body_operations or {})
        if request_id_header is not None:
            self.request_id_header = request_id_header

    def provider_app(self):
        """Return a falcon.App with the provider routes at the root."""
        if self._provider_app is None:
            raise NotImplementedError(f"service {self.name} has no provider app")
        return self._provider_app()

    def describe(self, instance):
        """Return extra health fields."""
        return self._describe(instance) if self._describe else {}

    def reset(self, instance):
        """Run after the runtime wiped the namespace's records."""
        if self._reset:
            self._reset(instance)

    def __repr__(self):
        return f"<Service {self.name}@{self.version}>"
