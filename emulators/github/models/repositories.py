"""Repositories: finding one, its shape and URLs, its open counts, its branch tips, its objects.

Every rule starts from a repository record; what they all ask of it lives here. The open pull
request and issue counts are kept in the repository's record by the writes that change them;
the values written in this request are remembered, because a write's answer may be shaped from
a record read before it.
"""
from .. import errors, shapes, times
from ..store import has_objects, repo_key


class Repositories:
    """The repositories of one namespace over its store; URLs are built from `base_url`."""

    def __init__(self, store, base_url):
        self.store = store
        self.base_url = base_url
        self._open = {}  # (repository key, "open_pulls" | "open_issues") -> written this request

    def get(self, owner, name):
        """The repository record `owner/name`, or None."""
        return self.store.repo(repo_key(owner, name))

    def find(self, owner, name):
        """The repository record `owner/name`; 404 when there is none."""
        repo = self.get(owner, name)
        if repo is None:
            raise errors.NotFound()
        return repo

    def require_branches(self, repo):
        """Refuse a repository with no branch yet, as GitHub does (409)."""
        if self.store.count_refs(repo["key"], "heads") == 0:
            raise errors.EmptyRepository()

    def objects(self, repo):
        """The `GitObjects` of a repository record; a synthetic repository (seeded with SHAs
        only) answers the emulator-only `SyntheticRepository` error."""
        if not has_objects(repo) or not self.store.holds_objects:
            raise errors.SyntheticRepository()
        return self.store.git(repo["key"])

    # shapes and URLs ---------------------------------------------------------------------------

    def json(self, repo):
        """The repository as GitHub shows it (`full-repository`)."""
        return shapes.repository(
            self.base_url, repo, self.store.owner(repo["owner"]),
            open_issues=self.open_pulls(repo) + self._open.get(
                (repo["key"], "open_issues"), repo.get("open_issues", 0)),
            created_at=times.timestamp(repo["created_ms"]),
            pushed_at=times.timestamp(repo.get("pushed_ms", repo["created_ms"])))

    def url(self, repo):
        """The repository's REST URL."""
        return self.urls(repo)[0]

    def urls(self, repo):
        """(the repository's REST URL, its web URL)."""
        login = self.store.owner(repo["owner"])["login"]
        return (f"{self.base_url}/repos/{login}/{repo['name']}",
                f"{shapes.web(self.base_url)}/{login}/{repo['name']}")

    def ref_json(self, repo, ref, repo_url=None):
        """A reference record as GitHub shows it (`git-ref`)."""
        return shapes.reference(repo_url or self.url(repo), ref)

    # counts and tips ---------------------------------------------------------------------------

    def open_pulls(self, repo):
        """The repository's open PR count: kept in its record by every PR write, so no read
        scans its PRs; counted for a record written without it (older state, the state API)."""
        key = repo["key"]
        if (key, "open_pulls") in self._open:  # written in this request: `repo` may be older
            return self._open[key, "open_pulls"]
        if "open_pulls" in repo:
            return repo["open_pulls"]
        return self.store.count_pulls({"repo": key, "state": "open"})

    def count_open(self, key, field, delta, *, counted=None):
        """Move the repository's `field` count (`open_pulls`, `open_issues`) by `delta`; a
        record written without the count starts from `counted()` (the count before this
        write), or 0."""
        repo = self.store.repo(key)
        if field not in repo:
            repo[field] = counted() if counted else 0
        repo[field] += delta
        self.store.put_repo(key, repo)
        self._open[key, field] = repo[field]

    def tips(self, key, branches):
        """Map each existing branch among `branches` to its tip sha (one lookup per branch)."""
        tips = {}
        for branch in set(branches):
            ref = self.store.ref(key, f"refs/heads/{branch}")
            if ref is not None:
                tips[branch] = ref["sha"]
        return tips
