"""`rateLimit`: the caller's GraphQL window as this request left it, and the most nodes the
query may return.

The emulator counts one point a request (ratelimits/, as its README says), so `cost` is 1.
`nodeCount` is worked out as GitHub documents its node limit: each connection asked for with
`first` or `last` may return that many nodes for each node its enclosing connections may
return (`repositories(first: 50) { … issues(first: 10) }` is 50 + 50 × 10 = 550).
"""
import graphql

from ..times import timestamp

COST = 1  # points a request takes (ratelimits/quotas.py counts requests)


def rate_limit(metered, info):
    """The `RateLimit` object, or None when nothing metered the request (no rate limits)."""
    if metered is None:
        return None
    window = metered.window
    return {"cost": COST, "limit": metered.limit, "nodeCount": node_count(info),
            "remaining": max(metered.limit - window.used, 0), "used": window.used,
            "resetAt": timestamp(window.reset_ms)}


def node_count(info):
    """The most nodes the request's operation may return through its connections."""
    return _nodes(info.operation.selection_set, 1, info)


def _nodes(selection_set, each, info):
    total = 0
    for selection in selection_set.selections if selection_set else ():
        if isinstance(selection, graphql.FragmentSpreadNode):
            total += _nodes(info.fragments[selection.name.value].selection_set, each, info)
        elif isinstance(selection, graphql.InlineFragmentNode):
            total += _nodes(selection.selection_set, each, info)
        else:
            asked = _page(selection, info.variable_values)
            if asked is not None:
                total += each * asked
            total += _nodes(selection.selection_set, each * (asked or 1), info)
    return total


def _page(field, variables):
    """The `first` or `last` a field asks for, or None (no page: not a connection)."""
    for argument in field.arguments:
        if argument.name.value in ("first", "last"):
            value = graphql.value_from_ast_untyped(argument.value, variables)
            if isinstance(value, int):
                return value
    return None
