"""Writes of git objects: files (`repos/create-or-update-file-contents`, `repos/delete-file`)
and the git database (`git/create-blob`, `git/create-tree`, `git/create-commit`)."""
import base64
import binascii

from marshmallow import post_load, validates_schema

from .. import git, times
from ..objects import MODES
from .base import Again, Body, Value, check, fail, load, not_supplied, text, unprocessable

_TYPES = {"100644": "blob", "100755": "blob", "120000": "blob", "040000": "tree",
          "160000": "commit"}
_NOT_BASE64 = unprocessable("content is not valid Base64")
_TREE_INFO = unprocessable("Invalid tree info")


def _sha(value):
    return isinstance(value, str) and git.SHA_ANY_CASE.match(value) is not None


def _base64(value):
    try:
        return base64.b64decode(value, validate=False)
    except (binascii.Error, ValueError):
        return None


def _required(field):
    return text(not_supplied(field), required=True)


class Person(Value):
    """An author or committer: `{name, email, date}`, the date (ISO 8601) read as epoch
    seconds (None when absent)."""

    def __init__(self, field):
        super().__init__(unprocessable(f"Invalid request.\n\n{field} must have name and email"),
                         dict, allow_none=True)
        self.bad_date = unprocessable(f"Invalid request.\n\n{field}.date is not a date")

    def _deserialize(self, value, attr, data, **kwargs):
        value = super()._deserialize(value, attr, data, **kwargs)
        if not (isinstance(value.get("name"), str) and isinstance(value.get("email"), str)):
            raise self.make_error("invalid")
        date = value.get("date")
        if date is not None:
            try:
                date = times.epoch_s(date)
            except ValueError:
                fail(self.bad_date)
        return {"name": value["name"], "email": value["email"], "date": date}


def _path_ok(path):
    path = path.strip("/")
    return bool(path) and not any(part in ("", ".", "..", ".git") for part in path.split("/"))


class _File(Body):
    @post_load
    def _typed(self, data, **kwargs):
        data["path"] = data["path"].strip("/")
        data["branch"] = data.get("branch") or None
        return data


def _file(**first):
    """A file write's schema: `first`, then the path (the URL's), author, committer and
    branch (GitHub takes the default branch for an empty one; a string otherwise)."""
    return _File.from_dict({
        **first,
        "path": text(unprocessable("path is invalid"),
                     validate=check(_path_ok, unprocessable("path is invalid"))),
        "author": Person("author"),
        "committer": Person("committer"),
        "branch": Value(not_supplied("branch"), allow_none=True, validate=check(
            lambda v: not v or isinstance(v, str), not_supplied("branch"))),
    })()


PUT_FILE = _file(
    message=_required("message"), content=_required("content"),
    content_data=Again("content", _NOT_BASE64, str,
                       validate=check(lambda v: _base64(v) is not None, _NOT_BASE64)),
    sha=Value(None, allow_none=True))  # compared with the file's blob sha, whatever it is
DELETE_FILE = _file(message=_required("message"), sha=_required("sha"))


def put_file(body, path):
    """`{message, content (bytes), sha, branch, author, committer, path}` of a file write;
    `path` is the URL's."""
    found = load(PUT_FILE, {**body, "path": path})
    found["content"] = _base64(found["content"])
    return found


def delete_file(body, path):
    """`{message, sha, branch, author, committer, path}` of a file deletion."""
    return load(DELETE_FILE, {**body, "path": path})


class _Blob(Body):
    content = _required("content")
    encoding = Value(unprocessable("encoding must be utf-8 or base64"), load_default="utf-8",
                     validate=check(lambda v: v in ("utf-8", "utf8", "base64"),
                                    unprocessable("encoding must be utf-8 or base64")))

    @validates_schema
    def _decodes(self, data, **kwargs):
        if data["encoding"] == "base64" and _base64(data["content"]) is None:
            fail(_NOT_BASE64)


BLOB = _Blob()


def blob(body):
    """The bytes a blob write holds (`content` in utf-8 or base64)."""
    found = load(BLOB, body)
    if found["encoding"] == "base64":
        return _base64(found["content"])
    return found["content"].encode()


def _entry(item):
    """An entry of a tree write, checked as GitHub does: `{path, mode, type}` and a `content`
    string (a blob) or a `sha` (None deletes the path)."""
    if not (isinstance(item, dict) and isinstance(item.get("path"), str)
            and item["path"].strip("/") and item.get("mode") in MODES):
        fail(_TREE_INFO)
    kind = item.get("type", _TYPES[item["mode"]])
    if kind != _TYPES[item["mode"]]:
        fail(_TREE_INFO)
    if "content" in item:
        if not isinstance(item["content"], str) or kind != "blob":
            fail(_TREE_INFO)
        return {"path": item["path"], "mode": item["mode"], "type": kind,
                "content": item["content"]}
    sha = item.get("sha")
    if sha is not None and not _sha(sha):
        fail(unprocessable(f"Invalid tree info: {sha} is not a {kind}"))
    return {"path": item["path"], "mode": item["mode"], "type": kind,
            "sha": sha and sha.lower()}


def _entries(items):
    for item in items:
        _entry(item)


class _Tree(Body):
    tree = Value(not_supplied("tree"), list, required=True)
    base_tree = Value(_TREE_INFO, allow_none=True, load_default=None,
                      validate=check(lambda v: v is None or _sha(v), _TREE_INFO))
    entries = Again("tree", _TREE_INFO, list, validate=_entries)


TREE = _Tree()


def tree(body):
    """`{entries, base_tree}` of a tree write (shas lower-cased)."""
    found = load(TREE, body)
    base = found["base_tree"]
    return {"entries": [_entry(item) for item in found["tree"]],
            "base_tree": base and base.lower()}


class _Commit(Body):
    message = _required("message")
    tree = Value(not_supplied("tree"), str, required=True, validate=check(
        _sha, unprocessable("Tree SHA does not exist")))
    # each parent is checked with the objects (models/git_data.py): what a sha names matters
    parents = Value(unprocessable("Invalid request.\n\nparents must be an array"), list,
                    load_default=())
    author = Person("author")
    committer = Person("committer")

    @post_load
    def _lower(self, data, **kwargs):
        return {**data, "tree": data["tree"].lower()}


COMMIT = _Commit()


def commit(body):
    """`{message, tree, parents, author, committer}` of a commit write (shas lower-cased)."""
    return load(COMMIT, body)
