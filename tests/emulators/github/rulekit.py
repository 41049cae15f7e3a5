"""What the rule-object tests build on: a store over an in-memory SQLite, a frozen clock, the
two services every rule reads (accounts, repositories), records written straight into the
store, and a stand-in for the sibling rules a rule object calls. No HTTP, no other rule."""
from types import SimpleNamespace

from emulators.github.models.accounts import Accounts
from emulators.github.models.repositories import Repositories
from emulators.github.store import GitHubStore, repo_key
from emulators.github.times import Clock
from emulators.runtime.state.db import Database
from emulators.runtime.state.objects import Objects
from emulators.runtime.state.records import Records

T0 = 1_700_000_000_000
URL = "http://gh.test"
A, B, C = "a" * 40, "b" * 40, "c" * 40


class Kit:
    """A store and a clock, and what a rule object is built with beside them."""

    def __init__(self):
        self.db = Database(":memory:")
        self.clock = Clock(lambda: T0)
        self.store = GitHubStore(
            Records(self.db, "github", "default", "github"), transaction=self.db.transaction,
            object_rows=lambda key: Objects(self.db, "github", "default", key),
            now_s=self.clock.seconds)
        self.accounts = Accounts(self.store, URL, actor="octocat")
        self.repos = Repositories(self.store, URL)
        self.events = []

    def emit(self, event, build):
        self.events.append(event)

    def shared(self, **siblings):
        """The keywords of a `Rule`: the services, the emitter and stand-in siblings."""
        return {"emit": self.emit, "accounts": self.accounts, "repos": self.repos,
                "rules": rules(**siblings)}

    def repository(self, *, graph=None, branches=None, objects=False, owner="org", name="r"):
        """Write a repository record (synthetic `graph` `{sha: parents}`, or `objects`) and
        its branches `{name: sha}`; return the record."""
        key = repo_key(owner, name)
        if self.store.owner(owner) is None:
            self.store.put_owner({"login": owner, "id": 1, "node_id": "O_1"})
        repo = {"key": key, "id": 1, "node_id": "R_1", "name": name, "owner": owner,
                "private": False, "default_branch": "main", "created_ms": T0, "open_pulls": 0,
                "objects": objects}
        self.store.put_repo(key, repo)
        if graph:
            self.store.put_graph(key, graph)
        for branch, sha in (branches or {}).items():
            self.branch(repo, branch, sha)
        return self.store.repo(key)

    def branch(self, repo, name, sha):
        self.store.put_ref(repo["key"], {"repo": repo["key"], "ref": f"refs/heads/{name}",
                                         "kind": "heads", "sha": sha, "node_id": "REF_1"})

    def pull(self, repo, number=1, *, head="topic", base="main", **fields):
        """Write an open PR record from `head` into `base`; return it."""
        tips = self.repos.tips(repo["key"], (head, base))
        pull = {"repo": repo["key"], "number": number, "id": number, "node_id": f"PR_{number}",
                "state": "open", "title": "t", "body": None, "draft": False,
                "created_at": "2023-11-14T22:13:20Z", "updated_at": "2023-11-14T22:13:20Z",
                "closed_at": None, "maintainer_can_modify": True, "head_ref": head,
                "base_ref": base, "head_sha": tips.get(head), "base_sha": tips.get(base),
                "user": "author", "issue_id": 100 + number, **fields}
        self.store.put_pull(pull)
        return pull


def rules(**siblings):
    """Stand-ins for the sibling rule objects a rule object calls (`rules.<area>.<method>`):
    each keyword is an area, its value a dict of methods."""
    return SimpleNamespace(**{area: SimpleNamespace(**methods)
                              for area, methods in siblings.items()})
