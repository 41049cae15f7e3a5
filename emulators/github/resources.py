"""Falcon resources of the GitHub operations (the admin controls are in admin.py).

Thin: each responder parses the request, calls `GitHubBackend`, and shapes the answer. Mutations
report their ids to the journal and honour the `github.accepted_drop` effect (commit, then drop).
"""
import json
from urllib.parse import parse_qsl

import falcon

from emulators.runtime import instance_of

from . import actors, context, errors, media, schemas
from .apps.events import Fanout
from .auth.credentials import identify, rules as rules_of
from .models import GitHubBackend
from .presets import ACCEPTED_DROP, MERGEABILITY_PENDING


def backend_for(instance, environ=None):
    """Build the rules object over one instance's records, clock, transaction and base URL,
    acting as whom the request's credential names (`environ`; none: the default member: a
    user's token is that user, an App's installation token its `<slug>[bot]`), its events
    sent to the namespace's hooks and to the Apps installed where they happen."""
    actor = (lambda: identify(instance, environ).login) if environ is not None \
        else actors.DEFAULT
    return GitHubBackend(instance.records, now_ms=instance.now_ms,
                         transaction=instance.transaction, base_url=context.public_base(instance),
                         emit=Fanout(instance, rules_of(instance)), objects=instance.objects,
                         actor=actor, named=instance.names_user)


def backend_of(req):
    """The rules object of a provider request, acting as its token's user."""
    return backend_for(instance_of(req), req.env)


def _body(req):
    return schemas.classify_body(req.content_type, req.bounded_stream.read())


def _answer(resp, status, body):
    resp.status = status
    resp.media = body


def _media(req, resp):
    """Return the body param the client's `Accept` selects; remember it for the answer header."""
    param = media.requested(req.get_header("Accept"))
    resp.context["media"] = param
    return param


def _answer_cached(req, resp, token, build):
    """Answer 200 with a read's body built once per change of the namespace's records
    (`Instance.cached`, `token` naming the request). `build()` returns (body, extra): the
    body is encoded once, as falcon's JSON handler does; `extra` is returned."""
    instance = instance_of(req)

    def encoded():
        body, extra = build()
        return body, json.dumps(body, ensure_ascii=False).encode(), extra
    body, data, extra = instance.cached((*token, instance.base_url), encoded,
                                        size=lambda value: len(value[1]))
    resp.status = 200
    resp.media = body  # what middleware reads; falcon sends `data`, the same bytes
    resp.data = data
    resp.content_type = falcon.MEDIA_JSON
    return extra


def _answer_pulls(resp, status, pulls, param):
    if isinstance(pulls, list):
        _answer(resp, status, [media.with_bodies(pull, param) for pull in pulls])
    else:
        _answer(resp, status, media.with_bodies(pulls, param))


def _accepted(instance, **ids):
    """Journal a committed write as accepted (with its ids); under the effect, lose the answer.

    Every successful write is accepted (journaled with `accepted: true` and its checkpoint); the
    runtime reuses that checkpoint for `x-mockingbird-checkpoint`.
    """
    instance.report_ids(**ids)
    instance.accept()
    if instance.fault_effect(ACCEPTED_DROP) is not None:
        instance.drop()


class Repository:
    """`GET /repos/{owner}/{repo}`."""

    def on_get(self, req, resp, owner, repo):
        backend = backend_of(req)
        _answer_cached(req, resp, ("repos/get", owner, repo),
                       lambda: (backend.get_repo(owner, repo), None))


class Ref:
    """`GET /repos/{owner}/{repo}/git/ref/{ref}`: one reference by its exact name."""

    def on_get(self, req, resp, owner, repo, ref):
        _answer(resp, 200, backend_of(req).get_ref(owner, repo, ref))


class MatchingRefs:
    """`GET /repos/{owner}/{repo}/git/matching-refs/{ref}`: refs whose name starts with the tail."""

    def on_get(self, req, resp, owner, repo, ref=""):
        _answer(resp, 200, backend_of(req).matching_refs(owner, repo, ref))


def _ref_listing(req, resp, owner, repo, tail):
    """Answer the `git/refs[/{prefix}]` listing: one exact ref, or a page of refs with `Link`."""
    instance = instance_of(req)
    pairs = parse_qsl(req.query_string, keep_blank_values=True)
    answer, page, last = backend_for(instance, req.env).list_refs(owner, repo, tail, pairs)
    header = context.link_header(instance, req, pairs, page, last)
    if header:
        resp.set_header("Link", header)
    _answer(resp, 200, answer)


