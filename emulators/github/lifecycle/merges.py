"""Merges that make real commits: `pulls/merge` (merge, squash, rebase), `repos/merge`, and
mergeability computed from the trees.

A mixin of `models.GitHubBackend`. Trees are merged three ways with dulwich (over the
merge base commits.py finds); a conflict makes a PR `dirty` and its merge a 405. The
merge commit moves the base branch through `write_ref` (the push path of the object layer),
so its `push` event and `synchronize`s follow as for any push, then the PR closes merged. A
repository seeded with synthetic SHAs has no trees: it is never in conflict, and merging it
answers the emulator-only `SyntheticRepository` error.
"""
from dulwich.merge import Merger
from dulwich.object_store import MemoryObjectStore

from .. import errors, events, git, schemas
from .protection import DRAFT, NOT_MERGEABLE

METHODS = ("merge", "squash", "rebase")
COMMITTER = {"name": "GitHub", "email": "noreply@github.com"}  # GitHub commits web merges so


class _Scratch(MemoryObjectStore):
    """Reads from the repository's objects, keeps what a merge writes in memory: mergeability
    is computed on reads, which write nothing."""

    def __init__(self, base):
        super().__init__()
        self.base = base

    def contains_loose(self, sha):
        return super().contains_loose(sha) or sha in self.base

    def __contains__(self, sha):
        return self.contains_loose(sha)

    def __getitem__(self, name):
        try:
            return super().__getitem__(name)
        except KeyError:
            return self.base[name]

    def get_raw(self, name):
        try:
            return super().get_raw(name)
        except KeyError:
            return self.base.get_raw(name)

    def written(self):
        return [(self[sha], None) for sha in self]  # (iterating gives this store's own only)


