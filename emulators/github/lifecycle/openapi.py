"""OpenAPI paths of a pull request's life (CI results, conversation, review, protection,
merge); openapi.py merges them into the emulator's document.

Their answers are GitHub's whole objects (the tests hold them to GitHub's own schemas); these
paths let the runtime name each operation (journal, fault rules) and document the routes.
"""
from ..errors import API_VERSION

# (method, path, operationId, summary, success status, takes a body)
_LIFE = [
    ("post", "/repos/{owner}/{repo}/statuses/{sha}", "repos/create-commit-status",
     "Create a commit status", "201", True),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/statuses",
     "repos/list-commit-statuses-for-ref", "List commit statuses for a reference", "200", False),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/status", "repos/get-combined-status-for-ref",
     "Get the combined status for a reference", "200", False),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/check-runs", "checks/list-for-ref",
     "List check runs for a Git reference (latest per name by default)", "200", False),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/check-suites", "checks/list-suites-for-ref",
     "List check suites for a Git reference", "200", False),
    ("post", "/repos/{owner}/{repo}/check-runs", "checks/create", "Create a check run", "201",
     True),
    ("get", "/repos/{owner}/{repo}/check-runs/{check_run_id}", "checks/get",
     "Get a check run", "200", False),
    ("patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}", "checks/update",
     "Update a check run (a conclusion completes it)", "200", True),
    ("post", "/repos/{owner}/{repo}/check-runs/{check_run_id}/rerequest",
     "checks/rerequest-run", "Rerequest a check run", "201", False),
    ("get", "/repos/{owner}/{repo}/check-suites/{check_suite_id}", "checks/get-suite",
     "Get a check suite", "200", False),
    ("get", "/repos/{owner}/{repo}/check-suites/{check_suite_id}/check-runs",
     "checks/list-for-suite", "List check runs in a check suite", "200", False),
    ("get", "/repos/{owner}/{repo}/issues", "issues/list-for-repo",
     "List repository issues (pull requests included)", "200", False),
    ("post", "/repos/{owner}/{repo}/issues", "issues/create", "Create an issue", "201", True),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}", "issues/get", "Get an issue",
     "200", False),
    ("patch", "/repos/{owner}/{repo}/issues/{issue_number}", "issues/update",
     "Update an issue", "200", True),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments", "issues/list-comments",
     "List issue comments", "200", False),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments", "issues/create-comment",
     "Create an issue comment", "201", True),
    ("get", "/repos/{owner}/{repo}/issues/comments/{comment_id}", "issues/get-comment",
     "Get an issue comment", "200", False),
    ("patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}", "issues/update-comment",
     "Update an issue comment", "200", True),
    ("delete", "/repos/{owner}/{repo}/issues/comments/{comment_id}", "issues/delete-comment",
     "Delete an issue comment", "204", False),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/labels",
     "issues/list-labels-on-issue", "List labels for an issue", "200", False),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/labels", "issues/add-labels",
     "Add labels to an issue", "200", True),
    ("put", "/repos/{owner}/{repo}/issues/{issue_number}/labels", "issues/set-labels",
     "Set labels for an issue", "200", True),
    ("delete", "/repos/{owner}/{repo}/issues/{issue_number}/labels",
     "issues/remove-all-labels", "Remove all labels from an issue", "204", False),
    ("delete", "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
     "issues/remove-label", "Remove a label from an issue", "200", False),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/assignees", "issues/add-assignees",
     "Add assignees to an issue", "201", True),
    ("delete", "/repos/{owner}/{repo}/issues/{issue_number}/assignees",
     "issues/remove-assignees", "Remove assignees from an issue", "200", True),
    ("get", "/repos/{owner}/{repo}/labels", "issues/list-labels-for-repo",
     "List labels for a repository", "200", False),
    ("post", "/repos/{owner}/{repo}/labels", "issues/create-label", "Create a label", "201",
     True),
    ("get", "/repos/{owner}/{repo}/labels/{name}", "issues/get-label", "Get a label", "200",
     False),
    ("patch", "/repos/{owner}/{repo}/labels/{name}", "issues/update-label", "Update a label",
     "200", True),
    ("delete", "/repos/{owner}/{repo}/labels/{name}", "issues/delete-label", "Delete a label",
     "204", False),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews", "pulls/list-reviews",
     "List reviews for a pull request", "200", False),
    ("post", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews", "pulls/create-review",
     "Create a review for a pull request", "200", True),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}",
     "pulls/get-review", "Get a review for a pull request", "200", False),
    ("post", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/events",
     "pulls/submit-review", "Submit a review for a pull request", "200", True),
    ("put", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/dismissals",
     "pulls/dismiss-review", "Dismiss a review for a pull request", "200", True),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers",
     "pulls/list-requested-reviewers", "Get all requested reviewers for a pull request", "200",
     False),
    ("post", "/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers",
     "pulls/request-reviewers", "Request reviewers for a pull request", "201", True),
    ("delete", "/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers",
     "pulls/remove-requested-reviewers", "Remove requested reviewers from a pull request",
     "200", True),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/merge", "pulls/check-if-merged",
     "Check if a pull request has been merged", "204", False),
    ("put", "/repos/{owner}/{repo}/pulls/{pull_number}/merge", "pulls/merge",
     "Merge a pull request (merge, squash, rebase)", "200", True),
    ("post", "/repos/{owner}/{repo}/merges", "repos/merge", "Merge a branch", "201", True),
    ("get", "/repos/{owner}/{repo}/branches", "repos/list-branches", "List branches", "200",
     False),
    ("get", "/repos/{owner}/{repo}/branches/{branch}", "repos/get-branch", "Get a branch",
     "200", False),
    ("get", "/repos/{owner}/{repo}/branches/{branch}/protection",
     "repos/get-branch-protection", "Get branch protection", "200", False),
    ("put", "/repos/{owner}/{repo}/branches/{branch}/protection",
     "repos/update-branch-protection", "Update branch protection", "200", True),
    ("delete", "/repos/{owner}/{repo}/branches/{branch}/protection",
     "repos/delete-branch-protection", "Delete branch protection", "204", False),
]

_VERSION = {"name": "X-GitHub-Api-Version", "in": "header", "required": False,
            "schema": {"type": "string", "enum": [API_VERSION]}}
_ERROR = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/BasicError"}}}}
_ERRORS = {"404": {"description": "Not Found", **_ERROR},
           "405": {"description": "Not allowed (protection or conflicts refuse a merge)",
                   **_ERROR},
           "409": {"description": "Conflict (a stale head sha, a merge conflict)", **_ERROR},
           "422": {"description": "Validation failed", "content": {"application/json": {
               "schema": {"$ref": "#/components/schemas/ValidationError"}}}}}
_OBJECT = {"application/json": {"schema": {"type": "object"}}}


def _operation(operation_id, summary, path, status, has_body):
    names = [part[1:-1] for part in path.split("/") if part.startswith("{")]
    op = {"operationId": operation_id, "summary": summary,
          "parameters": [*({"name": name, "in": "path", "required": True,
                            "schema": {"type": "string"}} for name in names), _VERSION],
          "responses": {status: {"description": "Success",
                                 **({} if status == "204" else {"content": _OBJECT})},
                        **_ERRORS}}
    if has_body:
        op["requestBody"] = {"required": False, "content": _OBJECT}
    return op


PATHS = {}
for _method, _path, _id, _summary, _status, _has_body in _LIFE:
    PATHS.setdefault(_path, {})[_method] = _operation(_id, _summary, _path, _status, _has_body)
