"""The git database API (GitHub's name for it) over a repository's objects: blobs, trees, commits.

Objects written here are git's own (`git fetch` gets the same SHAs); none of them moves a ref
(`git/update-ref` or a push does that).
"""
from .. import errors, git, ids, shapes
from .commits import info


def _sha(value):
    return isinstance(value, str) and git.SHA_ANY_CASE.match(value) is not None


class GitDataRules:
    """Write and read blobs, trees and commits; `rules` reaches commits (what a name names)."""

    def __init__(self, *, repos, rules):
        self.repos = repos
        self.rules = rules

    def create_blob(self, repo, data):
        """`git/create-blob` of `data` (bytes): `{url, sha}`."""
        sha = self.repos.objects(repo).write_blob(data)
        return {"url": f"{self.repos.url(repo)}/git/blobs/{sha}", "sha": sha}

    def blob(self, repo, sha):
        """`git/get-blob` (404 for anything but a blob's sha)."""
        objects = self.repos.objects(repo)
        data = objects.blob(sha.lower()) if _sha(sha) else None
        if data is None:
            raise errors.NotFound()
        return shapes.blob(self.repos.url(repo), sha.lower(), data,
                           ids.node_id("github-blobs", "B_", sha.lower()))

    def _tree_json(self, repo, objects, sha, *, recursive=False):
        entries = objects.entries(sha, recursive=recursive)
        blobs = [e["sha"] for e in entries if e["type"] == "blob"]
        objects.store.prefetch(blobs)
        sizes = {b: len(objects.blob(b) or b"") for b in blobs}
        return shapes.tree(self.repos.url(repo), sha, entries, sizes)

    def create_tree(self, repo, entries, base_tree=None):
        """`git/create-tree`: `entries` (`{path, mode, type}` with a `content` string or a
        `sha`, None deleting the path) over `base_tree` (a tree sha) when given."""
        objects = self.repos.objects(repo)
        if base_tree is not None and objects.kind(base_tree) != "tree":
            raise errors.Unprocessable("Invalid tree info")
        written = []
        for entry in entries:
            sha = entry.get("sha")
            if "content" not in entry and sha is not None and entry["type"] != "commit" \
                    and objects.kind(sha) != entry["type"]:
                raise errors.Unprocessable(f"Invalid tree info: {sha} is not a {entry['type']}")
            written.append({k: v for k, v in entry.items() if k != "type"})
        try:
            sha = objects.write_tree(written, base_tree=base_tree)
        except ValueError:
            raise errors.Unprocessable("Invalid tree info")
        return self._tree_json(repo, objects, sha)

    def tree(self, repo, name, recursive=False):
        """`git/get-tree`: by tree or commit SHA, or a branch or tag name."""
        objects = self.repos.objects(repo)
        sha = name.lower() if _sha(name) else None
        if sha is None or objects.kind(sha) not in ("tree", "commit"):
            commit = self.rules.commits.resolve(repo, objects, name)
            sha = commit if commit else None
        tree = objects.tree_of(sha) if sha else None
        if tree is None:
            raise errors.NotFound()
        return self._tree_json(repo, objects, tree, recursive=recursive)

    def create_commit(self, repo, *, message, tree, parents=(), author=None, committer=None):
        """`git/create-commit` (it moves no ref); `author`/`committer` are `{name, email,
        date}` (epoch seconds or None), the committer the author when None."""
        objects = self.repos.objects(repo)
        if objects.kind(tree) != "tree":
            raise errors.Unprocessable("Tree SHA does not exist")
        for parent in parents:
            if not _sha(parent) or objects.kind(parent.lower()) != "commit":
                raise errors.Unprocessable("Parent SHA does not exist or is not a commit object")
        sha = objects.write_commit(tree, [p.lower() for p in parents], message, author=author,
                                   committer=committer or author)
        return shapes.git_commit(*self.repos.urls(repo), sha, info(objects, sha))

    def commit(self, repo, sha):
        """`git/get-commit`."""
        objects = self.repos.objects(repo)
        found = info(objects, sha.lower()) if _sha(sha) else None
        if found is None:
            raise errors.NotFound()
        return shapes.git_commit(*self.repos.urls(repo), sha.lower(), found)
