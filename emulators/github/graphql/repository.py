"""`Repository` and `Ref` as GraphQL presents them, from REST's shapes; a repository's pull
requests, issues and labels as connections."""
from . import connections
from .actors import actor
from .errors import could_not_resolve
from .checks import Commit
from .issues import Issue, Label
from .pulls import PullRequest

ORDER = {"CREATED_AT": "created_at", "UPDATED_AT": "updated_at"}


def _ordered(items, order_by):
    """Items (REST shapes) in a connection's `orderBy` (`{field, direction}`), oldest first
    without one."""
    if not order_by:
        return items
    field = ORDER.get(order_by.get("field"), "created_at")
    return sorted(items, key=lambda i: (i.get(field) or "", i["number"]),
                  reverse=order_by.get("direction") == "DESC")


class Repository:
    """A repository (its REST shape `rest`) as the request's user sees it."""

    typename = "Repository"

    def __init__(self, rules, rest):
        self.rules, self.rest = rules, rest
        self.id = rest["node_id"]
        self.database_id = rest["id"]
        self.name = rest["name"]
        self.name_with_owner = rest["full_name"]
        self.url = rest["html_url"]
        self.resource_path = f"/{rest['full_name']}"
        self.description = rest["description"]
        self.homepage_url = rest["homepage"]
        self.is_private = rest["private"]
        self.visibility = rest["visibility"].upper()
        self.is_archived = rest["archived"]
        self.is_disabled = rest["disabled"]
        self.is_fork = rest["fork"]
        self.is_template = rest["is_template"]
        self.is_mirror = False
        self.is_locked = False
        self.is_in_organization = rest["owner"]["type"] == "Organization"
        self.has_issues_enabled = rest["has_issues"]
        self.has_wiki_enabled = rest["has_wiki"]
        self.has_projects_enabled = rest["has_projects"]
        self.has_discussions_enabled = rest["has_discussions"]
        self.merge_commit_allowed = rest["allow_merge_commit"]
        self.squash_merge_allowed = rest["allow_squash_merge"]
        self.rebase_merge_allowed = rest["allow_rebase_merge"]
        self.auto_merge_allowed = rest["allow_auto_merge"]
        self.delete_branch_on_merge = rest["delete_branch_on_merge"]
        self.viewer_default_merge_method = "MERGE"
        self.viewer_permission = "ADMIN"  # every token may write here (README: who acts)
        self.viewer_can_administer = True
        self.viewer_has_starred = False
        self.stargazer_count = self.fork_count = 0
        self.created_at = rest["created_at"]
        self.updated_at = rest["updated_at"]
        self.pushed_at = rest["pushed_at"]
        self.ssh_url = rest["ssh_url"]
        self.parent = None  # forks are not modelled
        self.template_repository = None
        self.merge_queue = None  # a repository without a merge queue: gh merges directly

    def owner(self, info):
        return actor(self.rest["owner"])

    def is_empty(self, info):
        return self.rules.branch_tip(self.rest, self.rest["default_branch"]) is None

    def default_branch_ref(self, info):
        tip = self.rules.branch_tip(self.rest, self.rest["default_branch"])
        return None if tip is None else Ref(self, self.rest["default_branch"], tip)

    def ref(self, info, qualified_name):
        branch = qualified_name.removeprefix("refs/heads/")
        tip = self.rules.branch_tip(self.rest, branch)
        return None if tip is None else Ref(self, branch, tip)

    def label(self, info, name):
        found = self.rules.label(self.rest, name)
        return None if found is None else Label(found)

    def labels(self, info, first=None, last=None, after=None, before=None, query=None,
               order_by=None):
        found = [Label(label) for label in self.rules.labels(self.rest)
                 if not query or query.lower() in label["name"].lower()]
        return connections.page(found, first, last, after, before, field="labels")

    def pull_request(self, info, number):
        found = self.rules.pull(self.rest, number)
        if found is None:
            raise could_not_resolve("PullRequest", f"the number of {number}")
        return PullRequest(self, found)

    def pull_requests(self, info, states=None, head_ref_name=None, base_ref_name=None,
                      labels=None, order_by=None, first=None, last=None, after=None,
                      before=None):
        found = self.rules.pulls(self.rest, states=set(states) if states else None,
                                 head=head_ref_name, base=base_ref_name)
        if labels:
            found = [p for p in found
                     if set(labels) <= {label["name"] for label in p["labels"]}]
        nodes = [PullRequest(self, p)
                 for p in _ordered(found, order_by)]
        return connections.page(nodes, first, last, after, before, field="pullRequests")

    def issue(self, info, number):
        found = self.rules.issue(self.rest, number)
        if found is None:
            raise could_not_resolve("Issue", f"the number of {number}")
        return Issue(self, found)

    def issue_or_pull_request(self, info, number):
        found = self.rules.issue(self.rest, number)
        if found is not None:
            return Issue(self, found)
        return self.pull_request(info, number)

    def issues(self, info, states=None, labels=None, filter_by=None, order_by=None,
               first=None, last=None, after=None, before=None):
        filter_by = filter_by or {}
        found = self.rules.issues(
            self.rest, states={s.lower() for s in states} if states else None,
            assignee=filter_by.get("assignee"), author=filter_by.get("createdBy"),
            labels=labels or filter_by.get("labels"))
        if filter_by.get("states"):
            found = [i for i in found if i["state"].upper() in filter_by["states"]]
        nodes = [Issue(self, i) for i in _ordered(found, order_by)]
        return connections.page(nodes, first, last, after, before, field="issues")


class Ref:
    """A branch (`refs/heads/<name>`) and the commit it is at."""

    typename = "Ref"

    def __init__(self, repository, branch, sha):
        self.repository = repository
        self.name, self.prefix = branch, "refs/heads/"
        self.id = f"REF_{repository.id}:{branch}"
        self.target = Commit(repository, sha)

    def branch_protection_rule(self, info):
        protection = self.repository.rules.protection(self.repository.rest, self.name)
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
