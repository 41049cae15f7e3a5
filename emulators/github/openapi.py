"""OpenAPI 3 document of the GitHub provider routes (served at `/__admin/openapi.json`).

`{ref}` parameters carry a slash-bearing tail (`heads/topic/nested`), as on GitHub, flagged
`x-slash-bearing: true`: the runtime's operation matcher lets such a parameter span segments,
so fault rules by operationId match nested refs too.
"""
from .errors import API_VERSION
from .ratelimits.openapi import PATHS as RATE_LIMIT_PATHS

_OWNER_REPO = [
    {"name": "owner", "in": "path", "required": True, "schema": {"type": "string"}},
    {"name": "repo", "in": "path", "required": True, "schema": {"type": "string"}},
]
_REF = {"name": "ref", "in": "path", "required": True, "x-slash-bearing": True,
        "schema": {"type": "string", "minLength": 1}}
_PULL_NUMBER = {"name": "pull_number", "in": "path", "required": True,
                "schema": {"type": "integer", "minimum": 1}}
_VERSION = {"name": "X-GitHub-Api-Version", "in": "header", "required": False,
            "schema": {"type": "string", "enum": [API_VERSION]}}


def _json(ref):
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}


def _answer(description, ref=None):
    out = {"description": description}
    if ref:
        out["content"] = _json(ref)
    return out


_ERRORS = {"404": _answer("Not Found", "BasicError"),
           "409": _answer("Git Repository is empty", "BasicError"),
           "422": _answer("Validation failed", "ValidationError"),
           "501": _answer("Not modelled by the emulator", "Unsupported")}


def _op(operation_id, summary, params, ok_status, ok_ref, body=None, query=()):
    op = {"operationId": operation_id, "summary": summary,
          "parameters": [*_OWNER_REPO, *params, *query, _VERSION],
          "responses": {ok_status: _answer("Success", ok_ref), **_ERRORS}}
    if body:
        op["requestBody"] = {"required": False, "content": _json(body)}
    return op


_PAGE_QUERY = [
    {"name": "per_page", "in": "query", "schema": {"type": "integer", "minimum": 1}},
    {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1}},
]
_LIST_QUERY = [
    {"name": "state", "in": "query", "schema": {"type": "string",
                                                "enum": ["open", "closed", "all"]}},
    {"name": "head", "in": "query", "schema": {"type": "string"}},
    {"name": "base", "in": "query", "schema": {"type": "string"}},
    {"name": "sort", "in": "query", "schema": {"type": "string", "enum": ["created", "updated"]}},
    {"name": "direction", "in": "query", "schema": {"type": "string", "enum": ["asc", "desc"]}},
    {"name": "per_page", "in": "query", "schema": {"type": "integer", "minimum": 1}},
    {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1}},
]

_OWNER = {"type": "object", "properties": {
    "login": {"type": "string"}, "id": {"type": "integer"}, "node_id": {"type": "string"},
    "type": {"type": "string"}}}

