"""GitHub Apps' rules: registering an App, installing it on an account, issuing, narrowing,
resolving and revoking installation tokens, and where the App's webhooks go. Plain Python over
the App records and the accounts and repositories they name; the http layer and the admin plane
call it.

An installation token is `ghs_` with 36 characters, as GitHub's are: 30 random and a CRC32
checksum of them in base 62 (the scheme of GitHub's token formats), so a token of that form
is known to be meant as one: unknown or expired, it is `Bad credentials`, while any other
token stays a user's. It lives one hour on the emulator's clock.
"""
import binascii
import secrets
from dataclasses import dataclass

from .. import errors, ids, keys
from ..permissions import PERMISSIONS, within
from ..shapes import apps as shapes
from ..store import AppStore

TOKEN_LIFETIME_MS = 3_600_000
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_CLIENT_CHARS = _BASE62
# the events an App is sent when it names none: every event the emulator sends
EVENTS = ("check_run", "check_suite", "create", "delete", "issue_comment", "issues", "label",
          "pull_request", "pull_request_review", "push", "status")
NOT_GRANTED = "The permissions requested are not granted to this installation."
NOT_IN_INSTALLATION = ("There is at least one repository that does not exist or is not"
                       " accessible to the parent installation.")


def _base62(number, width):
    out = []
    for _ in range(width):
        number, digit = divmod(number, 62)
        out.append(_BASE62[digit])
    return "".join(reversed(out))


def _checksum(body):
    return _base62(binascii.crc32(body.encode()), 6)


def new_token():
    """A fresh installation token: `ghs_`, 30 random characters, their checksum."""
    body = "".join(secrets.choice(_BASE62) for _ in range(30))
    return f"ghs_{body}{_checksum(body)}"


def is_installation_token(token):
    """Tell whether `token` has the form of an installation token (its checksum holds)."""
    return (len(token) == 40 and token.startswith("ghs_") and all(c in _BASE62 for c in token[4:])
            and _checksum(token[4:34]) == token[34:])


def bot_login(slug):
    """The account an App acts as: `<slug>[bot]`."""
    return f"{slug}[bot]"


@dataclass(frozen=True)
class AppSpec:
    """An App to register (the admin plane's body, parsed)."""

    slug: str
    name: str
    owner: str | None
    permissions: dict
    events: tuple
    private_key: str | None
    webhook_url: str | None
    webhook_secret: str | None
    description: str | None = None


@dataclass(frozen=True)
class InstallSpec:
    """Where to install an App: an account, all of its repositories or some by name, and the
    permissions (None: the App's)."""

    account: str
    repositories: tuple | None  # None: all
    permissions: dict | None


@dataclass(frozen=True)
class TokenRequest:
    """A token's narrowing (`POST .../access_tokens`): names, ids, permissions (None or empty:
    all the installation has)."""

    repositories: tuple = ()
    repository_ids: tuple = ()
    permissions: dict | None = None


