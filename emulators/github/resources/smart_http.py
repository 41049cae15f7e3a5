"""Falcon resources of git's smart HTTP protocol, where `clone_url` points
(`/{owner}/{repo}.git/info/refs`, `git-upload-pack`, `git-receive-pack`; `.git` optional).

Thin: find the repository as GitHub would answer git (401 asks for credentials where GitHub
would), run dulwich's handlers (transport.py) over it, and for a push apply the ref updates
in one transaction, accepted like any other write.
"""
import falcon

from emulators.runtime import instance_of

from .. import errors, transport
from ..calls import accepted, backend_for
from ..credentials import AppJwt, InstallationToken, identify
from ..permissions import FORBIDDEN, GIT_SERVICES, HIDDEN, verdict
from ..store import has_objects

MAX_PUSH = 2 * 1024 ** 3  # GitHub refuses a push over 2 GiB
_NO_CACHE = {"Cache-Control": "no-cache, max-age=0, must-revalidate", "Pragma": "no-cache",
             "Expires": "Fri, 01 Jan 1980 00:00:00 GMT"}
_SERVICES = (transport.UPLOAD, transport.RECEIVE)
# GitHub's answer to git for a token it refuses (git then says `Authentication failed`)
BAD_TOKEN = ("Invalid username or token. Password authentication is not supported for Git"
             " operations.")


class GitAnswer(errors.GitHubError):
    """A plain-text answer to git (git prints each line as `remote: ...`)."""

    versioned = False

    def __init__(self, status, message, headers=None):
        super().__init__(message, status=status, headers=headers)


def git_error(req, resp, exc, params):
    """Answer a GitAnswer (or a GitHub error on a git route) as text for the git client."""
    resp.status = falcon.code_to_http_status(exc.status)
    resp.content_type = "text/plain; charset=utf-8"
    resp.text = exc.message.rstrip("\n") + "\n"
    for name, value in (exc.headers or {}).items():
        resp.set_header(name, value)
    resp.context["unversioned"] = True


def _challenge():
    # git (libcurl) sends the credentials of its URL or helper only after a 401 names a scheme
    return GitAnswer(401, "Authentication required: use x-access-token:<token>@ in the URL",
                     {"WWW-Authenticate": 'Basic realm="GitHub"'})


def _credential(instance, req):
    """The request's credential; a token GitHub refuses is git's `Authentication failed`."""
    try:
        return identify(instance, req.env)
    except errors.Unauthorized:
        raise GitAnswer(401, BAD_TOKEN, {"WWW-Authenticate": 'Basic realm="GitHub"'}) from None


def _app_access(credential, owner, name, repo, service):
    """Hold an App's credential to git as GitHub does: a repository outside an installation
    token's selection is not found; a push without `contents: write` (a fetch without read),
    or an App's JWT, is refused the way git shows GitHub's refusal."""
    denied = GitAnswer(403, f"Permission to {owner}/{name}.git denied to {credential.login}.")
    if isinstance(credential, AppJwt):
        raise denied
    if isinstance(credential, InstallationToken):
        found = verdict(credential, GIT_SERVICES[service], repo)
        if found == HIDDEN:
            raise GitAnswer(404, "Repository not found.")
        if found == FORBIDDEN:
            raise denied


def _open(req, owner, name, service):
    """Return (backend, repository record, RepoView) for a git request, or raise its answer."""
    instance = instance_of(req)
    credential = _credential(instance, req)
    backend = backend_for(instance, req.env)  # a push acts as its token's user
    name = name[:-4] if name.endswith(".git") else name
    repo = backend.repos.get(owner, name)
    authed = credential.kind != "anonymous"
    # GitHub answers git 401 for a repository it will not show (absent, or private) and for
    # every push without credentials; with them, an absent repository is not found.
    if not authed and (repo is None or repo.get("private") or service == transport.RECEIVE):
        raise _challenge()
    if repo is None:
        raise GitAnswer(404, "Repository not found.")
    _app_access(credential, owner, name, repo, service)
    if not has_objects(repo):
        raise GitAnswer(409, errors.SYNTHETIC)
    objects = backend.repos.objects(repo)
    refs = {k.encode(): v.encode() for k, v in backend.refs.advertised(repo).items()}
    view = transport.RepoView(objects.store, refs, repo["default_branch"])
    instance.report_ids(repository=f"{owner}/{name}")
    return instance, backend, repo, view


def _answer(resp, service, kind, chunks):
    resp.status = 200
    resp.content_type = f"application/x-{service}-{kind}"
    for header, value in _NO_CACHE.items():
        resp.set_header(header, value)
    resp.context["unversioned"] = True
    if isinstance(chunks, list):
        resp.data = b"".join(chunks)
    else:
        resp.stream = chunks  # a clone's pack, as it is written


class InfoRefs:
    """`GET /{owner}/{repo}[.git]/info/refs?service=git-upload-pack|git-receive-pack`."""

    def on_get(self, req, resp, owner, repo):
        service = req.get_param("service")
        if service not in _SERVICES:  # the dumb protocol: GitHub serves smart HTTP only
            raise GitAnswer(403, "Only git's smart HTTP protocol is served (git >= 1.6.6)")
        _instance, _backend, _repo, view = _open(req, owner, repo, service)
        _answer(resp, service, "advertisement", transport.advertise(service, view))


class _Service:
    service = None

    def _start(self, req, owner, repo):
        if req.content_type != f"application/x-{self.service}-request":
            raise GitAnswer(415, f"Expected Content-Type application/x-{self.service}-request")
        return _open(req, owner, repo, self.service)


class UploadPack(_Service):
    """`POST /{owner}/{repo}[.git]/git-upload-pack`: clone and fetch (reads only)."""

    service = transport.UPLOAD

    def on_post(self, req, resp, owner, repo):
        _instance, _backend, _repo, view = self._start(req, owner, repo)
        try:
            chunks = transport.stream(view, transport.body_reader(req.env))
        except transport.ProtocolError as exc:
            raise GitAnswer(400, f"Bad git request: {exc}") from None
        _answer(resp, self.service, "result", chunks)


class ReceivePack(_Service):
    """`POST /{owner}/{repo}[.git]/git-receive-pack`: a push, applied as ref writes."""

    service = transport.RECEIVE

    def on_post(self, req, resp, owner, repo):
        instance, backend, record, view = self._start(req, owner, repo)
        written = []

        def apply(commands, atomic):
            # one transaction for every ref of the push, its events and its checkpoint
            with instance.transaction():
                statuses = backend.refs.push(record, commands, atomic)
                written.extend(ref for ref, status in statuses if status == "ok")
                if written:
                    instance.accept()
            return statuses
        try:
            chunks = transport.serve(self.service, view, transport.body_reader(req.env),
                                     apply=apply, max_input=MAX_PUSH)
        except transport.ProtocolError as exc:
            raise GitAnswer(400, f"Bad git request: {exc}") from None
        if written:
            accepted(instance, ref=",".join(written))
        _answer(resp, self.service, "result", chunks)