DOCUMENT = {
    "openapi": "3.0.3",
    "info": {"title": "GitHub REST emulator", "version": API_VERSION,
             "description": "Repositories, refs and same-repository pull requests."},
    "paths": {
        "/repos/{owner}/{repo}": {
            "get": _op("repos/get", "Get a repository", [], "200", "Repository")},
        "/repos/{owner}/{repo}/git/ref/{ref}": {
            "get": _op("git/get-ref", "Get a reference", [_REF], "200", "Reference")},
        "/repos/{owner}/{repo}/git/matching-refs/{ref}": {
            "get": _op("git/list-matching-refs", "List matching references", [_REF], "200",
                       "References")},
        "/repos/{owner}/{repo}/git/refs": {
            "get": _op("git/list-refs", "List references (paged; GitHub's older listing)", [],
                       "200", "References", query=_PAGE_QUERY),
            "post": _op("git/create-ref", "Create a reference", [], "201", "Reference",
                        body="CreateRef")},
        "/repos/{owner}/{repo}/git/refs/{ref}": {
            "get": _op("git/list-refs", "List references under a prefix, or the exact one",
                       [_REF], "200", "References", query=_PAGE_QUERY),
            "patch": _op("git/update-ref", "Update a reference", [_REF], "200", "Reference",
                         body="UpdateRef"),
            "delete": _op("git/delete-ref", "Delete a reference (open PRs on the branch close)",
                          [_REF], "204", None)},
        "/repos/{owner}/{repo}/pulls": {
            "get": _op("pulls/list", "List pull requests", [], "200", "PullRequests",
                       query=_LIST_QUERY),
            "post": _op("pulls/create", "Create a pull request", [], "201", "PullRequest",
                        body="CreatePull")},
        "/repos/{owner}/{repo}/pulls/{pull_number}": {
            "get": _op("pulls/get", "Get a pull request", [_PULL_NUMBER], "200", "PullRequest"),
            "patch": _op("pulls/update", "Update a pull request", [_PULL_NUMBER], "200",
                         "PullRequest", body="UpdatePull")},
    },
    "components": {"schemas": {
        "BasicError": {"type": "object", "required": ["message"], "properties": {
            "message": {"type": "string"}, "documentation_url": {"type": "string"},
            "status": {"type": "string"}}},
        "ValidationError": {"type": "object", "required": ["message", "errors"], "properties": {
            "message": {"type": "string"}, "errors": {"type": "array"},
            "documentation_url": {"type": "string"}, "status": {"type": "string"}}},
        "Unsupported": {"type": "object", "required": ["code", "message"], "properties": {
            "code": {"type": "string"}, "message": {"type": "string"}}},
        "Repository": {"type": "object", "required": [
            "id", "node_id", "name", "full_name", "owner", "private", "fork", "default_branch",
            "url", "html_url", "created_at", "updated_at"], "properties": {
            "id": {"type": "integer"}, "node_id": {"type": "string"}, "name": {"type": "string"},
            "full_name": {"type": "string"}, "owner": _OWNER, "private": {"type": "boolean"},
            "fork": {"type": "boolean"}, "default_branch": {"type": "string"},
            "url": {"type": "string"}, "html_url": {"type": "string"},
            "created_at": {"type": "string", "format": "date-time"},
            "updated_at": {"type": "string", "format": "date-time"}}},
        "Reference": {"type": "object", "required": ["ref", "node_id", "url", "object"],
                      "properties": {
            "ref": {"type": "string"}, "node_id": {"type": "string"}, "url": {"type": "string"},
            "object": {"type": "object", "properties": {
                "type": {"type": "string"}, "sha": {"type": "string"},
                "url": {"type": "string"}}}}},
        "References": {"type": "array", "items": {"$ref": "#/components/schemas/Reference"}},
        "PullBranch": {"type": "object", "required": ["label", "ref", "sha", "repo"],
                       "properties": {
            "label": {"type": "string"}, "ref": {"type": "string"}, "sha": {"type": "string"},
            "repo": {"$ref": "#/components/schemas/Repository"}}},
        "PullRequest": {"type": "object", "required": [
            "id", "node_id", "number", "url", "html_url", "state", "title", "body", "draft",
            "created_at", "updated_at", "closed_at", "merged", "merged_at", "mergeable",
            "merge_commit_sha", "maintainer_can_modify", "head", "base"], "properties": {
            "id": {"type": "integer"}, "node_id": {"type": "string"},
            "number": {"type": "integer"}, "url": {"type": "string"},
            "html_url": {"type": "string"}, "state": {"type": "string", "enum": ["open", "closed"]},
            "title": {"type": "string"}, "body": {"type": "string", "nullable": True},
            "draft": {"type": "boolean"}, "created_at": {"type": "string"},
            "updated_at": {"type": "string"}, "closed_at": {"type": "string", "nullable": True},
            "merged": {"type": "boolean"}, "maintainer_can_modify": {"type": "boolean"},
            "head": {"$ref": "#/components/schemas/PullBranch"},
            "base": {"$ref": "#/components/schemas/PullBranch"}}},
        "PullRequests": {"type": "array", "items": {"$ref": "#/components/schemas/PullRequest"}},
        "CreateRef": {"type": "object", "required": ["ref", "sha"], "properties": {
            "ref": {"type": "string"}, "sha": {"type": "string"}}},
        "UpdateRef": {"type": "object", "required": ["sha"], "properties": {
            "sha": {"type": "string"}, "force": {"type": "boolean"}}},
        "CreatePull": {"type": "object", "required": ["title", "head", "base"], "properties": {
            "title": {"type": "string"}, "head": {"type": "string"}, "base": {"type": "string"},
            "body": {"type": "string"}, "draft": {"type": "boolean"},
            "maintainer_can_modify": {"type": "boolean"}}},
        "UpdatePull": {"type": "object", "properties": {
            "title": {"type": "string"}, "body": {"type": "string"},
            "state": {"type": "string", "enum": ["open", "closed"]}, "base": {"type": "string"},
            "maintainer_can_modify": {"type": "boolean"}}},
    }},
}