class AppRules:
    """The Apps of one namespace. `accounts` is the GitHub store (owners, repositories),
    `account(login)` makes a user account on first use, `now_ms` is the emulator's clock."""

    def __init__(self, records, accounts, *, now_ms):
        self.store = AppStore(records)
        self.accounts = accounts
        self.now_ms = now_ms

    # Apps ------------------------------------------------------------------------------
    def register(self, spec):
        """Register an App: return (its record, the private key PEM when the emulator made
        it). Its bot account `<slug>[bot]` is made with it."""
        if self.store.app(spec.slug) is not None:
            raise errors.AppRefused(f"An App with slug {spec.slug} already exists", 409)
        self._check_permissions(spec.permissions)
        made = None
        if spec.private_key is None:
            made = keys.new_private_key()
        try:
            public = keys.public_pem(made or spec.private_key)
        except ValueError:
            raise errors.AppRefused("private_key must be an RSA key in PEM") from None
        owner = self._owner(spec.owner)
        bot = bot_login(spec.slug)
        if self.accounts.owner(bot) is None:
            self.accounts.put_owner({
                "login": bot, "type": "Bot", "id": self.accounts.next_id("owner_ids"),
                "node_id": ids.node_id("github", "BOT_", self.accounts.next_id("node:BOT_"))})
        number = self.store.next_id("app_ids")
        record = {
            "slug": spec.slug, "id": number, "name": spec.name or spec.slug,
            "node_id": ids.node_id("github", "A_", number),
            "client_id": "Iv23li" + "".join(secrets.choice(_CLIENT_CHARS) for _ in range(14)),
            "owner": owner["login"], "description": spec.description,
            # GitHub grants every App read access to repository metadata
            "permissions": {"metadata": "read", **spec.permissions},
            "events": list(spec.events), "public_key": public,
            "webhook_url": spec.webhook_url, "webhook_secret": spec.webhook_secret,
            "hook_id": self.store.next_id("app_hook_ids"), "created_ms": self.now_ms()}
        self.store.put_app(record)
        return record, made

    def app(self, slug):
        record = self.store.app(slug)
        if record is None:
            raise errors.AppRefused(f"No App with slug {slug}", 404)
        return record

    def find_app(self, field, value):
        """The App whose `id` or `client_id` is `value` (JWT sign-in), or None."""
        return self.store.app_where(field, value)

    def _owner(self, login):
        if login is None:
            login = "mockingbird-user"
            if self.accounts.owner(login) is None:
                self.accounts.put_owner({
                    "login": login, "type": "User", "id": self.accounts.next_id("owner_ids"),
                    "node_id": ids.node_id("github", "U_", self.accounts.next_id("node:U_"))})
        record = self.accounts.owner(login)
        if record is None:
            raise errors.AppRefused(f"No account {login}: seed a repository it owns first",
                                    422)
        return record

    @staticmethod
    def _check_permissions(permissions):
        for name, level in permissions.items():
            if level not in PERMISSIONS.get(name, ()):
                raise errors.AppRefused(f"Unknown permission {name}: {level}"
                                        f" (GitHub's App permissions, read/write/admin)", 422)

    # installations -------------------------------------------------------------------------
    def install(self, app, spec):
        """Install `app` on an account, or add repositories to the installation it has there:
        return (installation, the repository records it gained, whether it is new)."""
        account = self.accounts.owner(spec.account)
        if account is None:
            raise errors.AppRefused(f"No account {spec.account}: seed a repository it owns"
                                    " first", 422)
        permissions = dict(spec.permissions or app["permissions"])
        self._check_permissions(permissions)
        if not within(permissions, app["permissions"]):
            raise errors.AppRefused("An installation's permissions may not exceed its App's",
                                    422)
        owned = self.owned_repositories(account["login"])
        chosen = None
        if spec.repositories is not None:
            by_name = {repo["name"].lower(): repo for repo in owned}
            missing = [name for name in spec.repositories if name.lower() not in by_name]
            if missing:
                raise errors.AppRefused(f"{account['login']} has no repository "
                                        + ", ".join(missing), 422)
            chosen = [by_name[name.lower()] for name in spec.repositories]
        found = self.store.installations(app_id=app["id"], account=account["login"].lower())
        if found:
            installation = found[0]
            if installation["repository_selection"] == "all" or chosen is None:
                raise errors.AppRefused(f"{app['slug']} is already installed on"
                                        f" {account['login']}", 409)
            gained = [repo for repo in chosen if repo["id"] not in installation["repository_ids"]]
            installation["repository_ids"] += [repo["id"] for repo in gained]
            self.store.put_installation(installation)
            return installation, gained, False
        number = self.store.next_id("installation_ids")
        installation = {
            "id": number, "node_id": ids.node_id("github", "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u",
                                                 number),
            "app_id": app["id"], "app_slug": app["slug"], "account": account["login"].lower(),
            "permissions": permissions,
            "repository_selection": "all" if chosen is None else "selected",
            "repository_ids": None if chosen is None else [repo["id"] for repo in chosen],
            "created_ms": self.now_ms()}
        self.store.put_installation(installation)
        return installation, owned if chosen is None else chosen, True

    def owned_repositories(self, login):
        """The repositories an account owns, oldest first."""
        return self.store.records.list("repositories", where={"owner": login.lower()},
                                       order_by="id")

    def repositories(self, installation, repository_ids=None):
        """The repository records an installation (or a token's `repository_ids`) reaches."""
        owned = self.owned_repositories(installation["account"])
        ids_ = repository_ids if repository_ids is not None else installation["repository_ids"]
        if ids_ is None:
            return owned
        wanted = set(ids_)
        return [repo for repo in owned if repo["id"] in wanted]

    def installation(self, app, installation_id):
        """The App's installation `installation_id`, or None."""
        record = self.store.installation(installation_id)
        return record if record is not None and record["app_id"] == app["id"] else None

    def installations(self, app):
        return self.store.installations(app_id=app["id"])

    def installation_on(self, app, account, repo=None):
        """The App's installation on an account (one that reaches repository `repo`, a
        record, when given), or None."""
        for installation in self.store.installations(app_id=app["id"], account=account.lower()):
            if repo is None or installation["repository_ids"] is None \
                    or repo["id"] in installation["repository_ids"]:
                return installation
        return None

    def installations_reaching(self, repo):
        """(App, installation) of every installation that reaches a repository record."""
        found = []
        for installation in self.store.installations(account=repo["owner"]):
            if installation["repository_ids"] is None \
                    or repo["id"] in installation["repository_ids"]:
                app = self.store.app_where("id", installation["app_id"])
                if app is not None:
                    found.append((app, installation))
        return found

    # tokens ----------------------------------------------------------------------------------
    def issue_token(self, installation, request):
        """Issue a token of `installation` narrowed by `request`: return (its text, its
        record, the repository records it is limited to or None). GitHub's 422s for a
        repository or permission the installation does not have."""
        repository_ids = None
        if request.repositories or request.repository_ids:
            reachable = self.repositories(installation)
            by_name = {repo["name"].lower(): repo["id"] for repo in reachable}
            by_id = {repo["id"] for repo in reachable}
            chosen = []
            for name in request.repositories:
                if name.lower() not in by_name:
                    raise errors.Unprocessable(NOT_IN_INSTALLATION)
                chosen.append(by_name[name.lower()])
            for number in request.repository_ids:
                if number not in by_id:
                    raise errors.Unprocessable(NOT_IN_INSTALLATION)
                chosen.append(number)
            repository_ids = sorted(set(chosen))
        elif installation["repository_ids"] is not None:
            repository_ids = list(installation["repository_ids"])
        permissions = dict(installation["permissions"])
        if request.permissions:
            if any(level not in PERMISSIONS.get(name, ()) for name, level
                   in request.permissions.items()) \
                    or not within(request.permissions, installation["permissions"]):
                raise errors.Unprocessable(NOT_GRANTED)
            permissions = dict(request.permissions)
        text = new_token()
        now = self.now_ms()
        record = {"installation_id": installation["id"], "app_id": installation["app_id"],
                  "app_slug": installation["app_slug"], "account": installation["account"],
                  "permissions": permissions,
                  "repository_ids": repository_ids,
                  "repository_selection": "all" if repository_ids is None else "selected",
                  "created_ms": now, "expires_ms": now + TOKEN_LIFETIME_MS}
        self.store.put_token(text, record)
        limited = None if repository_ids is None else \
            self.repositories(installation, repository_ids)
        return text, record, limited

    def token(self, text):
        """The record of a live installation token (None when unknown, revoked or expired on
        the emulator's clock)."""
        record = self.store.token(text)
        if record is None or record["expires_ms"] <= self.now_ms():
            return None
        return record

    def revoke(self, text):
        self.store.delete_token(text)


