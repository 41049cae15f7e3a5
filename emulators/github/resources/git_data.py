"""The git database: `git/create-blob`, `git/get-blob`, `git/create-tree`, `git/get-tree`,
`git/create-commit`, `git/get-commit`."""
from ..schemas import contents
from . import request


def _create(req, resp, owner, repo, create):
    """Answer 201 with the object `create(git data rules, repository, body)` writes, journaled
    with its sha."""
    backend, record, given = request.object_write(req, owner, repo)
    answer = create(backend.git_data, record, given)
    request.wrote(req, resp, 201, answer, sha=answer["sha"])


class Blobs:
    """`POST /repos/{owner}/{repo}/git/blobs`."""

    def on_post(self, req, resp, owner, repo):
        _create(req, resp, owner, repo, lambda rules, record, given: rules.create_blob(
            record, contents.blob(given)))


class Blob:
    """`GET /repos/{owner}/{repo}/git/blobs/{file_sha}`."""

    def on_get(self, req, resp, owner, repo, file_sha):
        request.read(req, resp, owner, repo, lambda rules: rules.git_data.blob, file_sha)


class Trees:
    """`POST /repos/{owner}/{repo}/git/trees`."""

    def on_post(self, req, resp, owner, repo):
        _create(req, resp, owner, repo, lambda rules, record, given: rules.create_tree(
            record, **contents.tree(given)))


class Tree:
    """`GET /repos/{owner}/{repo}/git/trees/{tree_sha}?recursive`."""

    def on_get(self, req, resp, owner, repo, tree_sha):
        backend = request.backend_of(req)
        recursive = any(name == "recursive" for name, _value in request.pairs(req))
        request.answer(resp, 200, backend.git_data.tree(backend.repos.find(owner, repo),
                                                        tree_sha, recursive))


class GitCommits:
    """`POST /repos/{owner}/{repo}/git/commits`."""

    def on_post(self, req, resp, owner, repo):
        _create(req, resp, owner, repo, lambda rules, record, given: rules.create_commit(
            record, **contents.commit(given)))


class GitCommit:
    """`GET /repos/{owner}/{repo}/git/commits/{commit_sha}`."""

    def on_get(self, req, resp, owner, repo, commit_sha):
        request.read(req, resp, owner, repo, lambda rules: rules.git_data.commit, commit_sha)
