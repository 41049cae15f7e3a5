"""Commits of a repository of git objects: their GitHub shapes, lists, comparisons, diffs.

A mixin of `models.GitHubBackend`, which holds the store, clock and object layer.
"""
from datetime import datetime, timedelta, timezone

from . import git


def person(raw, when, offset):
    """Split git's `Name <email>` and time into GitHub's `{name, email, date}`."""
    text = raw.decode("utf-8", "replace")
    name, _, rest = text.partition(" <")
    zone = timezone(timedelta(seconds=offset))
    date = datetime.fromtimestamp(when, zone).astimezone(timezone.utc)
    return {"name": name.strip(), "email": rest.rstrip(">").strip(),
            "date": date.strftime("%Y-%m-%dT%H:%M:%SZ")}


def _push_time(when, offset):
    return datetime.fromtimestamp(when, timezone(timedelta(seconds=offset))).isoformat()


class CommitRules:
    """The commit reads of `GitHubBackend` over a repository's objects."""

    def describe_commit(self, repo):
        """Return `describe(sha)`: a push payload's details of a real commit, or None."""
        objects = self._git_objects(repo["key"])

        def describe(sha):
            commit = objects.commit(sha)
            if commit is None:
                return None
            parent = objects.commit(commit.parents[0].decode()) if commit.parents else None
            changes = objects.changes(parent.tree.decode() if parent else None,
                                      commit.tree.decode())
            return {"message": commit.message.decode("utf-8", "replace"),
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
        objects = self._git_objects(repo["key"])
        graph = objects.graph()
        order = git.new_commits(graph, tip, set())  # parents before children
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