DOCUMENT["paths"]["/repos/{owner}/{repo}/git/matching-refs"] = {
    "get": {**DOCUMENT["paths"]["/repos/{owner}/{repo}/git/matching-refs/{ref}"]["get"],
            "parameters": [*_OWNER_REPO, _VERSION]}}


def _git_op(operation_id, summary, method):
    """A smart HTTP operation (git's protocol, not REST): named so journal, faults and
    metrics see pushes and fetches."""
    op = {"operationId": operation_id, "summary": summary, "x-mockingbird-git": True,
          "parameters": list(_OWNER_REPO),
          "responses": {"200": {"description": "git protocol data"},
                        "401": {"description": "credentials needed (Basic, x-access-token)"},
                        "404": {"description": "Repository not found"}}}
    if method == "get":
        op["parameters"].append({"name": "service", "in": "query", "required": True,
                                 "schema": {"type": "string", "enum": [
                                     "git-upload-pack", "git-receive-pack"]}})
    return op


DOCUMENT["paths"].update({
    "/{owner}/{repo}/info/refs": {"get": _git_op(
        "git/info-refs", "Advertise refs for git (smart HTTP)", "get")},
    "/{owner}/{repo}/git-upload-pack": {"post": _git_op(
        "git/upload-pack", "Clone or fetch: negotiate and send a pack", "post")},
    "/{owner}/{repo}/git-receive-pack": {"post": _git_op(
        "git/receive-pack", "Push: receive a pack, update refs (as git/update-ref)", "post")},
})


def _slash(name):
    return {"name": name, "in": "path", "required": True, "x-slash-bearing": True,
            "schema": {"type": "string", "minLength": 1}}


def _sha_param(name):
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


_REF_QUERY = [{"name": "ref", "in": "query", "schema": {"type": "string"}}]
_COMMITS_QUERY = [{"name": "sha", "in": "query", "schema": {"type": "string"}},
                  {"name": "path", "in": "query", "schema": {"type": "string"}}, *_PAGE_QUERY]
_CONTENT = {
    "get": _op("repos/get-content", "Get repository content (a file or a folder) at ?ref=",
               [_slash("path")], "200", "Object", query=_REF_QUERY),
    "put": _op("repos/create-or-update-file-contents", "Create or update a file (a commit)",
               [_slash("path")], "200", "Object", body="Object"),
    "delete": _op("repos/delete-file", "Delete a file (a commit)", [_slash("path")], "200",
                  "Object", body="Object")}
