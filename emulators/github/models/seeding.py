"""Seeding (`POST /__admin/github/repositories`): one repository of synthetic SHAs, of files, of a
git bundle's objects, or empty, validated whole before anything is written (all or nothing).
"""
import base64
import binascii
import io
import re

from .. import errors, git, ids
from ..store import repo_key

SEGMENT = re.compile(r"^[a-zA-Z0-9_.-]+\Z")


def _js_key_order(keys):
    # JavaScript object order: array-index-like keys first (ascending), then insertion order
    def is_index(k):
        return k.isdigit() and (k == "0" or not k.startswith("0")) and int(k) < 2 ** 32 - 1
    indices = sorted((k for k in keys if is_index(k)), key=int)
    return indices + [k for k in keys if not is_index(k)]


class Seeding:
    """Seed repositories; a seeded branch or tag is written as any ref is (`refs`)."""

    def __init__(self, store, clock, *, repos, refs):
        self.store = store
        self.clock = clock
        self.repos = repos
        self.refs = refs

    def seed(self, body):
        """Create one synthetic repository after validating the whole fixture (all or nothing)."""
        def fail(message, status=400):
            raise errors.SeedInvalid(message, status)

        if not isinstance(body, dict) or not all(
                isinstance(body.get(k), str) and SEGMENT.match(body[k])
                and body[k] not in (".", "..")
                for k in ("owner", "name")):
            fail("Synthetic owner and name must be nonempty path segments")
        owner, name = body["owner"], body["name"]
        key = repo_key(owner, name)
        with self.store.transaction():
            if self.store.repo(key) is not None:
                fail("Synthetic repository already exists", 409)
            if "private" in body and not isinstance(body["private"], bool):
                fail("private must be boolean")
            default_branch = body.get("default_branch")
            default_branch = "main" if default_branch is None else default_branch
            if git.bad_branch_name(default_branch):
                fail("Invalid synthetic default branch")
            sources = [k for k in ("commits", "files", "bundle") if body.get(k) is not None]
            if len(sources) > 1:
                fail("Seed one of commits (synthetic SHAs), files or bundle")
            if sources and sources[0] in ("files", "bundle"):
                if body.get("branches") is not None:
                    fail("branches come from the files or the bundle")
                return self._seed_objects(body, key, owner, name, default_branch, fail)
            commits = [] if body.get("commits") is None else body["commits"]
            branches = {} if body.get("branches") is None else body["branches"]
            if not isinstance(commits, list) or not isinstance(branches, dict):
                fail("commits must be an array and branches an object")
            graph = {}
            for commit in commits:
                if not (isinstance(commit, dict) and isinstance(commit.get("sha"), str)
                        and git.SHA_LOWER.match(commit["sha"])
                        and isinstance(commit.get("parents"), list)
                        and all(isinstance(p, str) and git.SHA_LOWER.match(p)
                                for p in commit["parents"])):
                    fail("Commit requires a lowercase 40-hex SHA and parent SHAs")
                if commit["sha"] in graph:
                    fail("Duplicate synthetic commit")
                graph[commit["sha"]] = list(commit["parents"])
            if any(parent not in graph for parents in graph.values() for parent in parents):
                fail("Every parent must be seeded")
            if git.has_cycle(graph):
                fail("Synthetic ancestry must be acyclic")
            for branch, target in branches.items():
                if (git.bad_branch_name(branch) or not isinstance(target, str)
                        or not git.SHA_LOWER.match(target) or target not in graph):
                    fail("Branch must name a seeded commit")
            if branches and default_branch not in branches:
                fail("Seeded branches must include the default branch")
            # an empty repository holds no synthetic SHA: a push or a content write fills it
            return self._write_seed(key, owner, name, body.get("private") is True, default_branch,
                                    graph, branches, objects=not graph)

    def _seed_objects(self, body, key, owner, name, default_branch, fail):
        """Seed a repository of real objects: files per branch, or a git bundle."""
        objects = self.store.git(key)
        if body.get("bundle") is not None:
            branches, tags = _seed_bundle(objects, body["bundle"], fail)
        else:
            branches, tags = _seed_files(objects, body["files"], default_branch,
                                         body.get("message"), fail), {}
        if branches and default_branch not in branches:
            fail("Seeded branches must include the default branch")
        return self._write_seed(key, owner, name, body.get("private") is True, default_branch,
                                None, branches, objects=True, tags=tags)

    def _write_seed(self, key, owner, name, private, default_branch, graph, branches, *,
                    objects=False, tags=None):
        store = self.store
        repo_id = store.next_id("repository_ids")
        owner_record = store.owner(owner)
        if owner_record is None:
            owner_id = store.next_id("owner_ids")
            owner_record = {"login": owner, "id": owner_id,
                            "node_id": ids.node_id("github", "O_", store.next_id("node:O_"))}
            store.put_owner(owner_record)
        repo = {"key": key, "id": repo_id,
                "node_id": ids.node_id("github", "R_", store.next_id("node:R_")),
                "name": name, "owner": owner_record["login"].lower(), "private": private,
                "default_branch": default_branch, "created_ms": self.clock.ms(), "open_pulls": 0,
                "objects": objects}
        store.put_repo(key, repo)
        if graph:
            store.put_graph(key, graph)
        for branch in _js_key_order(list(branches)):
            self.refs.put(key, f"refs/heads/{branch}", branches[branch])
        for tag in sorted(tags or ()):
            self.refs.put(key, f"refs/tags/{tag}", tags[tag])
        return self.repos.json(repo)


