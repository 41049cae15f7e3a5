"""Commits: their GitHub shapes, lists, comparisons and diffs, over a repository's git objects
(or the synthetic commits of a repository seeded with SHAs), and what a ref or sha names.
"""
import difflib
from datetime import datetime, timedelta, timezone

from .. import errors, git, ids, shapes, times
from ..inputs import Listing
from ..objects import DEFAULT_PERSON
from ..store import has_objects

MAX_COMPARE_COMMITS = 250  # GitHub lists at most 250 commits in a comparison (and a PR)
MAX_FILES = 3000  # and at most 3000 files
MAX_PATCH = 1024 * 1024  # no patch for a blob past 1 MiB, as GitHub leaves out large diffs


def person(raw, when, offset):
    """Split git's `Name <email>` and time into GitHub's `{name, email, date}`."""
    text = raw.decode("utf-8", "replace")
    name, _, rest = text.partition(" <")
    zone = timezone(timedelta(seconds=offset))
    date = datetime.fromtimestamp(when, zone).astimezone(timezone.utc)
    return {"name": name.strip(), "email": rest.rstrip(">").strip(),
            "date": date.strftime(times.FORMAT)}


def _push_time(when, offset):
    return datetime.fromtimestamp(when, timezone(timedelta(seconds=offset))).isoformat()


def message(commit):
    """A commit's message as GitHub shows it (REST answers, webhook payloads): without the
    newline git ends a message with; inner lines are kept."""
    return commit.message.decode("utf-8", "replace").removesuffix("\n")


def info(objects, sha):
    """Return a commit's fields GitHub shows `{tree, parents, message, author, committer,
    node_id}`, or None when `sha` is not a commit."""
    commit = objects.commit(sha)
    if commit is None:
        return None
    return {"tree": commit.tree.decode(), "parents": [p.decode() for p in commit.parents],
            "message": message(commit),
            "author": person(commit.author, commit.author_time, commit.author_timezone),
            "committer": person(commit.committer, commit.commit_time, commit.commit_timezone),
            "node_id": ids.node_id("github-commits", "C_", sha)}


def _lines(data):
    return data.decode("utf-8", "replace").splitlines(keepends=True)


def changed_files(objects, old_tree, new_tree, *, limit=MAX_FILES):
    """Return the changed files between two trees with GitHub's counts: `[{filename, status,
    sha, additions, deletions, patch}]` (no patch for binary or large blobs), the first
    `limit` (None: all)."""
    out = []
    changes = objects.changes(old_tree, new_tree)
    for change in changes if limit is None else changes[:limit]:
        old = objects.blob(change["old_sha"]) if change["old_sha"] else b""
        new = objects.blob(change["new_sha"]) if change["new_sha"] else b""
        old, new = old or b"", new or b""
        entry = {"filename": change["filename"], "status": change["status"],
                 "sha": change["new_sha"] or change["old_sha"], "additions": 0,
                 "deletions": 0, "patch": None}
        if b"\0" not in old and b"\0" not in new and len(old) + len(new) <= MAX_PATCH:
            hunks = list(difflib.unified_diff(_lines(old), _lines(new), n=3))[2:]
            entry["additions"] = sum(1 for h in hunks if h.startswith("+"))
            entry["deletions"] = sum(1 for h in hunks if h.startswith("-"))
            entry["patch"] = "".join(h if h.endswith("\n") else h + "\n\\ No newline at end"
                                     " of file\n" for h in hunks).rstrip("\n") or None
        out.append(entry)
    return out


