"""`Repository` and `Ref` as GraphQL presents them, from the repository's record and REST's
shape of it; a repository's pull requests, issues and labels as connections."""
from . import connections
from .actors import actor
from .checks import Commit
from .context import every, found
from .errors import could_not_resolve
from .issues import Issue, Label
from .pulls import PullRequest
from .resolve import from_rest

ORDER = {"CREATED_AT": "created_at", "UPDATED_AT": "updated_at"}


def present(context, record):
    """The GraphQL object of a repository record, made once per request."""
    key = record["key"]
    if key not in context.repositories:
        context.repositories[key] = Repository(context, record)
    return context.repositories[key]


def _ordered(items, order_by):
    """Items (REST shapes) in a connection's `orderBy` (`{field, direction}`), oldest first
    without one."""
    if not order_by:
        return items
    field = ORDER.get(order_by.get("field"), "created_at")
    return sorted(items, key=lambda i: (i.get(field) or "", i["number"]),
                  reverse=order_by.get("direction") == "DESC")


def _rest_state(states):
    """The `state` a REST listing filters on for GraphQL's `states` (`OPEN`, `CLOSED`,
    `MERGED`): merged pull requests are closed ones."""
    wanted = set(states or ())
    if wanted == {"OPEN"}:
        return "open"
    return "closed" if wanted and "OPEN" not in wanted else "all"


class Repository:
    """A repository (its record `record`, REST's shape `rest`) as the request's user sees it;
    `backend` is the request's."""

    typename = "Repository"

    def __init__(self, context, record):
        self.context, self.record = context, record
        self.backend = backend = context.backend
        self.rest = rest = backend.repos.json(record)
        from_rest(self, rest, "name", "description", "is_template", "delete_branch_on_merge",
                  "created_at", "updated_at", "pushed_at", "ssh_url",
                  id="node_id", database_id="id", name_with_owner="full_name", url="html_url",
                  homepage_url="homepage", is_private="private", is_archived="archived",
                  is_disabled="disabled", is_fork="fork", has_issues_enabled="has_issues",
                  has_wiki_enabled="has_wiki", has_projects_enabled="has_projects",
                  has_discussions_enabled="has_discussions",
                  merge_commit_allowed="allow_merge_commit",
                  squash_merge_allowed="allow_squash_merge",
                  rebase_merge_allowed="allow_rebase_merge",
                  auto_merge_allowed="allow_auto_merge")
        self.resource_path = f"/{rest['full_name']}"
        self.visibility = rest["visibility"].upper()
        self.is_mirror = self.is_locked = False
        self.is_in_organization = rest["owner"]["type"] == "Organization"
        self.viewer_default_merge_method = "MERGE"
        self.viewer_permission = "ADMIN"  # every token may write here (README: who acts)
        self.viewer_can_administer = True
        self.viewer_has_starred = False
        self.stargazer_count = self.fork_count = 0
        self.parent = None  # forks are not modelled
        self.template_repository = None
        self.merge_queue = None  # a repository without a merge queue: gh merges directly

    def tip(self, branch):
        """The sha a branch is at, or None."""
        return self.backend.repos.tips(self.record["key"], (branch,)).get(branch)

    def protection(self, branch):
        """`repos/get-branch-protection`'s answer for a branch, or None when unprotected."""
        return found(self.backend.protection.get, self.record, branch)

    def owner(self, info):
        return actor(self.rest["owner"])

    def is_empty(self, info):
        return self.tip(self.rest["default_branch"]) is None

    def default_branch_ref(self, info):
        return self.ref(info, self.rest["default_branch"])

    def ref(self, info, qualified_name):
        branch = qualified_name.removeprefix("refs/heads/")
        tip = self.tip(branch)
        return None if tip is None else Ref(self, branch, tip)

    def label(self, info, name):
        label = found(self.backend.labels.get, self.record, name)
        return None if label is None else Label(label)

    def labels(self, info, first=None, last=None, after=None, before=None, query=None,
               order_by=None):
        labels = every(lambda page: self.backend.labels.list(self.record, page))
        shown = [Label(label) for label in labels
                 if not query or query.lower() in label["name"].lower()]
        return connections.page(shown, first, last, after, before, field="labels")

    def pull_request(self, info, number):
        pull = found(self.backend.pulls.get, self.record, number)
        if pull is None:
            raise could_not_resolve("PullRequest", f"the number of {number}")
        return PullRequest(self, pull)

    def pull_requests(self, info, states=None, head_ref_name=None, base_ref_name=None,
                      labels=None, order_by=None, first=None, last=None, after=None,
                      before=None):
        head = None if head_ref_name is None else \
            f"{self.rest['owner']['login']}:{head_ref_name}"
        pulls = every(lambda page: self.backend.pulls.list(
            self.record, page, state=_rest_state(states), direction="asc", head=head,
            base=base_ref_name))
        shown = [PullRequest(self, pull) for pull in _ordered(pulls, order_by)]
        shown = [p for p in shown if (not states or p.state in states)
                 and (not labels or set(labels) <= {label["name"] for label in p.rest["labels"]})]
        return connections.page(shown, first, last, after, before, field="pullRequests")

    def issue(self, info, number):
        issue = self._issue(number)
        if issue is None:
            raise could_not_resolve("Issue", f"the number of {number}")
        return Issue(self, issue)

    def _issue(self, number):
        """`issues/get`'s answer of an issue (None for a pull request's number, or none)."""
        issue = found(self.backend.issues.get, self.record, number)
        return None if issue is None or "pull_request" in issue else issue

    def issue_or_pull_request(self, info, number):
        issue = self._issue(number)
        return self.pull_request(info, number) if issue is None else Issue(self, issue)

    def issues(self, info, states=None, labels=None, filter_by=None, order_by=None,
               first=None, last=None, after=None, before=None):
        filter_by = filter_by or {}
        states = states or filter_by.get("states")
        issues = every(lambda page: self.backend.issues.list(
            self.record, page, state=_rest_state(states), direction="asc",
            labels=labels or filter_by.get("labels") or (), creator=filter_by.get("createdBy"),
            assignee=filter_by.get("assignee")))
        shown = [Issue(self, issue) for issue in _ordered(issues, order_by)
                 if "pull_request" not in issue]
        return connections.page(shown, first, last, after, before, field="issues")


class Ref:
    """A branch (`refs/heads/<name>`) and the commit it is at."""

    typename = "Ref"

    def __init__(self, repository, branch, sha):
        self.repository = repository
        self.name, self.prefix = branch, "refs/heads/"
        self.id = f"REF_{repository.id}:{branch}"
        self.target = Commit(repository, sha)

    def branch_protection_rule(self, info):
        protection = self.repository.protection(self.name)
        if protection is None:
            return None
        checks = protection.get("required_status_checks") or {}
        reviews = protection.get("required_pull_request_reviews") or {}
        return {"pattern": self.name, "requiresStrictStatusChecks": bool(checks.get("strict")),
                "requiresStatusChecks": bool(checks),
                "requiredStatusCheckContexts": list(checks.get("contexts") or []),
                "requiresApprovingReviews": bool(reviews),
                "requiredApprovingReviewCount": reviews.get("required_approving_review_count"),
                "dismissesStaleReviews": bool(reviews.get("dismiss_stale_reviews"))}
