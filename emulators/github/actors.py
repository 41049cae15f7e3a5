"""Who acts: each token is a user, as on GitHub.

A request's token comes from `Authorization` (`token X`, `Bearer X`, or Basic with the token as
password, as git sends `x-access-token:X`). The credential map may name the user a token acts
as (`PUT /__admin/credentials [{"credential": X, "user": "alice"}]`); an unknown token is a
synthetic user of its own, named from a digest of the token so it is the same user in every
namespace and after every reset; no token at all is the emulator's default member.
"""
import base64
import binascii
import hashlib
import re

DEFAULT = "mockingbird-user"
LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\Z")


def credential(environ):
    """Return the token of a request, or None (the runtime's credential hook)."""
    scheme, _, value = (environ.get("HTTP_AUTHORIZATION") or "").strip().partition(" ")
    scheme, value = scheme.lower(), value.strip()
    if scheme in ("token", "bearer"):
        return value or None
    if scheme == "basic":
        try:
            decoded = base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        user, _, password = decoded.partition(":")
        return password or user or None
    return None


def synthetic_login(token):
    """The login of a token nobody named: `user-` and ten hex digits of its SHA-256."""
    return "user-" + hashlib.sha256(token.encode("utf-8")).hexdigest()[:10]


def login_of(instance, environ):
    """Return the login the request acts as (see the module docstring)."""
    token = credential(environ)
    if token is None:
        return DEFAULT
    return instance.user_of(token) or synthetic_login(token)
