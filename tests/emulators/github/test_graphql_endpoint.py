"""The GraphQL endpoint itself: GitHub's schema with introspection and validation, GitHub's
answers for errors, credentials and bodies, Enterprise Server's layout (`/api/graphql`, REST
under `/api/v3/`), and the runtime's journal, faults and checkpoints by operation name.
Every answer is checked against the schema and its query (conftest.py, graphql_check.py)."""
import pytest

from emulators.github.graphql import schema as graphql_schema

TOKEN = {"Authorization": "token tok-ada"}
REPO_INFO = ("query RepositoryInfo($owner: String!, $name: String!) {"
             " repository(owner: $owner, name: $name) { name owner { login } } }")


@pytest.fixture
def ql(seeded):
    """POST a GraphQL request as `tok-ada` (ada); returns the webtest response."""
    seeded.app.put_json("/__admin/credentials", [{"credential": "tok-ada", "user": "ada"}])

    def post(query, variables=None, path="/graphql", headers=TOKEN, **extra):
        body = {"query": query, **({"variables": variables} if variables else {}), **extra}
        return seeded.app.post_json(path, body, headers=headers, expect_errors=True)
    return post


def test_the_vendored_schema_is_githubs_and_built_once_per_process():
    built = graphql_schema.schema()
    assert graphql_schema.schema() is built
    assert {"PullRequest", "Repository", "StatusCheckRollup", "CreatePullRequestInput"} \
        <= set(built.type_map)
    assert graphql_schema.version().count(".") == 2


def test_introspection_answers_what_gh_asks_before_it_picks_its_fields(ql):
    res = ql('query { __type(name: "PullRequest") { fields(includeDeprecated: true)'
             ' { name } } }')
    names = {f["name"] for f in res.json["data"]["__type"]["fields"]}
    assert {"statusCheckRollup", "reviewDecision", "mergeStateStatus"} <= names
    merge = ql('{ __type(name: "Repository") { fields { name } } }').json["data"]["__type"]
    assert "viewerDefaultMergeMethod" in {f["name"] for f in merge["fields"]}


def test_validation_errors_are_graphql_cores_with_no_data(ql):
    res = ql('{ repository(owner: "synthetic-org", name: "example") { nam } }')
    assert res.status_int == 200
    assert res.json == {"errors": [{
        "locations": [{"line": 1, "column": 57}],
        "message": "Cannot query field 'nam' on type 'Repository'. Did you mean 'name'?"}]}
    syntax = ql("{ repository(").json
    assert "data" not in syntax and syntax["errors"][0]["message"].startswith("Syntax Error")


def test_an_absent_repository_is_githubs_not_found_beside_the_data(ql):
    res = ql('{ viewer { login } repository(owner: "o", name: "r") { name } }')
    assert res.status_int == 200
    assert res.json == {"data": {"viewer": {"login": "ada"}, "repository": None}, "errors": [{
        "type": "NOT_FOUND", "path": ["repository"], "locations": [{"line": 1, "column": 20}],
        "message": "Could not resolve to a Repository with the name 'o/r'."}]}


def test_no_credential_is_401_as_github_answers_graphql(ql):
    res = ql("{ viewer { login } }", headers={})
    assert res.status_int == 401
    assert res.json == {
        "message": "This endpoint requires you to be authenticated.",
        "documentation_url": "https://docs.github.com/graphql/guides/"
                             "forming-calls-with-graphql#authenticating-with-graphql"}


def test_bodies_that_are_not_a_graphql_request(seeded, ql):
    bad = seeded.raw("POST", "/graphql", "{not json", "application/json", headers=TOKEN)
    assert (bad.status_int, bad.json["message"]) == (400, "Problems parsing JSON")
    listed = seeded.raw("POST", "/graphql", "[]", "application/json", headers=TOKEN)
    assert listed.status_int == 400
    assert ql(None).json == {"errors": [{
        "message": "A query attribute must be specified and must be a string."}]}
    assert ql("{ viewer { login } }", variables=None, operationName=3).json["errors"][0][
        "message"] == "Not a valid string."
    as_text = ql(REPO_INFO, variables='{"owner": "synthetic-org", "name": "example"}')
    assert as_text.json["data"]["repository"]["name"] == "example"
    assert ql(REPO_INFO, variables="[1]").json == {"errors": [{
        "message": "Variables are invalid JSON."}]}


