"""Pull requests: open, read, list, update, their shape and their `pull_request` events.
"""
import re

from .. import actors, errors, events, git, ids, schemas, shapes

MAX_SAFE_INTEGER = 2 ** 53 - 1
CROSS_REPO = "Mockingbird does not model cross-repository heads"
REOPEN_MERGED = "state cannot be changed. The pull request has been merged."


def parse_pull_number(raw):
    """Return the pull number of a path segment, or None (decimal digits only, safe integer)."""
    if not re.fullmatch(r"[1-9][0-9]*", raw or ""):
        return None
    number = int(raw)
    return number if number <= MAX_SAFE_INTEGER else None


class PullRules:
    """Open, read, list and update pull requests; `rules` reaches what a PR's shape shows of
    its life: labels, changed files (commits) and mergeability (merges)."""

    def __init__(self, store, clock, *, emit, accounts, repos, rules):
        self.store = store
        self.clock = clock
        self.emit = emit
        self.accounts = accounts
        self.repos = repos
        self.rules = rules

    # pull requests ------------------------------------------------------------------------

    def create_pull(self, owner, name, parsed):
        """Open a PR; `parsed` is `schemas.parse_pull_body(...)` output (kind, value)."""
        op = "pulls/create"
        repo = self.repos.find(owner, name, op)
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
        with self.store.transaction():
            tips = self.repos.tips(key, (head, base))
            self._check_pair(key, login, head, base, tips, op, exclude=None)
            now = self.clock.now()
            number = self.store.next_id(f"pull_numbers:{key}")
            pull = {
                "repo": key, "number": number,
                "id": self.store.next_id("pull_ids"),
                "node_id": ids.node_id("github-pulls", "PR_", self.store.next_id("node:PR_")),
                "state": "open", "title": body["title"], "body": body.get("body"),
                "draft": body.get("draft") is True, "created_at": now, "updated_at": now,
                "closed_at": None, "maintainer_can_modify": body.get("maintainer_can_modify", True),
                "head_ref": head, "base_ref": base, "head_sha": tips[head], "base_sha": tips[base],
                "user": self.accounts.actor(),
                "issue_id": self.store.next_id("issue_ids"),  # a PR is an issue too
            }
            self.put(pull)
            self.emit("pull_request", lambda: events.pull_request(
                "opened", self.json(repo, pull, tips=tips, fresh=True), self.accounts.sender()))
        return self.json(repo, pull, tips=tips, fresh=True)

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
        if git.is_ancestor(self.store.graph(key), tips[head], tips[base]):
            raise errors.ValidationFailed(op, custom=f"No commits between {base} and {head}")

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

    def find(self, repo, raw_number, op):
        """Return the PR record a path's number names in `repo`, or raise 404."""
        number = parse_pull_number(raw_number)
        pull = self.store.pull(repo["key"], number) if number else None
        if pull is None:
            raise errors.NotFound(op)
        return pull

    def record(self, owner, name, raw_number, op):
        """Return (repository record, PR record) of a PR path, or raise 404."""
        repo = self.repos.find(owner, name, op)
        return repo, self.find(repo, raw_number, op)

    def get_pull(self, owner, name, raw_number, *, computing=False):
        """Answer `pulls/get`; `computing` answers as GitHub does while it computes the
        mergeability (`null`/`unknown`)."""
        repo, pull = self.record(owner, name, raw_number, "pulls/get")
        return self.json(repo, pull, fresh=computing)

    def list_pulls(self, owner, name, params):
        """Return (items, page, last) for the raw query pairs of a `pulls/list` request."""
        repo = self.repos.find(owner, name, "pulls/list")
        query = schemas.pull_list_query(params)  # validated after the repository check
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
        repo_json = self.repos.json(repo)
        tips = self.repos.tips(key, [p["head_ref"] for p in pulls if p["state"] == "open"]
                               + [p["base_ref"] for p in pulls if p["state"] == "open"])
        return ([self.json(repo, p, tips=tips, repo_json=repo_json, full=False)
                 for p in pulls],
                query.page, last)

    def update_pull(self, owner, name, raw_number, parsed):
        op = "pulls/update"
        repo = self.repos.find(owner, name, op)
        number = parse_pull_number(raw_number)
        if number is None:
            raise errors.NotFound(op)
        body = _pull_body(parsed, op)
        key = repo["key"]
        with self.store.transaction():
            pull = self.store.pull(key, number)
            if pull is None:
                raise errors.NotFound(op)
            _check_common_fields(body, op)
            if "state" in body and body["state"] not in ("open", "closed"):
                raise errors.ValidationFailed(op, field="state")
            if "base" in body and (not isinstance(body["base"], str) or not body["base"]):
                raise errors.ValidationFailed(op, field="base")
            state = body.get("state", pull["state"])
            if pull.get("merged") and state == "open":
                raise errors.ValidationFailed(op, field="state", custom=REOPEN_MERGED)
            base = body.get("base", pull["base_ref"])
            tips = self.repos.tips(key, (pull["head_ref"], base))
            if pull["head_ref"] not in tips or base not in tips:
                raise errors.ValidationFailed(op, field="base/head")
            if state == "open" and (pull["state"] == "closed" or "base" in body):
                login = self.store.owner(repo["owner"])["login"]
                self._check_open_pair(key, login, pull["head_ref"], base, tips, op,
                                      exclude=number)
            now = self.clock.now()
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


def _nonblank(value):
    return isinstance(value, str) and bool(value.strip())


def _pull_body(parsed, op):
    """Turn a classified request body into the PR field dict: invalid JSON is 400, a non-object
    422, a form, text or bytes body 501, an empty body `{}`."""
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
