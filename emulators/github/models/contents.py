"""The contents API over a repository's objects: read a file or folder at a ref, write or
delete one file as a commit on a branch, find the README.

A write is a new blob, tree and commit, then the branch moves through `refs.write` (the path
of a push), so webhooks and PR heads follow.
"""
import re

from .. import errors, shapes
from ..objects import DEFAULT_PERSON
from ..store import has_objects
from .commits import info

README = re.compile(r"^readme(\.[^/]*)?\Z", re.IGNORECASE)


class ContentRules:
    """Read and write files; `rules` reaches commits (what a ref names) and refs (a write moves
    its branch)."""

    def __init__(self, store, *, repos, rules):
        self.store = store
        self.repos = repos
        self.rules = rules

    def _at_ref(self, repo, objects, ref):
        """(ref name, commit sha) a read's `?ref=` names (the default branch when None)."""
        if self.store.count_refs(repo["key"], "heads") == 0:
            raise errors.NotFoundMessage("This repository is empty.")
        ref = ref or repo["default_branch"]
        sha = self.rules.commits.resolve(repo, objects, ref)
        if sha is None:
            raise errors.NotFoundMessage(f"No commit found for the ref {ref}")
        return ref, sha

    def _item(self, repo, objects, ref, entry, *, content=False):
        repo_url, html_url = self.repos.urls(repo)
        data = objects.blob(entry["sha"]) if entry["type"] == "blob" else None
        return shapes.content_item(repo_url, html_url, ref, entry, len(data or b""),
                                   with_content=data if content else None)

    def get(self, repo, path, ref=None):
        """`repos/get-content`: (a file's shape with its content or a folder's entries, the
        file's bytes or None)."""
        objects = self.repos.objects(repo)
        ref, sha = self._at_ref(repo, objects, ref)
        entry = objects.lookup(info(objects, sha)["tree"], path.strip("/"))
        if entry is None:
            raise errors.NotFound()
        if entry["type"] == "tree":
            children = [{**e, "path": f"{entry['path']}/{e['path']}" if entry["path"]
                         else e["path"]} for e in objects.entries(entry["sha"])]
            objects.store.prefetch([e["sha"] for e in children if e["type"] == "blob"])
            return [self._item(repo, objects, ref, e) for e in children], None
        return (self._item(repo, objects, ref, entry, content=True),
                objects.blob(entry["sha"]) if entry["type"] == "blob" else None)

    def readme(self, repo, ref=None):
        """`repos/get-readme`: (the README at the root of the ref, its bytes)."""
        objects = self.repos.objects(repo)
        ref, sha = self._at_ref(repo, objects, ref)
        found = [e for e in objects.entries(info(objects, sha)["tree"])
                 if e["type"] == "blob" and README.match(e["path"])]
        if not found:
            raise errors.NotFound()
        entry = sorted(found, key=lambda e: (e["path"].lower() != "readme.md", e["path"]))[0]
        return self._item(repo, objects, ref, entry, content=True), objects.blob(entry["sha"])

    def raw(self, repo, tail):
        """A file's bytes for `download_url`/`raw_url` (`<ref>/<path>`, the ref may hold
        slashes: the longest prefix naming a ref or commit wins, as GitHub's raw host does),
        or None."""
        if repo is None or not has_objects(repo):
            return None
        objects = self.store.git(repo["key"])
        parts = tail.split("/")
        for cut in range(len(parts) - 1, 0, -1):
            sha = self.rules.commits.resolve(repo, objects, "/".join(parts[:cut]))
            if sha is not None:
                entry = objects.lookup(info(objects, sha)["tree"], "/".join(parts[cut:]))
                return objects.blob(entry["sha"]) if entry and entry["type"] == "blob" else None
        return None

    def put(self, repo, path, *, message, content, sha=None, branch=None, author=None,
            committer=None):
        """`repos/create-or-update-file-contents`: write `content` (bytes) at `path` as a
        commit on `branch` (the default one when None); an existing file needs its blob
        `sha`. Returns ({content, commit}, whether the file is new)."""
        return self._write_file(repo, path, content, message=message, sha=sha, branch=branch,
                                author=author, committer=committer)

    def delete(self, repo, path, *, message, sha, branch=None, author=None, committer=None):
        """`repos/delete-file`: `{content: null, commit}`."""
        return self._write_file(repo, path, None, message=message, sha=sha, branch=branch,
                                author=author, committer=committer)[0]

    def _write_file(self, repo, path, data, *, message, sha, branch, author, committer):
        """Write (`data`) or delete (None) one file; `author`/`committer` are `{name, email,
        date}` (epoch seconds or None) or None."""
        objects = self.repos.objects(repo)
        path = path.strip("/")
        key = repo["key"]
        with self.store.transaction():
            has_heads = self.store.count_refs(key, "heads") > 0
            branch = branch or self.store.repo(key)["default_branch"]
            ref = self.store.ref(key, f"refs/heads/{branch}")
            if ref is None and (has_heads or data is None):
                raise errors.NotFoundMessage(f"Branch {branch} not found")
            tip = ref["sha"] if ref else None
            base_tree = info(objects, tip)["tree"] if tip else None
            current = objects.lookup(base_tree, path) if base_tree else None
            if current is not None and current["type"] == "tree":
                raise errors.Unprocessable(f"{path} is a directory")
            if data is None and current is None:
                raise errors.NotFound()
            if current is not None and sha is None:
                raise errors.Unprocessable('Invalid request.\n\n"sha" wasn\'t supplied.')
            if current is not None and sha != current["sha"]:
                raise errors.Conflict(f"{path} does not match {sha}")
            if data is None:
                tree = objects.write_tree([{"path": path, "sha": None}], base_tree=base_tree)
            else:
                mode = current["mode"] if current else "100644"
                tree = objects.write_tree([{"path": path, "mode": mode,
                                            "sha": objects.write_blob(data)}],
                                          base_tree=base_tree)
            who = committer or author or DEFAULT_PERSON
            commit_sha = objects.write_commit(tree, [tip] if tip else [], message,
                                              author=author or who, committer=who)
            self.rules.refs.write(self.store.repo(key), f"refs/heads/{branch}", commit_sha,
                                  expect=tip or "0" * 40)
        repo_url, html_url = self.repos.urls(repo)
        commit = shapes.git_commit(repo_url, html_url, commit_sha, info(objects, commit_sha))
        if data is None:
            return {"content": None, "commit": commit}, False
        entry = objects.lookup(tree, path)
        item = shapes.content_item(repo_url, html_url, branch, entry, len(data))
        return {"content": item, "commit": commit}, current is None
