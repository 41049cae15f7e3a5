"""OpenAPI paths of GitHub's App routes (openapi.py merges them into the emulator's document),
so the runtime names each operation for the journal, fault rules and the App permissions."""
from ..errors import API_VERSION

_VERSION = {"name": "X-GitHub-Api-Version", "in": "header", "required": False,
            "schema": {"type": "string", "enum": [API_VERSION]}}


def _param(name, kind="string"):
    return {"name": name, "in": "path", "required": True, "schema": {"type": kind}}


# (method, path, operationId, summary, success status, path parameters)
_APPS = [
    ("get", "/app", "apps/get-authenticated", "Get the authenticated App (its JWT)", "200", ()),
    ("get", "/app/installations", "apps/list-installations",
     "List the App's installations", "200", ()),
    ("get", "/app/installations/{installation_id}", "apps/get-installation",
     "Get one of the App's installations", "200", ("installation_id",)),
    ("post", "/app/installations/{installation_id}/access_tokens",
     "apps/create-installation-access-token",
     "Create an installation token (one hour; narrowed by repositories and permissions)",
     "201", ("installation_id",)),
    ("get", "/repos/{owner}/{repo}/installation", "apps/get-repo-installation",
     "Get the App's installation that reaches a repository", "200", ("owner", "repo")),
    ("get", "/orgs/{org}/installation", "apps/get-org-installation",
     "Get the App's installation on an organization", "200", ("org",)),
    ("get", "/users/{username}/installation", "apps/get-user-installation",
     "Get the App's installation on a user", "200", ("username",)),
    ("get", "/installation/repositories", "apps/list-repos-accessible-to-installation",
     "List the repositories an installation token reaches", "200", ()),
    ("delete", "/installation/token", "apps/revoke-installation-access-token",
     "Revoke the installation token of the request", "204", ()),
]

PATHS = {}
for _method, _path, _operation, _summary, _status, _params in _APPS:
    PATHS.setdefault(_path, {})[_method] = {
        "operationId": _operation, "summary": _summary, "tags": ["apps"],
        "parameters": [*(_param(name, "integer" if name == "installation_id" else "string")
                         for name in _params), _VERSION],
        "responses": {_status: {"description": "Success"},
                      "401": {"description": "Bad credentials, or a JWT GitHub refuses"},
                      "404": {"description": "Not Found"}}}
