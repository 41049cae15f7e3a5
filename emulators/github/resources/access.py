"""The App permissions at the http layer: every REST request's credential is identified and,
for an App's, held to what its operation needs, before any rule runs (falcon middleware).

Keyed by the operationId the runtime matched, not by each rule: an App's JWT may call only
the App's own routes (anything else, `A JSON web token could not be decoded` on those); an
installation token reaches only its repositories (404 outside them, as GitHub hides them) and
only with the permission each operation needs (403 `Resource not accessible by integration`).
Users' tokens and no token go on as before. git's routes answer git in text (smart_http.py),
GraphQL in its own words (graphql/).
"""
from emulators.runtime import instance_of, operation_of

from .. import errors
from ..credentials import AppJwt, InstallationToken, identify
from ..operations import APP_JWT, GIT, INSTALLATION_TOKEN, OPERATIONS
from ..permissions import FORBIDDEN, HIDDEN, verdict
from ..store import GitHubStore, repo_key

# who may call what beside a permission, and git's routes (answered in git's words,
# smart_http.py): the operation table's
APP_ROUTES = frozenset(row.id for row in OPERATIONS if row.needs == APP_JWT)
INSTALLATION_ROUTES = frozenset(row.id for row in OPERATIONS if row.needs == INSTALLATION_TOKEN)
GIT_ROUTES = frozenset(row.id for row in OPERATIONS if row.form == GIT)
# GraphQL's route (`graphql`, each request named `graphql/<kind>/<Name>`): graphql/ holds an
# App's credential to the same permissions field by field, answering in GraphQL's words
GRAPHQL = "graphql"
NOT_AN_INSTALLATION = ("You must authenticate with an installation access token in order to"
                       " use this endpoint.")


class AppAccess:
    """Falcon middleware: identify the credential, then hold an App's to its permissions."""

    def process_resource(self, req, resp, resource, params):
        operation = operation_of(req)
        if operation is None or operation in GIT_ROUTES or \
                operation.partition("/")[0] == GRAPHQL:
            return
        instance = instance_of(req)
        credential = identify(instance, req.env)
        if operation in APP_ROUTES:
            if not isinstance(credential, AppJwt):
                raise errors.NotAnIntegration()
        elif operation in INSTALLATION_ROUTES:
            if not isinstance(credential, InstallationToken):
                raise errors.Forbidden(NOT_AN_INSTALLATION, operation=operation)
        elif isinstance(credential, AppJwt):
            raise errors.Forbidden(operation=operation)  # an App as itself reaches no repository
        elif isinstance(credential, InstallationToken):
            repo = None
            if "owner" in params and "repo" in params:
                store = GitHubStore(instance.records, transaction=instance.transaction)
                repo = store.repo(repo_key(params["owner"], params["repo"]))
                if repo is None:
                    return  # the route answers its 404, whatever the token may do
            found = verdict(credential, operation, repo)
            if found == HIDDEN:
                raise errors.NotFound(operation=operation)
            if found == FORBIDDEN:
                raise errors.Forbidden(operation=operation)
