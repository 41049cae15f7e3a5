"""The GraphQL endpoint as a falcon resource: `POST /graphql` (api.github.com's layout) and
`POST /api/graphql` (GitHub Enterprise Server's, which `gh` uses for any other host).

Thin: it refuses a request without a credential, reads the body, and runs the request over a
`Rules` adapter acting as the token's user.
"""
from emulators.runtime import instance_of

from .. import context
from ..resources import backend_for
from . import execution, schemas
from .errors import RequiresAuthentication
from .root import Root
from .rules import Rules


class GraphQL:
    """`POST /graphql`: one query or mutation on GitHub's schema; errors are answered 200 in
    `errors`, as GitHub answers them."""

    def on_post(self, req, resp):
        if context.credential(req.env) is None:
            raise RequiresAuthentication()
        try:
            query, variables, name = schemas.read(req.bounded_stream.read())
        except schemas.Invalid as invalid:
            resp.media = {"errors": [{"message": str(invalid)}]}
            return
        # what the answer answers, for middleware that looks at both (a test's shape check)
        resp.context["graphql"] = {"query": query, "variables": variables,
                                   "operationName": name}
        instance = instance_of(req)
        rules = Rules(backend_for(instance, req.env), instance)
        resp.media = execution.run(query, variables, name, root=Root(rules), context=rules)
