"""Accounts: who a request acts as, the users it may assign or ask to review, and their shapes.

Each token is a user (actors.py): the acting user's account is made the first time a write
names it. Account shapes are made once per request (`Accounts` lives as long as its backend),
because a page of pull requests or comments names the same few accounts many times.
"""
from .. import actors, events, ids, shapes


class Accounts:
    """The accounts of one namespace, as one request sees them.

    `actor` is the login the request acts as, or a callable returning it (looked up once, when
    first needed); `named(login)` tells whether the credential map names that user (a
    collaborator to be)."""

    def __init__(self, store, base_url, *, actor=actors.DEFAULT, named=None):
        self.store = store
        self.base_url = base_url
        self._actor_source = actor
        self._named = named or (lambda login: False)
        self._shaped = {}  # login -> its `simple-user` shape, made in this request

    @property
    def actor_login(self):
        """The login this request acts as (no account is made for it)."""
        if callable(self._actor_source):
            self._actor_source = self._actor_source()
        return self._actor_source

    def actor(self):
        """The login of the acting user, its account made on first use."""
        return self.account(self.actor_login)["login"]

    def account(self, login):
        """The user account `login`, made on first use."""
        record = self.store.owner(login)
        if record is None:
            user_node = ids.node_id("github", "U_", self.store.next_id("node:U_"))
            record = {"login": login, "type": "User", "id": self.store.next_id("owner_ids"),
                      "node_id": user_node}
            self.store.put_owner(record)
        return record

    def collaborator(self, login):
        """The account of a user who may be assigned or asked to review: one the emulator
        knows, or one the credential map names (made now); None for a stranger."""
        record = self.store.owner(login)
        if record is None and self._named(login):
            record = self.account(login)
        return record if record is not None and record.get("type") == "User" else None

    def find(self, login):
        """A known account's `simple-user`, or None (no account is made)."""
        record = self.store.owner(login)
        return None if record is None else self.json(record["login"])

    def json(self, login):
        """A known account's `simple-user` (one lookup per login per request)."""
        if login not in self._shaped:
            record = self.store.owner(login) or {"login": login, "id": 0, "node_id": "U_0",
                                                 "type": "User"}
            self._shaped[login] = shapes.user(self.base_url, record)
        return self._shaped[login]

    def shape(self, record):
        """The `simple-user` of an account record."""
        return shapes.user(self.base_url, record)

    def association(self, repo, login):
        """`author_association`: the owner is `OWNER`, every other account a `MEMBER` of the
        owning organization (the emulator grants every token write access)."""
        return "OWNER" if login.lower() == repo["owner"].lower() else "MEMBER"

    def person(self, login):
        """The git identity of an account (`{name, email}`), as GitHub writes web commits."""
        record = self.json(login)
        return {"name": record["login"],
                "email": f"{record['id']}+{record['login']}@users.noreply.github.com"}

    def sender(self):
        """The account a webhook event is attributed to: the acting user."""
        return events.sender(self.base_url, self.store.owner(self.actor()))
