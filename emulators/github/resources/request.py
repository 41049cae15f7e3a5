"""What every GitHub resource shares: the backend of a request (calls.py), its body and query,
path numbers, media negotiation, answers (cached reads, pages with `Link`) and the journaling of
a write.
"""
import json
import re
from urllib.parse import parse_qsl

import falcon

from emulators.runtime import instance_of

from .. import context, errors, media
from ..calls import accepted, backend_for
from ..credentials import identify
from ..ratelimits.conditional import digest
from ..schemas import body as bodies
from ..schemas.base import MAX_SAFE_INTEGER

_NUMBER = re.compile(r"^[1-9][0-9]*\Z")


def acting_app(req):
    """The slug of the App whose installation token the request carries (None for any other
    credential): what a check run it creates belongs to."""
    credential = identify(instance_of(req), req.env)
    return credential.app_slug if credential.kind == "installation" else None


def backend_of(req):
    """The rules object of a provider request, acting as its token's user."""
    return backend_for(instance_of(req), req.env)


# input ------------------------------------------------------------------------------------------

def body(req):
    """The request body classified by kind (`schemas.body.classify`)."""
    return bodies.classify(req.content_type, req.bounded_stream.read())


def repository(req, owner, repo):
    """(backend, the repository record) a request names; 404 when there is none."""
    backend = backend_of(req)
    return backend, backend.repos.find(owner, repo)


def write(req, owner, repo):
    """(backend, repository, the body sent) of a write: the body is read first, so one past
    the runtime's limit is 413 whatever else is wrong; what its kind makes of it is the
    write's to say."""
    sent = body(req)
    return (*repository(req, owner, repo), sent)


def pairs(req):
    """The query's (name, value) pairs, in order, repeats and blanks kept."""
    return parse_qsl(req.query_string, keep_blank_values=True)


def number(raw):
    """The number a path segment names (a pull request, an issue, a comment, a check run...):
    decimal digits, no leading zero, a safe integer; anything else is GitHub's 404."""
    if not _NUMBER.match(raw or "") or int(raw) > MAX_SAFE_INTEGER:
        raise errors.NotFound()
    return int(raw)


def object_write(req, owner, repo):
    """(backend, repository, the JSON object written) of a write of git objects (a file, a
    blob, a tree, a commit): a body that is not JSON is refused first, then a repository that
    is not there or holds synthetic SHAs. Such a write acts as the default member."""
    given = bodies.git_object(body(req))
    backend = backend_for(instance_of(req))
    record = backend.repos.find(owner, repo)
    backend.repos.objects(record)
    return backend, record, given


def existing(req, owner, repo, find, kind=bodies.json_object):
    """(backend, repository, what `kind` makes of the body) of a write to something that must
    be there: `find(backend, repository)` answers 404 before the body's fields are checked."""
    backend, record, sent = write(req, owner, repo)
    given = kind(sent)
    find(backend, record)
    return backend, record, given


def members(req, resp, owner, repo, raw_number, logins, change, status, **ids):
    """Answer a write that adds or removes the users a body names (`logins(body)`) on an issue
    or a pull request: `change(backend)` (the rule) with the repository, the number, the
    logins."""
    backend, record, sent = write(req, owner, repo)
    names = logins(bodies.json_object(sent))
    wrote(req, resp, status, change(backend)(record, number(raw_number), names), **ids)


def media_param(req, resp):
    """Return the body param the client's `Accept` selects; remember it for the answer header."""
    param = media.requested(req.get_header("Accept"))
    resp.context["media"] = param
    return param


def raw_wanted(req):
    """Tell whether `Accept` asks for a file's raw bytes (`application/vnd.github.raw`)."""
    accept = (req.get_header("Accept") or "").lower()
    return any(kind.strip().split(";")[0] in ("application/vnd.github.raw",
                                              "application/vnd.github.v3.raw")
               for kind in accept.split(","))


# answers ----------------------------------------------------------------------------------------

def answer(resp, status, body):
    resp.status = status
    if status != 204:
        resp.media = body


def answer_cached(req, resp, token, build):
    """Answer 200 with a read's body built once per change of the namespace's records
    (`Instance.cached`, `token` naming the request). `build()` returns (body, extra): the
    body is encoded once, as falcon's JSON handler does, and digested once for its ETag
    (ratelimits/); `extra` is returned."""
    instance = instance_of(req)

    def encoded():
        body, extra = build()
        data = json.dumps(body, ensure_ascii=False).encode()
        return body, data, extra, digest(data)
    body, data, extra, resp.context["digest"] = instance.cached(
        (*token, instance.base_url), encoded, size=lambda value: len(value[1]))
    resp.status = 200
    resp.media = body  # what middleware reads; falcon sends `data`, the same bytes
    resp.data = data
    resp.content_type = falcon.MEDIA_JSON
    return extra


def read(req, resp, owner, repo, get, *args):
    """Answer 200 with what a rule reads: `get(backend)` (the rule) called with the repository
    and `args`."""
    backend, record = repository(req, owner, repo)
    answer(resp, 200, get(backend)(record, *args))


def link(req, resp, page, last):
    """Set `Link` for a page of a listing (none when no relation applies)."""
    header = context.link_header(instance_of(req), req, pairs(req), page, last)
    if header:
        resp.set_header("Link", header)


def listing(req, resp, found, page):
    """Answer 200 with a page of a listing (`inputs.Listing`) and its `Link`."""
    link(req, resp, page.number, page.last(found.total))
    answer(resp, 200, found.items)


def wrote(req, resp, status, body, **ids):
    """Answer a committed write and journal it as accepted (with its ids)."""
    accepted(instance_of(req), **ids)
    answer(resp, status, body)
