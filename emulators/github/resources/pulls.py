"""Pull requests: `pulls/list`, `pulls/create`, `pulls/get`, `pulls/update`, and a PR's commits
and files (`pulls/list-commits`, `pulls/list-files`)."""
from emulators.runtime import instance_of

from .. import media
from ..calls import accepted
from ..presets import MERGEABILITY_PENDING
from ..schemas import body as bodies
from ..schemas import pulls, queries
from . import request


class Pulls:
    """`GET|POST /repos/{owner}/{repo}/pulls`: list (paged, `Link`) and create."""

    def on_get(self, req, resp, owner, repo):
        param = request.media_param(req, resp)
        backend = request.backend_of(req)

        def build():
            record = backend.repos.find(owner, repo)
            query = queries.pull_list(request.pairs(req))  # checked after the repository
            found = backend.pulls.list(record, **query)
            return [media.with_bodies(pull, param) for pull in found.items], \
                (query["page"], found.total)
        page, total = request.answer_cached(
            req, resp, ("pulls/list", owner, repo, req.query_string, param), build)
        request.link(req, resp, page.number, page.last(total))

    def on_post(self, req, resp, owner, repo):
        param = request.media_param(req, resp)
        backend, record, sent = request.write(req, owner, repo)
        pull = backend.pulls.create(record, **pulls.create(bodies.pull_object(sent)))
        accepted(instance_of(req), pullNumber=str(pull["number"]))
        request.answer(resp, 201, media.with_bodies(pull, param))


class Pull:
    """`GET|PATCH /repos/{owner}/{repo}/pulls/{pull_number}`."""

    def on_get(self, req, resp, owner, repo, pull_number):
        param = request.media_param(req, resp)
        backend = request.backend_of(req)
        # under the preset, GitHub is still computing mergeability (a fault hit is not cached)
        computing = instance_of(req).fault_effect(MERGEABILITY_PENDING) is not None
        request.answer_cached(req, resp, ("pulls/get", owner, repo, pull_number, param), lambda: (
            media.with_bodies(backend.pulls.get(backend.repos.find(owner, repo),
                                                request.number(pull_number),
                                                computing=computing), param), None))

    def on_patch(self, req, resp, owner, repo, pull_number):
        param = request.media_param(req, resp)
        backend, record, sent = request.write(req, owner, repo)
        number = request.number(pull_number)
        given = bodies.pull_object(sent)
        backend.pulls.find(record, number)  # a PR that is not there is 404 before its fields
        pull = backend.pulls.update(record, number, **pulls.update(given))
        accepted(instance_of(req), pullNumber=str(pull["number"]))
        request.answer(resp, 200, media.with_bodies(pull, param))


def _of_pull(req, resp, owner, repo, pull_number, listed):
    """Answer a page of what a PR holds, `listed(commit rules)` (its commits or files)."""
    backend, record = request.repository(req, owner, repo)
    pull = backend.pulls.find(record, request.number(pull_number))
    page = queries.page(request.pairs(req))
    request.listing(req, resp, listed(backend.commits)(record, pull, page), page)


class PullCommits:
    """`GET /repos/{owner}/{repo}/pulls/{pull_number}/commits`."""

    def on_get(self, req, resp, owner, repo, pull_number):
        _of_pull(req, resp, owner, repo, pull_number, lambda commits: commits.of_pull)


class PullFiles:
    """`GET /repos/{owner}/{repo}/pulls/{pull_number}/files`."""

    def on_get(self, req, resp, owner, repo, pull_number):
        _of_pull(req, resp, owner, repo, pull_number, lambda commits: commits.files_of_pull)