def test_enterprise_layout_api_graphql_and_rest_under_api_v3(seeded, ql):
    res = ql(REPO_INFO, {"owner": "synthetic-org", "name": "example"}, path="/api/graphql")
    assert res.json["data"]["repository"]["owner"]["login"] == "synthetic-org"
    rest = seeded.get("/api/v3/repos/synthetic-org/example", status=200).json
    assert rest["url"] == "http://127.0.0.1:8828/api/v3/repos/synthetic-org/example"
    # GitHub Enterprise Server's pages, git and avatars stay at the host's root
    web = "http://127.0.0.1:8828/synthetic-org/example"
    assert (rest["html_url"], rest["clone_url"], rest["svn_url"]) == (web, f"{web}.git", web)
    assert rest["owner"]["html_url"] == "http://127.0.0.1:8828/synthetic-org"
    assert rest["owner"]["avatar_url"].startswith("http://127.0.0.1:8828/avatars/")
    pulls = seeded.get(rest["pulls_url"].replace("{/number}", "")
                       .replace("http://127.0.0.1:8828", ""), status=200)
    assert pulls.json == []


def test_a_field_not_modelled_is_null_empty_or_an_error_that_says_so(ql):
    res = ql('{ repository(owner: "synthetic-org", name: "example") {'
             ' name homepageUrl stargazers { totalCount } '
             ' isUserConfigurationRepository } }')
    assert res.json["data"] == {"repository": None}
    assert res.json["errors"] == [{
        "type": "MOCKINGBIRD_UNSUPPORTED", "path": ["repository", "isUserConfigurationRepository"],
        "locations": [{"line": 1, "column": 101}],
        "message": "Mockingbird does not model Repository.isUserConfigurationRepository"}]
    nullable = ql('{ repository(owner: "synthetic-org", name: "example") {'
                  ' name homepageUrl stargazers { totalCount nodes { login } } } }')
    assert nullable.json == {"data": {"repository": {
        "name": "example", "homepageUrl": None,
        "stargazers": {"totalCount": 0, "nodes": []}}}}


def test_the_journal_names_the_operation_and_never_the_variables(seeded, ql):
    ql(REPO_INFO, {"owner": "synthetic-org", "name": "secret-name"})
    ql("{ viewer { login } }")
    entries = seeded.get("/__admin/requests").json["requests"][-2:]
    assert [(e["path"], e["operationId"]) for e in entries] == [
        ("/graphql", "graphql/query/RepositoryInfo"), ("/graphql", "graphql/query")]
    assert "secret-name" not in str(entries)


def test_faults_by_operation_name_and_reads_commit_no_checkpoint(seeded, ql):
    seeded.post("/__admin/faults", {"operationId": "graphql/query/RepositoryInfo",
                                    "status": 502, "count": 1}, 201)
    variables = {"owner": "synthetic-org", "name": "example"}
    assert ql(REPO_INFO, variables).status_int == 502
    res = ql(REPO_INFO, variables)
    assert res.status_int == 200 and "x-mockingbird-checkpoint" not in res.headers
    assert ql("{ viewer { login } }").status_int == 200  # another operation: untouched


def test_the_shape_check_sees_what_a_schema_refuses():
    from .graphql_check import problems
    asked = {"query": '{ repository(owner: "o", name: "r") { name isPrivate visibility'
                      ' owner { login ... on User { name } } } }'}
    good = {"repository": {"name": "r", "isPrivate": False, "visibility": "PUBLIC",
                           "owner": {"login": "o", "name": None}}}
    assert problems(asked, {"data": good}) == []
    for broken in ({"isPrivate": None}, {"isPrivate": "no"}, {"visibility": "OPEN"},
                   {"name": 5}, {"owner": {"login": "o", "name": None, "extra": 1}}):
        assert problems(asked, {"data": {"repository": {**good["repository"], **broken}}}), \
            broken
    assert problems(asked, {"data": {"repository": {"name": "r"}}})
    assert problems({"query": "{ nope }"}, {"data": {"nope": 1}})
