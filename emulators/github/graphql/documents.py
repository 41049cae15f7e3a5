"""GraphQL documents: parsed once per process and query text, and the operation a request runs
(which also names it for the runtime's journal and fault rules: `graphql/mutation/<Name>`).

Clients send the same few query texts again and again (`gh` builds each from constants), so a
parse, and a validation against the 1.2 MB schema, is done once per text and kept.
"""
import functools
import json

import graphql

from . import schema

ENDPOINT = "graphql"  # the operationId of the route, before its body names the operation
CACHED = 512  # query texts kept parsed and validated, per process


@functools.lru_cache(maxsize=CACHED)
def parse(query):
    """The DocumentNode of a query text, or the GraphQLError that says why it does not parse."""
    try:
        return graphql.parse(query)
    except graphql.GraphQLError as error:
        return error


@functools.lru_cache(maxsize=CACHED)
def validate(query):
    """graphql-core's validation errors of a (parsed) query text against GitHub's schema."""
    return tuple(graphql.validate(schema.schema(), parse(query)))


def operation(document, name):
    """The OperationDefinitionNode a request runs: the one `name` names, or the only one;
    None when there is none to choose."""
    operations = [d for d in document.definitions
                  if isinstance(d, graphql.OperationDefinitionNode)]
    if name:
        return next((o for o in operations if o.name and o.name.value == name), None)
    return operations[0] if len(operations) == 1 else None


def operation_id(body):
    """(operationId, reads) of a `POST /graphql` body, for the runtime (`body_operations`):
    `graphql/query/PullRequestByNumber`, `graphql/mutation/PullRequestCreate`,
    `graphql/query` for an anonymous query; `graphql` when the body names no operation it
    could run (then the handler runs none either: a read). A query reads; a mutation writes."""
    try:
        request = json.loads(body)
        query, name = request.get("query"), request.get("operationName")
    except (ValueError, AttributeError, UnicodeDecodeError):
        return ENDPOINT, True
    if not isinstance(query, str) or (name is not None and not isinstance(name, str)):
        return ENDPOINT, True
    document = parse(query)
    chosen = None if isinstance(document, graphql.GraphQLError) else operation(document, name)
    if chosen is None:
        return ENDPOINT, True
    kind = chosen.operation.value  # query, mutation or subscription
    named = f"{ENDPOINT}/{kind}" + (f"/{chosen.name.value}" if chosen.name else "")
    return named, kind == "query"
