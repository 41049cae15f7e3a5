"""AppStore: an App, its installations and their tokens as records of the namespace.

Records, like every GitHub record, so Apps are namespaced, checkpointed, restored and reset
with the repositories they are installed on. A token is kept under the SHA-256 of its text,
never the text (the state API lists records).
"""
import hashlib

APPS, INSTALLATIONS, TOKENS = "apps", "app_installations", "installation_tokens"


def token_key(token):
    """The record id of an installation token: its SHA-256."""
    return hashlib.sha256(token.encode()).hexdigest()


class AppStore:
    """Typed access to the App records of one instance; plain dicts in and out, no rules."""

    def __init__(self, records):
        self.records = records

    def app(self, slug):
        return self.records.get(APPS, slug.lower())

    def app_where(self, field, value):
        found = self.records.list(APPS, where={field: value}, limit=1)
        return found[0] if found else None

    def apps(self):
        return self.records.list(APPS)

    def put_app(self, app):
        self.records.put(APPS, app["slug"].lower(), app)

    def installation(self, installation_id):
        return self.records.get(INSTALLATIONS, str(installation_id))

    def installations(self, **where):
        return self.records.list(INSTALLATIONS, where=where, order_by="id")

    def put_installation(self, installation):
        self.records.put(INSTALLATIONS, str(installation["id"]), installation)

    def token(self, token):
        return self.records.get(TOKENS, token_key(token))

    def put_token(self, token, value):
        self.records.put(TOKENS, token_key(token), value)

    def delete_token(self, token):
        self.records.delete(TOKENS, token_key(token))

    def next_id(self, sequence):
        return self.records.next_id(sequence)
