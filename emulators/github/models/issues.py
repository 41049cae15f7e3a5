"""The conversation: issues (numbered with the pull requests, as on GitHub), comments and
assignees, and their `issues`, `issue_comment` (and `pull_request` labeled/assigned) events.

On GitHub every pull request is an issue: the issues API reads and writes a PR's title, body,
state, labels, assignees and comments too, and answers a PR number with its issue shape
(carrying `pull_request`).
"""
from .. import errors, events, ids, shapes
from ..inputs import UNCHANGED, Listing
from ..store import COMMENTS, ISSUES
from . import texts
from .pulls import REOPEN_MERGED
from .rule import Rule


def check_title(title, code="missing_field"):
    """An issue's title holds more than white space: 422 naming `title` (`missing_field` when
    the issue opens, `invalid` when it is updated)."""
    texts.nonblank("title", "Issue", code, title)


def check_title_length(title):
    """An issue's title is at most 256 characters (a number counts as its digits)."""
    texts.within(texts.MAX_TITLE, "title", "Issue", str(title))


def check_body(body):
    """An issue's body is at most 65,536 characters."""
    texts.within(texts.MAX_BODY, "body", "Issue", body)


def check_comment(body):
    """A comment has a body (422 `missing_field`) of at most 65,536 characters."""
    if not body:
        raise errors.ValidationFailed(field="body", resource="IssueComment",
                                      code="missing_field")
    texts.within(texts.MAX_BODY, "body", "IssueComment", body)


