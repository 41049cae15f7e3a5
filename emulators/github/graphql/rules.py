"""The one place GraphQL meets the GitHub rules: a narrow adapter over the backend.

Resolvers ask it for what they show and for what they change, in GraphQL's terms (a login, a
repository's owner and name, a number, a node id); it calls the same rules REST calls, so both
see and make the same state. Reads answer REST's shapes (whole dicts), which the GraphQL objects
present; a rule's refusal is a `GitHubError`, which the answer turns into GraphQL's
(errors.from_rest). Writes are journaled as REST's are: accepted, with their ids.
"""
from .. import errors as rest
from ..store import ISSUES, LABELS, OWNERS, REPOS, repo_key
from .errors import could_not_resolve

MERGE_METHODS = {"MERGE": "merge", "SQUASH": "squash", "REBASE": "rebase"}


def _json(body):
    """A body as the rules take a parsed request body (kind, value)."""
    return "json", {k: v for k, v in body.items() if v is not None}


class Rules:
    """GraphQL's view of one request's `GitHubBackend` (acting as the token's user)."""

    def __init__(self, backend, instance):
        self.backend = backend
        self.instance = instance
        self._repos = {}

    # who ------------------------------------------------------------------------------------
    def viewer(self):
        """The login the request acts as."""
        return self.backend.actor_login

    def account(self, login):
        """A known account's REST shape (`simple-user`), or None."""
        record = self.backend.store.owner(login)
        return None if record is None else self.backend.user_json(record["login"])

    # repositories ---------------------------------------------------------------------------
    def repository(self, owner, name):
        """`repos/get`'s answer; GraphQL's NOT_FOUND when there is no such repository."""
        key = (owner.lower(), name.lower())
        if key not in self._repos:
            try:
                self._repos[key] = self.backend.get_repo(owner, name)
            except rest.NotFound:
                raise could_not_resolve("Repository", f"the name '{owner}/{name}'") from None
        return self._repos[key]

    def branch_tip(self, repo, branch):
        """The sha a branch of `repo` (REST shape) is at, or None."""
        ref = self.backend.store.ref(self._key(repo), f"refs/heads/{branch}")
        return ref["sha"] if ref else None

    def protection(self, repo, branch):
        """`repos/get-branch-protection`'s answer for a branch, or None when unprotected."""
        try:
            return self.backend.get_protection(*self._names(repo), branch)
        except rest.NotFound:
            return None

    def labels(self, repo):
        """Every label of `repo`, by name."""
        return self._all(lambda pairs: self.backend.list_repo_labels(*self._names(repo), pairs))

    def label(self, repo, name):
        try:
            return self.backend.get_label(*self._names(repo), name)
        except rest.NotFound:
            return None

    # pull requests and issues ---------------------------------------------------------------
    def pull(self, repo, number):
        """`pulls/get`'s answer, or None."""
        try:
            return self.backend.get_pull(*self._names(repo), str(number))
        except rest.NotFound:
            return None

    def pulls(self, repo, *, states=None, head=None, base=None):
        """Every pull request of `repo` (`pulls/list` items, oldest first) in `states`
        (`open`, `closed`, `merged`), on those branches."""
        owner = repo["owner"]["login"]
        pairs = [("state", "all"), ("direction", "asc")]
        if head is not None:
            pairs.append(("head", f"{owner}:{head}"))
        if base is not None:
            pairs.append(("base", base))
        found = self._all(lambda more: self.backend.list_pulls(*self._names(repo),
                                                               pairs + more))
        return [p for p in found if states is None or _pull_state(p) in states]

    def issue(self, repo, number):
        """`issues/get`'s answer of an issue (None for a pull request's number, or none)."""
        try:
            found = self.backend.get_issue(*self._names(repo), str(number))
        except rest.NotFound:
            return None
        return None if "pull_request" in found else found

    def issues(self, repo, *, states=None, assignee=None, author=None, labels=None):
        """Every issue of `repo` (not pull requests), oldest first, filtered as
        `issues/list-for-repo` filters."""
        pairs = [("state", "all"), ("direction", "asc")]
        if assignee:
            pairs.append(("assignee", assignee))
        if author:
            pairs.append(("creator", author))
        if labels:
            pairs.append(("labels", ",".join(labels)))
        found = self._all(lambda more: self.backend.list_issues(*self._names(repo),
                                                                pairs + more))
        return [i for i in found if "pull_request" not in i
                and (states is None or i["state"] in states)]

    def comments(self, repo, number):
        """Every comment on an issue or pull request, oldest first."""
        return self._all(lambda pairs: self.backend.list_comments(*self._names(repo),
                                                                  str(number), pairs))

    def reviews(self, repo, number):
        return self.backend.list_reviews(*self._names(repo), str(number),
                                         [("per_page", "100")])

    def statuses(self, repo, sha):
        """The latest status of each context of a commit (the records protection reads)."""
        return self.backend.latest_statuses(self._key(repo), sha)

    def check_runs(self, repo, sha):
        """The latest check run of each name on a commit (the records protection reads; REST's
        shape of a run lists every pull request at its commit, which GraphQL never shows)."""
        return self.backend.latest_check_runs(self._key(repo), sha)

    def app(self, repo):
        """The GitHub App that owns every check run (REST's `app`)."""
        return self.backend.app_json(self.backend.store.repo(self._key(repo)))

    def commit(self, repo, sha):
        """`repos/get-commit`'s answer (without its files), or None."""
        try:
            return self.backend.commit_json(self.backend.store.repo(self._key(repo)), sha)
        except rest.GitHubError:
            return None

    def pull_commits(self, repo, number):
        """`pulls/list-commits`' commits, oldest first (none in a synthetic repository)."""
        try:
            return self._all(lambda pairs: self.backend.pull_commits(*self._names(repo),
                                                                     str(number), pairs))
        except rest.SyntheticRepository:
            return []

    # nodes ----------------------------------------------------------------------------------
    def node(self, node_id):
        """(kind, REST shape, repository REST shape) of a node id, or None: a repository, an
        account, a pull request, an issue or a label."""
        store = self.backend.store
        repo = next(iter(store.items(REPOS, {"node_id": node_id})), None)
        if repo is not None:
            return "Repository", self._repo_of_key(repo["key"]), None
        owner = next(iter(store.items(OWNERS, {"node_id": node_id})), None)
        if owner is not None:
            return "Account", self.account(owner["login"]), None
        pull = next(iter(store.pulls({"node_id": node_id}, order_by=None, desc=False,
                                     limit=1, offset=0)), None)
        if pull is not None:
            parent = self._repo_of_key(pull["repo"])
            return "PullRequest", self.pull(parent, pull["number"]), parent
        issue = next(iter(store.items(ISSUES, {"node_id": node_id})), None)
        if issue is not None:
            parent = self._repo_of_key(issue["repo"])
            return "Issue", self.issue(parent, issue["number"]), parent
        label = next(iter(store.items(LABELS, {"node_id": node_id})), None)
        if label is not None:
            parent = self._repo_of_key(label["repo"])
            return "Label", self.label(parent, label["name"]), parent
        return None

    def _repo_of_key(self, key):
        record = self.backend.store.repo(key)
        owner = self.backend.store.owner(record["owner"])
        return self.repository(owner["login"], record["name"])

    # writes ---------------------------------------------------------------------------------
    def create_pull(self, repo, *, title, head, base, body=None, draft=None,
                    maintainer_can_modify=None):
        created = self.backend.create_pull(*self._names(repo), _json({
            "title": title, "head": head, "base": base, "body": body, "draft": draft,
            "maintainer_can_modify": maintainer_can_modify}))
        return self._accepted(created, pull=created["number"])

    def update_pull(self, repo, number, **fields):
        updated = self.backend.update_pull(*self._names(repo), str(number), _json(fields))
        return self._accepted(updated, pull=number)

    def merge_pull(self, repo, number, *, method, title=None, message=None, sha=None):
        merged = self.backend.merge_pull(*self._names(repo), str(number), _json({
            "merge_method": MERGE_METHODS[method], "commit_title": title,
            "commit_message": message, "sha": sha}))
        return self._accepted(merged, pull=number, sha=merged["sha"])

    def comment(self, repo, number, body):
        made = self.backend.create_comment(*self._names(repo), str(number), _json({"body": body}))
        return self._accepted(made, comment=made["id"])

    def review(self, repo, number, *, event=None, body=None, commit=None):
        made = self.backend.create_review(*self._names(repo), str(number), _json({
            "event": event, "body": body, "commit_id": commit}))
        return self._accepted(made, review=made["id"])

    def submit_review(self, repo, number, review_id, *, event, body=None):
        made = self.backend.submit_review(*self._names(repo), str(number), str(review_id),
                                          _json({"event": event, "body": body}))
        return self._accepted(made, review=made["id"])

    def request_reviewers(self, repo, number, logins):
        done = self.backend.request_reviewers(*self._names(repo), str(number),
                                              _json({"reviewers": logins}), add=True)
        return self._accepted(done, pull=number)

    def create_issue(self, repo, *, title, body=None, labels=None, assignees=None):
        made = self.backend.create_issue(*self._names(repo), _json({
            "title": title, "body": body, "labels": labels, "assignees": assignees}))
        return self._accepted(made, issue=made["number"])

    def update_issue(self, repo, number, **fields):
        updated = self.backend.update_issue(*self._names(repo), str(number), _json(fields))
        return self._accepted(updated, issue=number)

    def add_labels(self, repo, number, names):
        done = self.backend.add_labels(*self._names(repo), str(number),
                                       _json({"labels": names}))
        return self._accepted(done, issue=number)

    def _accepted(self, answer, **ids):
        self.instance.report_ids(**ids)
        self.instance.accept()
        return answer

    # helpers ------------------------------------------------------------------------------
    @staticmethod
    def _names(repo):
        return repo["owner"]["login"], repo["name"]

    def _key(self, repo):
        return repo_key(*self._names(repo))

    @staticmethod
    def _all(listing):
        """Every item of a paged REST listing (`listing(pairs)` -> (items, page, last))."""
        found, page, last = [], 1, 1
        while page <= last:
            items, _, last = listing([("per_page", "100"), ("page", str(page))])
            found += items
            page += 1
        return found


def _pull_state(pull):
    if pull["state"] == "open":
        return "OPEN"
    return "MERGED" if pull.get("merged_at") else "CLOSED"
