"""What credential a request carries, and whose it is: the one answer every part asks (who
acts, what an App's token may do, and per-credential limits).

`identify(instance, environ)` returns a typed value, cached in the environ for the request,
each with `kind`, `key` (whose credential: what per-credential limits count by) and `login`
(who acts):

- `Anonymous`: no credential; `address:<client address>`; `mockingbird-user`.
- `UserToken`: any other token (the credential map may name its user); `user:<login>`; that
  user.
- `InstallationToken`: an installation token the emulator issued, alive;
  `installation:<id>`; `<slug>[bot]`.
- `AppJwt`: an App's JWT, verified on the emulator's clock; `app:<id>`; `<slug>[bot]`.

A JWT that fails GitHub's checks, and a token of an installation token's form that is unknown,
revoked or expired, raise GitHub's 401 (`errors.Unauthorized`).
"""
import dataclasses
from typing import ClassVar

from . import actors, errors
from .context import credential as token_of
from .models.apps import AppRules, bot_login, is_installation_token
from .models.signin import looks_like_jwt, verify
from .store import GitHubStore

ENVIRON_KEY = "github.credential"


@dataclasses.dataclass(frozen=True, slots=True)
class Anonymous:
    """No credential: the emulator's default member acts, keyed by the client's address."""

    address: str
    kind: ClassVar[str] = "anonymous"
    login: ClassVar[str] = actors.DEFAULT

    @property
    def key(self):
        return f"address:{self.address}"


class UserToken:
    """A token that is a user (actors.py): the credential map's user, or a synthetic one."""

    kind = "user"
    __slots__ = ("token", "_resolve", "_login")

    def __init__(self, token, resolve):
        self.token, self._resolve, self._login = token, resolve, None

    @property
    def login(self):
        if self._login is None:  # one credential-map lookup, only when someone asks
            self._login = self._resolve(self.token)
        return self._login

    @property
    def key(self):
        return f"user:{self.login}"


class InstallationToken:
    """An installation token: its installation, App, permissions and repositories (None:
    every repository of the installation's account)."""

    kind = "installation"
    __slots__ = ("token", "installation_id", "app_id", "app_slug", "account", "permissions",
                 "repository_ids", "expires_ms")

    def __init__(self, token, record):
        self.token = token
        self.installation_id = record["installation_id"]
        self.app_id, self.app_slug = record["app_id"], record["app_slug"]
        self.account = record["account"]  # the installation's account (lower case)
        self.permissions = dict(record["permissions"])
        ids = record["repository_ids"]
        self.repository_ids = None if ids is None else frozenset(ids)
        self.expires_ms = record["expires_ms"]

    @property
    def key(self):
        return f"installation:{self.installation_id}"

    def reaches(self, repo):
        """Tell whether a repository record is within the token's selection."""
        if self.repository_ids is not None:
            return repo["id"] in self.repository_ids
        return repo["owner"] == self.account

    @property
    def login(self):
        return bot_login(self.app_slug)


@dataclasses.dataclass(frozen=True, slots=True)
class AppJwt:
    """An App signed in as itself (its JWT verified on the emulator's clock): `app` is its
    record."""

    app: dict = dataclasses.field(repr=False)  # the record holds its webhook secret
    kind: ClassVar[str] = "app"

    @property
    def key(self):
        return f"app:{self.app['id']}"

    @property
    def login(self):
        return bot_login(self.app["slug"])


def rules(instance):
    """The App rules over an instance's records."""
    return AppRules(instance.records, GitHubStore(instance.records,
                                                  transaction=instance.transaction),
                    now_ms=instance.now_ms)


def identify(instance, environ):
    """Return the request's credential (see the module docstring); raise GitHub's 401 for a
    JWT or an installation token GitHub would refuse."""
    found = environ.get(ENVIRON_KEY)
    if found is not None:
        return found
    token = token_of(environ)
    if token is None:
        found = Anonymous(environ.get("REMOTE_ADDR") or "unknown")
    elif is_installation_token(token):
        record = rules(instance).token(token)
        if record is None:
            raise errors.BadCredentials()
        found = InstallationToken(token, record)
    elif looks_like_jwt(token):
        found = AppJwt(verify(token, instance.now_ms() // 1000, rules(instance).find_app))
    else:
        found = UserToken(token, lambda text: actors.login_of(instance, text))
    environ[ENVIRON_KEY] = found
    return found
