"""GitHub rules: `GitHubBackend` over one namespace's records, its JSON shapes and seeding.

No HTTP here: `GitHubBackend` takes parsed input, applies the reference GitHub emulator's order of
checks (the first that fails answers) and returns wire-shaped dicts or raises
`errors.GitHubError`s. Its ref and pull request operations live in `refs.py` and `pulls.py`.
"""
import base64
import binascii
import io
import re

from . import actors, errors, events, git, ids, shapes, times
from .commits import CommitRules
from .contents import ContentRules
from .database import GitDataRules
from .lifecycle.checks import CheckRules
from .lifecycle.issues import IssueRules
from .lifecycle.merges import MergeRules
from .lifecycle.protection import ProtectionRules
from .lifecycle.reviews import ReviewRules
from .lifecycle.statuses import StatusRules
from .objects import GitObjects
from .pulls import PullRules
from .refs import RefRules
from .store import GitHubStore, has_objects, repo_key

SEGMENT = re.compile(r"^[a-zA-Z0-9_.-]+\Z")
ACTOR = actors.DEFAULT


def _js_key_order(keys):
    # JavaScript object order: array-index-like keys first (ascending), then insertion order
    def is_index(k):
        return k.isdigit() and (k == "0" or not k.startswith("0")) and int(k) < 2 ** 32 - 1
    indices = sorted((k for k in keys if is_index(k)), key=int)
    return indices + [k for k in keys if not is_index(k)]


