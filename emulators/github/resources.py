"""Falcon resources of the GitHub operations (the admin controls are in admin.py).

Thin: each responder parses the request, calls `GitHubBackend`, and shapes the answer. Mutations
report their ids to the journal and honour the `github.accepted_drop` effect (commit, then drop).
"""
import json
from urllib.parse import parse_qsl

import falcon

from emulators.runtime import instance_of

from . import actors, context, media, schemas
from .models import GitHubBackend
from .presets import ACCEPTED_DROP


def backend_for(instance, environ=None):
    """Build the rules object over one instance's records, clock, transaction and base URL,
    acting as the user of the request's token (`environ`; none: the default member)."""
    actor = (lambda: actors.login_of(instance, environ)) if environ is not None \
        else actors.DEFAULT
    return GitHubBackend(instance.records, now_ms=instance.now_ms,
                         transaction=instance.transaction, base_url=context.public_base(instance),
                         emit=instance.emit, objects=instance.objects, actor=actor)


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
        _answer_cached(req, resp, ("pulls/get", owner, repo, pull_number, param), lambda: (
            media.with_bodies(backend.get_pull(owner, repo, pull_number), param), None))

    def on_patch(self, req, resp, owner, repo, pull_number):
        param = _media(req, resp)
        instance = instance_of(req)
        pull = backend_for(instance, req.env).update_pull(owner, repo, pull_number, _body(req))
        _accepted(instance, pullNumber=str(pull["number"]))
        _answer_pulls(resp, 200, pull, param)
