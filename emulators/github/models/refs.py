"""Refs: reads, writes, pushes, and their `create`, `delete`, `push` and `synchronize` events.

`write` is the one path of a ref write (a push, `git/update-ref`, a contents write, a merge):
fast-forward rules, compare-and-swap, branch protection's refusals and the events all follow it.
"""

from .. import errors, events, git, ids
from ..inputs import Listing
from ..store import has_objects
from .rule import Rule


class RefRules(Rule):
    """Read and write a repository's refs; `rules` reaches branch protection (what a push may
    do), pull requests (those a push moves or a deletion closes) and commits (a push event's
    details)."""

    def get(self, repo, tail):
        """`git/get-ref`: the reference `refs/<tail>` (409 in a repository with no branch)."""
        self.repos.require_branches(repo)
        ref = self.store.ref(repo["key"], "refs/" + tail)
        if ref is None:
            raise errors.NotFound()
        return self.repos.ref_json(repo, ref)

    def _refs_under(self, repo, prefix):
        found = (r for r in self.store.refs(repo["key"]) if r["ref"].startswith(prefix))
        return sorted(found, key=lambda r: r["ref"].encode("utf-16-be"))

    def matching(self, repo, tail):
        """`git/list-matching-refs`: the references whose name starts with `refs/<tail>`."""
        self.repos.require_branches(repo)
        repo_url = self.repos.url(repo)
        found = self._refs_under(repo, "refs/" + tail)
        return [self.repos.ref_json(repo, ref, repo_url) for ref in found]

    def listing(self, repo, tail, page):
        """`GET git/refs[/{tail}]`: the exact reference (a dict) or a `Listing` of references.

        GitHub still serves this older listing: an exact name answers that one reference, any
        other tail lists the references whose name starts with it (404 when there is none).
        """
        self.repos.require_branches(repo)
        if tail:
            exact = self.store.ref(repo["key"], "refs/" + tail)
            if exact is not None:
                return self.repos.ref_json(repo, exact)
        found = self._refs_under(repo, "refs/" + tail)
        if tail and not found:
            raise errors.NotFound()
        repo_url = self.repos.url(repo)
        return Listing([self.repos.ref_json(repo, ref, repo_url) for ref in page.of(found)],
                       len(found))

    def create(self, repo, name, sha):
        """`git/create-ref`: a new reference `name` (`refs/...`) at the commit `sha`."""
        key = repo["key"]
        with self.store.transaction():
            if self.store.count_refs(key, "heads") == 0:
                raise errors.EmptyRepository()
            if self.store.ref(key, name) is not None:
                raise errors.Unprocessable("Reference already exists")
            for existing in self.store.refs(key):
                if existing["ref"].startswith(name + "/") or name.startswith(existing["ref"] + "/"):
                    raise errors.Unprocessable(
                        "Reference name conflicts with an existing reference")
            if sha not in self.store.graph(key):
                raise errors.Unprocessable("Object does not exist")
            ref = self._insert_ref(key, name, sha)
        return self.repos.ref_json(repo, ref)

    def _insert_ref(self, key, ref_name, sha):
        """Write a new ref with its `create` and `push` events (checks done by the caller)."""
        ref = self.put(key, ref_name, sha)
        self._pushed(key)
        self.emit("create", lambda: events.create(
            self.repos.json(self.store.repo(key)), ref_name, self.accounts.sender()))
        self._emit_push(key, ref_name, events.ZERO_SHA, sha, forced=False)
        return ref

    def update(self, repo, name, sha, *, force=False):
        """`git/update-ref`: move `name` to `sha`, a fast-forward unless `force`, as branch
        protection allows."""
        with self.store.transaction():
            current = self.store.ref(repo["key"], name)
            if current is not None and sha in self.store.graph(repo["key"]):
                self._refuse_protected(repo, name, current["sha"], sha)
            return self.repos.ref_json(repo, self.fast_forward(repo["key"], name, sha,
                                                               force=force))

    def put(self, key, name, sha):
        """Write a new ref record (no checks, no events: seeding and `write` use it)."""
        ref = {"repo": key, "ref": name, "kind": name.split("/")[1], "sha": sha,
               "node_id": ids.node_id("github", "REF_", self.store.next_id("node:REF_"))}
        ref.update(self._object_type(key, sha))
        self.store.put_ref(key, ref)
        return ref

    def _object_type(self, key, sha):
        """`{"object_type": "tag"}` for a ref to an annotated tag (a repository of objects),
        else nothing: every other ref names a commit."""
        repo = self.store.repo(key)
        if repo is not None and has_objects(repo) and self.store.holds_objects \
                and self.store.git(key).kind(sha) == "tag":
            return {"object_type": "tag"}
        return {}

    def _refuse_protected(self, repo, ref_name, old, new):
        """Refuse a REST ref write (`new` None: a deletion) that branch protection forbids,
        with the reasons a push is refused for (422)."""
        reason = self._protected(repo, old, new or events.ZERO_SHA, ref_name)
        if reason is not None:
            lines = reason.split("\n")[1:]
            raise errors.Unprocessable(" ".join([lines[0][len("GH006: "):], *lines[1:]]))

    def fast_forward(self, key, ref_name, sha, *, force=False):
        """Check-and-write a ref move atomically against the tip current right now (no branch
        protection: the admin plane's intervening actor moves a branch so)."""
        with self.store.transaction():
            ref = self.store.ref(key, ref_name)
            if ref is None:
                raise errors.Unprocessable("Reference does not exist")
            graph = self.store.graph(key)
            if sha not in graph:
                raise errors.Unprocessable("Object does not exist")
            fast_forward = git.is_ancestor(graph, ref["sha"], sha)
            if not force and not fast_forward:
                raise errors.Unprocessable("Update is not a fast forward")
            return self._move_ref(key, ref, sha, forced=not fast_forward)

    def _move_ref(self, key, ref, sha, *, forced):
        """Point an existing ref at `sha` with its `push` and `synchronize` events."""
        before = ref["sha"]
        ref = {k: v for k, v in ref.items() if k != "object_type"}
        ref = {**ref, "sha": sha, **self._object_type(key, sha)}
        self.store.put_ref(key, ref)
        self._pushed(key)
        if before != sha:
            self._emit_push(key, ref["ref"], before, sha, forced=forced)
            self._emit_synchronize(key, ref["ref"], before, sha)
        return ref

    def delete(self, repo, name):
        """`git/delete-ref`; open PRs whose head or base was that branch close (as on GitHub)."""
        key = repo["key"]
        with self.store.transaction():
            ref = self.store.ref(key, name)
            if ref is None:
                raise errors.Unprocessable("Reference does not exist")
            self._refuse_protected(repo, name, ref["sha"], None)
            self._remove_ref(repo, ref)
        return ref

    def _remove_ref(self, repo, ref):
        """Delete a ref with its `delete` and `push` events; close the PRs on the branch."""
        key, ref_name = repo["key"], ref["ref"]
        self.store.delete_ref(key, ref_name)
        self._pushed(key)
        self.emit("delete", lambda: events.delete(
            self.repos.json(self.store.repo(key)), ref_name, self.accounts.sender()))
        self._emit_push(key, ref_name, ref["sha"], events.ZERO_SHA, forced=False)
        if ref_name.startswith("refs/heads/"):
            self._close_pulls_on(repo, ref_name[len("refs/heads/"):], ref["sha"])

    def write(self, repo, ref_name, sha, *, force=False, expect=None):
        """Create, move or delete (`sha` None) a ref of a repository record in one
        transaction, with its events: the path of a push and of the object layer's users.

        A move must be a fast-forward unless `force`; `expect` (a sha, or `events.ZERO_SHA` for
        "must not exist") makes it a compare-and-swap. Raises `errors.RefRejected` with git's
        reason (`non-fast-forward`, `stale info`, ...). Returns the ref record (the deleted one
        for a deletion).
        """
        key = repo["key"]
        with self.store.transaction():
            ref = self.store.ref(key, ref_name)
            current = ref["sha"] if ref else events.ZERO_SHA
            if expect is not None and expect != current:
                raise errors.RefRejected("stale info")
            if sha is None:
                if ref is None:
                    raise errors.RefRejected("no such ref")
                self._remove_ref(repo, ref)
                return ref
            graph = self.store.graph(key)
            if sha not in graph and not (not ref_name.startswith("refs/heads/")
                                         and has_objects(repo)
                                         and self.repos.objects(repo).kind(sha) is not None):
                raise errors.RefRejected("missing necessary objects")
            if ref is None:
                for existing in self.store.refs(key):
                    if (existing["ref"].startswith(ref_name + "/")
                            or ref_name.startswith(existing["ref"] + "/")):
                        raise errors.RefRejected("failed to lock")
                if ref_name.startswith("refs/heads/") and not self.store.count_refs(
                        key, "heads"):
                    self._first_branch(repo, ref_name[len("refs/heads/"):])
                return self._insert_ref(key, ref_name, sha)
            fast_forward = git.is_ancestor(graph, ref["sha"], sha)
            if not force and not fast_forward:
                raise errors.RefRejected("non-fast-forward")
            return self._move_ref(key, ref, sha, forced=not fast_forward)

    def advertised(self, repo):
        """Return the refs git sees `{name: sha}`: every branch and tag, and
        `refs/pull/<n>/head` of every PR (the head branch's tip while open, its last head once
        closed), as GitHub keeps them."""
        key = repo["key"]
        refs = {r["ref"]: r["sha"] for r in self.store.refs(key)}
        for pull in self.store.pulls({"repo": key}, order_by=None, desc=False, limit=None,
                                     offset=0):
            tip = refs.get(f"refs/heads/{pull['head_ref']}") if pull["state"] == "open" else None
            refs[f"refs/pull/{pull['number']}/head"] = tip or pull["head_sha"]
        return refs

    def push(self, repo, commands, atomic):
        """Apply a push's `(old, new, ref)` commands as ref writes (`write`: events,
        synchronize, PRs closed by a deletion); return `[(ref, "ok" or git's reason)]`.

        Each ref is its own savepoint; `atomic` (git push --atomic) keeps all or none. The
        client decided about fast-forwards (git refuses a non-fast-forward unless --force), so
        the server takes any move whose `old` still holds, as GitHub does without branch
        protection.
        """
        has_heads = self.store.count_refs(repo["key"], "heads") > 0
        default = f"refs/heads/{repo['default_branch']}"
        if not has_heads:  # the default branch, when pushed, is created first: it stays default
            commands = sorted(commands, key=lambda c: c[2] != default)
        statuses = []
        try:
            with self.store.transaction():
                for old, new, ref_name in commands:
                    reason = _push_refusal(ref_name) or self._protected(repo, old, new,
                                                                        ref_name)
                    if reason is None:
                        try:
                            with self.store.transaction():
                                self.write(repo, ref_name, None if new == events.ZERO_SHA
                                           else new, force=True, expect=old)
                        except errors.RefRejected as exc:
                            reason = exc.reason
                    statuses.append((ref_name, reason or "ok"))
                if atomic and any(status != "ok" for _ref, status in statuses):
                    raise _AtomicFailure()
        except _AtomicFailure:
            statuses = [(ref, "atomic push failed" if status == "ok" else status)
                        for ref, status in statuses]
        return statuses

    def _protected(self, repo, old, new, ref_name):
        """GitHub's refusal of a push that branch protection forbids: the `ng` reason, then
        the lines git shows as `remote: error:` (models/protection.py), or None."""
        if old == events.ZERO_SHA:
            return None
        deleting = new == events.ZERO_SHA
        forced = not deleting and not git.is_ancestor(self.store.graph(repo["key"]), old, new)
        refusal = self.rules.protection.push_refusal(
            repo, ref_name, old, None if deleting else new, forced=forced)
        return None if refusal is None else "\n".join(["protected branch hook declined",
                                                       *refusal])

    def _first_branch(self, repo, branch):
        """The first branch pushed to an empty repository becomes its default, as on GitHub."""
        current = self.store.repo(repo["key"])
        if current["default_branch"] != branch:
            self.store.put_repo(repo["key"], {**current, "default_branch": branch})

    def _close_pulls_on(self, repo, branch, last_sha):
        """Close the open PRs whose head or base branch is gone, keeping their last tips."""
        key, now = repo["key"], self.clock.now()
        gone = [p for side in ("head_ref", "base_ref")
                for p in self.store.pulls({"repo": key, "state": "open", side: branch},
                                          order_by=None, desc=False, limit=None, offset=0)]
        for pull in sorted(gone, key=lambda p: p["number"]):
            tips = self.repos.tips(key, (pull["head_ref"], pull["base_ref"]))
            closed = {**pull, "state": "closed", "updated_at": now, "closed_at": now,
                      "head_sha": tips.get(pull["head_ref"], last_sha),
                      "base_sha": tips.get(pull["base_ref"], last_sha)}
            self.rules.pulls.put(closed, pull)
            self.emit("pull_request", lambda closed=closed: events.pull_request(
                "closed", self.rules.pulls.json(repo, closed), self.accounts.sender()))

    def _emit_push(self, key, ref_name, before, after, *, forced):
        def build():
            graph = self.store.graph(key)
            known = set() if before == events.ZERO_SHA else git.reachable(graph, before)
            if after == events.ZERO_SHA:  # a deletion brings no commits
                known = set(graph)
            repo = self.store.repo(key)
            describe = self.rules.commits.describe_commit(repo) if has_objects(repo) else None
            return events.push(self.repos.json(repo), ref_name, before, after,
                               git.new_commits(graph, after, known), self.accounts.sender(),
                               forced=forced, timestamp=self.clock.now(), describe=describe)
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
                "synchronize", self.rules.pulls.json(repo, pull), self.accounts.sender(),
                before=before, after=after))

    def _pushed(self, key):
        """Stamp the repository's `pushed_at` (and `updated_at`) with a ref write's time."""
        repo = self.store.repo(key)
        self.store.put_repo(key, {**repo, "pushed_ms": self.clock.ms()})


class _AtomicFailure(Exception):
    """Rolls an atomic push back when one of its refs was refused."""


def _push_refusal(ref_name):
    """Return why a push may not write `ref_name` (GitHub's words), or None."""
    if ref_name.startswith("refs/pull/"):
        return "deny updating a hidden ref"
    if not git.valid_ref_name(ref_name):
        return "funny refname"
    return None
