"""Run one GraphQL request over GitHub's schema: parse, validate (both once per query text),
execute with the emulator's resolvers, and shape the answer as GitHub does: `data` then
`errors`, each error `{type, path, locations, message}`.
"""
import logging

import graphql

from .. import errors as rest
from . import documents, resolve, schema
from .errors import Problem, from_rest

log = logging.getLogger(__name__)
NO_QUERY = "A query attribute must be specified and must be a string."
INTERNAL = "Something went wrong while executing your query."


def run(query, variables, operation_name, *, root, context):
    """The answer (a JSON-able dict) to one request; `root` answers the root fields."""
    if not isinstance(query, str):
        return {"errors": [{"message": NO_QUERY}]}
    document = documents.parse(query)
    if isinstance(document, graphql.GraphQLError):
        return {"errors": [_entry(document)]}
    invalid = documents.validate(query)
    if invalid:
        return {"errors": [_entry(error) for error in invalid]}
    result = graphql.execute(schema.schema(), document, root_value=root, context_value=context,
                             variable_values=variables, operation_name=operation_name,
                             field_resolver=resolve.field, type_resolver=resolve.type_of)
    answer = {"data": result.data}
    if result.errors:
        answer["errors"] = [_entry(error) for error in result.errors]
    return answer


def _entry(error):
    """One error as GitHub writes it; a resolver's unexpected exception is logged, and named
    without its details."""
    original = error.original_error
    if isinstance(original, rest.GitHubError):
        original = from_rest(original)
    entry, extensions = {}, None
    if isinstance(original, Problem):
        entry["type"] = original.type
        message, extensions = original.message, original.extensions
    elif original is not None and not isinstance(original, graphql.GraphQLError):
        log.error("github graphql: a resolver failed at %s", error.path, exc_info=original)
        message = INTERNAL
    else:
        message = error.message
    if error.path is not None:
        entry["path"] = list(error.path)
    if extensions is not None:
        entry["extensions"] = extensions
    if error.locations:
        entry["locations"] = [{"line": loc.line, "column": loc.column}
                              for loc in error.locations]
    entry["message"] = message
    return entry