DOCUMENT["components"]["schemas"]["Object"] = {"type": "object"}
DOCUMENT["components"]["schemas"]["Objects"] = {"type": "array", "items": {"type": "object"}}
DOCUMENT["paths"].update({
    "/repos/{owner}/{repo}/contents/{path}": _CONTENT,
    "/repos/{owner}/{repo}/contents": {
        method: {**op, "parameters": [*_OWNER_REPO, *(_REF_QUERY if method == "get" else ()),
                                      _VERSION]}
        for method, op in _CONTENT.items()},
    "/repos/{owner}/{repo}/readme": {"get": _op(
        "repos/get-readme", "Get the README", [], "200", "Object", query=_REF_QUERY)},
    "/repos/{owner}/{repo}/git/blobs": {"post": _op(
        "git/create-blob", "Create a blob", [], "201", "Object", body="Object")},
    "/repos/{owner}/{repo}/git/blobs/{file_sha}": {"get": _op(
        "git/get-blob", "Get a blob", [_sha_param("file_sha")], "200", "Object")},
    "/repos/{owner}/{repo}/git/trees": {"post": _op(
        "git/create-tree", "Create a tree (over base_tree)", [], "201", "Object",
        body="Object")},
    "/repos/{owner}/{repo}/git/trees/{tree_sha}": {"get": _op(
        "git/get-tree", "Get a tree (?recursive)", [_slash("tree_sha")], "200", "Object",
        query=[{"name": "recursive", "in": "query", "schema": {"type": "string"}}])},
    "/repos/{owner}/{repo}/git/commits": {"post": _op(
        "git/create-commit", "Create a commit", [], "201", "Object", body="Object")},
    "/repos/{owner}/{repo}/git/commits/{commit_sha}": {"get": _op(
        "git/get-commit", "Get a commit object", [_sha_param("commit_sha")], "200", "Object")},
    "/repos/{owner}/{repo}/commits": {"get": _op(
        "repos/list-commits", "List commits", [], "200", "Objects", query=_COMMITS_QUERY)},
    "/repos/{owner}/{repo}/commits/{ref}": {"get": _op(
        "repos/get-commit", "Get a commit (with files)", [_slash("ref")], "200", "Object")},
    "/repos/{owner}/{repo}/compare/{basehead}": {"get": _op(
        "repos/compare-commits-with-basehead", "Compare two commits (base...head)",
        [_slash("basehead")], "200", "Object", query=_PAGE_QUERY)},
    "/repos/{owner}/{repo}/pulls/{pull_number}/commits": {"get": _op(
        "pulls/list-commits", "List commits on a pull request", [_PULL_NUMBER], "200",
        "Objects", query=_PAGE_QUERY)},
    "/repos/{owner}/{repo}/pulls/{pull_number}/files": {"get": _op(
        "pulls/list-files", "List pull request files", [_PULL_NUMBER], "200", "Objects",
        query=_PAGE_QUERY)},
})

DOCUMENT["paths"]["/{owner}/{repo}/raw/{tail}"] = {"get": {
    "operationId": "contents/raw", "summary": "A file's bytes at a ref (download_url)",
    "x-mockingbird-git": True, "parameters": [*_OWNER_REPO, _slash("tail")],
    "responses": {"200": {"description": "the file"}, "404": {"description": "Not Found"}}}}

