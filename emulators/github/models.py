"""GitHub rules: seeding, commit ancestry, ref names, refs and pull requests, and their JSON shapes.

No HTTP here: `GitHubBackend` takes parsed input, applies the reference's precedence (spec
`github.md` §5–§6) and returns wire-shaped dicts or raises `errors.GitHubError`s.
"""
import re
from collections import deque
from datetime import datetime, timedelta, timezone

from . import errors, events, schemas, shapes
from .store import GitHubStore, repo_key

SHA_ANY_CASE = re.compile(r"^[a-fA-F0-9]{40}\Z")
SHA_LOWER = re.compile(r"^[a-f0-9]{40}\Z")
SEGMENT = re.compile(r"^[a-zA-Z0-9_.-]+\Z")
MAX_SAFE_INTEGER = 2 ** 53 - 1

# §6.6: characters Git refuses anywhere in a ref name
_BAD_REF_CHARS = set("~^:?*[\\") | {chr(c) for c in range(33)} | {chr(127)}

_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

ACTOR = "mockingbird-user"
CROSS_REPO = "Mockingbird does not model cross-repository heads"
PULL_REFS = "Mockingbird does not model provider-managed pull refs"


# --- small pure helpers -------------------------------------------------------------------

def iso(ms):
    """Format epoch milliseconds like JavaScript's `Date.toISOString()`."""
    moment = _EPOCH + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _fnv1a(text):
    # reference `opaqueToken`: 32-bit FNV-1a over UTF-16 code units, then a murmur-style finaliser
    h = 0x811C9DC5
    data = text.encode("utf-16-le")
    for i in range(0, len(data), 2):
        h ^= data[i] | (data[i + 1] << 8)
        h = (h * 0x01000193) & 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    return h ^ (h >> 13)


def node_id(salt, prefix, n):
    """Return the reference's deterministic node id `<prefix><14 base-62 chars>` for counter n."""
    out, round_ = [], 0
    while len(out) < 14:
        h = _fnv1a(f"{salt}:{prefix}:{n}:{round_}")
        for _ in range(5):
            if len(out) == 14:
                break
            out.append(_ALPHABET[h % 62])
            h //= 62
        round_ += 1
    return prefix + "".join(out)


def valid_ref_name(name):
    """Apply the Git ref-format subset of §6.6."""
    if not isinstance(name, str) or not name.startswith("refs/"):
        return False
    parts = name.split("/")
    if len(parts) < 3:
        return False
    for part in parts:
        if not part or part.startswith(".") or part.endswith(".lock"):
            return False
    return not (any(c in _BAD_REF_CHARS for c in name) or ".." in name or "@{" in name
                or name.endswith("."))


def is_ancestor(graph, ancestor, descendant):
    """Tell whether `ancestor` is reachable from `descendant` by parent links (equal counts)."""
    if ancestor not in graph:
        return False
    seen, queue = {descendant}, deque([descendant])
    while queue:
        sha = queue.popleft()
        if sha == ancestor:
            return True
        for parent in graph.get(sha, ()):
            if parent not in seen:
                seen.add(parent)
                queue.append(parent)
    return False


def _reachable(graph, sha):
    """Return every commit reachable from `sha` (itself included) by parent links."""
    seen, stack = {sha}, [sha]
    while stack:
        for parent in graph.get(stack.pop(), ()):
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return seen


def _new_commits(graph, tip, known):
    """Return the commits reachable from `tip` and not in `known`, parents before children."""
    order, seen, stack = [], set(known), [(tip, False)]
    while stack:
        sha, expanded = stack.pop()
        if expanded:
            order.append(sha)
            continue
        if sha in seen:
            continue
        seen.add(sha)
        stack.append((sha, True))
        stack.extend((parent, False) for parent in graph.get(sha, ()) if parent not in seen)
    return order


def _has_cycle(graph):
    # Kahn's algorithm, iterative, so 100 000-commit chains are fine
    children_count = {sha: 0 for sha in graph}
    for parents in graph.values():
        for parent in parents:
            children_count[parent] += 1
    ready = [sha for sha, count in children_count.items() if count == 0]
    visited = 0
    while ready:
        sha = ready.pop()
        visited += 1
        for parent in graph[sha]:
            children_count[parent] -= 1
            if children_count[parent] == 0:
                ready.append(parent)
    return visited != len(graph)


