"""Commits: `repos/list-commits`, `repos/get-commit` (and what hangs below a commit: its
statuses and checks), `repos/compare-commits-with-basehead`."""
from ..operations import R, operation_id
from ..schemas import queries
from ..schemas.base import first_values
from . import checks, request, statuses


class Commits:
    """`GET /repos/{owner}/{repo}/commits?sha&path&page&per_page`."""

    def on_get(self, req, resp, owner, repo):
        backend, record = request.repository(req, owner, repo)
        query = request.pairs(req)
        page, named = queries.page(query), first_values(query)
        request.listing(req, resp, backend.commits.list(record, page, sha=named.get("sha"),
                                                        path=named.get("path")), page)


def _listing_below(tail):
    """(route template, operationId) of the listing `tail` below a commit."""
    path = f"{R}/commits/{{ref}}/{tail}"
    return path, operation_id("GET", path)


class CommitPaths:
    """`GET /repos/{owner}/{repo}/commits/{ref}`: one commit with its files; and what hangs
    below a commit: `/status`, `/statuses`, `/check-runs`, `/check-suites`.

    One route, because a ref may hold slashes (`commits/feature/x/status`): the last segment
    names the listing, the rest the ref, and the request is routed as its own template.
    """

    TAILS = {  # the listing below a commit
        "status": statuses.CombinedStatus, "statuses": statuses.CommitStatuses,
        "check-runs": checks.CommitCheckRuns, "check-suites": checks.CommitCheckSuites}
    # each listing's own route template and its operation (the operation table's row)
    BELOW = {tail: _listing_below(tail) for tail in TAILS}

    def on_get(self, req, resp, owner, repo, ref):
        head, _, tail = ref.rpartition("/")
        if head and tail in self.TAILS:
            req.uri_template, req.context.operation = self.BELOW[tail]
            return self.TAILS[tail]().on_get(req, resp, owner, repo, head)
        request.read(req, resp, owner, repo, lambda rules: rules.commits.get, ref)


class Compare:
    """`GET /repos/{owner}/{repo}/compare/{base}...{head}`."""

    def on_get(self, req, resp, owner, repo, basehead):
        backend = request.backend_of(req)
        query = request.pairs(req)
        page = queries.page(query) if queries.paged(query) else None
        request.answer(resp, 200, backend.commits.compare(backend.repos.find(owner, repo),
                                                          basehead, page))