class Refs:
    """`GET|POST /repos/{owner}/{repo}/git/refs`: list every reference (paged), create one."""

    def on_get(self, req, resp, owner, repo):
        _ref_listing(req, resp, owner, repo, "")

    def on_post(self, req, resp, owner, repo):
        instance = instance_of(req)
        body = schemas.json_object_or_empty(_body(req))
        ref = backend_for(instance, req.env).create_ref(owner, repo, body)
        _accepted(instance, ref=ref["ref"])
        _answer(resp, 201, ref)


class RefItem:
    """`GET|PATCH|DELETE /repos/{owner}/{repo}/git/refs/{ref}`: list under a prefix; move or
    delete a reference."""

    def on_get(self, req, resp, owner, repo, ref):
        _ref_listing(req, resp, owner, repo, ref)

    def on_delete(self, req, resp, owner, repo, ref):
        instance = instance_of(req)
        deleted = backend_for(instance, req.env).delete_ref(owner, repo, ref)
        _accepted(instance, ref=deleted["ref"])
        resp.status = 204

    def on_patch(self, req, resp, owner, repo, ref):
        instance = instance_of(req)
        body = schemas.json_object_or_empty(_body(req))
        answer = backend_for(instance, req.env).update_ref(owner, repo, ref, body)
        _accepted(instance, ref=answer["ref"])
        _answer(resp, 200, answer)


class Pulls:
    """`GET|POST /repos/{owner}/{repo}/pulls`: list (paged, `Link`) and create."""

    def on_get(self, req, resp, owner, repo):
        param = _media(req, resp)
        instance = instance_of(req)
        pairs = parse_qsl(req.query_string, keep_blank_values=True)

        def build():
            items, page, last = backend_for(instance, req.env).list_pulls(owner, repo, pairs)
            return [media.with_bodies(pull, param) for pull in items], (page, last)
        page, last = _answer_cached(req, resp, ("pulls/list", owner, repo, req.query_string,
                                                param), build)
        header = context.link_header(instance, req, pairs, page, last)
        if header:
            resp.set_header("Link", header)

    def on_post(self, req, resp, owner, repo):
        param = _media(req, resp)
        instance = instance_of(req)
        pull = backend_for(instance, req.env).create_pull(owner, repo, _body(req))
        _accepted(instance, pullNumber=str(pull["number"]))
        _answer_pulls(resp, 201, pull, param)


class Pull:
    """`GET|PATCH /repos/{owner}/{repo}/pulls/{pull_number}`."""

    def on_get(self, req, resp, owner, repo, pull_number):
        param = _media(req, resp)
        backend = backend_of(req)
        # under the preset, GitHub is still computing mergeability (a fault hit is not cached)
        computing = instance_of(req).fault_effect(MERGEABILITY_PENDING) is not None
        _answer_cached(req, resp, ("pulls/get", owner, repo, pull_number, param), lambda: (
            media.with_bodies(backend.get_pull(owner, repo, pull_number, computing=computing),
                              param), None))

    def on_patch(self, req, resp, owner, repo, pull_number):
        param = _media(req, resp)
        instance = instance_of(req)
        pull = backend_for(instance, req.env).update_pull(owner, repo, pull_number, _body(req))
        _accepted(instance, pullNumber=str(pull["number"]))
        _answer_pulls(resp, 200, pull, param)


# git objects: contents, git data, commits -------------------------------------------------

def _pairs(req):
    return parse_qsl(req.query_string, keep_blank_values=True)


def _json_body(req, op):
    """The JSON object a git data or contents write sends (400 when it is not JSON)."""
    kind, value = _body(req)
    if kind == "invalid":
        raise errors.ProblemsParsingJSON(op)
    return value if kind == "json" and isinstance(value, dict) else {}


def _paged(req, resp, items, page, last):
    header = context.link_header(instance_of(req), req, _pairs(req), page, last)
    if header:
        resp.set_header("Link", header)
    _answer(resp, 200, items)


def _raw_wanted(req):
    """Tell whether `Accept` asks for a file's raw bytes (`application/vnd.github.raw`)."""
    accept = (req.get_header("Accept") or "").lower()
    return any(kind.strip().split(";")[0] in ("application/vnd.github.raw",
                                              "application/vnd.github.v3.raw")
               for kind in accept.split(","))


def _content_answer(req, resp, shape, raw):
    if raw is not None and _raw_wanted(req):
        resp.status = 200
        resp.content_type = "application/vnd.github.raw"
        resp.data = raw
        return
    _answer(resp, 200, shape)


