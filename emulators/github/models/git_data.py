"""The git database API (GitHub's name for it) over a repository's objects: blobs, trees, commits.

Objects written here are git's own (`git fetch` gets the same SHAs); none of them moves a ref
(`git/update-ref` or a push does that).
"""
import base64
import binascii

from .. import errors, git, ids, shapes
from ..objects import MODES
from .commits import info
from .contents import _invalid, _person

_TYPES = {"100644": "blob", "100755": "blob", "120000": "blob", "040000": "tree",
          "160000": "commit"}


def _sha(value):
    return isinstance(value, str) and git.SHA_ANY_CASE.match(value) is not None


class GitDataRules:
    """Write and read blobs, trees and commits; `rules` reaches commits (what a name names)."""

    def __init__(self, *, repos, rules):
        self.repos = repos
        self.rules = rules

    def create_blob(self, owner, name, body):
        """Answer `git/create-blob`: {url, sha}."""
        op = "git/create-blob"
        repo, objects = self.repos.with_objects(owner, name, op)
        if not isinstance(body.get("content"), str):
            raise _invalid(op, "content")
        encoding = body.get("encoding", "utf-8")
        if encoding not in ("utf-8", "utf8", "base64"):
            raise errors.Unprocessable(op, "encoding must be utf-8 or base64")
        if encoding == "base64":
            try:
                data = base64.b64decode(body["content"], validate=False)
            except (binascii.Error, ValueError):
                raise errors.Unprocessable(op, "content is not valid Base64")
        else:
            data = body["content"].encode()
        sha = objects.write_blob(data)
        return {"url": f"{self.repos.urls(repo)[0]}/git/blobs/{sha}", "sha": sha}

    def get_blob(self, owner, name, sha):
        """Answer `git/get-blob`."""
        op = "git/get-blob"
        repo, objects = self.repos.with_objects(owner, name, op)
        data = objects.blob(sha.lower()) if _sha(sha) else None
        if data is None:
            raise errors.NotFound(op)
        return shapes.blob(self.repos.urls(repo)[0], sha.lower(), data,
                           ids.node_id("github-blobs", "B_", sha.lower()))

    def _tree_json(self, repo, objects, sha, *, recursive=False):
        entries = objects.entries(sha, recursive=recursive)
        blobs = [e["sha"] for e in entries if e["type"] == "blob"]
        objects.store.prefetch(blobs)
        sizes = {b: len(objects.blob(b) or b"") for b in blobs}
        return shapes.tree(self.repos.urls(repo)[0], sha, entries, sizes)

    def create_tree(self, owner, name, body):
        """Answer `git/create-tree` (`tree` entries over an optional `base_tree`)."""
        op = "git/create-tree"
        repo, objects = self.repos.with_objects(owner, name, op)
        items = body.get("tree")
        if not isinstance(items, list):
            raise _invalid(op, "tree")
        base = body.get("base_tree")
        if base is not None and (not _sha(base) or objects.kind(base.lower()) != "tree"):
            raise errors.Unprocessable(op, "Invalid tree info")
        entries = []
        for item in items:
            if not (isinstance(item, dict) and isinstance(item.get("path"), str)
                    and item["path"].strip("/") and item.get("mode") in MODES):
                raise errors.Unprocessable(op, "Invalid tree info")
            kind = item.get("type", _TYPES[item["mode"]])
            if kind != _TYPES[item["mode"]]:
                raise errors.Unprocessable(op, "Invalid tree info")
            if "content" in item:
                if not isinstance(item["content"], str) or kind != "blob":
                    raise errors.Unprocessable(op, "Invalid tree info")
                entries.append({"path": item["path"], "mode": item["mode"],
                                "content": item["content"]})
                continue
            sha = item.get("sha")
            if sha is not None:
                if not _sha(sha) or (kind != "commit" and objects.kind(sha.lower()) != kind):
                    raise errors.Unprocessable(op, f"Invalid tree info: {sha} is not a {kind}")
                sha = sha.lower()
            entries.append({"path": item["path"], "mode": item["mode"], "sha": sha})
        try:
            sha = objects.write_tree(entries, base_tree=base and base.lower())
        except ValueError:
            raise errors.Unprocessable(op, "Invalid tree info")
        return self._tree_json(repo, objects, sha)

    def get_tree(self, owner, name, tree_sha, recursive):
        """Answer `git/get-tree`: by tree or commit SHA, or a branch or tag name."""
        op = "git/get-tree"
        repo, objects = self.repos.with_objects(owner, name, op)
        sha = tree_sha.lower() if _sha(tree_sha) else None
        if sha is None or objects.kind(sha) not in ("tree", "commit"):
            commit = self.rules.commits.resolve(repo, objects, tree_sha)
            sha = commit if commit else None
        tree = objects.tree_of(sha) if sha else None
        if tree is None:
            raise errors.NotFound(op)
        return self._tree_json(repo, objects, tree, recursive=recursive)

    def create_commit(self, owner, name, body):
        """Answer `git/create-commit` (the commit moves no ref)."""
        op = "git/create-commit"
        repo, objects = self.repos.with_objects(owner, name, op)
        if not isinstance(body.get("message"), str):
            raise _invalid(op, "message")
        tree = body.get("tree")
        if not isinstance(tree, str):
            raise _invalid(op, "tree")
        if not _sha(tree) or objects.kind(tree.lower()) != "tree":
            raise errors.Unprocessable(op, "Tree SHA does not exist")
        parents = body.get("parents", [])
        if not isinstance(parents, list):
            raise errors.Unprocessable(op, "Invalid request.\n\nparents must be an array")
        for parent in parents:
            if not _sha(parent) or objects.kind(parent.lower()) != "commit":
                raise errors.Unprocessable(
                    op, "Parent SHA does not exist or is not a commit object")
        author = _person(body.get("author"), op, "author")
        committer = _person(body.get("committer"), op, "committer") or author
        sha = objects.write_commit(tree.lower(), [p.lower() for p in parents], body["message"],
                                   author=author, committer=committer)
        return shapes.git_commit(*self.repos.urls(repo), sha, info(objects, sha))

    def get_git_commit(self, owner, name, sha):
        """Answer `git/get-commit`."""
        op = "git/get-commit"
        repo, objects = self.repos.with_objects(owner, name, op)
        found = info(objects, sha.lower()) if _sha(sha) else None
        if found is None:
            raise errors.NotFound(op)
        return shapes.git_commit(*self.repos.urls(repo), sha.lower(), found)
