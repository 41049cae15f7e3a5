"""Refs: `git/get-ref`, `git/list-matching-refs`, `git/list-refs`, `git/create-ref`,
`git/update-ref`, `git/delete-ref`."""
from ..inputs import Listing
from ..schemas import body as bodies
from ..schemas import queries, refs
from . import request


class Ref:
    """`GET /repos/{owner}/{repo}/git/ref/{ref}`: one reference by its exact name."""

    def on_get(self, req, resp, owner, repo, ref):
        request.read(req, resp, owner, repo, lambda rules: rules.refs.get, ref)


class MatchingRefs:
    """`GET /repos/{owner}/{repo}/git/matching-refs/{ref}`: refs whose name starts with the tail."""

    def on_get(self, req, resp, owner, repo, ref=""):
        request.read(req, resp, owner, repo, lambda rules: rules.refs.matching, ref)


def _ref_listing(req, resp, owner, repo, tail):
    """Answer the `git/refs[/{prefix}]` listing: one exact ref, or a page of refs with `Link`."""
    backend = request.backend_of(req)
    page = queries.page(request.pairs(req))
    found = backend.refs.listing(backend.repos.find(owner, repo), tail, page)
    if isinstance(found, Listing):
        request.listing(req, resp, found, page)
    else:
        request.answer(resp, 200, found)


class Refs:
    """`GET|POST /repos/{owner}/{repo}/git/refs`: list every reference (paged), create one."""

    def on_get(self, req, resp, owner, repo):
        _ref_listing(req, resp, owner, repo, "")

    def on_post(self, req, resp, owner, repo):
        backend, record, sent = request.write(req, owner, repo)
        given = refs.create(bodies.object_or_empty(sent))
        ref = backend.refs.create(record, given["ref"], given["sha"])
        request.wrote(req, resp, 201, ref, ref=ref["ref"])


class RefItem:
    """`GET|PATCH|DELETE /repos/{owner}/{repo}/git/refs/{ref}`: list under a prefix; move or
    delete a reference."""

    def on_get(self, req, resp, owner, repo, ref):
        _ref_listing(req, resp, owner, repo, ref)

    def on_patch(self, req, resp, owner, repo, ref):
        backend, record, sent = request.write(req, owner, repo)
        given = refs.update(bodies.object_or_empty(sent), ref)
        answer = backend.refs.update(record, given["ref"], given["sha"],
                                     force=given.get("force") is True)
        request.wrote(req, resp, 200, answer, ref=answer["ref"])

    def on_delete(self, req, resp, owner, repo, ref):
        backend, record = request.repository(req, owner, repo)
        deleted = backend.refs.delete(record, refs.name(ref))
        request.wrote(req, resp, 204, None, ref=deleted["ref"])
