"""The conversation: issues (numbered with the pull requests, as on GitHub), comments, labels and
assignees, and their `issues`, `issue_comment`, `label` (and `pull_request` labeled/assigned)
events.

A mixin of `models.GitHubBackend`. On GitHub every pull request is an issue: the issues API
reads and writes a PR's title, body, state, labels, assignees and comments too, and answers a
PR number with its issue shape (carrying `pull_request`).
"""
import re
from urllib.parse import quote

from .. import errors, events, ids, schemas, times
from ..pulls import REOPEN_MERGED, parse_pull_number
from ..store import COMMENTS, ISSUES, LABELS

COLOR = re.compile(r"^[0-9a-fA-F]{6}\Z")
DEFAULT_COLOR = "ededed"  # the colour GitHub gives a label made by naming it on an issue
MAX_LABELS = 100  # GitHub's limit of labels on one issue
TOO_MANY_LABELS = f"An issue can have at most {MAX_LABELS} labels"


def reactions(url):
    """The empty reactions summary GitHub attaches to issues and comments."""
    return {"url": f"{url}/reactions", "total_count": 0, "+1": 0, "-1": 0, "laugh": 0,
            "hooray": 0, "confused": 0, "heart": 0, "rocket": 0, "eyes": 0}


class IssueRules:
    """The issue, comment, label and assignee operations of `GitHubBackend`."""

    # issues --------------------------------------------------------------------------------

    def create_issue(self, owner, name, parsed):
        op = "issues/create"
        repo = self._repo(owner, name, op)
        body = schemas.json_object(parsed, op)
        if not isinstance(body.get("title"), (str, int)) or not str(body["title"]).strip():
            raise errors.ValidationFailed(op, resource="Issue", field="title",
                                          code="missing_field")
        if body.get("body") is not None and not isinstance(body["body"], str):
            raise errors.ValidationFailed(op, resource="Issue", field="body")
        schemas.check_length(str(body["title"]), schemas.MAX_TITLE, op, "Issue", "title")
        schemas.check_length(body.get("body"), schemas.MAX_BODY, op, "Issue", "body")
        key = repo["key"]
        with self.transaction():
            labels = self._label_names(repo, body.get("labels", []), op)
            assignees = self._assignable(body.get("assignees") or (
                [body["assignee"]] if body.get("assignee") else []), op)
            now = self.now()
            number = self.store.next_id(f"pull_numbers:{key}")  # one sequence with the PRs
            issue_id = self.store.next_id("issue_ids")
            issue = {"repo": key, "number": number, "id": issue_id,
                     "node_id": ids.node_id("github-issues", "I_", issue_id),
                     "title": str(body["title"]), "body": body.get("body") or None,
                     "state": "open", "state_reason": None, "user": self._actor(),
                     "labels": labels, "assignees": assignees, "comments": 0,
                     "created_at": now, "updated_at": now, "closed_at": None,
                     "closed_by": None}
            self._put_issue(issue)
            self.emit("issues", lambda: self._issue_event("opened", repo, issue))
        return self.issue_json(repo, issue)

    def get_issue(self, owner, name, raw_number):
        op = "issues/get"
        repo = self._repo(owner, name, op)
        return self.issue_json(repo, self._conversation(repo, raw_number, op))

    def update_issue(self, owner, name, raw_number, parsed):
        op = "issues/update"
        repo = self._repo(owner, name, op)
        body = schemas.json_object(parsed, op)
        with self.transaction():
            before = self._conversation(repo, raw_number, op)
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
                after["labels"] = self._label_names(repo, body["labels"], op)
            if "assignees" in body or "assignee" in body:
                wanted = body.get("assignees")
                if wanted is None:
                    wanted = [body["assignee"]] if body.get("assignee") else []
                after["assignees"] = self._assignable(wanted, op)
            now = self.now()
            after["updated_at"] = now
            if after["state"] != before["state"]:
                closing = after["state"] == "closed"
                after["closed_at"] = now if closing else None
                if "pull" not in after:
                    after["closed_by"] = self._actor() if closing else None
                    after["state_reason"] = (body.get("state_reason") or "completed") \
                        if closing else "reopened"
                else:  # a PR keeps the tips it was closed at, as pulls/update does
                    tips = self._tips(repo["key"], (after["head_ref"], after["base_ref"]))
                    after["head_sha"] = tips.get(after["head_ref"], after["head_sha"])
                    after["base_sha"] = tips.get(after["base_ref"], after["base_sha"])
            self._store_conversation(repo, before, after)
        return self.issue_json(repo, after)

    def list_issues(self, owner, name, pairs):
        """`issues/list-for-repo`: issues and pull requests, newest first; returns (items,
        page, last) for `Link`."""
        op = "issues/list-for-repo"
        repo = self._repo(owner, name, op)
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

    def _conversation(self, repo, raw_number, op):
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

    def _put_issue(self, issue, before=None):
        """Store an issue (`before`: its stored value, None for a new one); keep the
        repository's open issue count in its record (GitHub's `open_issues_count` counts
        issues and pull requests)."""
        self.store.put_item(ISSUES, f"{issue['repo']}:{issue['number']}", issue)
        delta = (issue["state"] == "open") - (before is not None and before["state"] == "open")
        if delta:
            repo = self.store.repo(issue["repo"])
            repo["open_issues"] = repo.get("open_issues", 0) + delta
            self.store.put_repo(repo["key"], repo)
            self._open_issues[repo["key"]] = repo["open_issues"]

    def _store_conversation(self, repo, before, after, *, emit=True):
        """Write an issue or PR back and send what changed (edited, closed, reopened,
        labeled, unlabeled, assigned, unassigned) as GitHub does."""
        if "pull" in after:
            pull_before = {k: v for k, v in before.items() if k != "pull"}
            pull = {k: v for k, v in after.items() if k != "pull"}
            self._put_pull(pull, pull_before)
            if emit:
                tips = self._tips(repo["key"], (pull["head_ref"], pull["base_ref"]))
                self._emit_pull_changes(repo, pull_before, pull, tips)
                self._emit_tag_changes(repo, pull_before, pull)
            return
        self._put_issue(after, before)
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
        for action, field, names, build in (
                ("unlabeled", "labels", _removed(before, after, "labels"), self._label_ref),
                ("labeled", "labels", _added(before, after, "labels"), self._label_ref),
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

    def _label_ref(self, repo, name):
        label = self.store.item(LABELS, f"{repo['key']}:{name.lower()}")
        return self.label_json(repo, label or _made_label(name, 0, ""))

    def _assignee_ref(self, repo, login):
        return self.user_json(login)

    # comments ------------------------------------------------------------------------------

    def create_comment(self, owner, name, raw_number, parsed):
        op = "issues/create-comment"
        repo = self._repo(owner, name, op)
        body = _comment_body(parsed, op)
        with self.transaction():
            target = self._conversation(repo, raw_number, op)
            now = self.now()
            number = self.store.next_id("comment_ids")
            comment = {"repo": repo["key"], "id": number, "number": target["number"],
                       "node_id": ids.node_id("github", "IC_", number), "body": body["body"],
                       "user": self._actor(), "created_at": now, "updated_at": now}
            self.store.put_item(COMMENTS, f"{repo['key']}:{number}", comment)
            target = {**target, "comments": target.get("comments", 0) + 1}
            self._store_conversation(repo, target, target, emit=False)
            self.emit("issue_comment", lambda: self._comment_event("created", repo, target,
                                                                   comment))
        return self.comment_json(repo, comment)

    def list_comments(self, owner, name, raw_number, pairs):
        op = "issues/list-comments"
        repo = self._repo(owner, name, op)
        target = self._conversation(repo, raw_number, op)
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
        repo = self._repo(owner, name, op)
        return self.comment_json(repo, self._comment(repo, raw_id, op))

    def update_comment(self, owner, name, raw_id, parsed):
        op = "issues/update-comment"
        repo = self._repo(owner, name, op)
        body = _comment_body(parsed, op)
        with self.transaction():
            before = self._comment(repo, raw_id, op)
            comment = {**before, "body": body["body"], "updated_at": self.now()}
            self.store.put_item(COMMENTS, f"{repo['key']}:{comment['id']}", comment)
            target = self._conversation(repo, str(comment["number"]), op)
            self.emit("issue_comment", lambda: self._comment_event(
                "edited", repo, target, comment, changes={"body": {"from": before["body"]}}))
        return self.comment_json(repo, comment)

    def delete_comment(self, owner, name, raw_id):
        op = "issues/delete-comment"
        repo = self._repo(owner, name, op)
        with self.transaction():
            comment = self._comment(repo, raw_id, op)
            self.store.delete_item(COMMENTS, f"{repo['key']}:{comment['id']}")
            target = self._conversation(repo, str(comment["number"]), op)
            target = {**target, "comments": max(0, target.get("comments", 1) - 1)}
            self._store_conversation(repo, target, target, emit=False)
            self.emit("issue_comment", lambda: self._comment_event("deleted", repo, target,
                                                                   comment))
        return comment

    def _comment(self, repo, raw_id, op):
        found = self.store.item(COMMENTS, f"{repo['key']}:{raw_id}") if raw_id.isdigit() \
            else None
        if found is None:
            raise errors.NotFound(op)
        return found

    # labels --------------------------------------------------------------------------------

    def list_repo_labels(self, owner, name, pairs):
        repo = self._repo(owner, name, "issues/list-labels-for-repo")
        found = sorted(self.store.items(LABELS, {"repo": repo["key"]}),
                       key=lambda label: label["name"].lower())
        shown, page, last = schemas.page_of(found, pairs)
        return [self.label_json(repo, label) for label in shown], page, last

    def create_label(self, owner, name, parsed):
        op = "issues/create-label"
        repo = self._repo(owner, name, op)
        body = schemas.json_object(parsed, op)
        label_name = body.get("name")
        if not isinstance(label_name, str) or not label_name.strip():
            raise errors.ValidationFailed(op, resource="Label", field="name",
                                          code="missing_field")
        schemas.check_length(label_name, schemas.MAX_LABEL, op, "Label", "name")
        color = _color(body.get("color", DEFAULT_COLOR), op)
        description = _description(body.get("description"), op)
        with self.transaction():
            if self.store.item(LABELS, f"{repo['key']}:{label_name.lower()}") is not None:
                raise errors.ValidationFailed(op, resource="Label", field="name",
                                              code="already_exists")
            label = self._make_label(repo, label_name, color, description)
        return self.label_json(repo, label)

    def get_label(self, owner, name, label_name):
        op = "issues/get-label"
        repo = self._repo(owner, name, op)
        return self.label_json(repo, self._label(repo, label_name, op))

    def update_label(self, owner, name, label_name, parsed):
        op = "issues/update-label"
        repo = self._repo(owner, name, op)
        body = schemas.json_object(parsed, op)
        with self.transaction():
            before = self._label(repo, label_name, op)
            label = dict(before)
            if "new_name" in body:
                if not isinstance(body["new_name"], str) or not body["new_name"].strip():
                    raise errors.ValidationFailed(op, resource="Label", field="name")
                schemas.check_length(body["new_name"], schemas.MAX_LABEL, op, "Label", "name")
                label["name"] = body["new_name"]
            if "color" in body:
                label["color"] = _color(body["color"], op)
            if "description" in body:
                label["description"] = _description(body["description"], op)
            if label["name"].lower() != before["name"].lower():
                if self.store.item(LABELS, f"{repo['key']}:{label['name'].lower()}"):
                    raise errors.ValidationFailed(op, resource="Label", field="name",
                                                  code="already_exists")
                self.store.delete_item(LABELS, f"{repo['key']}:{before['name'].lower()}")
            self.store.put_item(LABELS, f"{repo['key']}:{label['name'].lower()}", label)
            if label["name"] != before["name"]:
                self._rename_on_issues(repo, before["name"], label["name"])
            changes = {f: {"from": before[f]} for f in ("name", "color", "description")
                       if before[f] != label[f]}
            self.emit("label", lambda: {"action": "edited", "label": self.label_json(
                repo, label), "changes": changes, "repository": self.repo_json(repo),
                "sender": self._sender()})
        return self.label_json(repo, label)

    def delete_label(self, owner, name, label_name):
        op = "issues/delete-label"
        repo = self._repo(owner, name, op)
        with self.transaction():
            label = self._label(repo, label_name, op)
            self.store.delete_item(LABELS, f"{repo['key']}:{label['name'].lower()}")
            self._rename_on_issues(repo, label["name"], None)
            self.emit("label", lambda: {"action": "deleted", "label": self.label_json(
                repo, label), "repository": self.repo_json(repo), "sender": self._sender()})
        return label

    def _rename_on_issues(self, repo, old, new):
        """Carry a label's new name (or its deletion, `new` None) onto every issue and PR."""
        lowered = old.lower()
        for collection, rows in ((ISSUES, self.store.items(ISSUES, {"repo": repo["key"]})),
                                 (None, self.store.pulls({"repo": repo["key"]}, order_by=None,
                                                         desc=False, limit=None, offset=0))):
            for row in rows:
                names = row.get("labels", [])
                if lowered not in (n.lower() for n in names):
                    continue
                kept = [n for n in names if n.lower() != lowered] + ([new] if new else [])
                row = {**row, "labels": kept}
                if collection is None:
                    self._put_pull(row, row)
                else:
                    self._put_issue(row, row)

    def _label(self, repo, label_name, op):
        label = self.store.item(LABELS, f"{repo['key']}:{label_name.lower()}")
        if label is None:
            raise errors.NotFound(op)
        return label

    def _make_label(self, repo, label_name, color, description):
        number = self.store.next_id("label_ids")
        label = {**_made_label(label_name, number, color, description), "repo": repo["key"]}
        self.store.put_item(LABELS, f"{repo['key']}:{label_name.lower()}", label)
        self.emit("label", lambda: {"action": "created", "label": self.label_json(repo, label),
                                    "repository": self.repo_json(repo),
                                    "sender": self._sender()})
        return label

    def _label_names(self, repo, given, op):
        """The label names of an issue write (strings or `{name}` objects), each made in the
        repository if it is new (as GitHub does), in the repository's spelling."""
        if isinstance(given, dict):  # add/set take {"labels": [...]} or the bare array
            given = given.get("labels", [])
        if not isinstance(given, list):
            raise errors.ValidationFailed(op, resource="Label", field="labels")
        if len(given) > MAX_LABELS:  # checked before any label is made
            raise errors.ValidationFailed(op, resource="Label", field="labels",
                                          custom=TOO_MANY_LABELS)
        names = []
        for item in given:
            label_name = item.get("name") if isinstance(item, dict) else item
            if not isinstance(label_name, str) or not label_name.strip():
                raise errors.ValidationFailed(op, resource="Label", field="name")
            schemas.check_length(label_name, schemas.MAX_LABEL, op, "Label", "name")
            label = self.store.item(LABELS, f"{repo['key']}:{label_name.lower()}") \
                or self._make_label(repo, label_name, DEFAULT_COLOR, None)
            if label["name"] not in names:
                names.append(label["name"])
        return names

    def add_labels(self, owner, name, raw_number, parsed, *, replace=False):
        op = "issues/set-labels" if replace else "issues/add-labels"
        repo = self._repo(owner, name, op)
        kind, value = parsed
        given = value if kind == "json" else [] if kind == "empty" else None
        if given is None:
            raise errors.ProblemsParsingJSON(op)
        with self.transaction():
            before = self._conversation(repo, raw_number, op)
            names = self._label_names(repo, given, op)
            labels = names if replace else [*before.get("labels", []),
                                            *(n for n in names
                                              if n not in before.get("labels", []))]
            if len(labels) > MAX_LABELS:
                raise errors.ValidationFailed(op, resource="Label", field="labels",
                                              custom=TOO_MANY_LABELS)
            after = {**before, "labels": labels, "updated_at": self.now()}
            self._store_conversation(repo, before, after)
        return self.issue_labels(repo, after)

    def remove_label(self, owner, name, raw_number, label_name):
        op = "issues/remove-label"
        repo = self._repo(owner, name, op)
        with self.transaction():
            before = self._conversation(repo, raw_number, op)
            kept = [n for n in before.get("labels", []) if n.lower() != label_name.lower()]
            if len(kept) == len(before.get("labels", [])):
                raise errors.NotFound(op, "Label does not exist")
            after = {**before, "labels": kept, "updated_at": self.now()}
            self._store_conversation(repo, before, after)
        return self.issue_labels(repo, after)

    def remove_all_labels(self, owner, name, raw_number):
        op = "issues/remove-all-labels"
        repo = self._repo(owner, name, op)
        with self.transaction():
            before = self._conversation(repo, raw_number, op)
            after = {**before, "labels": [], "updated_at": self.now()}
            self._store_conversation(repo, before, after)

    def list_issue_labels(self, owner, name, raw_number):
        op = "issues/list-labels-on-issue"
        repo = self._repo(owner, name, op)
        return self.issue_labels(repo, self._conversation(repo, raw_number, op))

    def issue_labels(self, repo, issue):
        return [self._label_ref(repo, n) for n in issue.get("labels", [])]

    # assignees -----------------------------------------------------------------------------

    def change_assignees(self, owner, name, raw_number, parsed, *, add):
        op = "issues/add-assignees" if add else "issues/remove-assignees"
        repo = self._repo(owner, name, op)
        body = schemas.json_object(parsed, op)
        wanted = body.get("assignees", [])
        if not isinstance(wanted, list) or not all(isinstance(w, str) for w in wanted):
            raise errors.ValidationFailed(op, resource="Issue", field="assignees")
        with self.transaction():
            before = self._conversation(repo, raw_number, op)
            current = before.get("assignees", [])
            if add:
                assignees = [*current, *(a for a in self._assignable(wanted, op)
                                         if a not in current)][:10]
            else:
                gone = {w.lower() for w in wanted}
                assignees = [a for a in current if a.lower() not in gone]
            after = {**before, "assignees": assignees, "updated_at": self.now()}
            self._store_conversation(repo, before, after)
        return self.issue_json(repo, after)

    def _assignable(self, logins, op):
        """The users among `logins` who may be assigned, collaborators (`collaborator`; GitHub
        drops the others silently). At most ten, as on GitHub."""
        if not isinstance(logins, list) or not all(isinstance(x, str) for x in logins):
            raise errors.ValidationFailed(op, resource="Issue", field="assignees")
        out = []
        for login in logins:
            record = self.collaborator(login)
            if record is not None and record["login"] not in out:
                out.append(record["login"])
        return out[:10]

    # shapes --------------------------------------------------------------------------------

    def label_json(self, repo, label):
        return {"id": label["id"], "node_id": label["node_id"],
                "url": f"{self._repo_url(repo)}/labels/{quote(label['name'], safe='')}",
                "name": label["name"], "color": label["color"], "default": False,
                "description": label["description"],
                # newer descriptions than the schemas' (githubkit's) require these two
                "archived_at": None, "archived_by": None}

    def issue_json(self, repo, issue):
        """An issue or a PR as the issues API shows it (`issue`)."""
        repo_json = self.repo_json(repo)
        repo_url, number = repo_json["url"], issue["number"]
        url = f"{repo_url}/issues/{number}"
        is_pull = "pull" in issue or "head_ref" in issue
        html = f"{repo_json['html_url']}/{'pull' if is_pull else 'issues'}/{number}"
        assignees = [self.user_json(a) for a in issue.get("assignees", [])]
        shape = {
            "id": issue.get("issue_id", issue["id"]) if is_pull else issue["id"],
            "node_id": issue["node_id"] if not is_pull else ids.node_id(
                "github-issues", "I_", issue.get("issue_id", issue["id"])),
            "url": url, "repository_url": repo_url,
            "labels_url": f"{url}/labels{{/name}}", "comments_url": f"{url}/comments",
            "events_url": f"{url}/events", "html_url": html, "number": number,
            "state": issue["state"], "state_reason": issue.get("state_reason"),
            "title": issue["title"], "body": issue["body"],
            "user": self.user_json(issue["user"]),
            "labels": self.issue_labels(repo, issue),
            "assignee": assignees[0] if assignees else None, "assignees": assignees,
            "milestone": None, "locked": False, "active_lock_reason": None,
            "comments": issue.get("comments", 0), "closed_at": issue["closed_at"],
            "created_at": issue["created_at"], "updated_at": issue["updated_at"],
            "closed_by": self.user_json(issue["closed_by"]) if issue.get("closed_by") else None,
            "author_association": self.association(repo, issue["user"]),
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
        repo_json = self.repo_json(repo)
        url = f"{repo_json['url']}/issues/comments/{comment['id']}"
        target = self.store.item(ISSUES, f"{repo['key']}:{comment['number']}")
        kind = "issues" if target is not None else "pull"
        return {"id": comment["id"], "node_id": comment["node_id"], "url": url,
                "html_url": f"{repo_json['html_url']}/{kind}/{comment['number']}"
                            f"#issuecomment-{comment['id']}",
                "body": comment["body"], "user": self.user_json(comment["user"]),
                "created_at": comment["created_at"], "updated_at": comment["updated_at"],
                "issue_url": f"{repo_json['url']}/issues/{comment['number']}",
                "author_association": self.association(repo, comment["user"]),
                "performed_via_github_app": None, "reactions": reactions(url)}

    def _issue_event(self, action, repo, issue, **extra):
        return {"action": action, "issue": self.issue_json(repo, issue), **extra,
                "repository": self.repo_json(repo), "sender": self._sender()}

    def _pull_event(self, action, repo, pull, **extra):
        pull = {k: v for k, v in pull.items() if k != "pull"}
        return events.pull_request(action, self.pull_json(repo, pull), self._sender(), **extra)

    def _comment_event(self, action, repo, issue, comment, **extra):
        return {"action": action, "issue": self.issue_json(repo, issue),
                "comment": self.comment_json(repo, comment), **extra,
                "repository": self.repo_json(repo), "sender": self._sender()}


def _added(before, after, field):
    return [x for x in after.get(field, []) if x not in before.get(field, [])]


def _removed(before, after, field):
    return [x for x in before.get(field, []) if x not in after.get(field, [])]


def _made_label(name, number, color, description=None):
    return {"id": number, "node_id": ids.node_id("github", "LA_", number), "name": name,
            "color": color or DEFAULT_COLOR, "description": description}


def _comment_body(parsed, op):
    """The body of a comment write: a non-empty `body` within GitHub's length."""
    body = schemas.json_object(parsed, op)
    if not isinstance(body.get("body"), str) or not body["body"]:
        raise errors.ValidationFailed(op, resource="IssueComment", field="body",
                                      code="missing_field")
    schemas.check_length(body["body"], schemas.MAX_BODY, op, "IssueComment", "body")
    return body


def _color(value, op):
    if not isinstance(value, str) or not COLOR.match(value.lstrip("#")):
        raise errors.ValidationFailed(op, resource="Label", field="color")
    return value.lstrip("#").lower()


def _description(value, op):
    if value is not None and (not isinstance(value, str) or len(value) > 100):
        raise errors.ValidationFailed(op, resource="Label", field="description")
    return value
