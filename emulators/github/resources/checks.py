"""Check runs and suites: `checks/create`, `checks/get`, `checks/update`,
`checks/rerequest-run`, `checks/list-for-ref`, `checks/list-suites-for-ref`,
`checks/get-suite`, `checks/list-for-suite`."""
from emulators.runtime import instance_of

from ..presets import LOST_UPDATE
from ..schemas import body as bodies
from ..schemas import ci, queries
from . import request


class CheckRuns:
    """`POST /repos/{owner}/{repo}/check-runs`."""

    def on_post(self, req, resp, owner, repo):
        backend, record, sent = request.write(req, owner, repo)
        given = bodies.json_object(sent)
        backend.checks.head_commit(record, ci.run_head(given)["head_sha"])  # 422 first
        run = backend.checks.create(record, **ci.create_run(given),
                                    app=request.acting_app(req))
        request.wrote(req, resp, 201, run, checkRunId=str(run["id"]))


class CheckRun:
    """`GET|PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}`; a `github.lost_update`
    effect answers 200 as if the update had been applied, and writes nothing."""

    def on_get(self, req, resp, owner, repo, check_run_id):
        request.read(req, resp, owner, repo,
                     lambda rules: rules.checks.get, request.number(check_run_id))

    def on_patch(self, req, resp, owner, repo, check_run_id):
        backend, record, given = request.existing(req, owner, repo, lambda rules, record: (
            rules.checks.run(record, request.number(check_run_id))))
        run_id, changes = request.number(check_run_id), ci.update_run(given)
        if instance_of(req).fault_effect(LOST_UPDATE) is not None:
            request.answer(resp, 200, backend.checks.update(record, run_id, lost=True,
                                                            **changes))
            return
        run = backend.checks.update(record, run_id, **changes)
        request.wrote(req, resp, 200, run, checkRunId=str(run["id"]))


class CheckRunRerequest:
    """`POST /repos/{owner}/{repo}/check-runs/{check_run_id}/rerequest`."""

    def on_post(self, req, resp, owner, repo, check_run_id):
        backend = request.backend_of(req)
        answer = backend.checks.rerequest(backend.repos.find(owner, repo),
                                          request.number(check_run_id))
        request.wrote(req, resp, 201, answer, checkRunId=check_run_id)


class CommitCheckRuns:
    """`GET /repos/{owner}/{repo}/commits/{ref}/check-runs`."""

    def on_get(self, req, resp, owner, repo, ref):
        backend, record = request.repository(req, owner, repo)
        sha = backend.commits.find_sha(record, ref)
        query = request.pairs(req)
        request.answer(resp, 200, backend.checks.runs_for(
            record, sha, queries.page(query), **queries.run_filter(query)))


class CommitCheckSuites:
    """`GET /repos/{owner}/{repo}/commits/{ref}/check-suites`."""

    def on_get(self, req, resp, owner, repo, ref):
        backend, record = request.repository(req, owner, repo)
        sha = backend.commits.find_sha(record, ref)
        request.answer(resp, 200, backend.checks.suites_for(record, sha,
                                                            queries.page(request.pairs(req))))


class CheckSuite:
    """`GET /repos/{owner}/{repo}/check-suites/{check_suite_id}`."""

    def on_get(self, req, resp, owner, repo, check_suite_id):
        request.read(req, resp, owner, repo,
                     lambda rules: rules.checks.get_suite, request.number(check_suite_id))


class CheckSuiteRuns:
    """`GET /repos/{owner}/{repo}/check-suites/{check_suite_id}/check-runs`."""

    def on_get(self, req, resp, owner, repo, check_suite_id):
        backend, record = request.repository(req, owner, repo)
        suite_id = request.number(check_suite_id)
        backend.checks.suite(record, suite_id)  # 404 before the query's checks
        query = request.pairs(req)
        request.answer(resp, 200, backend.checks.runs_of_suite(
            record, suite_id, queries.page(query), **queries.run_filter(query)))
