"""Bodies of the App routes and admin controls, read with marshmallow into the rules' typed
arguments: an App to register, an installation, a token's narrowing."""
import re

from marshmallow import EXCLUDE, RAISE, Schema, ValidationError, fields, validate, validates

from .. import errors
from ..models.apps import EVENTS, AppSpec, InstallSpec, TokenRequest

SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,32}[a-z0-9])?\Z")  # GitHub's App slugs
_URL = validate.Regexp(r"^https?://", error="must be an http(s) URL")


class _Permissions(fields.Dict):
    def __init__(self, **kwargs):
        super().__init__(keys=fields.String(), values=fields.String(), **kwargs)


class InstallBody(Schema):
    """`{account, repositories?: "all" | [names], permissions?: {...}}`."""

    class Meta:
        unknown = RAISE

    account = fields.String(required=True, validate=validate.Length(min=1))
    repositories = fields.Raw(load_default="all")
    permissions = _Permissions(load_default=None)

    @validates("repositories")
    def _repositories(self, value, **kwargs):
        if value != "all" and not (isinstance(value, list) and value and all(
                isinstance(name, str) and name for name in value)):
            raise ValidationError('"all" or a nonempty list of repository names')


class AppBody(Schema):
    """`{slug, name?, owner?, description?, permissions, events?, private_key?, webhook_url?,
    webhook_secret?, installations?: [...]}`."""

    class Meta:
        unknown = RAISE

    slug = fields.String(required=True, validate=validate.Regexp(
        SLUG, error="a slug is lower-case letters, digits and inner hyphens (at most 34)"))
    name = fields.String(load_default=None)
    owner = fields.String(load_default=None)
    description = fields.String(load_default=None)
    permissions = _Permissions(required=True)
    events = fields.List(fields.String(validate=validate.Length(min=1)), load_default=None)
    private_key = fields.String(load_default=None)
    webhook_url = fields.String(load_default=None, validate=_URL)
    webhook_secret = fields.String(load_default=None)
    installations = fields.List(fields.Nested(InstallBody), load_default=list)


class TokenBody(Schema):
    """`POST .../access_tokens`: `{repositories?, repository_ids?, permissions?}`."""

    class Meta:
        unknown = EXCLUDE  # GitHub ignores what it does not know

    repositories = fields.List(fields.String(), load_default=list)
    repository_ids = fields.List(fields.Integer(strict=True), load_default=list)
    permissions = _Permissions(load_default=None)


def _said(problems):
    return " ".join(map(str, problems)) if isinstance(problems, list) else str(problems)


def _admin_load(schema, body):
    try:
        return schema.load(body if isinstance(body, dict) else {})
    except ValidationError as exc:
        detail = "; ".join(f"{field}: {_said(problems)}"
                           for field, problems in sorted(exc.messages.items()))
        raise errors.AppRefused(detail) from None


def install_spec(data):
    repositories = data["repositories"]
    return InstallSpec(account=data["account"],
                       repositories=None if repositories == "all" else tuple(repositories),
                       permissions=data["permissions"])


def app_spec(body):
    """Parse a registration: (AppSpec, [InstallSpec]); AppRefused (400) naming each bad field."""
    data = _admin_load(AppBody(), body)
    spec = AppSpec(slug=data["slug"], name=data["name"], owner=data["owner"],
                   permissions=data["permissions"],
                   events=tuple(EVENTS if data["events"] is None else data["events"]),
                   private_key=data["private_key"], webhook_url=data["webhook_url"],
                   webhook_secret=data["webhook_secret"], description=data["description"])
    return spec, [install_spec(item) for item in data["installations"]]


def installation_spec(body):
    """Parse an installation body into an InstallSpec."""
    return install_spec(_admin_load(InstallBody(), body))


def token_request(body):
    """Parse a token's narrowing; GitHub's 422 for a body of the wrong shape."""
    try:
        data = TokenBody().load(body if isinstance(body, dict) else {})
    except ValidationError as exc:
        raise errors.ValidationFailed(resource="InstallationToken", code="invalid",
                                      field=sorted(exc.messages)[0]) from None
    return TokenRequest(repositories=tuple(data["repositories"]),
                        repository_ids=tuple(data["repository_ids"]),
                        permissions=data["permissions"])