# a pull request's life: CI results, conversation, review, protection, merge. Their answers are
# GitHub's whole objects (the tests hold them to GitHub's own schemas); these paths let the
# runtime name each operation (journal, fault rules).
# {path: {method: (operationId, summary, success status, takes a body)}}
_R = "/repos/{owner}/{repo}"
_LIFE = {
    _R + "/statuses/{sha}": {
        "post": ("repos/create-commit-status", "Create a commit status", "201", True)},
    _R + "/commits/{ref}/statuses": {
        "get": ("repos/list-commit-statuses-for-ref", "List commit statuses for a reference",
                "200", False)},
    _R + "/commits/{ref}/status": {
        "get": ("repos/get-combined-status-for-ref", "Get the combined status for a reference",
                "200", False)},
    _R + "/commits/{ref}/check-runs": {
        "get": ("checks/list-for-ref",
                "List check runs for a Git reference (latest per name by default)", "200", False)},
    _R + "/commits/{ref}/check-suites": {
        "get": ("checks/list-suites-for-ref", "List check suites for a Git reference",
                "200", False)},
    _R + "/check-runs": {
        "post": ("checks/create", "Create a check run", "201", True)},
    _R + "/check-runs/{check_run_id}": {
        "get": ("checks/get", "Get a check run", "200", False),
        "patch": ("checks/update", "Update a check run (a conclusion completes it)", "200", True)},
    _R + "/check-runs/{check_run_id}/rerequest": {
        "post": ("checks/rerequest-run", "Rerequest a check run", "201", False)},
    _R + "/check-suites/{check_suite_id}": {
        "get": ("checks/get-suite", "Get a check suite", "200", False)},
    _R + "/check-suites/{check_suite_id}/check-runs": {
        "get": ("checks/list-for-suite", "List check runs in a check suite", "200", False)},
    _R + "/issues": {
        "get": ("issues/list-for-repo", "List repository issues (pull requests included)",
                "200", False),
        "post": ("issues/create", "Create an issue", "201", True)},
    _R + "/issues/{issue_number}": {
        "get": ("issues/get", "Get an issue", "200", False),
        "patch": ("issues/update", "Update an issue", "200", True)},
    _R + "/issues/{issue_number}/comments": {
        "get": ("issues/list-comments", "List issue comments", "200", False),
        "post": ("issues/create-comment", "Create an issue comment", "201", True)},
    _R + "/issues/comments/{comment_id}": {
        "get": ("issues/get-comment", "Get an issue comment", "200", False),
        "patch": ("issues/update-comment", "Update an issue comment", "200", True),
        "delete": ("issues/delete-comment", "Delete an issue comment", "204", False)},
    _R + "/issues/{issue_number}/labels": {
        "get": ("issues/list-labels-on-issue", "List labels for an issue", "200", False),
        "post": ("issues/add-labels", "Add labels to an issue", "200", True),
        "put": ("issues/set-labels", "Set labels for an issue", "200", True),
        "delete": ("issues/remove-all-labels", "Remove all labels from an issue", "204", False)},
    _R + "/issues/{issue_number}/labels/{name}": {
        "delete": ("issues/remove-label", "Remove a label from an issue", "200", False)},
    _R + "/issues/{issue_number}/assignees": {
        "post": ("issues/add-assignees", "Add assignees to an issue", "201", True),
        "delete": ("issues/remove-assignees", "Remove assignees from an issue", "200", True)},
    _R + "/labels": {
        "get": ("issues/list-labels-for-repo", "List labels for a repository", "200", False),
        "post": ("issues/create-label", "Create a label", "201", True)},
    _R + "/labels/{name}": {
        "get": ("issues/get-label", "Get a label", "200", False),
        "patch": ("issues/update-label", "Update a label", "200", True),
        "delete": ("issues/delete-label", "Delete a label", "204", False)},
    _R + "/pulls/{pull_number}/reviews": {
        "get": ("pulls/list-reviews", "List reviews for a pull request", "200", False),
        "post": ("pulls/create-review", "Create a review for a pull request", "200", True)},
    _R + "/pulls/{pull_number}/reviews/{review_id}": {
        "get": ("pulls/get-review", "Get a review for a pull request", "200", False)},
    _R + "/pulls/{pull_number}/reviews/{review_id}/events": {
        "post": ("pulls/submit-review", "Submit a review for a pull request", "200", True)},
    _R + "/pulls/{pull_number}/reviews/{review_id}/dismissals": {
        "put": ("pulls/dismiss-review", "Dismiss a review for a pull request", "200", True)},
    _R + "/pulls/{pull_number}/requested_reviewers": {
        "get": ("pulls/list-requested-reviewers", "Get all requested reviewers for a pull request",
                "200", False),
        "post": ("pulls/request-reviewers", "Request reviewers for a pull request", "201", True),
        "delete": ("pulls/remove-requested-reviewers",
                   "Remove requested reviewers from a pull request", "200", True)},
    _R + "/pulls/{pull_number}/merge": {
        "get": ("pulls/check-if-merged", "Check if a pull request has been merged", "204", False),
        "put": ("pulls/merge", "Merge a pull request (merge, squash, rebase)", "200", True)},
    _R + "/merges": {
        "post": ("repos/merge", "Merge a branch", "201", True)},
    _R + "/branches": {
        "get": ("repos/list-branches", "List branches", "200", False)},
    _R + "/branches/{branch}": {
        "get": ("repos/get-branch", "Get a branch", "200", False)},
    _R + "/branches/{branch}/protection": {
        "get": ("repos/get-branch-protection", "Get branch protection", "200", False),
        "put": ("repos/update-branch-protection", "Update branch protection", "200", True),
        "delete": ("repos/delete-branch-protection", "Delete branch protection", "204", False)},
}

