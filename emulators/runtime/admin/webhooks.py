"""The webhook admin routes (`/webhook-endpoints`, `/webhooks...`) over the service's hub
(runtime/webhooks.py), present only when the service has one."""
from ..webhooks import WebhookError, parse_endpoints


class WebhookRoutes:
    """The admin routes `/webhook-endpoints` and `/webhooks*`, present only with a hub."""

    def __init__(self, emulator):
        self.emulator = emulator
        self.hub = emulator.webhooks

    def routes(self):
        """Return (method, path, handler) of every webhook route (none without a hub)."""
        if self.hub is None:
            return []
        return [("GET", "/webhooks", self.deliveries), ("GET", "/webhooks/events", self.events),
                ("POST", "/webhooks/:id/replay", self.replay),
                ("POST", "/webhooks/flush", self.flush),
                ("POST", "/webhooks/faults", self.fault),
                ("GET", "/webhook-endpoints", self.endpoints),
                ("POST", "/webhook-endpoints", self.add_endpoint),
                ("PUT", "/webhook-endpoints", self.put_endpoints),
                ("DELETE", "/webhook-endpoints", self.delete_endpoints)]

    def deliveries(self, request):
        self.hub.wake()
        return 200, {"deliveries": self.hub.deliveries(
            request.namespace, every=request.flag("all"), event=request.query.get("type"))}

    def events(self, request):
        return 200, {"events": self.hub.events(request.namespace)}

    def replay(self, request):
        self.hub.replay(request.namespace, request.params["id"])
        return 200, {"status": "ok"}

    def flush(self, request):
        self.hub.flush(request.namespace)
        return 200, {"status": "ok"}

    def fault(self, request):
        return 201, self.hub.set_fault(request.namespace, request.body)

    def endpoints(self, request):
        return 200, {"endpoints": self.hub.endpoints(request.namespace)}

    def put_endpoints(self, request):
        """Replace the endpoints; each new one is sent the service's `ping`."""
        added = self.hub.put_endpoints(request.namespace, parse_endpoints(request.body))
        self._ping(request.namespace, added)
        return 200, {"endpoints": self.hub.endpoints(request.namespace)}

    def add_endpoint(self, request):
        """Add one endpoint `{url, secret?, events?}` beside the others (201, with its id);
        it is sent the service's `ping`."""
        body = request.body
        if not isinstance(body, dict):
            raise WebhookError("expected {url, secret?, events?}")
        added = self.hub.put_endpoints(request.namespace, parse_endpoints([body]), keep=True)
        self._ping(request.namespace, added)
        (endpoint,) = added
        return 201, {**endpoint, "secret": "(set)" if endpoint["secret"] is not None else None}

    def _ping(self, namespace, added):
        ping = self.emulator.service.webhook_ping
        if ping is not None:
            instance = self.emulator.instance(namespace)
            for endpoint in added:
                event, payload = ping(instance, endpoint)
                self.hub.emit(namespace, event, payload, created_ms=instance.now_ms(),
                              endpoint=endpoint["id"])

    def delete_endpoints(self, request):
        self.hub.delete_endpoints(request.namespace)
        return 200, {"status": "ok"}