class IssueRules(Rule):
    """Open, change and read issues, their comments and assignees; `rules` reaches labels and
    pulls (an issue number may be a PR's: it is written back as one)."""

    # issues --------------------------------------------------------------------------------

    def create(self, repo, *, title, body=None, labels=(), assignees=()):
        """`issues/create`: labels are made in the repository when new; assignees that are
        not collaborators are dropped, as GitHub drops them."""
        check_title(title)
        check_title_length(title)
        check_body(body)
        key = repo["key"]
        with self.store.transaction():
            labels = self.rules.labels.names(repo, labels)
            assignees = self._assignable(assignees)
            now = self.clock.now()
            number = self.store.next_id(f"pull_numbers:{key}")  # one sequence with the PRs
            issue_id = self.store.next_id("issue_ids")
            issue = {"repo": key, "number": number, "id": issue_id,
                     "node_id": ids.node_id("github-issues", "I_", issue_id),
                     "title": title, "body": body or None,
                     "state": "open", "state_reason": None, "user": self.accounts.actor(),
                     "labels": labels, "assignees": assignees, "comments": 0,
                     "created_at": now, "updated_at": now, "closed_at": None,
                     "closed_by": None}
            self.put(issue)
            self.emit("issues", lambda: self._issue_event("opened", repo, issue))
        return self.issue_json(repo, issue)

    def get(self, repo, number):
        """`issues/get`: an issue, or a PR's issue shape."""
        return self.issue_json(repo, self.conversation(repo, number))

    def update(self, repo, number, *, title=UNCHANGED, body=UNCHANGED, state=UNCHANGED,
               state_reason=None, labels=UNCHANGED, assignees=UNCHANGED):
        """`issues/update` of an issue or a PR: change what is given (`state_reason` says why
        an issue closes, `completed` by default)."""
        if title is not UNCHANGED:
            check_title(title, "invalid")
            check_title_length(title)
        if body is not UNCHANGED:
            check_body(body)
        with self.store.transaction():
            before = self.conversation(repo, number)
            after = {**before}
            if title is not UNCHANGED:
                after["title"] = title
            if body is not UNCHANGED:
                after["body"] = body or None
            if state is not UNCHANGED:
                if before.get("merged") and state == "open":
                    raise errors.ValidationFailed(resource="Issue", field="state",
                                                  custom=REOPEN_MERGED)
                after["state"] = state
            if labels is not UNCHANGED:
                after["labels"] = self.rules.labels.names(repo, labels)
            if assignees is not UNCHANGED:
                after["assignees"] = self._assignable(assignees)
            now = self.clock.now()
            after["updated_at"] = now
            if after["state"] != before["state"]:
                closing = after["state"] == "closed"
                after["closed_at"] = now if closing else None
                if "pull" not in after:
                    after["closed_by"] = self.accounts.actor() if closing else None
                    after["state_reason"] = (state_reason or "completed") \
                        if closing else "reopened"
                else:  # a PR keeps the tips it was closed at, as pulls/update does
                    tips = self.repos.tips(repo["key"], (after["head_ref"], after["base_ref"]))
                    after["head_sha"] = tips.get(after["head_ref"], after["head_sha"])
                    after["base_sha"] = tips.get(after["base_ref"], after["base_sha"])
            self.store_conversation(repo, before, after)
        return self.issue_json(repo, after)

    def list(self, repo, page, *, state="open", sort="created", direction="desc", labels=(),
             creator=None, assignee=None):
        """`issues/list-for-repo`: a `Listing` of issues and pull requests; `labels` all
        present, `assignee` a login, `none` or `*`."""
        where = {"repo": repo["key"]} if state == "all" else {"repo": repo["key"],
                                                              "state": state}
        found = [*self.store.items(ISSUES, where),
                 *({**p, "pull": True} for p in self.store.pulls(
                     where, order_by=None, desc=False, limit=None, offset=0))]
        wanted = {n.lower() for n in labels}
        if wanted:
            found = [i for i in found
                     if wanted <= {n.lower() for n in i.get("labels", [])}]
        if creator is not None:
            found = [i for i in found if i.get("user", "").lower() == creator.lower()]
        if assignee is not None and assignee != "*":
            who = assignee.lower()
            found = [i for i in found if (who == "none" and not i.get("assignees"))
                     or who in (a.lower() for a in i.get("assignees", []))]
        field = {"created": "created_at", "updated": "updated_at", "comments": "comments"}[sort]
        found.sort(key=lambda i: (i.get(field) or 0, i["number"]), reverse=direction == "desc")
        return Listing([self.issue_json(repo, i) for i in page.of(found)], len(found))

    def conversation(self, repo, number):
        """The issue or pull request numbered `number` (a PR record carries `pull`); 404
        when there is none."""
        issue = self.store.item(ISSUES, f"{repo['key']}:{number}")
        if issue is not None:
            return issue
        pull = self.store.pull(repo["key"], number)
        if pull is None:
            raise errors.NotFound()
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

    def create_comment(self, repo, number, body):
        """`issues/create-comment` on an issue or a PR."""
        check_comment(body)
        with self.store.transaction():
            target = self.conversation(repo, number)
            now = self.clock.now()
            comment_id = self.store.next_id("comment_ids")
            comment = {"repo": repo["key"], "id": comment_id, "number": target["number"],
                       "node_id": ids.node_id("github", "IC_", comment_id), "body": body,
                       "user": self.accounts.actor(), "created_at": now, "updated_at": now}
            self.store.put_item(COMMENTS, f"{repo['key']}:{comment_id}", comment)
            target = {**target, "comments": target.get("comments", 0) + 1}
            self.store_conversation(repo, target, target, emit=False)
            self.emit("issue_comment", lambda: self._comment_event("created", repo, target,
                                                                   comment))
        return self.comment_json(repo, comment)

    def comments(self, repo, number, page, since=None):
        """`issues/list-comments`: a `Listing` of an issue's comments, oldest first; `since`
        (GitHub's time, to the second) keeps those updated at or after it."""
        target = self.conversation(repo, number)
        found = self.store.items(COMMENTS, {"repo": repo["key"], "number": target["number"]},
                                 order_by="id")
        if since:  # stored times are GitHub's, to the second: compared as text
            found = [c for c in found if c["updated_at"] >= since]
        return Listing([self.comment_json(repo, c) for c in page.of(found)], len(found))

    def get_comment(self, repo, comment_id):
        """`issues/get-comment`."""
        return self.comment_json(repo, self.find_comment(repo, comment_id))

    def update_comment(self, repo, comment_id, body):
        """`issues/update-comment`."""
        check_comment(body)
        with self.store.transaction():
            before = self.find_comment(repo, comment_id)
            comment = {**before, "body": body, "updated_at": self.clock.now()}
            self.store.put_item(COMMENTS, f"{repo['key']}:{comment['id']}", comment)
            target = self.conversation(repo, comment["number"])
            self.emit("issue_comment", lambda: self._comment_event(
                "edited", repo, target, comment, changes={"body": {"from": before["body"]}}))
        return self.comment_json(repo, comment)

    def delete_comment(self, repo, comment_id):
        """`issues/delete-comment`: the comment deleted."""
        with self.store.transaction():
            comment = self.find_comment(repo, comment_id)
            self.store.delete_item(COMMENTS, f"{repo['key']}:{comment['id']}")
            target = self.conversation(repo, comment["number"])
            target = {**target, "comments": max(0, target.get("comments", 1) - 1)}
            self.store_conversation(repo, target, target, emit=False)
            self.emit("issue_comment", lambda: self._comment_event("deleted", repo, target,
                                                                   comment))
        return comment

    def find_comment(self, repo, comment_id):
        """The comment record `comment_id`; 404 when there is none."""
        return self._record(COMMENTS, repo, comment_id)

    # assignees -----------------------------------------------------------------------------

    def assign(self, repo, number, logins):
        """`issues/add-assignees`: the collaborators among `logins` join (at most ten)."""
        with self.store.transaction():
            before = self.conversation(repo, number)
            current = before.get("assignees", [])
            assignees = [*current, *(a for a in self._assignable(logins)
                                     if a not in current)][:10]
            return self._assigned(repo, before, assignees)

    def unassign(self, repo, number, logins):
        """`issues/remove-assignees`."""
        with self.store.transaction():
            before = self.conversation(repo, number)
            gone = {login.lower() for login in logins}
            return self._assigned(repo, before, [a for a in before.get("assignees", [])
                                                 if a.lower() not in gone])

    def _assigned(self, repo, before, assignees):
        after = {**before, "assignees": assignees, "updated_at": self.clock.now()}
        self.store_conversation(repo, before, after)
        return self.issue_json(repo, after)

    def _assignable(self, logins):
        """The users among `logins` who may be assigned, collaborators (`collaborator`; GitHub
        drops the others silently). At most ten, as on GitHub."""
        out = []
        for login in logins:
            record = self.accounts.collaborator(login)
            if record is not None and record["login"] not in out:
                out.append(record["login"])
        return out[:10]

    # shapes --------------------------------------------------------------------------------

    def issue_json(self, repo, issue):
        """An issue or a PR as the issues API shows it (`issue`)."""
        accounts = self.accounts
        return shapes.issue(
            self.repos.json(repo), issue, user=accounts.json(issue["user"]),
            labels=self.rules.labels.on_issue(repo, issue),
            assignees=[accounts.json(a) for a in issue.get("assignees", [])],
            closed_by=accounts.json(issue["closed_by"]) if issue.get("closed_by") else None,
            association=accounts.association(repo, issue["user"]))

    def comment_json(self, repo, comment):
        """A comment record as GitHub shows it (`issue-comment`)."""
        on_issue = self.store.item(ISSUES, f"{repo['key']}:{comment['number']}") is not None
        return shapes.comment(*self.repos.urls(repo), comment,
                              user=self.accounts.json(comment["user"]),
                              association=self.accounts.association(repo, comment["user"]),
                              on_issue=on_issue)

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
