"""Check a GraphQL answer against GitHub's schema and the query that asked for it.

The query is validated with graphql-core against the vendored schema (a query that does not
validate must be answered with its validation errors and no data). The answer's `data` is then
executed again as the root value of the same query, each field read back by its response key:
graphql-core completes every value as the schema types it (non-null fields, lists, enums,
objects of the right concrete type), and the data it completes must be the data answered,
byte for byte (a number where a `String` is due comes back as text and differs). Custom scalars
are held to GitHub's formats (`DateTime` in GitHub's form, `URI` absolute, `GitObjectID` a sha).
"""
import json
import re

import graphql
from graphql.execution.collect_fields import collect_sub_fields

from emulators.github.graphql.schema import schema

FORMATS = {
    "DateTime": re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\Z"),
    "URI": re.compile(r"https?://[^/\s]+(/\S*)?\Z"),
    "GitObjectID": re.compile(r"[0-9a-f]{40}\Z"),
    "ID": re.compile(r"\S+\Z"),
}
TYPES = {"NOT_FOUND", "FORBIDDEN", "UNPROCESSABLE", "MOCKINGBIRD_UNSUPPORTED"}


def problems(request, answer):
    """The ways `answer` is not a possible answer of GitHub's schema to `request` (a list)."""
    query = request.get("query")
    if not isinstance(answer, dict):
        return [f"the answer is not a JSON object: {answer!r}"]
    found = [f"error without a message: {e}" for e in answer.get("errors", ())
             if not isinstance(e.get("message"), str)]
    found += [f"unknown error type: {e}" for e in answer.get("errors", ())
              if "type" in e and e["type"] not in TYPES]
    if not isinstance(query, str):
        return found
    try:
        document = graphql.parse(query)
    except graphql.GraphQLError:
        return found + ([] if "data" not in answer else ["a query that does not parse ran"])
    invalid = graphql.validate(schema(), document)
    if invalid:
        if "data" in answer:
            found.append("a query that does not validate ran")
        return found
    data = answer.get("data")
    if data is None:
        return found + ([] if answer.get("errors") else ["neither data nor errors"])
    seen = []
    again = graphql.execute(schema(), document, root_value=data, context_value=seen,
                            variable_values=request.get("variables"),
                            operation_name=request.get("operationName"),
                            field_resolver=_by_key, type_resolver=_by_shape)
    errors = {tuple(e.get("path") or ()) for e in answer.get("errors", ())}
    for error in again.errors or ():
        path = tuple(error.path or ())
        if not any(path[:len(known)] == known or known[:len(path)] == path
                   for known in errors):
            found.append(f"{'.'.join(map(str, path))}: {error.message}")
    if _canonical(again.data) != _canonical(data):
        found.append(f"data as the schema types it differs: {again.data!r} != {data!r}")
    return found + seen


def _by_key(source, info, **args):
    key = info.path.key
    if not isinstance(source, dict) or key not in source:
        info.context.append(f"{_dotted(info.path)}: missing from the answer")
        return None
    value = source[key]
    named = graphql.get_named_type(info.return_type)
    pattern = FORMATS.get(named.name)
    if pattern is not None and value is not None:
        for item in value if isinstance(value, list) else [value]:
            if item is not None and not (isinstance(item, str) and pattern.match(item)):
                info.context.append(f"{_dotted(info.path)}: {item!r} is no {named.name}")
    return value


def _by_shape(value, info, abstract_type):
    """The concrete type of an object answered for an interface or union: its `__typename`
    when asked, else the one possible type whose selection gives exactly its keys."""
    if not isinstance(value, dict):
        return None
    typename = next((v for k, v in value.items() if k == "__typename"), None)
    if typename:
        return typename
    for candidate in info.schema.get_possible_types(abstract_type):
        keys = collect_sub_fields(info.schema, info.fragments, info.variable_values,
                                  candidate, info.field_nodes)
        if set(keys) == set(value):
            return candidate.name
    return None


def _dotted(path):
    return ".".join(map(str, path.as_list()))


def _canonical(data):
    return json.dumps(data, sort_keys=True)
