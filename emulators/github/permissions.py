"""What an App's installation token may do: GitHub's App permissions, the permission each
operation needs, and the one verdict for a credential on a repository.

The table follows GitHub's "Permissions required for GitHub Apps" (API version 2026-03-10):
reads need the resource's read (a repository's own record needs `metadata`, which every
installation has), writes its write. Conversation routes take `issues` or `pull_requests` (an
issue number may be a pull request's), as GitHub lists them under both. Plain Python: the
http layer (resources/access.py, resources/smart_http.py) turns a verdict into GitHub's answer.
"""
LEVELS = ("read", "write", "admin")

# GitHub's App permissions (its OpenAPI `app-permissions` object) and the levels each takes
PERMISSIONS = {name: tuple(levels.split()) for levels, names in (
    ("read write",
     "actions administration artifact_metadata attestations checks code_quality codespaces"
     " contents dependabot_secrets deployments discussions environments issues merge_queues"
     " metadata packages pages pull_requests repository_custom_properties repository_hooks"
     " secret_scanning_alerts secrets security_events single_file statuses"
     " vulnerability_alerts custom_properties_for_organizations members"
     " organization_administration organization_custom_roles organization_custom_org_roles"
     " organization_copilot_seat_management organization_copilot_agent_settings"
     " organization_announcement_banners organization_hooks"
     " organization_personal_access_tokens organization_personal_access_token_requests"
     " organization_packages organization_secrets organization_self_hosted_runners"
     " organization_user_blocking email_addresses followers git_ssh_keys gpg_keys"
     " interaction_limits starring"),
    ("read write admin", "repository_projects organization_custom_properties"
     " organization_projects enterprise_custom_properties_for_organizations"),
    ("write", "workflows profile"),
    ("read", "organization_events organization_plan"),
) for name in names.split()}

_CONVERSATION = ("issues", "pull_requests")


def _table(rows):
    return {op: (tuple(perms.split("|")), level)
            for perms, level, ops in rows for op in ops.split()}


# operationId -> (the permissions any one of which suffices, the level it needs)
REQUIRED = _table([
    # `rate_limit` needs no permission: every installation holds metadata
    ("metadata", "read", "repos/get rate-limit/get"),
    ("contents", "read",
     "git/get-ref git/list-matching-refs git/list-refs git/get-blob git/get-tree"
     " git/get-commit repos/get-content repos/get-readme repos/list-commits repos/get-commit"
     " repos/compare-commits-with-basehead repos/list-branches repos/get-branch contents/raw"
     " git/upload-pack"),
    ("contents", "write",
     "git/create-ref git/update-ref git/delete-ref git/create-blob git/create-tree"
     " git/create-commit repos/create-or-update-file-contents repos/delete-file repos/merge"
     " pulls/merge git/receive-pack"),
    ("pull_requests", "read",
     "pulls/list pulls/get pulls/list-commits pulls/list-files pulls/list-reviews"
     " pulls/get-review pulls/list-requested-reviewers pulls/check-if-merged"),
    ("pull_requests", "write",
     "pulls/create pulls/update pulls/create-review pulls/submit-review pulls/dismiss-review"
     " pulls/request-reviewers pulls/remove-requested-reviewers"),
    ("issues", "read", "issues/list-for-repo"),
    ("issues", "write", "issues/create"),
    ("issues|pull_requests", "read",
     "issues/get issues/list-comments issues/get-comment issues/list-labels-on-issue"
     " issues/list-labels-for-repo issues/get-label"),
    ("issues|pull_requests", "write",
     "issues/update issues/create-comment issues/update-comment issues/delete-comment"
     " issues/add-labels issues/set-labels issues/remove-label issues/remove-all-labels"
     " issues/create-label issues/update-label issues/delete-label issues/add-assignees"
     " issues/remove-assignees"),
    ("checks", "read",
     "checks/get checks/list-for-ref checks/list-suites-for-ref checks/get-suite"
     " checks/list-for-suite"),
    ("checks", "write", "checks/create checks/update checks/rerequest-run"),
    ("statuses", "read", "repos/list-commit-statuses-for-ref repos/get-combined-status-for-ref"),
    ("statuses", "write", "repos/create-commit-status"),
    ("administration", "read", "repos/get-branch-protection"),
    ("administration", "write",
     "repos/update-branch-protection repos/delete-branch-protection"),
])
# git's info/refs serves both directions: the service asked for decides
GIT_SERVICES = {"git-upload-pack": "git/upload-pack", "git-receive-pack": "git/receive-pack"}

HIDDEN, FORBIDDEN = "hidden", "forbidden"  # verdicts: a 404 and a 403


def grants(permissions, names, level):
    """Tell whether `permissions` ({name: level}) hold one of `names` at `level` or above."""
    wanted = LEVELS.index(level)
    return any(permissions.get(name) in LEVELS and LEVELS.index(permissions[name]) >= wanted
               for name in names)


def verdict(token, operation, repo):
    """What an installation token may do with `operation` on the repository record it names
    (None when it names none): None (go on), HIDDEN (a repository outside its selection, which
    GitHub answers as absent) or FORBIDDEN (a permission it lacks). An operation outside the
    table is forbidden: a route added without its permission fails closed."""
    if repo is not None and not token.reaches(repo):
        return HIDDEN
    needed = REQUIRED.get(operation)
    if needed is None or not grants(token.permissions, *needed):
        return FORBIDDEN
    return None


def within(asked, granted):
    """Tell whether permissions `asked` ({name: level}) are all held by `granted`."""
    return all(grants(granted, (name,), level) for name, level in asked.items())