def _bad_branch_name(name):
    return not isinstance(name, str) or not name or "\0" in name or any(c.isspace() for c in name)


def _js_key_order(keys):
    # JavaScript object order: array-index-like keys first (ascending), then insertion order
    def is_index(k):
        return k.isdigit() and (k == "0" or not k.startswith("0")) and int(k) < 2 ** 32 - 1
    indices = sorted((k for k in keys if is_index(k)), key=int)
    return indices + [k for k in keys if not is_index(k)]


def parse_pull_number(raw):
    """Return the pull number of a path segment, or None (decimal digits only, safe integer)."""
    if not re.fullmatch(r"[1-9][0-9]*", raw or ""):
        return None
    number = int(raw)
    return number if number <= MAX_SAFE_INTEGER else None


# --- the backend --------------------------------------------------------------------------

class GitHubBackend:
    """The rules of one namespace's GitHub over its records; URLs are built from `base_url`."""

    def __init__(self, records, *, now_ms, transaction, base_url, emit=None):
        self.store = GitHubStore(records)
        # emit(event, build): queue a webhook; `build()` makes the payload only if one listens
        self.emit = emit or (lambda event, build: None)
        self.now_ms = now_ms
        self.transaction = transaction
        self.base_url = base_url.rstrip("/")
        self._authors = {}

    # shapes ------------------------------------------------------------------------------

    def repo_json(self, repo):
        created = iso(repo["created_ms"])
        return shapes.repository(
            self.base_url, repo, self.store.owner(repo["owner"]),
            open_pulls=self.store.count_pulls({"repo": repo["key"], "state": "open"}),
            created_at=created, pushed_at=iso(repo.get("pushed_ms", repo["created_ms"])))

    def _repo_url(self, repo):
        login = self.store.owner(repo["owner"])["login"]
        return f"{self.base_url}/repos/{login}/{repo['name']}"

    def ref_json(self, repo, ref, repo_url=None):
        return shapes.reference(repo_url or self._repo_url(repo), ref)

    def pull_json(self, repo, pull, *, tips=None, repo_json=None, full=True, fresh=False):
        """Shape a PR; an open PR shows the current branch tips (§4.4 tip projection).

        `full` adds what only `pulls/get` and the writes carry (commit count, mergeability);
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
        if full:
            graph = self.store.graph(repo["key"])
            commits = len(_reachable(graph, head_sha) - _reachable(graph, base_sha))
            shape.update(shapes.pull_counts(pull, commits=commits, computed=not fresh))
        return shape

    def _actor(self):
        """Return the login of the acting user (created on first use): the author of every PR.

        The emulator models no authentication, so every request acts as this one member.
        """
        if self.store.owner(ACTOR) is None:
            user_node = node_id("github", "U_", self.store.next_id("node:U_"))
            self.store.put_owner({"login": ACTOR, "type": "User",
                                  "id": self.store.next_id("owner_ids"), "node_id": user_node})
        return ACTOR

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

    # seeding (§5) ------------------------------------------------------------------------

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
            if _bad_branch_name(default_branch):
                fail("Invalid synthetic default branch")
            commits = [] if body.get("commits") is None else body["commits"]
            branches = {} if body.get("branches") is None else body["branches"]
            if not isinstance(commits, list) or not isinstance(branches, dict):
                fail("commits must be an array and branches an object")
            graph = {}
            for commit in commits:
                if not (isinstance(commit, dict) and isinstance(commit.get("sha"), str)
                        and SHA_LOWER.match(commit["sha"])
                        and isinstance(commit.get("parents"), list)
                        and all(isinstance(p, str) and SHA_LOWER.match(p)
                                for p in commit["parents"])):
                    fail("Commit requires a lowercase 40-hex SHA and parent SHAs")
                if commit["sha"] in graph:
                    fail("Duplicate synthetic commit")
                graph[commit["sha"]] = list(commit["parents"])
            if any(parent not in graph for parents in graph.values() for parent in parents):
                fail("Every parent must be seeded")
            if _has_cycle(graph):
                fail("Synthetic ancestry must be acyclic")
            for branch, target in branches.items():
                if (_bad_branch_name(branch) or not isinstance(target, str)
                        or not SHA_LOWER.match(target) or target not in graph):
                    fail("Branch must name a seeded commit")
            if branches and default_branch not in branches:
                fail("Seeded branches must include the default branch")
            return self._write_seed(key, owner, name, body.get("private") is True, default_branch,
                                    graph, branches)

    def _write_seed(self, key, owner, name, private, default_branch, graph, branches):
        store = self.store
        repo_id = store.next_id("repository_ids")
        owner_record = store.owner(owner)
        if owner_record is None:
            owner_id = store.next_id("owner_ids")
            owner_record = {"login": owner, "id": owner_id,
                            "node_id": node_id("github", "O_", store.next_id("node:O_"))}
            store.put_owner(owner_record)
        repo = {"key": key, "id": repo_id,
                "node_id": node_id("github", "R_", store.next_id("node:R_")),
                "name": name, "owner": owner_record["login"].lower(), "private": private,
                "default_branch": default_branch, "created_ms": self.now_ms()}
        store.put_repo(key, repo)
        store.put_graph(key, graph)
        for branch in _js_key_order(list(branches)):
            self._put_ref(key, f"refs/heads/{branch}", branches[branch],
                          node_id("github", "REF_", store.next_id("node:REF_")))
        return self.repo_json(repo)

    def _put_ref(self, key, name, sha, ref_node_id):
        ref = {"repo": key, "ref": name, "kind": name.split("/")[1], "sha": sha,
               "node_id": ref_node_id}
        self.store.put_ref(key, ref)
        return ref

    # repositories and refs (§6.1–§6.5) ---------------------------------------------------

    def _repo(self, owner, name, operation):
        repo = self.store.repo(repo_key(owner, name))
        if repo is None:
            raise errors.NotFound(operation)
        return repo

    def get_repo(self, owner, name):
        return self.repo_json(self._repo(owner, name, "repos/get"))

    def _repo_with_refs(self, owner, name, operation):
        """Return the repository, refusing one with no branch yet as GitHub does (409)."""
        repo = self._repo(owner, name, operation)
        if self.store.count_refs(repo["key"], "heads") == 0:
            raise errors.EmptyRepository(operation)
        return repo

    def get_ref(self, owner, name, tail):
        repo = self._repo_with_refs(owner, name, "git/get-ref")
        ref = self.store.ref(repo["key"], "refs/" + tail)
        if ref is None:
            raise errors.NotFound("git/get-ref")
        return self.ref_json(repo, ref)

    def _refs_under(self, repo, prefix):
        found = (r for r in self.store.refs(repo["key"]) if r["ref"].startswith(prefix))
        return sorted(found, key=lambda r: r["ref"].encode("utf-16-be"))

    def matching_refs(self, owner, name, tail):
        repo = self._repo_with_refs(owner, name, "git/list-matching-refs")
        repo_url = self._repo_url(repo)
        found = self._refs_under(repo, "refs/" + tail)
        return [self.ref_json(repo, ref, repo_url) for ref in found]

    def list_refs(self, owner, name, tail, params):
        """Answer `GET git/refs[/{tail}]`: (the exact ref, 1, 1) or (a page of refs, page, last).

        GitHub still serves this older listing: an exact name answers that one reference, any
        other tail lists the references whose name starts with it (404 when there is none).
        """
        op = "git/list-matching-refs"
        repo = self._repo_with_refs(owner, name, op)
        page, per_page = schemas.page_query(params)
        if tail:
            exact = self.store.ref(repo["key"], "refs/" + tail)
            if exact is not None:
                return self.ref_json(repo, exact), 1, 1
        found = self._refs_under(repo, "refs/" + tail)
        if tail and not found:
            raise errors.NotFound(op)
        repo_url = self._repo_url(repo)
        offset = (page - 1) * per_page
        return ([self.ref_json(repo, ref, repo_url) for ref in found[offset:offset + per_page]],
                page, -(-len(found) // per_page))

    def create_ref(self, owner, name, body):
        op = "git/create-ref"
        repo = self._repo(owner, name, op)
        body = body if isinstance(body, dict) else {}
        sha, ref_name = self._checked_sha(body, op), body.get("ref")
        _check_writable_ref(ref_name, op)
        key = repo["key"]
        with self.transaction():
            if self.store.count_refs(key, "heads") == 0:
                raise errors.EmptyRepository(op)
            if self.store.ref(key, ref_name) is not None:
                raise errors.Unprocessable(op, "Reference already exists")
            for existing in self.store.refs(key):
                if (existing["ref"].startswith(ref_name + "/")
                        or ref_name.startswith(existing["ref"] + "/")):
                    raise errors.Unprocessable(
                        op, "Reference name conflicts with an existing reference")
            if sha not in self.store.graph(key):
                raise errors.Unprocessable(op, "Object does not exist")
            ref = self._put_ref(key, ref_name, sha,
                                node_id("github", "REF_", self.store.next_id("node:REF_")))
            self._pushed(key)
            self.emit("create", lambda: events.create(
                self.repo_json(self.store.repo(key)), ref_name, self._sender()))
            self._emit_push(key, ref_name, events.ZERO_SHA, sha, forced=False)
        return self.ref_json(repo, ref)

    @staticmethod
    def _checked_sha(body, op):
        sha = body.get("sha")
        if not isinstance(sha, str) or not SHA_ANY_CASE.match(sha):
            raise errors.Unprocessable(
                op, "Invalid request: sha must be a 40-character hexadecimal value")
        return sha.lower()

    def update_ref(self, owner, name, tail, body):
        op = "git/update-ref"
        repo = self._repo(owner, name, op)
        body = body if isinstance(body, dict) else {}
        sha, ref_name = self._checked_sha(body, op), "refs/" + tail
        _check_writable_ref(ref_name, op)
        if "force" in body and not isinstance(body["force"], bool):
            raise errors.Unprocessable(op, "Invalid request: force must be boolean")
        return self.ref_json(repo, self._fast_forward(repo["key"], ref_name, sha,
                                                      force=body.get("force") is True, op=op))

    def _fast_forward(self, key, ref_name, sha, *, force, op):
        """Check-and-write a ref move atomically against the tip current right now (§6.5 6–9)."""
        with self.transaction():
            ref = self.store.ref(key, ref_name)
            if ref is None:
                raise errors.Unprocessable(op, "Reference does not exist")
            graph = self.store.graph(key)
            if sha not in graph:
                raise errors.Unprocessable(op, "Object does not exist")
            fast_forward = is_ancestor(graph, ref["sha"], sha)
            if not force and not fast_forward:
                raise errors.Unprocessable(op, "Update is not a fast forward")
            before, ref = ref["sha"], {**ref, "sha": sha}
            self.store.put_ref(key, ref)
            self._pushed(key)
            if before != sha:
                self._emit_push(key, ref_name, before, sha, forced=not fast_forward)
                self._emit_synchronize(key, ref_name, before, sha)
        return ref

    def delete_ref(self, owner, name, tail):
        """Delete a reference; open PRs whose head or base was that branch close (as on GitHub)."""
        op = "git/delete-ref"
        repo = self._repo(owner, name, op)
        ref_name = "refs/" + tail
        _check_writable_ref(ref_name, op)
        key = repo["key"]
        with self.transaction():
            ref = self.store.ref(key, ref_name)
            if ref is None:
                raise errors.Unprocessable(op, "Reference does not exist")
            self.store.delete_ref(key, ref_name)
            self._pushed(key)
            self.emit("delete", lambda: events.delete(
                self.repo_json(self.store.repo(key)), ref_name, self._sender()))
            self._emit_push(key, ref_name, ref["sha"], events.ZERO_SHA, forced=False)
            if ref_name.startswith("refs/heads/"):
                self._close_pulls_on(repo, ref_name[len("refs/heads/"):], ref["sha"])
        return ref

    def _close_pulls_on(self, repo, branch, last_sha):
        """Close the open PRs whose head or base branch is gone, keeping their last tips."""
        key, now = repo["key"], iso(self.now_ms())
        gone = [p for side in ("head_ref", "base_ref")
                for p in self.store.pulls({"repo": key, "state": "open", side: branch},
                                          order_by=None, desc=False, limit=None, offset=0)]
        for pull in sorted(gone, key=lambda p: p["number"]):
            tips = self._tips(key, (pull["head_ref"], pull["base_ref"]))
            closed = {**pull, "state": "closed", "updated_at": now, "closed_at": now,
                      "head_sha": tips.get(pull["head_ref"], last_sha),
                      "base_sha": tips.get(pull["base_ref"], last_sha)}
            self._put_pull(closed)
            self.emit("pull_request", lambda closed=closed: events.pull_request(
                "closed", self.pull_json(repo, closed), self._sender()))

    def _emit_push(self, key, ref_name, before, after, *, forced):
        def build():
            graph = self.store.graph(key)
            known = set() if before == events.ZERO_SHA else _reachable(graph, before)
            if after == events.ZERO_SHA:  # a deletion brings no commits
                known = set(graph)
            return events.push(self.repo_json(self.store.repo(key)), ref_name, before, after,
                               _new_commits(graph, after, known), self._sender(),
                               forced=forced, timestamp=iso(self.now_ms()))
        self.emit("push", build)

    def _emit_synchronize(self, key, ref_name, before, after):
        """Tell `pull_request` listeners that the head of each open PR on the branch moved."""
        if not ref_name.startswith("refs/heads/"):
            return
        branch = ref_name[len("refs/heads/"):]
        pulls = self.store.pulls({"repo": key, "state": "open", "head_ref": branch},
                                 order_by=None, desc=False, limit=None, offset=0)
        repo = self.store.repo(key)
        for pull in sorted(pulls, key=lambda p: p["number"]):
            self.emit("pull_request", lambda pull=pull: events.pull_request(
                "synchronize", self.pull_json(repo, pull), self._sender(),
                before=before, after=after))

    def _pushed(self, key):
        """Stamp the repository's `pushed_at` (and `updated_at`) with a ref write's time."""
        repo = self.store.repo(key)
        self.store.put_repo(key, {**repo, "pushed_ms": self.now_ms()})

    def move_ref(self, body):
        """Play the intervening actor of `refs/move`: a non-forced update, control-shaped errors."""
        shape = "Expected owner, repo, full branch ref and seeded 40-hex sha"
        if not (isinstance(body, dict) and isinstance(body.get("owner"), str)
                and isinstance(body.get("repo"), str) and isinstance(body.get("ref"), str)
                and body["ref"].startswith("refs/heads/") and valid_ref_name(body["ref"])
                and isinstance(body.get("sha"), str) and SHA_ANY_CASE.match(body["sha"])):
            raise errors.ControlInvalid(shape)
        repo = self.store.repo(repo_key(body["owner"], body["repo"]))
        if repo is None:
            raise errors.ControlInvalid("Reference does not exist", 422)
        try:
            ref = self._fast_forward(repo["key"], body["ref"], body["sha"].lower(), force=False,
                                     op="git/update-ref")
        except errors.Unprocessable as exc:
            raise errors.ControlInvalid(exc.message, 422) from None
        return self.ref_json(repo, ref)

    # pull requests (§6.8–§6.11) ----------------------------------------------------------

    def create_pull(self, owner, name, parsed):
        """Open a PR; `parsed` is `schemas.parse_pull_body(...)` output (kind, value)."""
        op = "pulls/create"
        repo = self._repo(owner, name, op)
        body = _pull_body(parsed, op)
        if "issue" in body:
            raise errors.Unsupported("Mockingbird does not model issue conversion")
        if "head_repo" in body:
            raise errors.Unsupported(CROSS_REPO)
        _check_common_fields(body, op)
        if not _nonblank(body.get("title")):
            raise errors.ValidationFailed(op, field="title")
        for field in ("head", "base"):
            if not isinstance(body.get(field), str) or not body[field]:
                raise errors.ValidationFailed(op, field=field)
        if "draft" in body and not isinstance(body["draft"], bool):
            raise errors.ValidationFailed(op, field="draft")
        parts = body["head"].split(":")
        if len(parts) > 2:
            raise errors.ValidationFailed(op, field="head")
        login = self.store.owner(repo["owner"])["login"]
        if len(parts) == 2 and parts[0].lower() != login.lower():
            raise errors.Unsupported(CROSS_REPO)
        head, base, key = parts[-1], body["base"], repo["key"]
        with self.transaction():
            tips = self._tips(key, (head, base))
            self._check_pair(key, login, head, base, tips, op, exclude=None)
            now = iso(self.now_ms())
            number = self.store.next_id(f"pull_numbers:{key}")
            pull = {
                "repo": key, "number": number,
                "id": self.store.next_id("pull_ids"),
                "node_id": node_id("github-pulls", "PR_", self.store.next_id("node:PR_")),
                "state": "open", "title": body["title"], "body": body.get("body"),
                "draft": body.get("draft") is True, "created_at": now, "updated_at": now,
                "closed_at": None, "maintainer_can_modify": body.get("maintainer_can_modify", True),
                "head_ref": head, "base_ref": base, "head_sha": tips[head], "base_sha": tips[base],
                "user": self._actor(),
            }
            self._put_pull(pull)
            self.emit("pull_request", lambda: events.pull_request(
                "opened", self.pull_json(repo, pull, tips=tips, fresh=True), self._sender()))
        return self.pull_json(repo, pull, tips=tips, fresh=True)

    def _check_pair(self, key, login, head, base, tips, op, *, exclude):
        """Refuse missing branches, a duplicate open head/base pair, and 'no commits between'."""
        if head not in tips or base not in tips:
            raise errors.ValidationFailed(op, field="base/head")
        self._check_open_pair(key, login, head, base, tips, op, exclude=exclude)

    def _check_open_pair(self, key, login, head, base, tips, op, *, exclude):
        twins = self.store.pulls({"repo": key, "state": "open", "head_ref": head,
                                  "base_ref": base}, order_by=None, desc=False, limit=2, offset=0)
        if any(p["number"] != exclude for p in twins):
            raise errors.ValidationFailed(
                op, custom=f"A pull request already exists for {login}:{head}.")
        if is_ancestor(self.store.graph(key), tips[head], tips[base]):
            raise errors.ValidationFailed(op, custom=f"No commits between {base} and {head}")

    def _put_pull(self, pull):
        # composite sort keys: timestamp then zero-padded number, so SQL ordering breaks ties
        pull["created_key"] = f"{pull['created_at']}#{pull['number']:016d}"
        pull["updated_key"] = f"{pull['updated_at']}#{pull['number']:016d}"
        self.store.put_pull(pull)

    def get_pull(self, owner, name, raw_number):
        op = "pulls/get"
        repo = self._repo(owner, name, op)
        number = parse_pull_number(raw_number)
        pull = self.store.pull(repo["key"], number) if number else None
        if pull is None:
            raise errors.NotFound(op)
        return self.pull_json(repo, pull)

    def list_pulls(self, owner, name, params):
        """Return (items, page, last) for the raw query pairs of a `pulls/list` request."""
        repo = self._repo(owner, name, "pulls/list")
        query = schemas.pull_list_query(params)  # validated after the repository check (§6.10.1)
        key = repo["key"]
        where = {"repo": key}
        if query.state != "all":
            where["state"] = query.state
        if query.base is not None:
            where["base_ref"] = query.base
        if query.head is not None:
            head_owner, colon, branch = query.head.partition(":")
            login = self.store.owner(repo["owner"])["login"]
            if not colon or head_owner.lower() != login.lower():
                return [], query.page, 0
            where["head_ref"] = branch
        total = self.store.count_pulls(where)
        last = -(-total // query.per_page)
        offset = (query.page - 1) * query.per_page
        if offset >= total:
            return [], query.page, last
        pulls = self.store.pulls(where, order_by=f"{query.sort}_key",
                                 desc=query.direction == "desc", limit=query.per_page,
                                 offset=offset)
        repo_json = self.repo_json(repo)
        tips = self._tips(key, [p["head_ref"] for p in pulls if p["state"] == "open"]
                          + [p["base_ref"] for p in pulls if p["state"] == "open"])
        return ([self.pull_json(repo, p, tips=tips, repo_json=repo_json, full=False)
                 for p in pulls],
                query.page, last)

    def update_pull(self, owner, name, raw_number, parsed):
        op = "pulls/update"
        repo = self._repo(owner, name, op)
        number = parse_pull_number(raw_number)
        if number is None:
            raise errors.NotFound(op)
        body = _pull_body(parsed, op)
        key = repo["key"]
        with self.transaction():
            pull = self.store.pull(key, number)
            if pull is None:
                raise errors.NotFound(op)
            _check_common_fields(body, op)
            if "state" in body and body["state"] not in ("open", "closed"):
                raise errors.ValidationFailed(op, field="state")
            if "base" in body and (not isinstance(body["base"], str) or not body["base"]):
                raise errors.ValidationFailed(op, field="base")
            state = body.get("state", pull["state"])
            base = body.get("base", pull["base_ref"])
            tips = self._tips(key, (pull["head_ref"], base))
            if pull["head_ref"] not in tips or base not in tips:
                raise errors.ValidationFailed(op, field="base/head")
            if state == "open" and (pull["state"] == "closed" or "base" in body):
                login = self.store.owner(repo["owner"])["login"]
                self._check_open_pair(key, login, pull["head_ref"], base, tips, op,
                                      exclude=number)
            now = iso(self.now_ms())
            before = pull
            pull = {**pull, "state": state, "base_ref": base, "updated_at": now,
                    "head_sha": tips[pull["head_ref"]], "base_sha": tips[base],
                    "closed_at": (pull["closed_at"] or now) if state == "closed" else None}
            if "title" in body:
                pull["title"] = body["title"]
            if "body" in body:
                pull["body"] = body["body"] or None  # live GitHub: "" clears the body to null
            if "maintainer_can_modify" in body:
                pull["maintainer_can_modify"] = body["maintainer_can_modify"]
            self._put_pull(pull)
            self._emit_pull_changes(repo, before, pull, tips)
        return self.pull_json(repo, pull, tips=tips)

    def _emit_pull_changes(self, repo, before, after, tips):
        """Send `edited` (with `changes`) and `closed`/`reopened`, as GitHub does per update."""
        changes = {name: {"from": before[name] or ""} for name in ("title", "body")
                   if before[name] != after[name]}
        if before["base_ref"] != after["base_ref"]:
            changes["base"] = {"ref": {"from": before["base_ref"]},
                               "sha": {"from": before["base_sha"]}}
        shape = lambda: self.pull_json(repo, after, tips=tips)  # noqa: E731
        if changes:
            self.emit("pull_request", lambda: events.pull_request(
                "edited", shape(), self._sender(), changes=changes))
        if before["state"] != after["state"]:
            action = "closed" if after["state"] == "closed" else "reopened"
            self.emit("pull_request", lambda: events.pull_request(action, shape(),
                                                                  self._sender()))


def _check_writable_ref(ref_name, op):
    """Refuse a malformed ref name (422) and the provider-managed pull refs (mock-only 501)."""
    if not valid_ref_name(ref_name):
        raise errors.Unprocessable(op, "Reference name is not valid")
    if ref_name.startswith("refs/pull/"):
        raise errors.Unsupported(PULL_REFS)


def _nonblank(value):
    return isinstance(value, str) and bool(value.strip())


def _pull_body(parsed, op):
    """Turn a classified request body into the PR field dict, per §6.8 steps 2–4."""
    kind, value = parsed
    if kind == "invalid":
        raise errors.ProblemsParsingJSON(op)
    if kind == "json" and not isinstance(value, dict):
        raise errors.ValidationFailed(op, field="body")
    if kind in ("form", "text", "bytes"):
        raise errors.Unsupported("Mockingbird does not model non-JSON pull request bodies")
    return value if kind == "json" else {}


def _check_common_fields(body, op):
    if "title" in body and not _nonblank(body["title"]):
        raise errors.ValidationFailed(op, field="title")
    if "body" in body and not isinstance(body["body"], str):
        raise errors.ValidationFailed(op, field="body")
    if "maintainer_can_modify" in body and not isinstance(body["maintainer_can_modify"], bool):
        raise errors.ValidationFailed(op, field="maintainer_can_modify")
