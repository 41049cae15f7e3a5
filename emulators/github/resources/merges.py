"""Merges: `pulls/check-if-merged`, `pulls/merge`, `repos/merge`."""
from .. import errors
from ..schemas import body as bodies
from ..schemas import merges
from . import request


class PullMerge:
    """`GET|PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge`: merged? (204/404); merge."""

    def on_get(self, req, resp, owner, repo, pull_number):
        backend = request.backend_of(req)
        if not backend.merges.is_merged(backend.repos.find(owner, repo),
                                        request.number(pull_number)):
            raise errors.NotFound()
        resp.status = 204

    def on_put(self, req, resp, owner, repo, pull_number):
        backend, record, given = request.existing(req, owner, repo, lambda rules, record: (
            rules.pulls.find(record, request.number(pull_number))))
        answer = backend.merges.merge(record, request.number(pull_number),
                                      **merges.merge_pull(given))
        request.wrote(req, resp, 200, answer, pullNumber=pull_number, sha=answer["sha"])


class Merges:
    """`POST /repos/{owner}/{repo}/merges`: 201 the merge commit, 204 when nothing to merge."""

    def on_post(self, req, resp, owner, repo):
        backend, record, sent = request.write(req, owner, repo)
        commit = backend.merges.merge_branches(
            record, **merges.merge_branches(bodies.json_object(sent)))
        request.wrote(req, resp, 204 if commit is None else 201, commit,
                      sha=commit and commit["sha"])
