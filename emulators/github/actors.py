"""Who acts: each token is a user, as on GitHub.

A request's token is what `context.credential` reads from `Authorization` (REST and git
alike). The credential map may name the user a token acts as (`PUT /__admin/credentials
[{"credential": X, "user": "alice"}]`); an unknown token is a synthetic user of its own,
named from a digest of the token so it is the same user in every namespace and after every
reset; no token at all is the emulator's default member.
"""
import hashlib

DEFAULT = "mockingbird-user"


def synthetic_login(token):
    """The login of a token nobody named: `user-` and ten hex digits of its SHA-256."""
    return "user-" + hashlib.sha256(token.encode("utf-8")).hexdigest()[:10]


def login_of(instance, token):
    """Return the login a request with `token` (None: no token) acts as (see the module
    docstring)."""
    if token is None:
        return DEFAULT
    return instance.user_of(token) or synthetic_login(token)
