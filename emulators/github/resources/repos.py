"""Repositories: `repos/get`."""
from . import request


class Repository:
    """`GET /repos/{owner}/{repo}`."""

    def on_get(self, req, resp, owner, repo):
        backend = request.backend_of(req)
        request.answer_cached(req, resp, ("repos/get", owner, repo), lambda: (
            backend.repos.json(backend.repos.find(owner, repo)), None))