class Contents:
    """`GET|PUT|DELETE /repos/{owner}/{repo}/contents/{path}`: read a file or folder at
    `?ref=`; write or delete a file as a commit."""

    def on_get(self, req, resp, owner, repo, path=""):
        shape, raw = backend_of(req).get_content(owner, repo, path, _pairs(req))
        _content_answer(req, resp, shape, raw)

    def on_put(self, req, resp, owner, repo, path=""):
        instance = instance_of(req)
        op = "repos/create-or-update-file-contents"
        status, answer = backend_for(instance).put_content(owner, repo, path,
                                                           _json_body(req, op))
        _accepted(instance, commit=answer["commit"]["sha"])
        _answer(resp, status, answer)

    def on_delete(self, req, resp, owner, repo, path=""):
        instance = instance_of(req)
        answer = backend_for(instance).delete_file(owner, repo, path,
                                                   _json_body(req, "repos/delete-file"))
        _accepted(instance, commit=answer["commit"]["sha"])
        _answer(resp, 200, answer)


class Readme:
    """`GET /repos/{owner}/{repo}/readme`."""

    def on_get(self, req, resp, owner, repo):
        shape, raw = backend_of(req).get_readme(owner, repo, _pairs(req))
        _content_answer(req, resp, shape, raw)


class _GitObjects:
    """`POST` of a git object (`operation`, made by the backend's `create`): 201 its shape,
    journaled with its sha."""

    operation = create = None

    def on_post(self, req, resp, owner, repo):
        instance = instance_of(req)
        answer = getattr(backend_for(instance), self.create)(
            owner, repo, _json_body(req, self.operation))
        _accepted(instance, sha=answer["sha"])
        _answer(resp, 201, answer)


class Blobs(_GitObjects):
    """`POST /repos/{owner}/{repo}/git/blobs`."""

    operation, create = "git/create-blob", "create_blob"


class Blob:
    """`GET /repos/{owner}/{repo}/git/blobs/{file_sha}`."""

    def on_get(self, req, resp, owner, repo, file_sha):
        _answer(resp, 200, backend_of(req).get_blob(owner, repo, file_sha))


class Trees(_GitObjects):
    """`POST /repos/{owner}/{repo}/git/trees`."""

    operation, create = "git/create-tree", "create_tree"


class Tree:
    """`GET /repos/{owner}/{repo}/git/trees/{tree_sha}?recursive`."""

    def on_get(self, req, resp, owner, repo, tree_sha):
        recursive = any(name == "recursive" for name, _value in _pairs(req))
        _answer(resp, 200, backend_of(req).get_tree(owner, repo, tree_sha, recursive))


class GitCommits(_GitObjects):
    """`POST /repos/{owner}/{repo}/git/commits`."""

    operation, create = "git/create-commit", "create_commit"


class GitCommit:
    """`GET /repos/{owner}/{repo}/git/commits/{commit_sha}`."""

    def on_get(self, req, resp, owner, repo, commit_sha):
        _answer(resp, 200, backend_of(req).get_git_commit(owner, repo, commit_sha))


class Commits:
    """`GET /repos/{owner}/{repo}/commits?sha&path&page&per_page`."""

    def on_get(self, req, resp, owner, repo):
        _paged(req, resp, *backend_of(req).list_commits(owner, repo, _pairs(req)))


class Commit:
    """`GET /repos/{owner}/{repo}/commits/{ref}`: one commit with its files."""

    def on_get(self, req, resp, owner, repo, ref):
        _answer(resp, 200, backend_of(req).get_commit(owner, repo, ref))


class Compare:
    """`GET /repos/{owner}/{repo}/compare/{base}...{head}`."""

    def on_get(self, req, resp, owner, repo, basehead):
        _answer(resp, 200, backend_of(req).compare(owner, repo, basehead, _pairs(req)))


class PullCommits:
    """`GET /repos/{owner}/{repo}/pulls/{pull_number}/commits`."""

    def on_get(self, req, resp, owner, repo, pull_number):
        _paged(req, resp, *backend_of(req).pull_commits(owner, repo, pull_number, _pairs(req)))


class PullFiles:
    """`GET /repos/{owner}/{repo}/pulls/{pull_number}/files`."""

    def on_get(self, req, resp, owner, repo, pull_number):
        _paged(req, resp, *backend_of(req).pull_files(owner, repo, pull_number, _pairs(req)))


class Raw:
    """`GET /{owner}/{repo}/raw/{ref}/{path}`: a file's bytes (`download_url`, `raw_url`)."""

    def on_get(self, req, resp, owner, repo, tail):
        data = backend_of(req).raw_file(owner, repo, tail)
        resp.context["unversioned"] = True
        resp.content_type = "text/plain; charset=utf-8"
        if data is None:
            resp.status = 404
            resp.data = b"404: Not Found"
            return
        resp.status = 200
        resp.data = data
