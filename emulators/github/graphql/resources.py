"""The GraphQL endpoint as a falcon resource: `POST /graphql` (api.github.com's layout) and
`POST /api/graphql` (GitHub Enterprise Server's, which `gh` uses for any other host).

Thin, as REST's resources are: it identifies the credential (credentials.py: none, a user's
token, an App's installation token or its JWT; refused as GitHub refuses GraphQL without one,
or with one it does not accept), reads the body (schemas/graphql.py), and runs the request over
the backend REST's resources build, acting as whom the credential names (calls.py).
"""
from emulators.runtime import instance_of

from .. import errors
from ..calls import backend_for
from ..credentials import Anonymous, identify
from ..errors import GraphQLUnauthorized, RequiresAuthentication
from ..schemas import graphql as bodies
from . import execution
from .context import Context
from .root import Root


class GraphQL:
    """`POST /graphql`: one query or mutation on GitHub's schema; errors are answered 200 in
    `errors`, as GitHub answers them."""

    def on_post(self, req, resp):
        instance = instance_of(req)
        try:
            credential = identify(instance, req.env)
        except errors.Unauthorized as refused:  # REST's 401, in GraphQL's envelope
            raise GraphQLUnauthorized(refused.message) from None
        if isinstance(credential, Anonymous):
            raise RequiresAuthentication()
        try:
            query, variables, name = bodies.read(req.bounded_stream.read())
        except bodies.Invalid as invalid:
            resp.media = {"errors": [{"message": str(invalid)}]}
            return
        # what the answer answers, for middleware that looks at both (a test's shape check)
        resp.context["graphql"] = {"query": query, "variables": variables,
                                   "operationName": name}
        request = Context(backend_for(instance, req.env), credential, instance,
                          quota=resp.context.get("quota"))
        resp.media = execution.run(query, variables, name, root=Root(request), context=request)
