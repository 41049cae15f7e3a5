"""Accounts as GraphQL presents them: `User`, `Organization` or `Bot` (behind the `Actor`,
`RepositoryOwner` and `Node` interfaces), from their REST shape.

An App's bot is `<slug>[bot]` in REST and `<slug>` in GraphQL, at `/apps/<slug>` (gh shows
such an author as `app/<slug>`).
"""
BOT = "[bot]"


class Account:
    """An account; `typename` is its GraphQL type (a GitHub App is a `Bot`)."""

    def __init__(self, rest):
        self.rest = rest
        kind = rest.get("type", "User")
        self.typename = "Bot" if kind == "Bot" else kind
        self.login = rest["login"]
        self.id = rest["node_id"]
        self.database_id = rest["id"]
        self.url = rest.get("html_url")
        self.resource_path = f"/{self.login}"
        if self.typename == "Bot":
            self.login = self.login.removesuffix(BOT)
            self.resource_path = f"/apps/{self.login}"
            self.url = f"{self.url.rsplit('/', 1)[0]}/apps/{self.login}"
        self.name = None  # the emulator keeps no profile names
        self.email = ""
        self.is_site_admin = False

    def avatar_url(self, info, size=None):
        return self.rest.get("avatar_url")


def actor(rest):
    """The GraphQL object of an account's REST shape (None for None)."""
    return None if rest is None else Account(rest)
