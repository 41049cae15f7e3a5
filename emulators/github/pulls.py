"""Pull requests: open, read, list, update, and their events.

A mixin of `models.GitHubBackend`, which holds the store, clock, transaction and shapes.
"""
import re

from . import errors, events, git, ids, schemas

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
    """The pull request operations of `GitHubBackend`."""

    # pull requests ------------------------------------------------------------------------

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
            now = self.now()
            number = self.store.next_id(f"pull_numbers:{key}")
            pull = {
                "repo": key, "number": number,
                "id": self.store.next_id("pull_ids"),
                "node_id": ids.node_id("github-pulls", "PR_", self.store.next_id("node:PR_")),
                "state": "open", "title": body["title"], "body": body.get("body"),
                "draft": body.get("draft") is True, "created_at": now, "updated_at": now,
                "closed_at": None, "maintainer_can_modify": body.get("maintainer_can_modify", True),
                "head_ref": head, "base_ref": base, "head_sha": tips[head], "base_sha": tips[base],
                "user": self._actor(),
                "issue_id": self.store.next_id("issue_ids"),  # a PR is an issue too
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
        if git.is_ancestor(self.store.graph(key), tips[head], tips[base]):
            raise errors.ValidationFailed(op, custom=f"No commits between {base} and {head}")

    def _put_pull(self, pull, before=None):
        """Store a PR (`before`: its stored value, None for a new one); keep the repository's
        open PR count in its record when the PR opens or closes."""
        # composite sort keys: timestamp then zero-padded number, so SQL ordering breaks ties
        pull["created_key"] = f"{pull['created_at']}#{pull['number']:016d}"
        pull["updated_key"] = f"{pull['updated_at']}#{pull['number']:016d}"
        self.store.put_pull(pull)
        delta = (pull["state"] == "open") - (before is not None and before["state"] == "open")
        if delta:
            repo = self.store.repo(pull["repo"])
            if "open_pulls" not in repo:  # written without the count: count once
                repo["open_pulls"] = self.store.count_pulls({"repo": repo["key"],
                                                             "state": "open"}) - delta
            repo["open_pulls"] += delta
            self.store.put_repo(repo["key"], repo)
            self._open_pulls[repo["key"]] = repo["open_pulls"]

    def _pull(self, repo, raw_number, op):
        """Return the PR record a path's number names in `repo`, or raise 404."""
        number = parse_pull_number(raw_number)
        pull = self.store.pull(repo["key"], number) if number else None
        if pull is None:
            raise errors.NotFound(op)
        return pull

    def _pull_record(self, owner, name, raw_number, op):
        """Return (repository record, PR record) of a PR path, or raise 404."""
        repo = self._repo(owner, name, op)
        return repo, self._pull(repo, raw_number, op)

    def get_pull(self, owner, name, raw_number, *, computing=False):
        """Answer `pulls/get`; `computing` answers as GitHub does while it computes the
        mergeability (`null`/`unknown`)."""
        repo, pull = self._pull_record(owner, name, raw_number, "pulls/get")
        return self.pull_json(repo, pull, fresh=computing)

    def list_pulls(self, owner, name, params):
        """Return (items, page, last) for the raw query pairs of a `pulls/list` request."""
        repo = self._repo(owner, name, "pulls/list")
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
            if pull.get("merged") and state == "open":
                raise errors.ValidationFailed(op, field="state", custom=REOPEN_MERGED)
            base = body.get("base", pull["base_ref"])
            tips = self._tips(key, (pull["head_ref"], base))
            if pull["head_ref"] not in tips or base not in tips:
                raise errors.ValidationFailed(op, field="base/head")
            if state == "open" and (pull["state"] == "closed" or "base" in body):
                login = self.store.owner(repo["owner"])["login"]
                self._check_open_pair(key, login, pull["head_ref"], base, tips, op,
                                      exclude=number)
            now = self.now()
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
            self._put_pull(pull, before)
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
