"""`GET|PUT /__admin/github/rate-limits`: the namespace's limits, one record of its state (a
reset restores GitHub's defaults; checkpoints hold it)."""
from ..schemas.rate_limits import rate_limits
from . import quotas


def get_limits(call):
    """The namespace's settings: `{core, search, graphql}`, each a number or null (GitHub's
    default, which depends on the caller)."""
    return 200, quotas.settings(call.instance.records)


def put_limits(call):
    """Set every credential's limits of the namespace from now on (a resource left out or
    null: GitHub's default)."""
    given = rate_limits(call.body)
    call.instance.records.put(*quotas.SETTINGS, {resource: given.get(resource)
                                                   for resource in quotas.SETTABLE})
    return 200, quotas.settings(call.instance.records)


ROUTES = [("GET", "/github/rate-limits", get_limits),
          ("PUT", "/github/rate-limits", put_limits)]
