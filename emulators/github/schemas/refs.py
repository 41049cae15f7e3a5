"""Ref writes: `git/create-ref`, `git/update-ref`, `git/delete-ref`, and the admin plane's
`refs/move` (an intervening actor's fast-forward)."""
from marshmallow import post_load

from .. import errors, git
from .base import Body, Value, check, load, unprocessable, unsupported

PULL_REFS = "Mockingbird does not model provider-managed pull refs"
_SHA = unprocessable("Invalid request: sha must be a 40-character hexadecimal value")
_NAME = unprocessable("Reference name is not valid")


def _sha():
    return Value(_SHA, str, required=True,
                 validate=check(lambda v: git.SHA_ANY_CASE.match(v), _SHA))


def _name():
    """A writable ref name: valid (422), and not a provider-managed pull ref (mock-only 501)."""
    return Value(_NAME, str, required=True, validate=[
        check(git.valid_ref_name, _NAME),
        check(lambda v: not v.startswith("refs/pull/"), unsupported(PULL_REFS))])


class _Sha(Body):
    @post_load
    def _lower(self, data, **kwargs):
        return {**data, "sha": data["sha"].lower()}


class _CreateRef(_Sha):
    sha = _sha()
    ref = _name()


class _UpdateRef(_Sha):
    sha = _sha()
    ref = _name()  # the path's, checked between the body's fields as GitHub does
    force = Value(unprocessable("Invalid request: force must be boolean"), bool)


class _RefName(Body):
    ref = _name()


CREATE, UPDATE, NAME = _CreateRef(), _UpdateRef(), _RefName()


def create(body):
    """`{ref, sha}` of a ref to create."""
    return load(CREATE, body)


def update(body, tail):
    """`{ref, sha, force}` of a ref move; `tail` is the path's ref (below `refs/`)."""
    return load(UPDATE, {**body, "ref": "refs/" + tail})


def name(tail):
    """The writable ref name a path's `tail` makes (`refs/<tail>`)."""
    return load(NAME, {"ref": "refs/" + tail})["ref"]


_MOVE = "Expected owner, repo, full branch ref and seeded 40-hex sha"


def _shape():
    return lambda: errors.ControlInvalid(_MOVE)


class _Move(Body):
    owner = Value(_shape(), str, required=True)
    repo = Value(_shape(), str, required=True)
    ref = Value(_shape(), str, required=True, validate=check(
        lambda v: v.startswith("refs/heads/") and git.valid_ref_name(v), _shape()))
    sha = Value(_shape(), str, required=True, validate=check(
        lambda v: git.SHA_ANY_CASE.match(v), _shape()))


MOVE = _Move()


def move(body):
    """`{owner, repo, ref, sha}` of the admin plane's `refs/move` (one mock-only 400 for any
    shape it does not have)."""
    if not isinstance(body, dict):
        raise errors.ControlInvalid(_MOVE)
    found = load(MOVE, body)
    return {**found, "sha": found["sha"].lower()}
