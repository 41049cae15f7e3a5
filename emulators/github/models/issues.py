"""The conversation: issues (numbered with the pull requests, as on GitHub), comments and
assignees, and their `issues`, `issue_comment` (and `pull_request` labeled/assigned) events.

On GitHub every pull request is an issue: the issues API reads and writes a PR's title, body,
state, labels, assignees and comments too, and answers a PR number with its issue shape
(carrying `pull_request`).
"""
from .. import errors, events, ids, schemas, times
from ..store import COMMENTS, ISSUES
from .pulls import REOPEN_MERGED, parse_pull_number


def reactions(url):
    """The empty reactions summary GitHub attaches to issues and comments."""
    return {"url": f"{url}/reactions", "total_count": 0, "+1": 0, "-1": 0, "laugh": 0,
            "hooray": 0, "confused": 0, "heart": 0, "rocket": 0, "eyes": 0}


class IssueRules:
    """Open, change and read issues, their comments and assignees; `rules` reaches labels and
    pulls (an issue number may be a PR's: it is written back as one)."""

    def __init__(self, store, clock, *, emit, accounts, repos, rules):
        self.store = store
        self.clock = clock
        self.emit = emit
        self.accounts = accounts
        self.repos = repos
        self.rules = rules

    # issues --------------------------------------------------------------------------------

    def create_issue(self, owner, name, parsed):
        op = "issues/create"
        repo = self.repos.find(owner, name, op)
        body = schemas.json_object(parsed, op)
        if not isinstance(body.get("title"), (str, int)) or not str(body["title"]).strip():
            raise errors.ValidationFailed(op, resource="Issue", field="title",
                                          code="missing_field")
        if body.get("body") is not None and not isinstance(body["body"], str):
            raise errors.ValidationFailed(op, resource="Issue", field="body")
        schemas.check_length(str(body["title"]), schemas.MAX_TITLE, op, "Issue", "title")
        schemas.check_length(body.get("body"), schemas.MAX_BODY, op, "Issue", "body")
        key = repo["key"]
        with self.store.transaction():
            labels = self.rules.labels.names(repo, body.get("labels", []), op)
            assignees = self._assignable(body.get("assignees") or (
                [body["assignee"]] if body.get("assignee") else []), op)
            now = self.clock.now()
            number = self.store.next_id(f"pull_numbers:{key}")  # one sequence with the PRs
            issue_id = self.store.next_id("issue_ids")
            issue = {"repo": key, "number": number, "id": issue_id,
                     "node_id": ids.node_id("github-issues", "I_", issue_id),
                     "title": str(body["title"]), "body": body.get("body") or None,
                     "state": "open", "state_reason": None, "user": self.accounts.actor(),
                     "labels": labels, "assignees": assignees, "comments": 0,
                     "created_at": now, "updated_at": now, "closed_at": None,
                     "closed_by": None}
            self.put(issue)
            self.emit("issues", lambda: self._issue_event("opened", repo, issue))
        return self.issue_json(repo, issue)

    def get_issue(self, owner, name, raw_number):
        op = "issues/get"
        repo = self.repos.find(owner, name, op)
        return self.issue_json(repo, self.conversation(repo, raw_number, op))

    def update_issue(self, owner, name, raw_number, parsed):
        op = "issues/update"
        repo = self.repos.find(owner, name, op)
        body = schemas.json_object(parsed, op)
        with self.store.transaction():
            before = self.conversation(repo, raw_number, op)
            after = {**before}
            if "title" in body:
                if not isinstance(body["title"], (str, int)) or not str(body["title"]).strip():
                    raise errors.ValidationFailed(op, resource="Issue", field="title")
                after["title"] = str(body["title"])
                schemas.check_length(after["title"], schemas.MAX_TITLE, op, "Issue", "title")
            if "body" in body:
                if body["body"] is not None and not isinstance(body["body"], str):
                    raise errors.ValidationFailed(op, resource="Issue", field="body")
                schemas.check_length(body["body"], schemas.MAX_BODY, op, "Issue", "body")
                after["body"] = body["body"] or None
            if "state" in body:
                if body["state"] not in ("open", "closed"):
                    raise errors.ValidationFailed(op, resource="Issue", field="state")
                if before.get("merged") and body["state"] == "open":
                    raise errors.ValidationFailed(op, resource="Issue", field="state",
                                                  custom=REOPEN_MERGED)
                after["state"] = body["state"]
            if "labels" in body:
                after["labels"] = self.rules.labels.names(repo, body["labels"], op)
            if "assignees" in body or "assignee" in body:
                wanted = body.get("assignees")
                if wanted is None:
                    wanted = [body["assignee"]] if body.get("assignee") else []
                after["assignees"] = self._assignable(wanted, op)
            now = self.clock.now()
            after["updated_at"] = now
            if after["state"] != before["state"]:
                closing = after["state"] == "closed"
                after["closed_at"] = now if closing else None
                if "pull" not in after:
                    after["closed_by"] = self.accounts.actor() if closing else None
                    after["state_reason"] = (body.get("state_reason") or "completed") \
                        if closing else "reopened"
                else:  # a PR keeps the tips it was closed at, as pulls/update does
                    tips = self.repos.tips(repo["key"], (after["head_ref"], after["base_ref"]))
                    after["head_sha"] = tips.get(after["head_ref"], after["head_sha"])
                    after["base_sha"] = tips.get(after["base_ref"], after["base_sha"])
            self.store_conversation(repo, before, after)
        return self.issue_json(repo, after)

    def list_issues(self, owner, name, pairs):
        """`issues/list-for-repo`: issues and pull requests, newest first; returns (items,
        page, last) for `Link`."""
        op = "issues/list-for-repo"
        repo = self.repos.find(owner, name, op)
        q = schemas.first_values(pairs)
        state = q.get("state", "open")
        if state not in ("open", "closed", "all"):
            raise errors.ValidationFailed(op, resource="Issue", field="state")
        sort = q.get("sort", "created")
        if sort not in ("created", "updated", "comments"):
            raise errors.ValidationFailed(op, resource="Issue", field="sort")
        direction = q.get("direction", "desc")
        if direction not in ("asc", "desc"):
            raise errors.ValidationFailed(op, resource="Issue", field="direction")
        where = {"repo": repo["key"]} if state == "all" else {"repo": repo["key"],
                                                              "state": state}
        found = [*self.store.items(ISSUES, where),
                 *({**p, "pull": True} for p in self.store.pulls(
                     where, order_by=None, desc=False, limit=None, offset=0))]
        wanted = {n.strip().lower() for n in q.get("labels", "").split(",") if n.strip()}
        if wanted:
            found = [i for i in found
                     if wanted <= {n.lower() for n in i.get("labels", [])}]
        if "creator" in q:
            found = [i for i in found if i.get("user", "").lower() == q["creator"].lower()]
        if "assignee" in q and q["assignee"] != "*":
            who = q["assignee"].lower()
            found = [i for i in found if (who == "none" and not i.get("assignees"))
                     or who in (a.lower() for a in i.get("assignees", []))]
        field = {"created": "created_at", "updated": "updated_at", "comments": "comments"}[sort]
        found.sort(key=lambda i: (i.get(field) or 0, i["number"]), reverse=direction == "desc")
        shown, page, last = schemas.page_of(found, pairs)
        return [self.issue_json(repo, i) for i in shown], page, last

    def conversation(self, repo, raw_number, op):
        """The issue or pull request numbered `raw_number` (a PR record carries `pull`)."""
        number = parse_pull_number(raw_number)
        if number is None:
            raise errors.NotFound(op)
        issue = self.store.item(ISSUES, f"{repo['key']}:{number}")
        if issue is not None:
            return issue
        pull = self.store.pull(repo["key"], number)
        if pull is None:
            raise errors.NotFound(op)
        return {**pull, "pull": True}

    def put(self, issue, before=None):
        """Store an issue (`before`: its stored value, None for a new one); keep the
        repository's open issue count in its record (GitHub's `open_issues_count` counts
        issues and pull requests)."""
        self.store.put_item(ISSUES, f"{issue['repo']}:{issue['number']}", issue)
        delta = (issue["state"] == "open") - (before is not None and before["state"] == "open")
        if delta:
            self.repos.count_open(issue["repo"], "open_issues", delta)

    def store_conversation(self, repo, before, after, *, emit=True):
        """Write an issue or PR back and send what changed (edited, closed, reopened,
        labeled, unlabeled, assigned, unassigned) as GitHub does."""
        if "pull" in after:
            pull_before = {k: v for k, v in before.items() if k != "pull"}
            pull = {k: v for k, v in after.items() if k != "pull"}
            self.rules.pulls.put(pull, pull_before)
            if emit:
                tips = self.repos.tips(repo["key"], (pull["head_ref"], pull["base_ref"]))
                self.rules.pulls.emit_changes(repo, pull_before, pull, tips)
                self._emit_tag_changes(repo, pull_before, pull)
            return
        self.put(after, before)
        if not emit:
            return
        changes = {f: {"from": before[f] or ""} for f in ("title", "body")
                   if before[f] != after[f]}
        if changes:
            self.emit("issues", lambda: self._issue_event("edited", repo, after,
                                                          changes=changes))
        if before["state"] != after["state"]:
            action = "closed" if after["state"] == "closed" else "reopened"
            self.emit("issues", lambda: self._issue_event(action, repo, after))
        self._emit_tag_changes(repo, before, after)

    def _emit_tag_changes(self, repo, before, after):
        """`labeled`/`unlabeled` per label and `assigned`/`unassigned` per user."""
        is_pull = "pull" in after or "head_ref" in after
        label = self.rules.labels.ref_json
        for action, field, names, build in (
                ("unlabeled", "labels", _removed(before, after, "labels"), label),
                ("labeled", "labels", _added(before, after, "labels"), label),
                ("unassigned", "assignees", _removed(before, after, "assignees"),
                 self._assignee_ref),
                ("assigned", "assignees", _added(before, after, "assignees"),
                 self._assignee_ref)):
            target = "label" if field == "labels" else "assignee"
            for item in names:
                if is_pull:
                    self.emit("pull_request", lambda action=action, item=item, target=target,
                              build=build: self._pull_event(
                                  action, repo, after, **{target: build(repo, item)}))
                else:
                    self.emit("issues", lambda action=action, item=item, target=target,
                              build=build: self._issue_event(
                                  action, repo, after, **{target: build(repo, item)}))

    def _assignee_ref(self, repo, login):
        return self.accounts.json(login)

    # comments ------------------------------------------------------------------------------

    def create_comment(self, owner, name, raw_number, parsed):
        op = "issues/create-comment"
        repo = self.repos.find(owner, name, op)
        body = _comment_body(parsed, op)
        with self.store.transaction():
            target = self.conversation(repo, raw_number, op)
            now = self.clock.now()
            number = self.store.next_id("comment_ids")
            comment = {"repo": repo["key"], "id": number, "number": target["number"],
                       "node_id": ids.node_id("github", "IC_", number), "body": body["body"],
                       "user": self.accounts.actor(), "created_at": now, "updated_at": now}
            self.store.put_item(COMMENTS, f"{repo['key']}:{number}", comment)
            target = {**target, "comments": target.get("comments", 0) + 1}
            self.store_conversation(repo, target, target, emit=False)
            self.emit("issue_comment", lambda: self._comment_event("created", repo, target,
                                                                   comment))
        return self.comment_json(repo, comment)

    def list_comments(self, owner, name, raw_number, pairs):
        op = "issues/list-comments"
        repo = self.repos.find(owner, name, op)
        target = self.conversation(repo, raw_number, op)
        found = self.store.items(COMMENTS, {"repo": repo["key"], "number": target["number"]},
                                 order_by="id")
        since = schemas.first_values(pairs).get("since")
        if since:
            try:  # stored times are GitHub's, to the second: compared as text once alike
                since = times.normalized(since)
            except ValueError:
                raise errors.ValidationFailed(op, resource="IssueComment", field="since")
            found = [c for c in found if c["updated_at"] >= since]
        shown, page, last = schemas.page_of(found, pairs)
        return [self.comment_json(repo, c) for c in shown], page, last

    def get_comment(self, owner, name, raw_id):
        op = "issues/get-comment"
        repo = self.repos.find(owner, name, op)
        return self.comment_json(repo, self._comment(repo, raw_id, op))

    def update_comment(self, owner, name, raw_id, parsed):
        op = "issues/update-comment"
        repo = self.repos.find(owner, name, op)
        body = _comment_body(parsed, op)
        with self.store.transaction():
            before = self._comment(repo, raw_id, op)
            comment = {**before, "body": body["body"], "updated_at": self.clock.now()}
            self.store.put_item(COMMENTS, f"{repo['key']}:{comment['id']}", comment)
            target = self.conversation(repo, str(comment["number"]), op)
            self.emit("issue_comment", lambda: self._comment_event(
                "edited", repo, target, comment, changes={"body": {"from": before["body"]}}))
        return self.comment_json(repo, comment)

    def delete_comment(self, owner, name, raw_id):
        op = "issues/delete-comment"
        repo = self.repos.find(owner, name, op)
        with self.store.transaction():
            comment = self._comment(repo, raw_id, op)
            self.store.delete_item(COMMENTS, f"{repo['key']}:{comment['id']}")
            target = self.conversation(repo, str(comment["number"]), op)
            target = {**target, "comments": max(0, target.get("comments", 1) - 1)}
            self.store_conversation(repo, target, target, emit=False)
            self.emit("issue_comment", lambda: self._comment_event("deleted", repo, target,
                                                                   comment))
        return comment

    def _comment(self, repo, raw_id, op):
        found = self.store.item(COMMENTS, f"{repo['key']}:{raw_id}") if raw_id.isdigit() \
            else None
        if found is None:
            raise errors.NotFound(op)
        return found

    # assignees -----------------------------------------------------------------------------

    def change_assignees(self, owner, name, raw_number, parsed, *, add):
        op = "issues/add-assignees" if add else "issues/remove-assignees"
        repo = self.repos.find(owner, name, op)
        body = schemas.json_object(parsed, op)
        wanted = body.get("assignees", [])
        if not isinstance(wanted, list) or not all(isinstance(w, str) for w in wanted):
            raise errors.ValidationFailed(op, resource="Issue", field="assignees")
        with self.store.transaction():
            before = self.conversation(repo, raw_number, op)
            current = before.get("assignees", [])
            if add:
                assignees = [*current, *(a for a in self._assignable(wanted, op)
                                         if a not in current)][:10]
            else:
                gone = {w.lower() for w in wanted}
                assignees = [a for a in current if a.lower() not in gone]
            after = {**before, "assignees": assignees, "updated_at": self.clock.now()}
            self.store_conversation(repo, before, after)
        return self.issue_json(repo, after)

    def _assignable(self, logins, op):
        """The users among `logins` who may be assigned, collaborators (`collaborator`; GitHub
        drops the others silently). At most ten, as on GitHub."""
        if not isinstance(logins, list) or not all(isinstance(x, str) for x in logins):
            raise errors.ValidationFailed(op, resource="Issue", field="assignees")
        out = []
        for login in logins:
            record = self.accounts.collaborator(login)
            if record is not None and record["login"] not in out:
                out.append(record["login"])
        return out[:10]

    # shapes --------------------------------------------------------------------------------

    def issue_json(self, repo, issue):
        """An issue or a PR as the issues API shows it (`issue`)."""
        repo_json = self.repos.json(repo)
        repo_url, number = repo_json["url"], issue["number"]
        url = f"{repo_url}/issues/{number}"
        is_pull = "pull" in issue or "head_ref" in issue
        html = f"{repo_json['html_url']}/{'pull' if is_pull else 'issues'}/{number}"
        assignees = [self.accounts.json(a) for a in issue.get("assignees", [])]
        shape = {
            "id": issue.get("issue_id", issue["id"]) if is_pull else issue["id"],
            "node_id": issue["node_id"] if not is_pull else ids.node_id(
                "github-issues", "I_", issue.get("issue_id", issue["id"])),
            "url": url, "repository_url": repo_url,
            "labels_url": f"{url}/labels{{/name}}", "comments_url": f"{url}/comments",
            "events_url": f"{url}/events", "html_url": html, "number": number,
            "state": issue["state"], "state_reason": issue.get("state_reason"),
            "title": issue["title"], "body": issue["body"],
            "user": self.accounts.json(issue["user"]),
            "labels": self.rules.labels.on_issue(repo, issue),
            "assignee": assignees[0] if assignees else None, "assignees": assignees,
            "milestone": None, "locked": False, "active_lock_reason": None,
            "comments": issue.get("comments", 0), "closed_at": issue["closed_at"],
            "created_at": issue["created_at"], "updated_at": issue["updated_at"],
            "closed_by": self.accounts.json(issue["closed_by"]) if issue.get("closed_by") else None,
            "author_association": self.accounts.association(repo, issue["user"]),
            "reactions": reactions(url), "timeline_url": f"{url}/timeline",
            "performed_via_github_app": None,
        }
        if is_pull:
            pull_url = f"{repo_url}/pulls/{number}"
            shape["draft"] = issue.get("draft", False)
            shape["pull_request"] = {"url": pull_url, "html_url": html,
                                     "diff_url": f"{html}.diff", "patch_url": f"{html}.patch",
                                     "merged_at": issue.get("merged_at")}
        return shape

    def comment_json(self, repo, comment):
        repo_json = self.repos.json(repo)
        url = f"{repo_json['url']}/issues/comments/{comment['id']}"
        target = self.store.item(ISSUES, f"{repo['key']}:{comment['number']}")
        kind = "issues" if target is not None else "pull"
        return {"id": comment["id"], "node_id": comment["node_id"], "url": url,
                "html_url": f"{repo_json['html_url']}/{kind}/{comment['number']}"
                            f"#issuecomment-{comment['id']}",
                "body": comment["body"], "user": self.accounts.json(comment["user"]),
                "created_at": comment["created_at"], "updated_at": comment["updated_at"],
                "issue_url": f"{repo_json['url']}/issues/{comment['number']}",
                "author_association": self.accounts.association(repo, comment["user"]),
                "performed_via_github_app": None, "reactions": reactions(url)}

    def _issue_event(self, action, repo, issue, **extra):
        return {"action": action, "issue": self.issue_json(repo, issue), **extra,
                "repository": self.repos.json(repo), "sender": self.accounts.sender()}

    def _pull_event(self, action, repo, pull, **extra):
        pull = {k: v for k, v in pull.items() if k != "pull"}
        return events.pull_request(action, self.rules.pulls.json(repo, pull),
                                   self.accounts.sender(), **extra)

    def _comment_event(self, action, repo, issue, comment, **extra):
        return {"action": action, "issue": self.issue_json(repo, issue),
                "comment": self.comment_json(repo, comment), **extra,
                "repository": self.repos.json(repo), "sender": self.accounts.sender()}


def _added(before, after, field):
    return [x for x in after.get(field, []) if x not in before.get(field, [])]


def _removed(before, after, field):
    return [x for x in before.get(field, []) if x not in after.get(field, [])]


def _comment_body(parsed, op):
    """The body of a comment write: a non-empty `body` within GitHub's length."""
    body = schemas.json_object(parsed, op)
    if not isinstance(body.get("body"), str) or not body["body"]:
        raise errors.ValidationFailed(op, resource="IssueComment", field="body",
                                      code="missing_field")
    schemas.check_length(body["body"], schemas.MAX_BODY, op, "IssueComment", "body")
    return body
