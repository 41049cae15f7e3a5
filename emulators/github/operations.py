"""Every operation the GitHub emulator serves, one row each: its route, GitHub's operationId,
what an App's credential needs for it, its documentation page and how the OpenAPI document
presents it.

The one declaration the others read: app.py routes each path to its resource (`RESOURCES`:
a new path needs its line there too) and names each method's operation from here;
openapi.py lists the paths in the order of the rows; permissions.py (the verdict REST and
GraphQL share) and errors.py (the link of an error's envelope) read a row by operationId.
Plain data, at the bottom, so that all of them may read it.
"""
from typing import NamedTuple

# How the OpenAPI document (openapi.py) presents an operation, which also says what it is
TYPED = "typed"  # REST, its answer one of the document's own schemas (the first routes)
OBJECT = "object"  # REST, its answer GitHub's whole object (the tests hold it to GitHub's schema)
GIT = "git"  # git's smart HTTP: not the REST API, answered in git's words (smart_http.py)
RAW = "raw"  # a file's bytes, where `download_url` points: not the REST API
GRAPHQL = "graphql"  # GraphQL's endpoint: each query and mutation is named by its body
RATE_LIMIT = "rate-limit"  # `GET /rate_limit`: counted against no window

# What an App's credential needs (`needs`): a permission and its level, as GitHub's
# "Permissions required for GitHub Apps" lists them (`contents:read`; `issues|pull_requests:
# write`, where either does; `metadata`, for a repository's own record, every installation
# holds), or, on the App's own routes, the credential itself (resources/access.py)
APP_JWT, INSTALLATION_TOKEN = "the App's JWT", "an installation token"
REST_DOCS = "https://docs.github.com/rest/"  # where each `docs` page#anchor is


class Operation(NamedTuple):
    """One method on one route. `path` is falcon's template (`{name:path}` spans segments);
    `needs` None leaves the judgement to the route (git's service, GraphQL's fields); `answer`
    is the success status, with the document's schema of it where the form is TYPED; `body`
    the request body's schema there, True where it is GitHub's object; `query` the query
    parameters' names."""

    method: str
    path: str
    id: str
    needs: str | None
    docs: str | None
    summary: str
    answer: str
    body: str | None = None
    query: str = ""
    form: str = OBJECT


def _rows(form, *rows):
    return tuple(Operation(*row, form=form) for row in rows)