class MergeRules:
    """The merge operations of `GitHubBackend`."""

    def _three_way(self, objects, base, ours, theirs, scratch):
        """Merge the trees of commits `ours` and `theirs` over `base`: (tree sha, conflicts)."""
        store = objects.store

        def tree(sha):
            return store[objects.commit(sha).tree] if sha else None
        merged, conflicts = Merger(scratch).merge_trees(tree(base), tree(ours), tree(theirs))
        scratch.add_object(merged)  # the merger stores blobs and subtrees, not the root
        return merged.id.decode(), [path.decode("utf-8", "replace") for path in conflicts]

    def conflicts(self, repo, head_sha, base_sha):
        """The paths a merge of `head_sha` into `base_sha` conflicts on ([] when clean, and
        always for a synthetic repository); commits never change, so each pair is merged once
        per request however many answers and events show the PR."""
        memo = self._conflicts
        if (repo["key"], head_sha, base_sha) in memo:
            return memo[repo["key"], head_sha, base_sha]
        objects = self.pair_objects(repo, head_sha, base_sha)
        found = []
        if objects is not None:
            base = self.merge_base(objects, base_sha, head_sha)
            if base not in (head_sha, base_sha):
                found = self._three_way(objects, base, base_sha, head_sha,
                                        _Scratch(objects.store))[1]
        memo[repo["key"], head_sha, base_sha] = found
        return found

    def mergeability(self, repo, pull, head_sha, base_sha):
        """(`mergeable`, `rebaseable`, `mergeable_state`) of an open PR, as GitHub computes
        them: `dirty` on conflicts, `draft`, `blocked` or `behind` by protection, `unstable`
        when a check or status that is not required fails, else `clean`."""
        if self.conflicts(repo, head_sha, base_sha):
            return False, False, "dirty"
        if pull.get("draft"):
            return True, True, "draft"
        protection = self._protection(repo["key"], pull["base_ref"])
        blocker = self.merge_blocker(repo, pull, head_sha, base_sha)
        if blocker is not None:
            strict = protection and protection.get("checks", {}).get("strict")
            behind = strict and not git.is_ancestor(self.store.graph(repo["key"]), base_sha,
                                                    head_sha)
            return True, True, "behind" if behind and "status check" in blocker else "blocked"
        failing = [s for s in self.latest_statuses(repo["key"], head_sha)
                   if s["state"] in ("error", "failure")]
        failing += [r for r in self.latest_check_runs(repo["key"], head_sha)
                    if r["status"] == "completed" and r["conclusion"] in ("failure",
                                                                          "timed_out",
                                                                          "cancelled")]
        return True, True, "unstable" if failing else "clean"

    # pulls/merge --------------------------------------------------------------------------

    def merge_pull(self, owner, name, raw_number, parsed):
        op = "pulls/merge"
        repo = self._repo(owner, name, op)
        body = schemas.json_object(parsed, op)
        key = repo["key"]
        with self.transaction():
            pull = self._pull(repo, raw_number, op)
            method = body.get("merge_method", "merge")
            if method not in METHODS:
                raise errors.ValidationFailed(op, field="merge_method")
            for field in ("commit_title", "commit_message", "sha"):
                if body.get(field) is not None and not isinstance(body[field], str):
                    raise errors.ValidationFailed(op, field=field)
            if pull["state"] != "open":
                raise errors.Unmergeable(op, NOT_MERGEABLE)
            if pull.get("draft"):
                raise errors.Unmergeable(op, DRAFT)
            tips = self._tips(key, (pull["head_ref"], pull["base_ref"]))
            head_sha, base_sha = tips[pull["head_ref"]], tips[pull["base_ref"]]
            if body.get("sha") is not None and body["sha"].lower() != head_sha:
                raise errors.HeadModified(op)
            blocker = self.merge_blocker(repo, pull, head_sha, base_sha)
            if blocker is not None:
                raise errors.Unmergeable(op, blocker)
            objects = self.git(repo, op)
            sha = self._merge_commit(repo, objects, pull, method, body, head_sha, base_sha, op)
            # one transaction: the base read above is still its tip, the swap cannot miss
            self.write_ref(repo, f"refs/heads/{pull['base_ref']}", sha, expect=base_sha, op=op)
            now = self.now()
            merged = {**self.store.pull(key, pull["number"]), "state": "closed", "merged": True,
                      "merged_at": now, "merged_by": self._actor(), "merge_commit_sha": sha,
                      "closed_at": now, "updated_at": now, "head_sha": head_sha,
                      "base_sha": base_sha}
            self._put_pull(merged, pull)
            self.emit("pull_request", lambda: events.pull_request(
                "closed", self.pull_json(repo, merged), self._sender()))
        return {"sha": sha, "merged": True, "message": "Pull Request successfully merged"}

    def _merge_commit(self, repo, objects, pull, method, body, head_sha, base_sha, op):
        """Write the commit(s) a merge method makes on the base; return the new base tip."""
        graph = objects.graph()
        scratch = _Scratch(objects.store)
        actor = self.person(self._actor())
        if method == "rebase":
            tip = base_sha
            for sha in git.new_commits(graph, head_sha, git.reachable(graph, base_sha)):
                commit = objects.commit(sha)
                if len(commit.parents) != 1:
                    raise errors.Unmergeable(op, "This branch can't be rebased")
                parent = commit.parents[0].decode()
                tree, conflicts = self._three_way(objects, parent, tip, sha, scratch)
                if conflicts:
                    raise errors.Unmergeable(op, "This branch can't be rebased")
                objects.store.add_objects(scratch.written())
                tip = objects.write_commit(
                    tree, [tip], commit.message,
                    author=_person_of(commit.author, commit.author_time),
                    committer={**COMMITTER, "date": self.now_ms() // 1000})
            return tip
        base = self.merge_base(objects, base_sha, head_sha)
        if base == head_sha:  # nothing to bring in
            raise errors.Unmergeable(op, NOT_MERGEABLE)
        tree, conflicts = self._three_way(objects, base, base_sha, head_sha, scratch)
        if conflicts:
            raise errors.Unmergeable(op, NOT_MERGEABLE)
        objects.store.add_objects(scratch.written())
        if method == "squash":
            title = body.get("commit_title") or f"{pull['title']} (#{pull['number']})"
            detail = body.get("commit_message")
            if detail is None:
                detail = "\n".join(
                    "* " + objects.commit(s).message.decode("utf-8", "replace").strip()
                    for s in git.new_commits(graph, head_sha, git.reachable(graph, base_sha)))
            return objects.write_commit(
                tree, [base_sha], f"{title}\n\n{detail}".rstrip() + "\n",
                author=self.person(pull["user"]),
                committer={**COMMITTER, "date": self.now_ms() // 1000})
        owner_login = self.repo_json(repo)["owner"]["login"]
        title = body.get("commit_title") or \
            f"Merge pull request #{pull['number']} from {owner_login}/{pull['head_ref']}"
        detail = pull["title"] if body.get("commit_message") is None else body["commit_message"]
        return objects.write_commit(tree, [base_sha, head_sha],
                                    f"{title}\n\n{detail}".rstrip() + "\n", author=actor,
                                    committer={**COMMITTER, "date": self.now_ms() // 1000})

    def check_merged(self, owner, name, raw_number):
        """`pulls/check-if-merged`: True when merged (204), else 404."""
        op = "pulls/check-if-merged"
        repo, pull = self._pull_record(owner, name, raw_number, op)
        if not pull.get("merged"):
            raise errors.NotFound(op)

    # repos/merge --------------------------------------------------------------------------

    def merge_branches(self, owner, name, parsed):
        """`repos/merge`: merge `head` (a branch or sha) into the branch `base` with a merge
        commit; None (204) when `base` already contains it."""
        op = "repos/merge"
        repo = self._repo(owner, name, op)
        body = schemas.json_object(parsed, op)
        for field in ("base", "head"):
            if not isinstance(body.get(field), str) or not body[field]:
                raise errors.ValidationFailed(op, resource="Merge", field=field,
                                              code="missing_field")
        key = repo["key"]
        with self.transaction():
            objects = self.git(repo, op)
            base_ref = self.store.ref(key, f"refs/heads/{body['base']}")
            if base_ref is None:
                raise errors.NotFound(op, "Base does not exist")
            head_sha = self._commit_sha(key, body["head"])
            if head_sha is None:
                raise errors.NotFound(op, "Head does not exist")
            base_sha = base_ref["sha"]
            graph = objects.graph()
            if git.is_ancestor(graph, head_sha, base_sha):
                return None
            base = self.merge_base(objects, base_sha, head_sha)
            scratch = _Scratch(objects.store)
            tree, conflicts = self._three_way(objects, base, base_sha, head_sha, scratch)
            if conflicts:
                raise errors.MergeConflict(op)
            objects.store.add_objects(scratch.written())
            message = body.get("commit_message") or f"Merge {body['head']} into {body['base']}"
            sha = objects.write_commit(tree, [base_sha, head_sha], message + "\n",
                                       author=self.person(self._actor()))
            refusal = self.push_refusal(repo, base_ref["ref"], base_sha, sha, forced=False)
            if refusal:  # the transaction rolls back: nothing of the merge stays
                raise errors.MergeConflict(op, refusal[-1])
            self.write_ref(repo, base_ref["ref"], sha, expect=base_sha, op=op)
        return self.commit_json(repo, sha)


def _person_of(raw, when):
    """`{name, email, date}` of a dulwich `Name <email>` identity."""
    text = raw.decode("utf-8", "replace")
    name, _, rest = text.partition(" <")
    return {"name": name, "email": rest.rstrip(">"), "date": when}