_BASIC = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/BasicError"}}}}
_LIFE_ERRORS = {
    "404": {"description": "Not Found", **_BASIC},
    "405": {"description": "Not allowed (protection or conflicts refuse a merge)", **_BASIC},
    "409": {"description": "Conflict (a stale head sha, a merge conflict)", **_BASIC},
    "422": {"description": "Validation failed", "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/ValidationError"}}}}}
_OBJECT = {"application/json": {"schema": {"type": "object"}}}


def _operation(path, operation_id, summary, status, has_body):
    names = [part[1:-1] for part in path.split("/") if part.startswith("{")]
    op = {"operationId": operation_id, "summary": summary,
          "parameters": [*({"name": name, "in": "path", "required": True,
                            "schema": {"type": "string"}} for name in names), _VERSION],
          "responses": {status: {"description": "Success",
                                 **({} if status == "204" else {"content": _OBJECT})},
                        **_LIFE_ERRORS}}
    if has_body:
        op["requestBody"] = {"required": False, "content": _OBJECT}
    return op


# GitHub Apps: the App's own routes (its JWT) and an installation token's
_APPS = {
    "/app": {
        "get": ("apps/get-authenticated", "Get the authenticated App (its JWT)", "200", False)},
    "/app/installations": {
        "get": ("apps/list-installations", "List the App's installations", "200", False)},
    "/app/installations/{installation_id}": {
        "get": ("apps/get-installation", "Get one of the App's installations", "200", False)},
    "/app/installations/{installation_id}/access_tokens": {
        "post": ("apps/create-installation-access-token",
                 "Create an installation token (one hour; narrowed by repositories and"
                 " permissions)", "201", True)},
    "/repos/{owner}/{repo}/installation": {
        "get": ("apps/get-repo-installation",
                "Get the App's installation that reaches a repository", "200", False)},
    "/orgs/{org}/installation": {
        "get": ("apps/get-org-installation", "Get the App's installation on an organization",
                "200", False)},
    "/users/{username}/installation": {
        "get": ("apps/get-user-installation", "Get the App's installation on a user",
                "200", False)},
    "/installation/repositories": {
        "get": ("apps/list-repos-accessible-to-installation",
                "List the repositories an installation token reaches", "200", False)},
    "/installation/token": {
        "delete": ("apps/revoke-installation-access-token",
                   "Revoke the installation token of the request", "204", False)},
}
for _path, _methods in {**_LIFE, **_APPS}.items():
    DOCUMENT["paths"][_path] = {method: _operation(_path, *operation)
                                for method, operation in _methods.items()}

# GraphQL (graphql/): one route; the runtime names each request by its operation
# (`graphql/query/<Name>`, `graphql/mutation/<Name>`), and `/api/graphql` is matched as it
DOCUMENT["paths"]["/graphql"] = {"post": {
    "operationId": "graphql", "summary": "Run a GraphQL query or mutation",
    "requestBody": {"required": True, "content": _json("Object")},
    "responses": {"200": _answer("data and errors", "Object"),
                  "401": _answer("No credential", "BasicError")}}}
DOCUMENT["paths"].update(RATE_LIMIT_PATHS)  # `GET /rate_limit`