R = "/repos/{owner}/{repo}"
#   method, path, operationId, what an App needs, docs page#anchor, summary, answer[, body, query]
OPERATIONS = (
    # the repository, its refs and pull requests
    *_rows(
        TYPED,
        ("GET", R, "repos/get", "metadata:read", "repos/repos#get-a-repository",
         "Get a repository", "200 Repository"),
        ("GET", R + "/git/ref/{ref:path}", "git/get-ref", "contents:read",
         "git/refs#get-a-reference", "Get a reference", "200 Reference"),
        ("GET", R + "/git/matching-refs/{ref:path}", "git/list-matching-refs", "contents:read",
         "git/refs#list-matching-references", "List matching references", "200 References"),
        # the older listing GitHub still serves answers with the matching-refs page
        ("GET", R + "/git/refs", "git/list-refs", "contents:read",
         "git/refs#list-matching-references", "List references (paged; GitHub's older listing)",
         "200 References", None, "per_page page"),
        ("POST", R + "/git/refs", "git/create-ref", "contents:write",
         "git/refs#create-a-reference", "Create a reference", "201 Reference", "CreateRef"),
        ("GET", R + "/git/refs/{ref:path}", "git/list-refs", "contents:read",
         "git/refs#list-matching-references", "List references under a prefix, or the exact one",
         "200 References", None, "per_page page"),
        ("PATCH", R + "/git/refs/{ref:path}", "git/update-ref", "contents:write",
         "git/refs#update-a-reference", "Update a reference", "200 Reference", "UpdateRef"),
        ("DELETE", R + "/git/refs/{ref:path}", "git/delete-ref", "contents:write",
         "git/refs#delete-a-reference", "Delete a reference (open PRs on the branch close)",
         "204"),
        ("GET", R + "/pulls", "pulls/list", "pull_requests:read",
         "pulls/pulls#list-pull-requests", "List pull requests", "200 PullRequests", None,
         "state head base sort direction per_page page"),
        ("POST", R + "/pulls", "pulls/create", "pull_requests:write",
         "pulls/pulls#create-a-pull-request", "Create a pull request", "201 PullRequest",
         "CreatePull"),
        ("GET", R + "/pulls/{pull_number}", "pulls/get", "pull_requests:read",
         "pulls/pulls#get-a-pull-request", "Get a pull request", "200 PullRequest"),
        ("PATCH", R + "/pulls/{pull_number}", "pulls/update", "pull_requests:write",
         "pulls/pulls#update-a-pull-request", "Update a pull request", "200 PullRequest",
         "UpdatePull"),
        ("GET", R + "/git/matching-refs", "git/list-matching-refs", "contents:read",
         "git/refs#list-matching-references", "List matching references", "200 References")),
    # git's smart HTTP, where `clone_url` points (`{repo}` may end in `.git`); info/refs
    # serves both directions: the service it is asked for decides (permissions.GIT_SERVICES)
    *_rows(
        GIT,
        ("GET", "/{owner}/{repo}/info/refs", "git/info-refs", None, None,
         "Advertise refs for git (smart HTTP)", "200", None, "service"),
        ("POST", "/{owner}/{repo}/git-upload-pack", "git/upload-pack", "contents:read", None,
         "Clone or fetch: negotiate and send a pack", "200"),
        ("POST", "/{owner}/{repo}/git-receive-pack", "git/receive-pack", "contents:write", None,
         "Push: receive a pack, update refs (as git/update-ref)", "200")),
    # files and git's objects, commits, the commits and files of a pull request
    *_rows(
        TYPED,
        ("GET", R + "/contents/{path:path}", "repos/get-content", "contents:read",
         "repos/contents#get-repository-content",
         "Get repository content (a file or a folder) at ?ref=", "200 Object", None, "ref"),
        ("PUT", R + "/contents/{path:path}", "repos/create-or-update-file-contents",
         "contents:write", "repos/contents#create-or-update-file-contents",
         "Create or update a file (a commit)", "200 Object", "Object"),
        ("DELETE", R + "/contents/{path:path}", "repos/delete-file", "contents:write",
         "repos/contents#delete-a-file", "Delete a file (a commit)", "200 Object", "Object"),
        ("GET", R + "/contents", "repos/get-content", "contents:read",
         "repos/contents#get-repository-content",
         "Get repository content (a file or a folder) at ?ref=", "200 Object", None, "ref"),
        ("PUT", R + "/contents", "repos/create-or-update-file-contents", "contents:write",
         "repos/contents#create-or-update-file-contents", "Create or update a file (a commit)",
         "200 Object", "Object"),
        ("DELETE", R + "/contents", "repos/delete-file", "contents:write",
         "repos/contents#delete-a-file", "Delete a file (a commit)", "200 Object", "Object"),
        ("GET", R + "/readme", "repos/get-readme", "contents:read",
         "repos/contents#get-a-repository-readme", "Get the README", "200 Object", None, "ref"),
        ("POST", R + "/git/blobs", "git/create-blob", "contents:write",
         "git/blobs#create-a-blob", "Create a blob", "201 Object", "Object"),
        ("GET", R + "/git/blobs/{file_sha}", "git/get-blob", "contents:read",
         "git/blobs#get-a-blob", "Get a blob", "200 Object"),
        ("POST", R + "/git/trees", "git/create-tree", "contents:write",
         "git/trees#create-a-tree", "Create a tree (over base_tree)", "201 Object", "Object"),
        ("GET", R + "/git/trees/{tree_sha:path}", "git/get-tree", "contents:read",
         "git/trees#get-a-tree", "Get a tree (?recursive)", "200 Object", None, "recursive"),
        ("POST", R + "/git/commits", "git/create-commit", "contents:write",
         "git/commits#create-a-commit", "Create a commit", "201 Object", "Object"),
        ("GET", R + "/git/commits/{commit_sha}", "git/get-commit", "contents:read",
         "git/commits#get-a-commit-object", "Get a commit object", "200 Object"),
        ("GET", R + "/commits", "repos/list-commits", "contents:read",
         "commits/commits#list-commits", "List commits", "200 Objects", None,
         "sha path per_page page"),
        # a commit, and its statuses and checks below it (resources.commits.CommitPaths)
        ("GET", R + "/commits/{ref:path}", "repos/get-commit", "contents:read",
         "commits/commits#get-a-commit", "Get a commit (with files)", "200 Object"),
        ("GET", R + "/compare/{basehead:path}", "repos/compare-commits-with-basehead",
         "contents:read", "commits/commits#compare-two-commits",
         "Compare two commits (base...head)", "200 Object", None, "per_page page"),
        ("GET", R + "/pulls/{pull_number}/commits", "pulls/list-commits", "pull_requests:read",
         "pulls/pulls#list-commits-on-a-pull-request", "List commits on a pull request",
         "200 Objects", None, "per_page page"),
        ("GET", R + "/pulls/{pull_number}/files", "pulls/list-files", "pull_requests:read",
         "pulls/pulls#list-pull-requests-files", "List pull request files", "200 Objects", None,
         "per_page page")),
    *_rows(
        RAW,
        ("GET", "/{owner}/{repo}/raw/{tail:path}", "contents/raw", "contents:read", None,
         "A file's bytes at a ref (download_url)", "200")),
    # a pull request's life: CI results (the listings below a commit are routed by
    # resources.commits.CommitPaths, as a ref may hold slashes)
    *_rows(
        OBJECT,
        ("POST", R + "/statuses/{sha}", "repos/create-commit-status", "statuses:write",
         "commits/statuses#create-a-commit-status", "Create a commit status", "201", True),
        ("GET", R + "/commits/{ref}/statuses", "repos/list-commit-statuses-for-ref",
         "statuses:read", "commits/statuses#list-commit-statuses-for-a-reference",
         "List commit statuses for a reference", "200"),
        ("GET", R + "/commits/{ref}/status", "repos/get-combined-status-for-ref",
         "statuses:read", "commits/statuses#get-the-combined-status-for-a-specific-reference",
         "Get the combined status for a reference", "200"),
        ("GET", R + "/commits/{ref}/check-runs", "checks/list-for-ref", "checks:read",
         "checks/runs#list-check-runs-for-a-git-reference",
         "List check runs for a Git reference (latest per name by default)", "200"),
        ("GET", R + "/commits/{ref}/check-suites", "checks/list-suites-for-ref", "checks:read",
         "checks/suites#list-check-suites-for-a-git-reference",
         "List check suites for a Git reference", "200"),
        ("POST", R + "/check-runs", "checks/create", "checks:write",
         "checks/runs#create-a-check-run", "Create a check run", "201", True),
        ("GET", R + "/check-runs/{check_run_id}", "checks/get", "checks:read",
         "checks/runs#get-a-check-run", "Get a check run", "200"),
        ("PATCH", R + "/check-runs/{check_run_id}", "checks/update", "checks:write",
         "checks/runs#update-a-check-run", "Update a check run (a conclusion completes it)",
         "200", True),
        ("POST", R + "/check-runs/{check_run_id}/rerequest", "checks/rerequest-run",
         "checks:write", "checks/runs#rerequest-a-check-run", "Rerequest a check run",
         "201"),
        ("GET", R + "/check-suites/{check_suite_id}", "checks/get-suite", "checks:read",
         "checks/suites#get-a-check-suite", "Get a check suite", "200"),
        ("GET", R + "/check-suites/{check_suite_id}/check-runs", "checks/list-for-suite",
         "checks:read", "checks/runs#list-check-runs-in-a-check-suite",
         "List check runs in a check suite", "200")),
    # its conversation: an issue number may be a pull request's, so what one reaches takes
    # `issues` or `pull_requests`, as GitHub lists it under both
    *_rows(
        OBJECT,
        ("GET", R + "/issues", "issues/list-for-repo", "issues:read",
         "issues/issues#list-repository-issues",
         "List repository issues (pull requests included)", "200"),
        ("POST", R + "/issues", "issues/create", "issues:write",
         "issues/issues#create-an-issue", "Create an issue", "201", True),
        ("GET", R + "/issues/{issue_number}", "issues/get", "issues|pull_requests:read",
         "issues/issues#get-an-issue", "Get an issue", "200"),
        ("PATCH", R + "/issues/{issue_number}", "issues/update", "issues|pull_requests:write",
         "issues/issues#update-an-issue", "Update an issue", "200", True),
        ("GET", R + "/issues/{issue_number}/comments", "issues/list-comments",
         "issues|pull_requests:read", "issues/comments#list-issue-comments",
         "List issue comments", "200"),
        ("POST", R + "/issues/{issue_number}/comments", "issues/create-comment",
         "issues|pull_requests:write", "issues/comments#create-an-issue-comment",
         "Create an issue comment", "201", True),
        ("GET", R + "/issues/comments/{comment_id}", "issues/get-comment",
         "issues|pull_requests:read", "issues/comments#get-an-issue-comment",
         "Get an issue comment", "200"),
        ("PATCH", R + "/issues/comments/{comment_id}", "issues/update-comment",
         "issues|pull_requests:write", "issues/comments#update-an-issue-comment",
         "Update an issue comment", "200", True),
        ("DELETE", R + "/issues/comments/{comment_id}", "issues/delete-comment",
         "issues|pull_requests:write", "issues/comments#delete-an-issue-comment",
         "Delete an issue comment", "204"),
        ("GET", R + "/issues/{issue_number}/labels", "issues/list-labels-on-issue",
         "issues|pull_requests:read", "issues/labels#list-labels-for-an-issue",
         "List labels for an issue", "200"),
        ("POST", R + "/issues/{issue_number}/labels", "issues/add-labels",
         "issues|pull_requests:write", "issues/labels#add-labels-to-an-issue",
         "Add labels to an issue", "200", True),
        ("PUT", R + "/issues/{issue_number}/labels", "issues/set-labels",
         "issues|pull_requests:write", "issues/labels#set-labels-for-an-issue",
         "Set labels for an issue", "200", True),
        ("DELETE", R + "/issues/{issue_number}/labels", "issues/remove-all-labels",
         "issues|pull_requests:write", "issues/labels#remove-all-labels-from-an-issue",
         "Remove all labels from an issue", "204"),
        ("DELETE", R + "/issues/{issue_number}/labels/{name}", "issues/remove-label",
         "issues|pull_requests:write", "issues/labels#remove-a-label-from-an-issue",
         "Remove a label from an issue", "200"),
        ("POST", R + "/issues/{issue_number}/assignees", "issues/add-assignees",
         "issues|pull_requests:write", "issues/assignees#add-assignees-to-an-issue",
         "Add assignees to an issue", "201", True),
        ("DELETE", R + "/issues/{issue_number}/assignees", "issues/remove-assignees",
         "issues|pull_requests:write", "issues/assignees#remove-assignees-from-an-issue",
         "Remove assignees from an issue", "200", True),
        ("GET", R + "/labels", "issues/list-labels-for-repo", "issues|pull_requests:read",
         "issues/labels#list-labels-for-a-repository", "List labels for a repository",
         "200"),
        ("POST", R + "/labels", "issues/create-label", "issues|pull_requests:write",
         "issues/labels#create-a-label", "Create a label", "201", True),
        ("GET", R + "/labels/{name}", "issues/get-label", "issues|pull_requests:read",
         "issues/labels#get-a-label", "Get a label", "200"),
        ("PATCH", R + "/labels/{name}", "issues/update-label", "issues|pull_requests:write",
         "issues/labels#update-a-label", "Update a label", "200", True),
        ("DELETE", R + "/labels/{name}", "issues/delete-label", "issues|pull_requests:write",
         "issues/labels#delete-a-label", "Delete a label", "204")),
    # its review
    *_rows(
        OBJECT,
        ("GET", R + "/pulls/{pull_number}/reviews", "pulls/list-reviews", "pull_requests:read",
         "pulls/reviews#list-reviews-for-a-pull-request", "List reviews for a pull request",
         "200"),
        ("POST", R + "/pulls/{pull_number}/reviews", "pulls/create-review",
         "pull_requests:write", "pulls/reviews#create-a-review-for-a-pull-request",
         "Create a review for a pull request", "200", True),
        ("GET", R + "/pulls/{pull_number}/reviews/{review_id}", "pulls/get-review",
         "pull_requests:read", "pulls/reviews#get-a-review-for-a-pull-request",
         "Get a review for a pull request", "200"),
        ("POST", R + "/pulls/{pull_number}/reviews/{review_id}/events", "pulls/submit-review",
         "pull_requests:write", "pulls/reviews#submit-a-review-for-a-pull-request",
         "Submit a review for a pull request", "200", True),
        ("PUT", R + "/pulls/{pull_number}/reviews/{review_id}/dismissals",
         "pulls/dismiss-review", "pull_requests:write",
         "pulls/reviews#dismiss-a-review-for-a-pull-request",
         "Dismiss a review for a pull request", "200", True),
        ("GET", R + "/pulls/{pull_number}/requested_reviewers",
         "pulls/list-requested-reviewers", "pull_requests:read",
         "pulls/review-requests#get-all-requested-reviewers-for-a-pull-request",
         "Get all requested reviewers for a pull request", "200"),
        ("POST", R + "/pulls/{pull_number}/requested_reviewers", "pulls/request-reviewers",
         "pull_requests:write", "pulls/review-requests#request-reviewers-for-a-pull-request",
         "Request reviewers for a pull request", "201", True),
        ("DELETE", R + "/pulls/{pull_number}/requested_reviewers",
         "pulls/remove-requested-reviewers", "pull_requests:write",
         "pulls/review-requests#remove-requested-reviewers-from-a-pull-request",
         "Remove requested reviewers from a pull request", "200", True)),
    # its merge, branches and their protection
    *_rows(
        OBJECT,
        ("GET", R + "/pulls/{pull_number}/merge", "pulls/check-if-merged", "pull_requests:read",
         "pulls/pulls#check-if-a-pull-request-has-been-merged",
         "Check if a pull request has been merged", "204"),
        ("PUT", R + "/pulls/{pull_number}/merge", "pulls/merge", "contents:write",
         "pulls/pulls#merge-a-pull-request", "Merge a pull request (merge, squash, rebase)",
         "200", True),
        ("POST", R + "/merges", "repos/merge", "contents:write",
         "branches/branches#merge-a-branch", "Merge a branch", "201", True),
        ("GET", R + "/branches", "repos/list-branches", "contents:read",
         "branches/branches#list-branches", "List branches", "200"),
        ("GET", R + "/branches/{branch}", "repos/get-branch", "contents:read",
         "branches/branches#get-a-branch", "Get a branch", "200"),
        ("GET", R + "/branches/{branch}/protection", "repos/get-branch-protection",
         "administration:read", "branches/branch-protection#get-branch-protection",
         "Get branch protection", "200"),
        ("PUT", R + "/branches/{branch}/protection", "repos/update-branch-protection",
         "administration:write", "branches/branch-protection#update-branch-protection",
         "Update branch protection", "200", True),
        ("DELETE", R + "/branches/{branch}/protection", "repos/delete-branch-protection",
         "administration:write", "branches/branch-protection#delete-branch-protection",
         "Delete branch protection", "204")),
    # GitHub Apps: the App's own routes (its JWT) and an installation token's
    *_rows(
        OBJECT,
        ("GET", "/app", "apps/get-authenticated", APP_JWT, "apps/apps#get-the-authenticated-app",
         "Get the authenticated App (its JWT)", "200"),
        ("GET", "/app/installations", "apps/list-installations", APP_JWT,
         "apps/apps#list-installations-for-the-authenticated-app",
         "List the App's installations", "200"),
        ("GET", "/app/installations/{installation_id}", "apps/get-installation", APP_JWT,
         "apps/apps#get-an-installation-for-the-authenticated-app",
         "Get one of the App's installations", "200"),
        ("POST", "/app/installations/{installation_id}/access_tokens",
         "apps/create-installation-access-token", APP_JWT,
         "apps/apps#create-an-installation-access-token-for-an-app",
         "Create an installation token (one hour; narrowed by repositories and permissions)",
         "201", True),
        ("GET", R + "/installation", "apps/get-repo-installation", APP_JWT,
         "apps/apps#get-a-repository-installation-for-the-authenticated-app",
         "Get the App's installation that reaches a repository", "200"),
        ("GET", "/orgs/{org}/installation", "apps/get-org-installation", APP_JWT,
         "apps/apps#get-an-organization-installation-for-the-authenticated-app",
         "Get the App's installation on an organization", "200"),
        ("GET", "/users/{username}/installation", "apps/get-user-installation", APP_JWT,
         "apps/apps#get-a-user-installation-for-the-authenticated-app",
         "Get the App's installation on a user", "200"),
        ("GET", "/installation/repositories", "apps/list-repos-accessible-to-installation",
         INSTALLATION_TOKEN,
         "apps/installations#list-repositories-accessible-to-the-app-installation",
         "List the repositories an installation token reaches", "200"),
        ("DELETE", "/installation/token", "apps/revoke-installation-access-token",
         INSTALLATION_TOKEN, "apps/installations#revoke-an-installation-access-token",
         "Revoke the installation token of the request", "204")),
    # GraphQL (graphql/): each field and mutation needs its REST operation's permission there;
    # GitHub Enterprise Server's `/api/graphql` is routed here (app.EnterpriseLayout)
    *_rows(
        GRAPHQL,
        ("POST", "/graphql", "graphql", None, None, "Run a GraphQL query or mutation", "200")),
    # the caller's windows (ratelimits/)
    *_rows(
        RATE_LIMIT,
        ("GET", "/rate_limit", "rate-limit/get", "metadata:read",
         "rate-limit/rate-limit#get-rate-limit-status-for-the-authenticated-user",
         "Get rate limit status for the caller (not counted against any window)", "200")),
)


def by_id(field):
    """{operationId: its `field`} of every operation that has one; the rows of one operation
    (two paths of it) must agree."""
    found = {}
    for row in OPERATIONS:
        value = getattr(row, field)
        if value is not None and found.setdefault(row.id, value) != value:
            raise ValueError(f"{row.id}: its rows name two {field}s")
    return found


_AT = {(row.method, row.path): row.id for row in OPERATIONS}


def operation_id(method, path):
    """The operationId of `method` on the route `path` (falcon's template)."""
    return _AT[method, path]
