"""The rules of the GitHub emulator (moto's `models`): `GitHubBackend` and its rule objects, one
module per area. No HTTP here: a caller (a resource, a GraphQL resolver, an App's permission
check) finds the repository, `repo = backend.repos.find(owner, name)`, and calls a rule with
typed arguments, `backend.pulls.create(repo, title=..., head=..., base=...)`; a rule returns
GitHub's shape (a `Listing` of them for a list) or a record (`find`, `conversation`...), and
raises an `errors.GitHubError` that names no operation (the caller's layer does)."""
from .backend import GitHubBackend

__all__ = ["GitHubBackend"]