class CommitRules:
    """Read commits (a leaf: no other area is called); `accounts` names a commit's author and
    committer, the `clock` dates a synthetic commit."""

    def __init__(self, store, clock, *, accounts, repos):
        self.store = store
        self.clock = clock
        self.accounts = accounts
        self.repos = repos
        # (repository key, base, head) -> the files changed: commits never change, so each pair
        # is diffed once per request however many answers and events show it
        self._diffs = {}

    def commit_sha(self, key, ref, *, exact=False):
        """The commit a `{ref}` names (a sha, a branch, `heads/<b>`, a tag), or None;
        `exact` accepts a full sha only. A repository of git objects resolves as
        `repos/get-commit` does (abbreviated shas, annotated tags peeled)."""
        repo = self.store.repo(key)
        if has_objects(repo) and not exact:
            objects = self.repos.objects(repo)
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

    def find_sha(self, repo, ref):
        """The commit sha `ref` names in `repo` (what hangs below `commits/{ref}`); 404 when
        it names none."""
        sha = self.commit_sha(repo["key"], ref)
        if sha is None:
            raise errors.NotFound()
        return sha

    def json(self, repo, sha):
        """A commit as the REST API shows it (`commit`): `repos/get-commit`'s shape of a git
        repository's commit, a synthetic one for a seeded SHA."""
        if has_objects(repo):
            return self.object_json(repo, self.repos.objects(repo), sha)
        person = {**self.accounts.person(self.accounts.actor_login), "date": self.clock.now()}
        return shapes.synthetic_commit(*self.repos.urls(repo), sha,
                                       self.store.graph(repo["key"]).get(sha, []), person)

    def _account(self, who):
        """The GitHub account of a commit's author or committer: the acting user for its
        email, else None (GitHub shows null for an email it knows no account of)."""
        if who["email"] == DEFAULT_PERSON["email"]:
            return self.accounts.shape(self.store.owner(self.accounts.actor()))
        # GitHub's own commits (merges) name an account by `<id>+<login>@users.noreply...`
        local, _, domain = who["email"].partition("@")
        if domain == "users.noreply.github.com" and "+" in local:
            record = self.store.owner(local.split("+", 1)[1])
            return self.accounts.shape(record) if record else None
        return None

    def object_json(self, repo, objects, sha, *, files=False):
        found = info(objects, sha)
        repo_url, html_url = self.repos.urls(repo)
        diff = None
        if files:
            parent = info(objects, found["parents"][0]) if found["parents"] else None
            diff = [shapes.diff_entry(repo_url, html_url, sha, change) for change in
                    changed_files(objects, parent["tree"] if parent else None, found["tree"])]
        return shapes.commit(repo_url, html_url, sha, found,
                             author=self._account(found["author"]),
                             committer=self._account(found["committer"]), files=diff)

    def resolve(self, repo, objects, name):
        """Return the commit sha a branch, tag, `refs/...` name or (abbreviated) sha names,
        or None."""
        key = repo["key"]
        for candidate in (name, f"refs/heads/{name}", f"refs/tags/{name}"):
            ref = self.store.ref(key, candidate) if candidate.startswith("refs/") else None
            if ref is not None:
                return self._peel(objects, ref["sha"])
        lowered = name.lower()
        if git.SHA_LOWER.match(lowered):
            return self._peel(objects, lowered)
        if 4 <= len(lowered) < 40 and all(c in "0123456789abcdef" for c in lowered):
            found = [sha for sha in objects.graph() if sha.startswith(lowered)]
            return found[0] if len(found) == 1 else None
        return None

    @staticmethod
    def _peel(objects, sha):
        obj = objects.object(sha)
        while obj is not None and obj.type_num == 4:  # an annotated tag
            obj = objects.object(obj.object[1].decode())
        return obj.id.decode() if obj is not None and obj.type_num == 1 else None

    def _with_history(self, repo):
        """The objects of a repository with at least one branch (409 without)."""
        objects = self.repos.objects(repo)
        self.repos.require_branches(repo)
        return objects

    def list(self, repo, page, *, sha=None, path=None):
        """`repos/list-commits`: a `Listing` of the commits reachable from `sha` (a branch, tag
        or sha; the default branch when None or empty), newest first, those touching `path`
        when given."""
        objects = self._with_history(repo)
        tip = self.resolve(repo, objects, sha or repo["default_branch"])
        if tip is None:
            raise errors.Unprocessable(f"No commit found for SHA: {sha}")
        shas = self.history(repo, tip, path=path or None)
        return Listing([self.object_json(repo, objects, found) for found in page.of(shas)],
                       len(shas))

    def get(self, repo, ref):
        """`repos/get-commit`: the commit with its `files` and `stats`."""
        objects = self._with_history(repo)
        sha = self.resolve(repo, objects, ref)
        if sha is None:
            raise errors.Unprocessable(f"No commit found for SHA: {ref}")
        return self.object_json(repo, objects, sha, files=True)

    def merge_base(self, objects, base, head):
        """Return the newest commit reachable from both (git merge-base, for simple
        histories: the first of head's ancestors, breadth first, that base reaches)."""
        graph = objects.graph()
        known = git.reachable(graph, base)
        return next((sha for sha in git.ancestry(graph, head) if sha in known), None)

    def between(self, objects, base, head):
        """Return the commits reachable from `head` and not from `base`, oldest first."""
        graph = objects.graph()
        return git.new_commits(graph, head, git.reachable(graph, base))

    def compare(self, repo, basehead, page=None):
        """`repos/compare-commits-with-basehead` (`base...head`, or `base..head`): the first
        250 commits, or the `page` of them asked for."""
        objects = self._with_history(repo)
        base_name, dots, head_name = basehead.partition("...")
        if not dots:
            base_name, dots, head_name = basehead.partition("..")
        base = self.resolve(repo, objects, base_name) if dots else None
        head = self.resolve(repo, objects, head_name) if dots else None
        if base is None or head is None:
            raise errors.NotFound()
        merge_base = self.merge_base(objects, base, head)
        ahead = self.between(objects, base, head)
        behind = self.between(objects, head, base)
        status = ("identical" if not ahead and not behind else "ahead" if not behind
                  else "behind" if not ahead else "diverged")
        repo_url, html_url = self.repos.urls(repo)
        files = [shapes.diff_entry(repo_url, html_url, head, change) for change in
                 self.branch_diff(repo, objects, base, head)[:MAX_FILES]]
        listed = ahead[:MAX_COMPARE_COMMITS] if page is None else page.of(ahead)
        return {
            "url": f"{repo_url}/compare/{basehead}",
            "html_url": f"{html_url}/compare/{basehead}",
            "permalink_url": f"{html_url}/compare/{base}...{head}",
            "diff_url": f"{html_url}/compare/{basehead}.diff",
            "patch_url": f"{html_url}/compare/{basehead}.patch",
            "base_commit": self.object_json(repo, objects, base),
            "merge_base_commit": self.object_json(repo, objects, merge_base or base),
            "status": status, "ahead_by": len(ahead), "behind_by": len(behind),
            "total_commits": len(ahead),
            "commits": [self.object_json(repo, objects, sha) for sha in listed],
            "files": files,
        }

    def _pull_objects(self, repo, pull):
        """(objects, head, base) of a PR: the branch tips while it is open."""
        objects = self.repos.objects(repo)
        head, base = pull["head_sha"], pull["base_sha"]
        if pull["state"] == "open":
            tips = self.repos.tips(repo["key"], (pull["head_ref"], pull["base_ref"]))
            head, base = tips.get(pull["head_ref"], head), tips.get(pull["base_ref"], base)
        return objects, head, base

    def branch_diff(self, repo, objects, base, head):
        """Return every file `head` changes since its merge base with `base` (answers list at
        most MAX_FILES; a PR's counts take them all)."""
        memo = self._diffs
        if (repo["key"], base, head) not in memo:
            merge_base = self.merge_base(objects, base, head)
            memo[repo["key"], base, head] = changed_files(
                objects, info(objects, merge_base)["tree"] if merge_base else None,
                info(objects, head)["tree"], limit=None)
        return memo[repo["key"], base, head]

    def pair_objects(self, repo, head, base):
        """The `GitObjects` holding both commits of a PR's head and base, or None: a
        synthetic repository has no trees (its PRs change no files and never conflict)."""
        if not has_objects(repo):
            return None
        objects = self.repos.objects(repo)
        graph = objects.graph()
        return objects if head in graph and base in graph else None

    def pull_diff(self, repo, head, base):
        """The files a pull request changes, for its `additions`, `deletions` and
        `changed_files` ([] without trees)."""
        objects = self.pair_objects(repo, head, base)
        return [] if objects is None else self.branch_diff(repo, objects, base, head)

    def of_pull(self, repo, pull, page):
        """`pulls/list-commits`: a `Listing` of the PR's commits (at most 250), oldest
        first."""
        objects, head, base = self._pull_objects(repo, pull)
        shas = self.between(objects, base, head)[:MAX_COMPARE_COMMITS]
        return Listing([self.object_json(repo, objects, sha) for sha in page.of(shas)],
                       len(shas))

    def files_of_pull(self, repo, pull, page):
        """`pulls/list-files`: a `Listing` of the files the PR changes since its merge base."""
        objects, head, base = self._pull_objects(repo, pull)
        repo_url, html_url = self.repos.urls(repo)
        files = self.branch_diff(repo, objects, base, head)[:MAX_FILES]
        return Listing([shapes.diff_entry(repo_url, html_url, head, change)
                        for change in page.of(files)], len(files))

    def describe_commit(self, repo):
        """Return `describe(sha)`: a push payload's details of a real commit, or None."""
        objects = self.store.git(repo["key"])

        def describe(sha):
            commit = objects.commit(sha)
            if commit is None:
                return None
            parent = objects.commit(commit.parents[0].decode()) if commit.parents else None
            changes = objects.changes(parent.tree.decode() if parent else None,
                                      commit.tree.decode())
            return {"message": message(commit),
                    "timestamp": _push_time(commit.commit_time, commit.commit_timezone),
                    "tree_id": commit.tree.decode(),
                    "author": person(commit.author, commit.author_time, commit.author_timezone),
                    "committer": person(commit.committer, commit.commit_time,
                                        commit.commit_timezone),
                    **{status: [c["filename"] for c in changes if c["status"] == kind]
                       for status, kind in (("added", "added"), ("removed", "removed"),
                                            ("modified", "modified"))}}
        return describe

    def history(self, repo, tip, *, path=None):
        """Return the commit shas reachable from `tip`, newest first (by committer time, then
        parents before ancestors, as `git log` does), only those touching `path` when given."""
        objects = self.store.git(repo["key"])
        graph = objects.graph()
        order = git.new_commits(graph, tip, set())  # parents before children
        objects.store.prefetch(order)
        times = {}
        for sha in order:
            commit = objects.commit(sha)
            times[sha] = commit.commit_time if commit else 0
        position = {sha: i for i, sha in enumerate(order)}
        newest = sorted(order, key=lambda s: (times[s], position[s]), reverse=True)
        if path is None:
            return newest
        kept = []
        for sha in newest:
            commit = objects.commit(sha)
            parent = objects.commit(commit.parents[0].decode()) if commit.parents else None
            before = objects.lookup(parent.tree.decode(), path) if parent else None
            after = objects.lookup(commit.tree.decode(), path)
            if (before and before["sha"]) != (after and after["sha"]):
                kept.append(sha)
        return kept
