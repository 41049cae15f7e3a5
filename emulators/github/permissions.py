"""What an App's installation token may do: GitHub's App permissions, the permission each
operation needs (the operation table's, operations.py, after GitHub's "Permissions required
for GitHub Apps", API version 2026-03-10), and the one verdict for a credential on a
repository. Plain Python: the http layer (resources/access.py, resources/smart_http.py) and
GraphQL (graphql/context.py) turn a verdict into GitHub's answer.
"""
from .operations import APP_JWT, INSTALLATION_TOKEN, by_id

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


def _required(needs):
    names, level = needs.split(":")
    return tuple(names.split("|")), level


# operationId -> (the permissions any one of which suffices, the level it needs): the
# operation table's `needs` where it names a permission
REQUIRED = {operation: _required(needs) for operation, needs in by_id("needs").items()
            if needs not in (APP_JWT, INSTALLATION_TOKEN)}
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
