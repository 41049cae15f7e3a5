"""Marshmallow schemas for the chat bodies and query strings; errors become one 400 message."""
import re

from marshmallow import EXCLUDE, Schema, ValidationError, fields, validate, validates

from . import errors

BROWSER_KINDS = ("operator", "agent")


class PostBody(Schema):
    """`{"text": str, "kind": "operator"|"agent"}`; kind defaults to operator."""

    class Meta:
        unknown = EXCLUDE

    text = fields.String(required=True, error_messages={
        "required": "text is required", "null": "text must be a string",
        "invalid": "text must be a string"})
    kind = fields.String(load_default="operator", error_messages={
        "null": "kind must be a string", "invalid": "kind must be a string"})

    @validates("text")
    def _text_is_unicode(self, value, **_):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValidationError("text is not valid Unicode (lone surrogate)")

    @validates("kind")
    def _kind_is_browser_author(self, value, **_):
        if value == "hermes":
            raise ValidationError("kind hermes is written by the host only")
        if value not in BROWSER_KINDS:
            raise ValidationError("kind must be operator or agent")


class PollQuery(Schema):
    """`since`: omitted, or ASCII digits only (epoch milliseconds)."""

    class Meta:
        unknown = EXCLUDE

    since = fields.String(load_default="0", validate=validate.Regexp(
        re.compile(r"\A[0-9]+\Z"), error="since must be epoch milliseconds (ASCII digits)"))


def load(schema, data):
    """Validate `data` with `schema`; raise BadRequest with the first problem."""
    if not isinstance(data, dict):
        raise errors.BadRequest("body must be a JSON object")
    try:
        return schema.load(data)
    except ValidationError as exc:
        raise errors.BadRequest(_first_message(exc.messages))


def _first_message(messages):
    while isinstance(messages, (dict, list)):
        messages = next(iter(messages.values() if isinstance(messages, dict) else messages))
    return str(messages)


POST_BODY = PostBody()
POLL_QUERY = PollQuery()
