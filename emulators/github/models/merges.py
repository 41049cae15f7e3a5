"""Merges that make real commits: `pulls/merge` (merge, squash, rebase), `repos/merge`, and
mergeability computed from the trees.

Trees are merged three ways with dulwich (over the
merge base commits.py finds); a conflict makes a PR `dirty` and its merge a 405. The
merge commit moves the base branch through `refs.write` (the push path of the object layer),
so its `push` event and `synchronize`s follow as for any push, then the PR closes merged. A
repository seeded with synthetic SHAs has no trees: it is never in conflict, and merging it
answers the emulator-only `SyntheticRepository` error.
"""
from dulwich.merge import Merger
from dulwich.object_store import MemoryObjectStore

from .. import errors, events, git
from .protection import DRAFT, NOT_MERGEABLE
from .rule import Rule

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


class MergeRules(Rule):
    """Merge pull requests and branches, and compute mergeability; `rules` reaches pulls (the
    PR merged), commits (merge bases), protection (what a merge must meet), statuses and checks
    (an `unstable` PR) and refs (the merge moves its base)."""

    def __init__(self, store, clock, **shared):
        super().__init__(store, clock, **shared)
        # (repository, head, base) -> conflicting paths: commits never change, so each pair
        # is merged once per request however many answers and events show the PR
        self._conflicts = {}

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
        objects = self.rules.commits.pair_objects(repo, head_sha, base_sha)
        found = []
        if objects is not None:
            base = self.rules.commits.merge_base(objects, base_sha, head_sha)
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
        protection = self.rules.protection.record(repo["key"], pull["base_ref"])
        blocker = self.rules.protection.merge_blocker(repo, pull, head_sha, base_sha)
        if blocker is not None:
            strict = protection and protection.get("checks", {}).get("strict")
            behind = strict and not git.is_ancestor(self.store.graph(repo["key"]), base_sha,
                                                    head_sha)
            return True, True, "behind" if behind and "status check" in blocker else "blocked"
        failing = [s for s in self.rules.statuses.latest(repo["key"], head_sha)
                   if s["state"] in ("error", "failure")]
        failing += [r for r in self.rules.checks.latest(repo["key"], head_sha)
                    if r["status"] == "completed" and r["conclusion"] in ("failure",
                                                                          "timed_out",
                                                                          "cancelled")]
        return True, True, "unstable" if failing else "clean"

    # pulls/merge --------------------------------------------------------------------------

    def merge(self, repo, number, *, merge_method="merge", commit_title=None,
              commit_message=None, sha=None):
        """`pulls/merge` of an open PR: `merge`, `squash` or `rebase` as `merge_method` says;
        `sha` (when given) must still be the head's tip."""
        key = repo["key"]
        with self.store.transaction():
            pull = self.rules.pulls.find(repo, number)
            if pull["state"] != "open":
                raise errors.Unmergeable(NOT_MERGEABLE)
            if pull.get("draft"):
                raise errors.Unmergeable(DRAFT)
            tips = self.repos.tips(key, (pull["head_ref"], pull["base_ref"]))
            head_sha, base_sha = tips[pull["head_ref"]], tips[pull["base_ref"]]
            if sha is not None and sha.lower() != head_sha:
                raise errors.HeadModified()
            blocker = self.rules.protection.merge_blocker(repo, pull, head_sha, base_sha)
            if blocker is not None:
                raise errors.Unmergeable(blocker)
            objects = self.repos.objects(repo)
            sha = self._merge_commit(repo, objects, pull, merge_method, commit_title,
                                     commit_message, head_sha, base_sha)
            # one transaction: the base read above is still its tip, the swap cannot miss
            self.rules.refs.write(repo, f"refs/heads/{pull['base_ref']}", sha, expect=base_sha)
            now = self.clock.now()
            merged = {**self.store.pull(key, pull["number"]), "state": "closed", "merged": True,
                      "merged_at": now, "merged_by": self.accounts.actor(), "merge_commit_sha": sha,
                      "closed_at": now, "updated_at": now, "head_sha": head_sha,
                      "base_sha": base_sha}
            self.rules.pulls.put(merged, pull)
            self.emit("pull_request", lambda: events.pull_request(
                "closed", self.rules.pulls.json(repo, merged), self.accounts.sender()))
        return {"sha": sha, "merged": True, "message": "Pull Request successfully merged"}

    def _merge_commit(self, repo, objects, pull, method, commit_title, commit_message,
                      head_sha, base_sha):
        """Write the commit(s) a merge method makes on the base; return the new base tip."""
        graph = objects.graph()
        scratch = _Scratch(objects.store)
        actor = self.accounts.person(self.accounts.actor())
        if method == "rebase":
            tip = base_sha
            for sha in git.new_commits(graph, head_sha, git.reachable(graph, base_sha)):
                commit = objects.commit(sha)
                if len(commit.parents) != 1:
                    raise errors.Unmergeable("This branch can't be rebased")
                parent = commit.parents[0].decode()
                tree, conflicts = self._three_way(objects, parent, tip, sha, scratch)
                if conflicts:
                    raise errors.Unmergeable("This branch can't be rebased")
                objects.store.add_objects(scratch.written())
                tip = objects.write_commit(
                    tree, [tip], commit.message,
                    author=_person_of(commit.author, commit.author_time),
                    committer={**COMMITTER, "date": self.clock.ms() // 1000})
            return tip
        base = self.rules.commits.merge_base(objects, base_sha, head_sha)
        if base == head_sha:  # nothing to bring in
            raise errors.Unmergeable(NOT_MERGEABLE)
        tree, conflicts = self._three_way(objects, base, base_sha, head_sha, scratch)
        if conflicts:
            raise errors.Unmergeable(NOT_MERGEABLE)
        objects.store.add_objects(scratch.written())
        if method == "squash":
            title = commit_title or f"{pull['title']} (#{pull['number']})"
            detail = commit_message
            if detail is None:
                detail = "\n".join(
                    "* " + objects.commit(s).message.decode("utf-8", "replace").strip()
                    for s in git.new_commits(graph, head_sha, git.reachable(graph, base_sha)))
            return objects.write_commit(
                tree, [base_sha], f"{title}\n\n{detail}".rstrip() + "\n",
                author=self.accounts.person(pull["user"]),
                committer={**COMMITTER, "date": self.clock.ms() // 1000})
        owner_login = self.repos.json(repo)["owner"]["login"]
        title = commit_title or \
            f"Merge pull request #{pull['number']} from {owner_login}/{pull['head_ref']}"
        detail = pull["title"] if commit_message is None else commit_message
        return objects.write_commit(tree, [base_sha, head_sha],
                                    f"{title}\n\n{detail}".rstrip() + "\n", author=actor,
                                    committer={**COMMITTER, "date": self.clock.ms() // 1000})

    def is_merged(self, repo, number):
        """`pulls/check-if-merged`: whether PR `number` was merged (404 when there is none)."""
        return bool(self.rules.pulls.find(repo, number).get("merged"))

    # repos/merge --------------------------------------------------------------------------

    def merge_branches(self, repo, *, base, head, commit_message=None):
        """`repos/merge`: merge `head` (a branch or sha) into the branch `base` with a merge
        commit; None (204) when `base` already contains it."""
        key = repo["key"]
        with self.store.transaction():
            objects = self.repos.objects(repo)
            base_ref = self.store.ref(key, f"refs/heads/{base}")
            if base_ref is None:
                raise errors.NotFound("Base does not exist")
            head_sha = self.rules.commits.commit_sha(key, head)
            if head_sha is None:
                raise errors.NotFound("Head does not exist")
            base_sha = base_ref["sha"]
            graph = objects.graph()
            if git.is_ancestor(graph, head_sha, base_sha):
                return None
            ancestor = self.rules.commits.merge_base(objects, base_sha, head_sha)
            scratch = _Scratch(objects.store)
            tree, conflicts = self._three_way(objects, ancestor, base_sha, head_sha, scratch)
            if conflicts:
                raise errors.MergeConflict()
            objects.store.add_objects(scratch.written())
            message = commit_message or f"Merge {head} into {base}"
            sha = objects.write_commit(tree, [base_sha, head_sha], message + "\n",
                                       author=self.accounts.person(self.accounts.actor()))
            refusal = self.rules.protection.push_refusal(repo, base_ref["ref"], base_sha, sha,
                                                         forced=False)
            if refusal:  # the transaction rolls back: nothing of the merge stays
                raise errors.MergeConflict(refusal[-1])
            self.rules.refs.write(repo, base_ref["ref"], sha, expect=base_sha)
        return self.rules.commits.json(repo, sha)


def _person_of(raw, when):
    """`{name, email, date}` of a dulwich `Name <email>` identity."""
    text = raw.decode("utf-8", "replace")
    name, _, rest = text.partition(" <")
    return {"name": name, "email": rest.rstrip(">"), "date": when}