class GitHubBackend(RefRules, PullRules, CommitRules, ContentRules, GitDataRules, StatusRules,
                    CheckRules, IssueRules, ReviewRules, ProtectionRules, MergeRules):
    """The rules of one namespace's GitHub over its records; URLs are built from `base_url`.

    `actor` is the login the request acts as, or a callable returning it (looked up once,
    when first needed)."""

    def __init__(self, records, *, now_ms, transaction, base_url, emit=None, objects=None,
                 actor=ACTOR, named=None):
        self._actor_source = actor
        # named(login): whether the credential map names that user (a collaborator to be)
        self._named = named or (lambda login: False)
        # objects(repo key): the runtime's object rows of a repository (None: synthetic only)
        self._object_rows = objects
        self._gits = {}
        self.store = GitHubStore(records, self._git_objects if objects else None)
        # emit(event, build): queue a webhook; `build()` makes the payload only if one listens
        self.emit = emit or (lambda event, build: None)
        self.now_ms = now_ms
        self.transaction = transaction
        self.base_url = base_url.rstrip("/")
        self._authors = {}
        self._open_pulls = {}  # repository key -> open PR count written by this backend
        self._open_issues = {}  # and its open issue count (lifecycle/issues.py)
        self._conflicts = {}  # (repository, head, base) -> conflicting paths (lifecycle/merges.py)
        self._diffs = {}  # (repository, base, head) -> the files changed (commits.py)

    def now(self):
        """The clock's time as GitHub shows it (to the second)."""
        return times.timestamp(self.now_ms())

    # shapes ------------------------------------------------------------------------------

    def repo_json(self, repo):
        return shapes.repository(
            self.base_url, repo, self.store.owner(repo["owner"]),
            open_issues=self.open_pulls(repo) + self._open_issues.get(
                repo["key"], repo.get("open_issues", 0)),
            created_at=times.timestamp(repo["created_ms"]),
            pushed_at=times.timestamp(repo.get("pushed_ms", repo["created_ms"])))

    def open_pulls(self, repo):
        """The repository's open PR count: kept in its record by every PR write (`_put_pull`),
        so no read scans its PRs; counted for a record written without it (older state, the
        state API)."""
        key = repo["key"]
        if key in self._open_pulls:  # written in this request: `repo` may be the older value
            return self._open_pulls[key]
        if "open_pulls" in repo:
            return repo["open_pulls"]
        return self.store.count_pulls({"repo": key, "state": "open"})

    def _repo_url(self, repo):
        login = self.store.owner(repo["owner"])["login"]
        return f"{self.base_url}/repos/{login}/{repo['name']}"

    def ref_json(self, repo, ref, repo_url=None):
        return shapes.reference(repo_url or self._repo_url(repo), ref)

    def pull_json(self, repo, pull, *, tips=None, repo_json=None, full=True, fresh=False):
        """Shape a PR; an open PR shows the current branch tips.

        `full` adds what only `pulls/get` and the writes carry (commit and line counts,
        mergeability);
        `fresh` marks a PR just created, whose mergeability GitHub has not computed yet.
        """
        repo_json = repo_json or self.repo_json(repo)
        head_sha, base_sha = pull["head_sha"], pull["base_sha"]
        if pull["state"] == "open":
            if tips is None:
                tips = self._tips(repo["key"], (pull["head_ref"], pull["base_ref"]))
            head_sha = tips.get(pull["head_ref"], head_sha)
            base_sha = tips.get(pull["base_ref"], base_sha)
        login = pull.get("user", ACTOR)
        if login not in self._authors:  # a page of PRs shares one author: one lookup
            self._authors[login] = shapes.user(self.base_url, self.store.owner(login))
        author = self._authors[login]
        shape = shapes.pull(repo_json, pull, author, head_sha=head_sha, base_sha=base_sha)
        assignees = [self.user_json(a) for a in pull.get("assignees", [])]
        shape.update({
            "labels": self.issue_labels(repo, pull), "assignees": assignees,
            "assignee": assignees[0] if assignees else None,
            "requested_reviewers": [self.user_json(r)
                                    for r in pull.get("requested_reviewers", [])],
            "merged_at": pull.get("merged_at"),
            "merge_commit_sha": pull.get("merge_commit_sha"),
            "author_association": self.association(repo, login)})
        if full:
            graph = self.store.graph(repo["key"])
            commits = len(git.reachable(graph, head_sha) - git.reachable(graph, base_sha))
            shape.update(shapes.pull_counts(pull, commits=commits, computed=not fresh,
                                            files=self.pull_diff(repo, head_sha, base_sha)))
            shape.update({"merged": pull.get("merged", False),
                          "merged_by": self.user_json(pull["merged_by"])
                          if pull.get("merged_by") else None,
                          "comments": pull.get("comments", 0)})
            if shape["mergeable"] is not None:  # computed, open: from the trees and protection
                mergeable, rebaseable, state = self.mergeability(repo, pull, head_sha,
                                                                 base_sha)
                shape.update({"mergeable": mergeable, "rebaseable": rebaseable,
                              "mergeable_state": state})
        elif "merged" in shape:
            shape["merged"] = pull.get("merged", False)
        return shape

    @property
    def actor_login(self):
        """The login this request acts as."""
        if callable(self._actor_source):
            self._actor_source = self._actor_source()
        return self._actor_source

    def _actor(self):
        """Return the login of the acting user, its account made on first use (each token is
        a user: actors.py)."""
        return self._user_account(self.actor_login)["login"]

    def collaborator(self, login):
        """The account of a user who may be assigned or asked to review: one the emulator
        knows, or one the credential map names (made now); None for a stranger."""
        record = self.store.owner(login)
        if record is None and self._named(login):
            record = self._user_account(login)
        return record if record is not None and record.get("type") == "User" else None

    def _user_account(self, login):
        """The user account `login`, made on first use."""
        record = self.store.owner(login)
        if record is None:
            user_node = ids.node_id("github", "U_", self.store.next_id("node:U_"))
            record = {"login": login, "type": "User", "id": self.store.next_id("owner_ids"),
                      "node_id": user_node}
            self.store.put_owner(record)
        return record

    def user_json(self, login):
        """A known account's `simple-user` (one lookup per login per request)."""
        if login not in self._authors:
            record = self.store.owner(login) or {"login": login, "id": 0, "node_id": "U_0",
                                                 "type": "User"}
            self._authors[login] = shapes.user(self.base_url, record)
        return self._authors[login]

    def association(self, repo, login):
        """`author_association`: the owner is `OWNER`, every other account a `MEMBER` of the
        owning organization (the emulator grants every token write access)."""
        return "OWNER" if login.lower() == repo["owner"].lower() else "MEMBER"

    def person(self, login):
        """The git identity of an account (`{name, email}`), as GitHub writes web commits."""
        record = self.user_json(login)
        return {"name": record["login"],
                "email": f"{record['id']}+{record['login']}@users.noreply.github.com"}

    def _commit_sha(self, key, ref, *, exact=False):
        """The commit a `{ref}` names (a sha, a branch, `heads/<b>`, a tag), or None;
        `exact` accepts a full sha only. A repository of git objects resolves as
        `repos/get-commit` does (abbreviated shas, annotated tags peeled)."""
        repo = self.store.repo(key)
        if has_objects(repo) and not exact:
            objects = self.git(repo, "repos/get-commit")
            # GitHub's docs: "a commit SHA, branch name (heads/BRANCH_NAME), or tag name"
            return self.resolve(repo, objects, ref) or (
                self.resolve(repo, objects, "refs/" + ref)
                if ref.startswith(("heads/", "tags/")) else None)
        graph = self.store.graph(key)
        lowered = ref.lower()
        if git.SHA_ANY_CASE.match(ref) and lowered in graph:
            return lowered
        if exact:
            return None
        for name in (f"refs/heads/{ref}", f"refs/tags/{ref}", f"refs/{ref}"):
            found = self.store.ref(key, name)
            if found is not None:
                return found["sha"]
        return None

    def _repo_commit(self, owner, name, ref, operation):
        """(repository, the commit sha `ref` names) of a commit listing; 404 when either is
        absent."""
        repo = self._repo(owner, name, operation)
        sha = self._commit_sha(repo["key"], ref)
        if sha is None:
            raise errors.NotFound(operation)
        return repo, sha

    def commit_json(self, repo, sha):
        """A commit as the REST API shows it (`commit`): `repos/get-commit`'s shape of a git
        repository's commit (commits.py), a synthetic one for a seeded SHA."""
        if has_objects(repo):
            return self._commit_json(repo, self.git(repo, "repos/get-commit"), sha)
        repo_json = self.repo_json(repo)
        repo_url, html = repo_json["url"], repo_json["html_url"]
        person = self.person(self.actor_login)
        author = {**person, "date": self.now()}
        parents = self.store.graph(repo["key"]).get(sha, [])
        return {"sha": sha, "node_id": f"C_{sha[:20]}", "url": f"{repo_url}/commits/{sha}",
                "html_url": f"{html}/commit/{sha}",
                "comments_url": f"{repo_url}/commits/{sha}/comments",
                "commit": {"author": author, "committer": author,
                           "message": f"Synthetic commit {sha[:7]}",
                           "tree": {"sha": sha, "url": f"{repo_url}/git/trees/{sha}"},
                           "url": f"{repo_url}/git/commits/{sha}", "comment_count": 0},
                "author": None, "committer": None,
                "parents": [{"sha": p, "url": f"{repo_url}/commits/{p}",
                             "html_url": f"{html}/commit/{p}"} for p in parents]}

    def _sender(self):
        return events.sender(self.base_url, self.store.owner(self._actor()))

    def _tips(self, key, branches):
        """Map each existing branch among `branches` to its tip sha (one lookup per branch)."""
        tips = {}
        for branch in set(branches):
            ref = self.store.ref(key, f"refs/heads/{branch}")
            if ref is not None:
                tips[branch] = ref["sha"]
        return tips

    # git objects ---------------------------------------------------------------------------

    def _git_objects(self, key):
        found = self._gits.get(key)
        if found is None:
            found = self._gits[key] = GitObjects(self._object_rows(key),
                                                 now_s=lambda: self.now_ms() // 1000)
        return found

    def git(self, repo, operation):
        """Return the `GitObjects` of a repository record; a synthetic repository (seeded with
        SHAs only) answers the emulator-only `SyntheticRepository` error."""
        if not has_objects(repo) or self._object_rows is None:
            raise errors.SyntheticRepository(operation)
        return self._git_objects(repo["key"])

    def git_repo(self, owner, name, operation):
        """Return (repository record, its `GitObjects`): 404 when absent, the emulator-only
        error when synthetic."""
        repo = self._repo(owner, name, operation)
        return repo, self.git(repo, operation)

    # seeding (`POST /__admin/github/repositories`) ----------------------------------------

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
        with self.transaction():
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
        objects = self._git_objects(key)
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
                "default_branch": default_branch, "created_ms": self.now_ms(), "open_pulls": 0,
                "objects": objects}
        store.put_repo(key, repo)
        if graph:
            store.put_graph(key, graph)
        for branch in _js_key_order(list(branches)):
            self._put_ref(key, f"refs/heads/{branch}", branches[branch],
                          ids.node_id("github", "REF_", store.next_id("node:REF_")))
        for tag in sorted(tags or ()):
            self._put_ref(key, f"refs/tags/{tag}", tags[tag],
                          ids.node_id("github", "REF_", store.next_id("node:REF_")))
        return self.repo_json(repo)

    def _put_ref(self, key, name, sha, ref_node_id):
        ref = {"repo": key, "ref": name, "kind": name.split("/")[1], "sha": sha,
               "node_id": ref_node_id}
        ref.update(self._object_type(key, sha))
        self.store.put_ref(key, ref)
        return ref

    def _object_type(self, key, sha):
        """`{"object_type": "tag"}` for a ref to an annotated tag (a repository of objects),
        else nothing: every other ref names a commit."""
        repo = self.store.repo(key)
        if repo is not None and has_objects(repo) and self._object_rows is not None \
                and self._git_objects(key).kind(sha) == "tag":
            return {"object_type": "tag"}
        return {}

    def _repo(self, owner, name, operation):
        repo = self.store.repo(repo_key(owner, name))
        if repo is None:
            raise errors.NotFound(operation)
        return repo


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
