"""Falcon resources of GitHub's App routes: the App signed in with its JWT (`/app`, its
installations, an installation's token, where it is installed) and an installation token's
own (`/installation/repositories`, `DELETE /installation/token`). Thin: parse, call the App
rules, shape. Who may call which is decided before (access.py)."""
from urllib.parse import parse_qsl

from emulators.runtime import instance_of

from .. import context, errors, shapes as github_shapes
from ..credentials import identify, rules as rules_of
from ..schemas import apps as schemas
from ..shapes import apps as shapes
from ..store import repo_key
from .request import accepted, backend_for, body

_DEFAULT_PAGE, _MAX_PAGE = 30, 100


class _Route:
    """What every App route needs: the instance, the App rules, the credential, shapes."""

    def __init__(self, req):
        self.req = req
        self.instance = instance_of(req)
        self.rules = rules_of(self.instance)
        self.credential = identify(self.instance, req.env)
        self.base = context.public_base(self.instance)

    @property
    def app(self):
        return self.credential.app

    def account_json(self, login):
        return github_shapes.user(self.base, self.rules.accounts.owner(login))

    def installation_json(self, installation, app=None):
        app = app or self.rules.store.app_where("id", installation["app_id"])
        return shapes.installation(self.base, installation, app,
                                   self.account_json(installation["account"]))

    def repo_json(self, repo):
        return backend_for(self.instance, self.req.env).repos.json(repo)

    def page(self, items):
        """One page of `items` by `per_page` and `page`, with GitHub's `Link`."""
        pairs = parse_qsl(self.req.query_string, keep_blank_values=True)
        query = dict(pairs)
        try:
            per_page = min(max(int(query.get("per_page", _DEFAULT_PAGE)), 1), _MAX_PAGE)
            page = max(int(query.get("page", 1)), 1)
        except ValueError:
            per_page, page = _DEFAULT_PAGE, 1
        last = max((len(items) + per_page - 1) // per_page, 1)
        return items[(page - 1) * per_page:page * per_page], \
            context.link_header(self.instance, self.req, pairs, page, last)


def _answer(resp, status, body, link=None):
    resp.status = status
    resp.media = body
    if link:
        resp.set_header("Link", link)


class App:
    """`GET /app`: the App its JWT signs in as."""

    def on_get(self, req, resp):
        route = _Route(req)
        app = route.app
        _answer(resp, 200, shapes.app(route.base, app, route.account_json(app["owner"]),
                                      len(route.rules.installations(app))))


class AppInstallations:
    """`GET /app/installations`: where the App is installed, oldest first."""

    def on_get(self, req, resp):
        route = _Route(req)
        page, link = route.page(route.rules.installations(route.app))
        _answer(resp, 200, [route.installation_json(item, route.app) for item in page], link)


def _installation(route, installation_id):
    found = route.rules.installation(route.app, installation_id) \
        if installation_id.isdigit() else None
    if found is None:
        raise errors.NotFound()
    return found


class AppInstallation:
    """`GET /app/installations/{installation_id}`."""

    def on_get(self, req, resp, installation_id):
        route = _Route(req)
        found = _installation(route, installation_id)
        _answer(resp, 200, route.installation_json(found, route.app))


class AccessTokens:
    """`POST /app/installations/{installation_id}/access_tokens`: an installation token, one
    hour on the emulator's clock, narrowed by `repositories`, `repository_ids`,
    `permissions`."""

    def on_post(self, req, resp, installation_id):
        route = _Route(req)
        found = _installation(route, installation_id)
        kind, value = body(req)
        if kind == "invalid":
            raise errors.ProblemsParsingJSON()
        request = schemas.token_request(value if kind == "json" else {})
        text, record, limited = route.rules.issue_token(found, request)
        accepted(route.instance, installation=str(found["id"]))
        repositories = None if limited is None else [route.repo_json(repo) for repo in limited]
        _answer(resp, 201, shapes.token(text, record, repositories))


def _found(route, installation):
    if installation is None:
        raise errors.NotFound()
    return route.installation_json(installation, route.app)


class RepoInstallation:
    """`GET /repos/{owner}/{repo}/installation`: the App's installation that reaches it."""

    def on_get(self, req, resp, owner, repo):
        route = _Route(req)
        record = route.rules.accounts.repo(repo_key(owner, repo))
        installation = None if record is None else \
            route.rules.installation_on(route.app, record["owner"], record)
        _answer(resp, 200, _found(route, installation))


class OrgInstallation:
    """`GET /orgs/{org}/installation`."""

    def on_get(self, req, resp, org):
        route = _Route(req)
        account = route.rules.accounts.owner(org)
        installation = None if account is None or account.get("type") == "User" else \
            route.rules.installation_on(route.app, org)
        _answer(resp, 200, _found(route, installation))


class UserInstallation:
    """`GET /users/{username}/installation`."""

    def on_get(self, req, resp, username):
        route = _Route(req)
        account = route.rules.accounts.owner(username)
        installation = None if account is None or account.get("type") != "User" else \
            route.rules.installation_on(route.app, username)
        _answer(resp, 200, _found(route, installation))


class InstallationRepositories:
    """`GET /installation/repositories`: what an installation token reaches."""

    def on_get(self, req, resp):
        route = _Route(req)
        token = route.credential
        installation = route.rules.store.installation(token.installation_id)
        repos = [repo for repo in route.rules.repositories(installation) if token.reaches(repo)]
        page, link = route.page(repos)
        selection = "all" if token.repository_ids is None else "selected"
        _answer(resp, 200, {"total_count": len(repos), "repository_selection": selection,
                            "repositories": [route.repo_json(repo) for repo in page]}, link)


class InstallationToken:
    """`DELETE /installation/token`: the token revokes itself."""

    def on_delete(self, req, resp):
        route = _Route(req)
        route.rules.revoke(route.credential.token)
        accepted(route.instance)
        resp.status = 204
