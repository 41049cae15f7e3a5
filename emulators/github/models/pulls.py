"""Pull requests: open, read, list, update, their shape and their `pull_request` events.
"""
from .. import actors, errors, events, git, ids, shapes
from ..inputs import UNCHANGED, Listing
from . import texts
from .rule import Rule

REOPEN_MERGED = "state cannot be changed. The pull request has been merged."


def check_title(title):
    """A pull request's title holds more than white space (422 `invalid` `title`)."""
    texts.nonblank("title", "PullRequest", "invalid", title)


class PullRules(Rule):
    """Open, read, list and update pull requests; `rules` reaches what a PR's shape shows of
    its life: labels, changed files (commits) and mergeability (merges)."""

    # pull requests ------------------------------------------------------------------------

    def create(self, repo, *, title, head, base, body=None, draft=False,
               maintainer_can_modify=True):
        """`pulls/create`: open a PR from `head` (`branch` or `owner:branch` of this
        repository) into `base`."""
        check_title(title)
        owner_name, colon, head = head.rpartition(":")
        login = self.store.owner(repo["owner"])["login"]
        if colon and owner_name.lower() != login.lower():
            raise errors.Unsupported(errors.CROSS_REPO)
        key = repo["key"]
        with self.store.transaction():
            tips = self.repos.tips(key, (head, base))
            self._check_pair(key, login, head, base, tips, exclude=None)
            now = self.clock.now()
            number = self.store.next_id(f"pull_numbers:{key}")
            pull = {
                "repo": key, "number": number,
                "id": self.store.next_id("pull_ids"),
                "node_id": ids.node_id("github-pulls", "PR_", self.store.next_id("node:PR_")),
                "state": "open", "title": title, "body": body, "draft": draft,
                "created_at": now, "updated_at": now, "closed_at": None,
                "maintainer_can_modify": maintainer_can_modify,
                "head_ref": head, "base_ref": base, "head_sha": tips[head], "base_sha": tips[base],
                "user": self.accounts.actor(),
                "issue_id": self.store.next_id("issue_ids"),  # a PR is an issue too
            }
            self.put(pull)
            self.emit("pull_request", lambda: events.pull_request(
                "opened", self.json(repo, pull, tips=tips, fresh=True), self.accounts.sender()))
        return self.json(repo, pull, tips=tips, fresh=True)

    def _check_pair(self, key, login, head, base, tips, *, exclude):
        """Refuse missing branches, a duplicate open head/base pair, and 'no commits between'."""
        if head not in tips or base not in tips:
            raise errors.ValidationFailed(field="base/head")
        self._check_open_pair(key, login, head, base, tips, exclude=exclude)

    def _check_open_pair(self, key, login, head, base, tips, *, exclude):
        twins = self.store.pulls({"repo": key, "state": "open", "head_ref": head,
                                  "base_ref": base}, order_by=None, desc=False, limit=2, offset=0)
        if any(p["number"] != exclude for p in twins):
            raise errors.ValidationFailed(
                custom=f"A pull request already exists for {login}:{head}.")
        if git.is_ancestor(self.store.graph(key), tips[head], tips[base]):
            raise errors.ValidationFailed(custom=f"No commits between {base} and {head}")

    def put(self, pull, before=None):
        """Store a PR (`before`: its stored value, None for a new one); keep the repository's
        open PR count in its record when the PR opens or closes."""
        # composite sort keys: timestamp then zero-padded number, so SQL ordering breaks ties
        pull["created_key"] = f"{pull['created_at']}#{pull['number']:016d}"
        pull["updated_key"] = f"{pull['updated_at']}#{pull['number']:016d}"
        self.store.put_pull(pull)
        delta = (pull["state"] == "open") - (before is not None and before["state"] == "open")
        if delta:  # a record written without the count is counted once
            self.repos.count_open(pull["repo"], "open_pulls", delta, counted=lambda: (
                self.store.count_pulls({"repo": pull["repo"], "state": "open"}) - delta))

    def find(self, repo, number):
        """The PR record numbered `number` in `repo`; 404 when there is none."""
        pull = self.store.pull(repo["key"], number)
        if pull is None:
            raise errors.NotFound()
        return pull

    def get(self, repo, number, *, computing=False):
        """`pulls/get`; `computing` answers as GitHub does while it computes the mergeability
        (`null`/`unknown`)."""
        return self.json(repo, self.find(repo, number), fresh=computing)

    def list(self, repo, page, *, state="open", sort="created", direction="desc", base=None,
             head=None):
        """`pulls/list`: a `Listing` of `pull-request-simple` shapes; `head` is
        `owner:branch`. Filtering, sorting and paging run in SQL."""
        key = repo["key"]
        where = {"repo": key}
        if state != "all":
            where["state"] = state
        if base is not None:
            where["base_ref"] = base
        if head is not None:
            head_owner, colon, branch = head.partition(":")
            login = self.store.owner(repo["owner"])["login"]
            if not colon or head_owner.lower() != login.lower():
                return Listing([], 0)
            where["head_ref"] = branch
        total = self.store.count_pulls(where)
        if page.offset >= total:
            return Listing([], total)
        pulls = self.store.pulls(where, order_by=f"{sort}_key", desc=direction == "desc",
                                 limit=page.size, offset=page.offset)
        repo_json = self.repos.json(repo)
        tips = self.repos.tips(key, [p["head_ref"] for p in pulls if p["state"] == "open"]
                               + [p["base_ref"] for p in pulls if p["state"] == "open"])
        return Listing([self.json(repo, p, tips=tips, repo_json=repo_json, full=False)
                        for p in pulls], total)

    def update(self, repo, number, *, title=UNCHANGED, body=UNCHANGED, state=UNCHANGED,
               base=UNCHANGED, maintainer_can_modify=UNCHANGED):
        """`pulls/update`: change what is given; reopening or retargeting checks the branches
        again."""
        if title is not UNCHANGED:
            check_title(title)
        key = repo["key"]
        with self.store.transaction():
            pull = self.find(repo, number)
            state = pull["state"] if state is UNCHANGED else state
            if pull.get("merged") and state == "open":
                raise errors.ValidationFailed(field="state", custom=REOPEN_MERGED)
            retarget = base is not UNCHANGED
            base = pull["base_ref"] if base is UNCHANGED else base
            tips = self.repos.tips(key, (pull["head_ref"], base))
            if pull["head_ref"] not in tips or base not in tips:
                raise errors.ValidationFailed(field="base/head")
            if state == "open" and (pull["state"] == "closed" or retarget):
                login = self.store.owner(repo["owner"])["login"]
                self._check_open_pair(key, login, pull["head_ref"], base, tips, exclude=number)
            now = self.clock.now()
            before = pull
            pull = {**pull, "state": state, "base_ref": base, "updated_at": now,
                    "head_sha": tips[pull["head_ref"]], "base_sha": tips[base],
                    "closed_at": (pull["closed_at"] or now) if state == "closed" else None}
            if title is not UNCHANGED:
                pull["title"] = title
            if body is not UNCHANGED:
                pull["body"] = body or None  # live GitHub: "" clears the body to null
            if maintainer_can_modify is not UNCHANGED:
                pull["maintainer_can_modify"] = maintainer_can_modify
            self.put(pull, before)
            self.emit_changes(repo, before, pull, tips)
        return self.json(repo, pull, tips=tips)

    def json(self, repo, pull, *, tips=None, repo_json=None, full=True, fresh=False):
        """Shape a PR; an open PR shows the current branch tips.

        `full` adds what only `pulls/get` and the writes carry (commit and line counts,
        mergeability);
        `fresh` marks a PR just created, whose mergeability GitHub has not computed yet.
        """
        repo_json = repo_json or self.repos.json(repo)
        head_sha, base_sha = pull["head_sha"], pull["base_sha"]
        if pull["state"] == "open":
            if tips is None:
                tips = self.repos.tips(repo["key"], (pull["head_ref"], pull["base_ref"]))
            head_sha = tips.get(pull["head_ref"], head_sha)
            base_sha = tips.get(pull["base_ref"], base_sha)
        login = pull.get("user", actors.DEFAULT)
        shape = shapes.pull(repo_json, pull, self.accounts.json(login), head_sha=head_sha,
                            base_sha=base_sha)
        assignees = [self.accounts.json(a) for a in pull.get("assignees", [])]
        shape.update({
            "labels": self.rules.labels.on_issue(repo, pull), "assignees": assignees,
            "assignee": assignees[0] if assignees else None,
            "requested_reviewers": [self.accounts.json(r)
                                    for r in pull.get("requested_reviewers", [])],
            "merged_at": pull.get("merged_at"),
            "merge_commit_sha": pull.get("merge_commit_sha"),
            "author_association": self.accounts.association(repo, login)})
        if full:
            graph = self.store.graph(repo["key"])
            commits = len(git.reachable(graph, head_sha) - git.reachable(graph, base_sha))
            shape.update(shapes.pull_counts(pull, commits=commits, computed=not fresh,
                                            files=self.rules.commits.pull_diff(repo, head_sha,
                                                                               base_sha)))
            shape.update({"merged": pull.get("merged", False),
                          "merged_by": self.accounts.json(pull["merged_by"])
                          if pull.get("merged_by") else None,
                          "comments": pull.get("comments", 0)})
            if shape["mergeable"] is not None:  # computed, open: from the trees and protection
                mergeable, rebaseable, state = self.rules.merges.mergeability(
                    repo, pull, head_sha, base_sha)
                shape.update({"mergeable": mergeable, "rebaseable": rebaseable,
                              "mergeable_state": state})
        elif "merged" in shape:
            shape["merged"] = pull.get("merged", False)
        return shape

    def emit_changes(self, repo, before, after, tips):
        """Send `edited` (with `changes`) and `closed`/`reopened`, as GitHub does per update."""
        changes = {name: {"from": before[name] or ""} for name in ("title", "body")
                   if before[name] != after[name]}
        if before["base_ref"] != after["base_ref"]:
            changes["base"] = {"ref": {"from": before["base_ref"]},
                               "sha": {"from": before["base_sha"]}}
        shape = lambda: self.json(repo, after, tips=tips)  # noqa: E731
        if changes:
            self.emit("pull_request", lambda: events.pull_request(
                "edited", shape(), self.accounts.sender(), changes=changes))
        if before["state"] != after["state"]:
            action = "closed" if after["state"] == "closed" else "reopened"
            self.emit("pull_request", lambda: events.pull_request(action, shape(),
                                                                  self.accounts.sender()))
