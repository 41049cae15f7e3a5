"""Commit statuses: `repos/create-commit-status`, `repos/list-commit-statuses-for-ref`,
`repos/get-combined-status-for-ref`."""
from ..schemas import body as bodies
from ..schemas import ci, queries
from . import request


class Statuses:
    """`POST /repos/{owner}/{repo}/statuses/{sha}`."""

    def on_post(self, req, resp, owner, repo, sha):
        backend, record, sent = request.write(req, owner, repo)
        status = backend.statuses.create(record, sha,
                                         **ci.status(bodies.json_object(sent)))
        request.wrote(req, resp, 201, status, statusId=str(status["id"]))


class CommitStatuses:
    """`GET /repos/{owner}/{repo}/commits/{ref}/statuses` (newest first)."""

    def on_get(self, req, resp, owner, repo, ref):
        backend, record = request.repository(req, owner, repo)
        sha = backend.commits.find_sha(record, ref)
        found = backend.statuses.list(record, sha, queries.page(request.pairs(req)))
        request.answer(resp, 200, found.items)


class CombinedStatus:
    """`GET /repos/{owner}/{repo}/commits/{ref}/status`."""

    def on_get(self, req, resp, owner, repo, ref):
        backend, record = request.repository(req, owner, repo)
        request.answer(resp, 200, backend.statuses.combined(
            record, backend.commits.find_sha(record, ref)))
