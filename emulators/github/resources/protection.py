"""Branches and their protection: `repos/list-branches`, `repos/get-branch`,
`repos/get-branch-protection`, `repos/update-branch-protection`,
`repos/delete-branch-protection`."""
from ..schemas import body as bodies
from ..schemas import protection, queries
from . import request


class Branches:
    """`GET /repos/{owner}/{repo}/branches`."""

    def on_get(self, req, resp, owner, repo):
        backend = request.backend_of(req)
        query = request.pairs(req)
        page = queries.page(query)
        request.listing(req, resp, backend.protection.branches(
            backend.repos.find(owner, repo), page, protected=protection.protected(query)), page)


class Branch:
    """`GET /repos/{owner}/{repo}/branches/{branch}`."""

    def on_get(self, req, resp, owner, repo, branch):
        request.read(req, resp, owner, repo, lambda rules: rules.protection.get_branch, branch)


class BranchProtection:
    """`GET|PUT|DELETE /repos/{owner}/{repo}/branches/{branch}/protection`."""

    def on_get(self, req, resp, owner, repo, branch):
        request.read(req, resp, owner, repo, lambda rules: rules.protection.get, branch)

    def on_put(self, req, resp, owner, repo, branch):
        backend, record, sent = request.write(req, owner, repo)
        settings = protection.protection(bodies.json_object(sent))
        answer = backend.protection.update(record, branch, **settings)
        request.wrote(req, resp, 200, answer, branch=branch)

    def on_delete(self, req, resp, owner, repo, branch):
        backend = request.backend_of(req)
        backend.protection.delete(backend.repos.find(owner, repo), branch)
        request.wrote(req, resp, 204, None, branch=branch)
