"""The contents API over a repository's objects: read a file or folder at a ref, write or
delete one file as a commit on a branch, find the README.

A write is a new blob, tree and commit, then the branch moves through `refs.write` (the path
of a push), so webhooks and PR heads follow.
"""
import base64
import binascii
import re

from .. import errors, schemas, shapes, times
from ..objects import DEFAULT_PERSON
from ..store import has_objects, repo_key
from .commits import info

README = re.compile(r"^readme(\.[^/]*)?\Z", re.IGNORECASE)


def _invalid(op, field):
    # GitHub's schema validation message, as its API answers a missing field
    return errors.Unprocessable(op, f'Invalid request.\n\n"{field}" wasn\'t supplied.')


def _require_strings(body, op, *fields):
    """Refuse a body missing one of `fields` (or holding a non-string) as GitHub does."""
    for field in fields:
        if not isinstance(body.get(field), str):
            raise _invalid(op, field)


def _person(value, op, field):
    """Return `{name, email, date}` (epoch seconds or None) of an author/committer field."""
    if value is None:
        return None
    if not (isinstance(value, dict) and isinstance(value.get("name"), str)
            and isinstance(value.get("email"), str)):
        raise errors.Unprocessable(op, f"Invalid request.\n\n{field} must have name and email")
    date = value.get("date")
    if date is not None:
        try:
            date = times.epoch_s(date)
        except ValueError:
            raise errors.Unprocessable(op, f"Invalid request.\n\n{field}.date is not a date")
    return {"name": value["name"], "email": value["email"], "date": date}


