"""GitHubStore: the emulator's records (repositories, owners, commit graphs, refs, pull requests)
and the git objects of its repositories; AppStore: GitHub Apps, their installations and tokens.

Everything lives in the instance's record store (shared SQLite), so every gunicorn worker and every
checkpoint sees the same state. Keys follow the reference: lower-cased owner/name, case-sensitive
ref names, per-repository PR numbers.
"""
import hashlib
import time

from .objects import GitObjects

REPOS, OWNERS, GRAPHS, REFS, PULLS = "repositories", "owners", "commits", "refs", "pulls"
# a pull request's life: CI results, conversation, review, protection (keys in each module)
STATUSES, CHECK_RUNS, CHECK_SUITES = "statuses", "check_runs", "check_suites"
ISSUES, COMMENTS, LABELS, REVIEWS = "issues", "issue_comments", "labels", "reviews"
PROTECTIONS = "branch_protections"


def repo_key(owner, name):
    """Return the case-insensitive repository key `owner/name`."""
    return f"{owner.lower()}/{name.lower()}"


def has_objects(repo):
    """Tell whether a repository holds git objects (seeded with files, a bundle, or empty and
    pushed to), not synthetic SHAs."""
    return repo.get("objects") is True


class GitHubStore:
    """Typed access to one instance's records; plain dicts in and out, no rules.

    `transaction()` runs a block as one write transaction; `object_rows(key)` gives the runtime's
    object rows of a repository (None: the store serves synthetic repositories only), read
    through one `GitObjects` per repository and store, whose commits are dated `now_s()`."""

    def __init__(self, records, *, transaction, object_rows=None, now_s=time.time):
        self.records = records
        self.transaction = transaction
        self._object_rows = object_rows
        self._now_s = now_s
        self._gits = {}  # repository key -> its GitObjects (a store lives for one request)

    @property
    def holds_objects(self):
        """Whether the store reads git objects at all (the runtime gave it object rows)."""
        return self._object_rows is not None

    def git(self, key):
        """The `GitObjects` of a repository (only for one that holds objects)."""
        found = self._gits.get(key)
        if found is None:
            found = self._gits[key] = GitObjects(self._object_rows(key), now_s=self._now_s)
        return found

    # repositories and owners
    def repo(self, key):
        return self.records.get(REPOS, key)

    def put_repo(self, key, value):
        self.records.put(REPOS, key, value)

    def owner(self, login):
        return self.records.get(OWNERS, login.lower())

    def put_owner(self, value):
        self.records.put(OWNERS, value["login"].lower(), value)

    # commit graph {sha: [parent shas]}: a synthetic repository's one record (immutable after
    # seeding); a git repository's commit objects (objects.py)
    def graph(self, key):
        repo = self.repo(key)
        if repo is not None and has_objects(repo) and self.holds_objects:
            return self.git(key).graph()
        value = self.records.get(GRAPHS, key)
        return value["parents"] if value else {}

    def put_graph(self, key, parents):
        self.records.put(GRAPHS, key, {"repo": key, "parents": parents})

    # references
    def ref(self, key, name):
        return self.records.get(REFS, f"{key}:{name}")

    def put_ref(self, key, value):
        self.records.put(REFS, f"{key}:{value['ref']}", value)

    def delete_ref(self, key, name):
        self.records.delete(REFS, f"{key}:{name}")

    def refs(self, key):
        return self.records.list(REFS, where={"repo": key})

    def count_refs(self, key, kind):
        return self.records.count(REFS, where={"repo": key, "kind": kind})

    # pull requests
    def pull(self, key, number):
        return self.records.get(PULLS, f"{key}:{number}")

    def put_pull(self, value):
        self.records.put(PULLS, f"{value['repo']}:{value['number']}", value)

    def pulls(self, where, *, order_by, desc, limit, offset):
        return self.records.list(PULLS, where=where, order_by=order_by, desc=desc,
                                 limit=limit, offset=offset)

    def count_pulls(self, where):
        return self.records.count(PULLS, where=where)

    def next_id(self, sequence):
        return self.records.next_id(sequence)

    # the collections of a pull request's life: one record per object, keyed by its module
    def item(self, collection, id):
        return self.records.get(collection, id)

    def put_item(self, collection, id, value):
        self.records.put(collection, id, value)

    def delete_item(self, collection, id):
        self.records.delete(collection, id)

    def items(self, collection, where, *, order_by=None, desc=False, limit=None, offset=0):
        return self.records.list(collection, where=where, order_by=order_by, desc=desc,
                                 limit=limit, offset=offset)

    def count_items(self, collection, where):
        return self.records.count(collection, where=where)


# GitHub Apps: records too, so they are namespaced, checkpointed, restored and reset with the
# repositories they are installed on; a token is kept under its SHA-256, never its text (the
# state API lists records)
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
