"""GraphQL with an App's credentials, as REST takes them: an installation token acts as the
App's bot (`Bot`, `<slug>` in GraphQL, `<slug>[bot]` in REST), reaches only its repositories
(others answer as absent) and does only what its permissions allow (each field or mutation
needs the permission of the REST operation it stands for: GitHub's FORBIDDEN entry otherwise);
an App's JWT reaches no repository; a token GitHub refuses is its 401."""
import pytest

from .test_apps import bearer, seed, sign

ISSUE = """mutation($input: CreateIssueInput!) { createIssue(input: $input) {
  issue { number author { __typename login url } } } }"""
PULL = """mutation($input: CreatePullRequestInput!) { createPullRequest(input: $input) {
  pullRequest { number } } }"""
REPO = """query($name: String!) { repository(owner: "octo", name: $name) { id name
  pullRequests(first: 5) { totalCount } } }"""


@pytest.fixture
def bot(gh):
    """octo/demo (with a branch `topic`) and octo/other; the App `my-bot` installed on octo,
    with issues write, pull requests read (no statuses, no checks)."""
    gh.post("/__admin/github/repositories", {"owner": "octo", "name": "demo", "files": {
        "main": {"README.md": "# x\n"}, "topic": {"README.md": "# x\n", "new.txt": "y\n"}}}, 201)
    seed(gh, names=("other",))
    return gh.post("/__admin/github/apps", {
        "slug": "my-bot", "permissions": {"issues": "write", "pull_requests": "read"},
        "installations": [{"account": "octo"}]}, 201).json


def installation_token(gh, bot, **narrowed):
    app_jwt = sign(bot["app"]["id"], bot["private_key"])
    made = gh.post(f"/app/installations/{bot['installations'][0]['id']}/access_tokens",
                   narrowed, 201, headers=bearer(app_jwt))
    return made.json["token"]


def ql(gh, token, query, variables=None, status=200):
    return gh.app.post_json("/graphql", {"query": query, "variables": variables or {}},
                            headers=bearer(token), status=status).json


def test_an_installation_token_writes_as_the_apps_bot(gh, bot):
    token = installation_token(gh, bot)
    rid = ql(gh, token, REPO, {"name": "demo"})["data"]["repository"]["id"]
    made = ql(gh, token, ISSUE, {"input": {"repositoryId": rid, "title": "From the bot"}})
    assert made["data"]["createIssue"]["issue"] == {"number": 1, "author": {
        "__typename": "Bot", "login": "my-bot", "url": "http://127.0.0.1:8828/apps/my-bot"}}
    assert gh.get("/repos/octo/demo/issues/1").json["user"]["login"] == "my-bot[bot]"


def test_what_the_permissions_lack_is_githubs_forbidden_entry(gh, bot):
    token = installation_token(gh, bot)
    rid = ql(gh, token, REPO, {"name": "demo"})["data"]["repository"]["id"]
    refused = ql(gh, token, PULL, {"input": {"repositoryId": rid, "baseRefName": "main",
                                             "headRefName": "topic", "title": "No"}})
    assert refused == {"data": {"createPullRequest": None}, "errors": [{
        "type": "FORBIDDEN", "path": ["createPullRequest"],
        "extensions": {"saml_failure": False}, "locations": [{"line": 1, "column": 45}],
        "message": "Resource not accessible by integration"}]}
    assert list(refused["errors"][0]) == ["type", "path", "extensions", "locations", "message"]
    assert gh.get("/repos/octo/demo/pulls?state=all").json == []
    gh.post("/repos/octo/demo/pulls", {"title": "By a user", "head": "topic", "base": "main"},
            201)
    rollup = ql(gh, token, """{ repository(owner: "octo", name: "demo") { pullRequest(number: 1)
        { title commits(last: 1) { nodes { commit { oid statusCheckRollup { state } } } } } } }""")
    assert rollup["data"]["repository"]["pullRequest"]["title"] == "By a user"
    (node,) = rollup["data"]["repository"]["pullRequest"]["commits"]["nodes"]
    assert node["commit"]["statusCheckRollup"] is None
    assert [(e["type"], e["path"][-1]) for e in rollup["errors"]] == [
        ("FORBIDDEN", "statusCheckRollup")]  # no statuses permission: REST's 403 too
    assert ql(gh, token, "{ viewer { login } }")["errors"][0]["type"] == "FORBIDDEN"


def test_a_repository_outside_the_token_answers_as_an_absent_one(gh, bot):
    token = installation_token(gh, bot, repositories=["demo"])
    assert ql(gh, token, REPO, {"name": "demo"})["data"]["repository"]["name"] == "demo"
    hidden = ql(gh, token, REPO, {"name": "other"})
    absent = ql(gh, token, REPO, {"name": "absent"})
    assert hidden["errors"][0]["message"] == \
        "Could not resolve to a Repository with the name 'octo/other'."
    assert (hidden["errors"][0]["type"], absent["errors"][0]["type"]) == ("NOT_FOUND",) * 2
    other = gh.get("/repos/octo/other").json["node_id"]
    node = ql(gh, token, "query($id: ID!) { node(id: $id) { id } }", {"id": other})
    assert node["data"] == {"node": None}


def test_an_apps_jwt_reaches_no_repository_and_a_refused_token_is_a_401(gh, bot):
    app_jwt = sign(bot["app"]["id"], bot["private_key"])
    as_app = ql(gh, app_jwt, REPO, {"name": "demo"})
    assert as_app["errors"][0]["type"] == "FORBIDDEN"
    token = installation_token(gh, bot)
    gh.app.delete("/installation/token", headers=bearer(token), status=204)
    assert ql(gh, token, REPO, {"name": "demo"}, status=401) == {
        "message": "Bad credentials", "documentation_url": "https://docs.github.com/graphql"}
    late = sign(bot["app"]["id"], bot["private_key"], exp=0)
    assert ql(gh, late, REPO, {"name": "demo"}, status=401)["documentation_url"] == \
        "https://docs.github.com/graphql"
