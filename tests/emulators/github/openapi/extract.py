"""Rebuild responses.json and webhooks.json from GitHub's published OpenAPI descriptions.

    npm pack @octokit/openapi@23.0.2 @octokit/openapi-webhooks@12.1.0   # in a scratch folder
    tar xzf octokit-openapi-23.0.2.tgz -C api; tar xzf octokit-openapi-webhooks-12.1.0.tgz -C hooks
    python tests/emulators/github/openapi/extract.py api/package hooks/package

The operations and webhooks kept are the ones already in the two files plus those named below
(an emulator feature adds its own); schemas are copied as published, never edited.
"""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OPERATIONS = [  # beyond those already extracted: the pull request's life (CI, conversation, merge)
    "repos/create-commit-status", "repos/list-commit-statuses-for-ref",
    "repos/get-combined-status-for-ref", "checks/create", "checks/update", "checks/get",
    "checks/list-for-ref", "checks/list-suites-for-ref", "checks/get-suite",
    "checks/list-for-suite", "checks/rerequest-run", "issues/create", "issues/get",
    "issues/update", "issues/list-for-repo", "issues/create-comment", "issues/list-comments",
    "issues/get-comment", "issues/update-comment", "issues/delete-comment", "issues/add-labels",
    "issues/set-labels", "issues/remove-label", "issues/remove-all-labels",
    "issues/list-labels-on-issue", "issues/list-labels-for-repo", "issues/create-label",
    "issues/get-label", "issues/update-label", "issues/delete-label", "issues/add-assignees",
    "issues/remove-assignees", "pulls/create-review", "pulls/submit-review",
    "pulls/list-reviews", "pulls/get-review", "pulls/dismiss-review", "pulls/request-reviewers",
    "pulls/remove-requested-reviewers", "pulls/list-requested-reviewers",
    "repos/get-branch", "repos/list-branches", "repos/get-branch-protection",
    "repos/update-branch-protection",
    "repos/delete-branch-protection", "pulls/merge", "pulls/check-if-merged", "repos/merge",
    # GitHub Apps: the App's own routes and its installations' tokens
    "apps/get-authenticated", "apps/list-installations", "apps/get-installation",
    "apps/create-installation-access-token", "apps/get-repo-installation",
    "apps/get-org-installation", "apps/get-user-installation",
    "apps/list-repos-accessible-to-installation", "apps/revoke-installation-access-token",
    "rate-limit/get",
]
WEBHOOKS = [
    "status", "check-run-created", "check-run-completed", "check-run-rerequested",
    "check-suite-completed", "check-suite-requested", "check-suite-rerequested",
    "issues-opened", "issues-edited", "issues-closed", "issues-reopened", "issues-labeled",
    "issues-unlabeled", "issues-assigned", "issues-unassigned", "issue-comment-created",
    "issue-comment-edited", "issue-comment-deleted", "label-created", "label-edited",
    "label-deleted", "pull-request-review-submitted", "pull-request-review-dismissed",
    "pull-request-review-requested",
    "pull-request-review-request-removed", "pull-request-labeled", "pull-request-unlabeled",
    "pull-request-assigned", "pull-request-unassigned",
    "installation-created", "installation-repositories-added",
]


def responses(package, keys):
    """{"METHOD /path": {operationId, responses: {status: JSON schema}}} for the named ones."""
    document = json.loads((package / "generated" / "api.github.com.deref.json").read_text())
    found = {}
    for path, item in document["paths"].items():
        for method, op in item.items():
            if not isinstance(op, dict) or "operationId" not in op:
                continue
            key = f"{method.upper()} {path}"
            if key in keys or op["operationId"] in keys:
                answers = {status: answer["content"]["application/json"]["schema"]
                           for status, answer in op["responses"].items()
                           if "application/json" in answer.get("content", {})}
                found[key] = {"operationId": op["operationId"], "responses": answers}
    return dict(sorted(found.items()))


def _resolve(node, components, seen=()):
    if isinstance(node, list):
        return [_resolve(item, components, seen) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[1]
        if name in seen:  # a recursive schema: leave the cycle open
            return {}
        return _resolve(components[name], components, (*seen, name))
    return {key: _resolve(value, components, seen) for key, value in node.items()}


def webhooks(package, names):
    """{name: {operationId, summary, headers, payload}} with every `$ref` resolved."""
    document = json.loads((package / "generated" / "api.github.com.json").read_text())
    components = document["components"]["schemas"]
    out = {}
    for name in sorted(names):
        post = document["webhooks"][name]["post"]
        schema = post["requestBody"]["content"]["application/json"]["schema"]
        out[name] = {"operationId": post["operationId"], "summary": post["summary"],
                     "headers": [p["name"] for p in post["parameters"] if p["in"] == "header"],
                     "payload": _resolve(schema, components)}
    return out


def main(api_package, hooks_package):
    target = HERE / "responses.json"
    current = json.loads(target.read_text())
    keys = set(current["operations"]) | set(OPERATIONS)
    current["operations"] = responses(Path(api_package), keys)
    target.write_text(json.dumps(current, indent=1, ensure_ascii=False))
    target = HERE / "webhooks.json"
    current = json.loads(target.read_text())
    current["webhooks"] = webhooks(Path(hooks_package), set(current["webhooks"]) | set(WEBHOOKS))
    target.write_text(json.dumps(current, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main(*sys.argv[1:3])