def _file_content(path, value, fail):
    """Return (bytes, mode) of a seeded file: text, or `{content, encoding, mode}`."""
    if isinstance(value, str):
        return value.encode(), "100644"
    if not isinstance(value, dict) or not isinstance(value.get("content"), str):
        fail(f"File {path} must be text or {{content, encoding, mode}}")
    mode = value.get("mode", "100644")
    if mode not in ("100644", "100755", "120000"):
        fail(f"File {path}: mode must be 100644, 100755 or 120000")
    if value.get("encoding", "utf-8") == "base64":
        try:
            return base64.b64decode(value["content"], validate=True), mode
        except binascii.Error:
            fail(f"File {path}: content is not base64")
    if value.get("encoding", "utf-8") != "utf-8":
        fail(f"File {path}: encoding must be utf-8 or base64")
    return value["content"].encode(), mode


def _seed_files(objects, files, default_branch, message, fail):
    """Write one commit per branch of `{branch: {path: content}}` (the default branch first,
    every other branch a child of it); return `{branch: commit sha}`."""
    if not isinstance(files, dict) or not all(isinstance(v, dict) for v in files.values()):
        fail("files must be an object of branches, each an object of paths")
    if files and default_branch not in files:
        fail("Seeded branches must include the default branch")
    if message is not None and not isinstance(message, str):
        fail("message must be a string")
    branches = {}
    order = [default_branch] + sorted(b for b in files if b != default_branch)
    for branch in [b for b in order if b in files]:
        if git.bad_branch_name(branch) or not git.valid_ref_name(f"refs/heads/{branch}"):
            fail("Invalid synthetic branch name")
        entries = []
        for path, value in files[branch].items():
            parts = path.split("/")
            if not path or any(p in ("", ".", "..", ".git") for p in parts) or "\0" in path:
                fail(f"Invalid file path {path!r}")
            content, mode = _file_content(path, value, fail)
            entries.append({"path": path, "mode": mode, "sha": objects.write_blob(content)})
        try:
            tree = objects.write_tree(entries)
        except ValueError as exc:
            fail(str(exc))
        parents = [] if branch == default_branch else [branches[default_branch]]
        text = message or "Initial commit" if branch == default_branch else f"Seed {branch}"
        branches[branch] = objects.write_commit(tree, parents, text + "\n")
    return branches


def _seed_bundle(objects, text, fail):
    """Store a base64 git bundle's objects; return its (`{branch: sha}`, `{tag: sha}`)."""
    from dulwich.bundle import read_bundle

    if not isinstance(text, str):
        fail("bundle must be a base64 string (git bundle create ... --all)")
    try:
        bundle = read_bundle(io.BytesIO(base64.b64decode(text, validate=True)))
    except (binascii.Error, ValueError, AssertionError) as exc:
        fail(f"bundle is not a git bundle: {exc}")
    try:
        if bundle.prerequisites:
            fail("bundle needs commits it does not hold (make it with --all, no ranges)")
        try:
            objects.store.unpack(bundle.pack_data)
        except Exception as exc:  # dulwich raises several kinds for a damaged pack
            fail(f"bundle pack is damaged: {exc}")
        branches, tags = {}, {}
        for ref, sha in bundle.references.items():
            name = ref.decode()
            for prefix, into in (("refs/heads/", branches), ("refs/tags/", tags)):
                if name.startswith(prefix):
                    into[name[len(prefix):]] = sha.decode()
        for sha in [*branches.values(), *tags.values()]:
            if objects.kind(sha) is None:
                fail(f"bundle ref names {sha}, which it does not hold")
        return branches, tags
    finally:
        bundle.close()
