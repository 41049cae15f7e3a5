"""The body of a GraphQL request: `{query, variables, operationName}` (marshmallow)."""
import json

from marshmallow import EXCLUDE, Schema, ValidationError, fields, validates

from emulators.runtime.bodies import loads

from ..errors import GraphQLBodyUnparsed

BAD_VARIABLES = "Variables are invalid JSON."


class Request(Schema):
    """A GraphQL request as GitHub takes it; `variables` may also be a JSON text of an object
    (GitHub parses it, as graphql-ruby does). A `query` that is no string is left to the
    answer (`execution.NO_QUERY`)."""

    class Meta:
        unknown = EXCLUDE

    query = fields.Raw(load_default=None, allow_none=True)
    variables = fields.Raw(load_default=None, allow_none=True)
    operation_name = fields.String(data_key="operationName", load_default=None,
                                   allow_none=True)

    @validates("variables")
    def _variables(self, value, **kwargs):
        if value is not None and not isinstance(value, (dict, str)):
            raise ValidationError(BAD_VARIABLES)


class Invalid(Exception):
    """A request the endpoint answers with a GraphQL error instead of running it."""


def read(raw):
    """(query, variables dict or None, operationName) of a raw body; GraphQLBodyUnparsed when
    it is not a JSON object, Invalid when its fields are not what GraphQL takes."""
    try:
        body = loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise GraphQLBodyUnparsed() from None
    if not isinstance(body, dict):
        raise GraphQLBodyUnparsed()
    try:
        request = Request().load(body)
    except ValidationError as refused:
        raise Invalid(next(iter(_messages(refused.messages)))) from None
    variables = request["variables"]
    if isinstance(variables, str):
        try:
            variables = json.loads(variables) if variables.strip() else None
        except ValueError:
            raise Invalid(BAD_VARIABLES) from None
        if variables is not None and not isinstance(variables, dict):
            raise Invalid(BAD_VARIABLES)
    return request["query"], variables, request["operation_name"]


def _messages(tree):
    """Every message of marshmallow's nested `messages`, depth first."""
    for value in tree.values():
        if isinstance(value, dict):
            yield from _messages(value)
        else:
            yield from value
