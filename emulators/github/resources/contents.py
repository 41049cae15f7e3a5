"""Contents: `repos/get-content`, `repos/create-or-update-file-contents`, `repos/delete-file`,
`repos/get-readme`, and a file's bytes where `download_url` points (`contents/raw`)."""
from ..schemas import contents
from ..schemas.base import first_values
from . import request


def _read(req, resp, shape, raw):
    """Answer a file or folder read: the file's bytes when `Accept` asks for them."""
    if raw is not None and request.raw_wanted(req):
        resp.status = 200
        resp.content_type = "application/vnd.github.raw"
        resp.data = raw
        return
    request.answer(resp, 200, shape)


class Contents:
    """`GET|PUT|DELETE /repos/{owner}/{repo}/contents/{path}`: read a file or folder at
    `?ref=`; write or delete a file as a commit."""

    def on_get(self, req, resp, owner, repo, path=""):
        backend = request.backend_of(req)
        ref = first_values(request.pairs(req)).get("ref")
        _read(req, resp, *backend.contents.get(backend.repos.find(owner, repo), path, ref))

    def on_put(self, req, resp, owner, repo, path=""):
        backend, record, given = request.object_write(req, owner, repo)
        answer, created = backend.contents.put(record, **contents.put_file(given, path))
        request.wrote(req, resp, 201 if created else 200, answer,
                      commit=answer["commit"]["sha"])

    def on_delete(self, req, resp, owner, repo, path=""):
        backend, record, given = request.object_write(req, owner, repo)
        answer = backend.contents.delete(record, **contents.delete_file(given, path))
        request.wrote(req, resp, 200, answer, commit=answer["commit"]["sha"])


class Readme:
    """`GET /repos/{owner}/{repo}/readme`."""

    def on_get(self, req, resp, owner, repo):
        backend = request.backend_of(req)
        ref = first_values(request.pairs(req)).get("ref")
        _read(req, resp, *backend.contents.readme(backend.repos.find(owner, repo), ref))


class Raw:
    """`GET /{owner}/{repo}/raw/{ref}/{path}`: a file's bytes (`download_url`, `raw_url`)."""

    def on_get(self, req, resp, owner, repo, tail):
        backend = request.backend_of(req)
        data = backend.contents.raw(backend.repos.get(owner, repo), tail)
        resp.context["unversioned"] = True
        resp.content_type = "text/plain; charset=utf-8"
        if data is None:
            resp.status = 404
            resp.data = b"404: Not Found"
            return
        resp.status = 200
        resp.data = data
