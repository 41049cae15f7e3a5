"""Commit statuses: create, list for a ref, the combined status, and the `status` event.

The combined state is GitHub's rule over the latest status of each context: `failure` if any
is `error` or `failure`, `pending` if there is none or any is `pending`, else `success`.
"""

from .. import errors, ids, shapes
from ..inputs import Listing
from ..store import STATUSES
from .rule import Rule

STATES = ("error", "failure", "pending", "success")
MAX_PER_SHA = 1000  # GitHub refuses a 1001st status for one sha and context pair


def combined_state(latest):
    """GitHub's combined state of the latest status per context."""
    states = {status["state"] for status in latest}
    if states & {"error", "failure"}:
        return "failure"
    if not states or "pending" in states:
        return "pending"
    return "success"


class StatusRules(Rule):
    """Create and read commit statuses; `rules` reaches commits (what a ref names, a commit's
    shape) and protection (a `status` event's branches say whether they are protected)."""

    def create(self, repo, ref, *, state, target_url=None, description=None, context=None):
        """`repos/create-commit-status` on the commit `ref` names (422 when none)."""
        key = repo["key"]
        with self.store.transaction():
            sha = self.rules.commits.commit_sha(key, ref)
            if sha is None:
                raise errors.Unprocessable(f"No commit found for SHA: {ref}")
            context = context or "default"
            if self.store.count_items(STATUSES, {"repo": key, "sha": sha,
                                                 "context": context}) >= MAX_PER_SHA:
                raise errors.ValidationFailed(
                    resource="Status", custom="This SHA and context has reached the "
                    "maximum number of statuses.")
            now = self.clock.now()
            number = self.store.next_id("status_ids")
            record = {"repo": key, "sha": sha, "id": number,
                      "node_id": ids.node_id("github", "SC_", number),
                      "state": state, "context": context, "description": description,
                      "target_url": target_url, "creator": self.accounts.actor(),
                      "created_at": now, "updated_at": now}
            self.store.put_item(STATUSES, f"{key}:{number}", record)
            self.emit("status", lambda: self._status_event(repo, record))
        return self.status_json(repo, record)

    def status_json(self, repo, record, *, creator=True):
        """A status record as GitHub shows it (`status`)."""
        return shapes.status(self.repos.url(repo), record,
                             self.accounts.json(record["creator"]), creator=creator)

    def _statuses_for(self, key, sha):
        """Every status of a commit, newest first."""
        return self.store.items(STATUSES, {"repo": key, "sha": sha}, order_by="id", desc=True)

    def latest(self, key, sha):
        """The latest status of each context of a commit, oldest context first."""
        latest = {}
        for status in self._statuses_for(key, sha):
            latest.setdefault(status["context"], status)
        return sorted(latest.values(), key=lambda s: s["id"])

    def list(self, repo, sha, page):
        """`repos/list-commit-statuses-for-ref`: a `Listing` of a commit's statuses, newest
        first."""
        found = self._statuses_for(repo["key"], sha)
        return Listing([self.status_json(repo, s) for s in page.of(found)], len(found))

    def combined(self, repo, sha):
        """`repos/get-combined-status-for-ref`: the combined state of a commit."""
        latest = self.latest(repo["key"], sha)
        repo_url = self.repos.url(repo)
        return {"state": combined_state(latest),
                "statuses": [self.status_json(repo, s, creator=False) for s in latest],
                "sha": sha, "total_count": len(latest), "repository": self.repos.json(repo),
                "commit_url": f"{repo_url}/commits/{sha}",
                "url": f"{repo_url}/commits/{sha}/status"}

    def _status_event(self, repo, record):
        repo_json = self.repos.json(repo)
        sha = record["sha"]
        branches = [{"name": ref["ref"][len("refs/heads/"):],
                     "commit": {"sha": sha, "url": f"{repo_json['url']}/commits/{sha}"},
                     "protected": self.rules.protection.record(
                         repo["key"], ref["ref"][len("refs/heads/"):]) is not None}
                    for ref in self.store.refs(repo["key"])
                    if ref["kind"] == "heads" and ref["sha"] == sha]
        return {"id": record["id"], "sha": sha, "name": repo_json["full_name"],
                "target_url": record["target_url"], "context": record["context"],
                "description": record["description"], "state": record["state"],
                "commit": self.rules.commits.json(repo, sha), "branches": branches,
                "created_at": record["created_at"], "updated_at": record["updated_at"],
                "repository": repo_json, "sender": self.accounts.sender()}