class AppDeliveries:
    """Where events go once Apps exist: a backend's `emit(event, build)` sends to the
    namespace's endpoints as before (`emit`) and to every App installed on the event's
    repository that subscribes to the event (`emit_to`, the runtime's one-destination queue),
    its payload with `installation: {id, node_id}` and GitHub's App delivery headers (its hook
    id, target type `integration`, the App's id). One request's: the namespace's Apps are
    looked up once."""

    def __init__(self, rules, *, emit, emit_to):
        self.rules, self.emit, self.emit_to = rules, emit, emit_to
        self._listening = None  # whether an App of the namespace has a webhook URL

    def send(self, app, event, payload):
        """Queue one event for an App's webhook (nothing when it has no URL)."""
        if app.get("webhook_url"):
            self.emit_to(event, payload, url=app["webhook_url"], secret=app["webhook_secret"],
                         hook_id=app["hook_id"], headers={
                             "X-GitHub-Hook-Installation-Target-Type": "integration",
                             "X-GitHub-Hook-Installation-Target-ID": str(app["id"])})

    def __call__(self, event, build):
        if self._listening is None:
            self._listening = any(app.get("webhook_url") for app in self.rules.store.apps())
        if not self._listening:
            self.emit(event, build)
            return
        payload = build()
        self.emit(event, payload)
        repository = payload.get("repository") if isinstance(payload, dict) else None
        if not isinstance(repository, dict):
            return
        repo = {"id": repository["id"], "owner": repository["owner"]["login"].lower()}
        for app, installation in self.rules.installations_reaching(repo):
            if event in app["events"]:
                self.send(app, event, {**payload,
                                       "installation": shapes.installation_lite(installation)})
