"""`GET /rate_limit`: the caller's windows of every resource, as GitHub lists them."""
from emulators.runtime import instance_of

from . import quotas
from .middleware import NO_CACHE, caller


class RateLimit:
    """`GET /rate_limit` (`rate-limit/get`): not counted against any window; GitHub sends it
    uncached and with the core window in its `X-RateLimit-*` headers."""

    def on_get(self, req, resp):
        instance = instance_of(req)
        who = caller(req)
        windows = instance.quotas.windows(who.key, quotas.WINDOWS)
        body = quotas.overview(windows, who.kind, quotas.settings_of(instance))
        resp.media = body
        resp.context["quota"] = quotas.Metered(who, "core", body["rate"]["limit"],
                                               windows["core"])
        resp.context["cache"] = NO_CACHE
