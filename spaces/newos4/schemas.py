"""Marshmallow schemas for the chat bodies and query strings; errors become one 400 message."""
import re

from marshmallow import EXCLUDE, Schema, ValidationError, fields, validates

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


SINCE_RE = re.compile(r"\A[0-9]+\Z")


def parse_since(value):
    """`since`: omitted (None), or ASCII digits only (epoch milliseconds). A plain regex: the
    hot polling path needs no schema machinery for one parameter."""
    if value is None:
        return 0
    if not SINCE_RE.match(value):
        raise errors.BadRequest("since must be epoch milliseconds (ASCII digits)")
    return int(value)


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