class ContentRules:
    """Read and write files; `rules` reaches commits (what a ref names) and refs (a write moves
    its branch)."""

    def __init__(self, store, *, repos, rules):
        self.store = store
        self.repos = repos
        self.rules = rules

    def _at_ref(self, repo, objects, params, op):
        """Return (ref name, commit sha) of a read's `?ref=` (the default branch when absent)."""
        if self.store.count_refs(repo["key"], "heads") == 0:
            raise errors.NotFoundMessage(op, "This repository is empty.")
        ref = schemas.first_values(params).get("ref") or repo["default_branch"]
        sha = self.rules.commits.resolve(repo, objects, ref)
        if sha is None:
            raise errors.NotFoundMessage(op, f"No commit found for the ref {ref}")
        return ref, sha

    def _item(self, repo, objects, ref, entry, *, content=False):
        repo_url, html_url = self.repos.urls(repo)
        data = objects.blob(entry["sha"]) if entry["type"] == "blob" else None
        return shapes.content_item(repo_url, html_url, ref, entry, len(data or b""),
                                   with_content=data if content else None)

    def get_content(self, owner, name, path, params):
        """Answer `repos/get-content`: a file (with its content) or a folder's entries.

        Returns (shape, raw bytes of a file or None)."""
        op = "repos/get-content"
        repo, objects = self.repos.with_objects(owner, name, op)
        ref, sha = self._at_ref(repo, objects, params, op)
        entry = objects.lookup(info(objects, sha)["tree"], path.strip("/"))
        if entry is None:
            raise errors.NotFound(op)
        if entry["type"] == "tree":
            children = [{**e, "path": f"{entry['path']}/{e['path']}" if entry["path"]
                         else e["path"]} for e in objects.entries(entry["sha"])]
            objects.store.prefetch([e["sha"] for e in children if e["type"] == "blob"])
            return [self._item(repo, objects, ref, e) for e in children], None
        return (self._item(repo, objects, ref, entry, content=True),
                objects.blob(entry["sha"]) if entry["type"] == "blob" else None)

    def get_readme(self, owner, name, params):
        """Answer `repos/get-readme`: the README at the root of the ref."""
        op = "repos/get-readme"
        repo, objects = self.repos.with_objects(owner, name, op)
        ref, sha = self._at_ref(repo, objects, params, op)
        found = [e for e in objects.entries(info(objects, sha)["tree"])
                 if e["type"] == "blob" and README.match(e["path"])]
        if not found:
            raise errors.NotFound(op)
        entry = sorted(found, key=lambda e: (e["path"].lower() != "readme.md", e["path"]))[0]
        return self._item(repo, objects, ref, entry, content=True), objects.blob(entry["sha"])

    def raw_file(self, owner, name, tail):
        """Return a file's bytes for `download_url`/`raw_url` (`<ref>/<path>`, the ref may hold
        slashes: the longest prefix naming a ref or commit wins, as GitHub's raw host does),
        or None."""
        repo = self.store.repo(repo_key(owner, name))
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

    def put_content(self, owner, name, path, body):
        """Answer `repos/create-or-update-file-contents`: (status, {content, commit})."""
        op = "repos/create-or-update-file-contents"
        repo, objects = self.repos.with_objects(owner, name, op)
        _require_strings(body, op, "message", "content")
        try:
            data = base64.b64decode(body["content"], validate=False)
        except (binascii.Error, ValueError):
            raise errors.Unprocessable(op, "content is not valid Base64")
        return self._write_file(repo, objects, path, body, op, data)

    def delete_file(self, owner, name, path, body):
        """Answer `repos/delete-file`: {content: null, commit}."""
        op = "repos/delete-file"
        repo, objects = self.repos.with_objects(owner, name, op)
        _require_strings(body, op, "message", "sha")
        return self._write_file(repo, objects, path, body, op, None)[1]

    def _write_file(self, repo, objects, path, body, op, data):
        path = path.strip("/")
        if not path or any(part in ("", ".", "..", ".git") for part in path.split("/")):
            raise errors.Unprocessable(op, "path is invalid")
        author = _person(body.get("author"), op, "author")
        committer = _person(body.get("committer"), op, "committer")
        key = repo["key"]
        with self.store.transaction():
            has_heads = self.store.count_refs(key, "heads") > 0
            branch = body.get("branch") or self.store.repo(key)["default_branch"]
            if not isinstance(branch, str):
                raise _invalid(op, "branch")
            ref = self.store.ref(key, f"refs/heads/{branch}")
            if ref is None and (has_heads or data is None):
                raise errors.NotFoundMessage(op, f"Branch {branch} not found")
            tip = ref["sha"] if ref else None
            base_tree = info(objects, tip)["tree"] if tip else None
            current = objects.lookup(base_tree, path) if base_tree else None
            if current is not None and current["type"] == "tree":
                raise errors.Unprocessable(op, f"{path} is a directory")
            if data is None and current is None:
                raise errors.NotFound(op)
            if current is not None and body.get("sha") is None:
                raise _invalid(op, "sha")
            if current is not None and body["sha"] != current["sha"]:
                raise errors.Conflict(op, f"{path} does not match {body['sha']}")
            if data is None:
                tree = objects.write_tree([{"path": path, "sha": None}], base_tree=base_tree)
            else:
                mode = current["mode"] if current else "100644"
                tree = objects.write_tree([{"path": path, "mode": mode,
                                            "sha": objects.write_blob(data)}],
                                          base_tree=base_tree)
            who = committer or author or DEFAULT_PERSON
            sha = objects.write_commit(tree, [tip] if tip else [], body["message"],
                                       author=author or who, committer=who)
            self.rules.refs.write(self.store.repo(key), f"refs/heads/{branch}", sha,
                                  expect=tip or "0" * 40, op=op)
        repo_url, html_url = self.repos.urls(repo)
        commit = shapes.git_commit(repo_url, html_url, sha, info(objects, sha))
        if data is None:
            return 200, {"content": None, "commit": commit}
        entry = objects.lookup(tree, path)
        item = shapes.content_item(repo_url, html_url, branch, entry, len(data))
        return (201 if current is None else 200), {"content": item, "commit": commit}
