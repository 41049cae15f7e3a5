"""GitHub's primary rate limits: every REST answer's headers, windows per caller on the
namespace's clock, the 403 of a full window, `GET /rate_limit`, GraphQL's `rateLimit`, the
admin settings."""
import pytest

from emulators.github.actors import synthetic_login
from emulators.github.ratelimits.quotas import DOCS
from emulators.github.times import timestamp

from .conftest import B, T0
from .test_apps import bearer, bot, sign, token_of  # noqa: F401  (an App installed on octo)

REPO = "/repos/synthetic-org/example"
RESET = T0 // 1000 + 3600  # the frozen clock's window: an hour from the first request
ANONYMOUS = ("API rate limit exceeded for {}. (But here's the good news: Authenticated requests"
             " get a higher rate limit. Check out the documentation for more details.)")
RATE = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-RateLimit-Used",
        "X-RateLimit-Resource")


def rate(answer):
    return tuple(answer.headers.get(name) for name in RATE)


def token(value):
    return {"Authorization": f"token {value}"}


def test_every_rest_answer_carries_the_five_headers_and_its_journal_number(seeded):
    answers = [seeded.get(REPO), seeded.get("/repos/x/y", status=404),
               seeded.create_ref("refs/heads/topic", B, status=201),
               seeded.get("/no/such/route/here", status=404)]
    assert [rate(a) for a in answers] == [
        ("60", str(60 - n), str(RESET), str(n), "core") for n in range(1, 5)]
    for answer in answers:
        seq = answer.headers["X-GitHub-Request-Id"]
        entry, = seeded.get(f"/__admin/requests?seq={seq}").json["requests"]
        assert entry["status"] == answer.status_int


def test_a_token_counts_as_its_user_and_two_tokens_of_one_user_share_a_window(seeded):
    seeded.app.put_json("/__admin/credentials", [{"credential": "tok-a", "user": "alice"},
                                                 {"credential": "tok-b", "user": "alice"}])
    assert rate(seeded.get(REPO, headers=token("tok-a"))) == \
        ("5000", "4999", str(RESET), "1", "core")
    assert rate(seeded.get(REPO, headers=token("tok-b")))[3] == "2"
    assert rate(seeded.get(REPO, headers=token("someone-else")))[3] == "1"
    assert rate(seeded.get(REPO))[:2] == ("60", "59")  # no token: the address's own window


def test_addresses_have_windows_of_their_own(seeded):
    for address, used in (("10.0.0.1", "1"), ("10.0.0.2", "1"), ("10.0.0.1", "2")):
        answer = seeded.app.get(REPO, extra_environ={"REMOTE_ADDR": address})
        assert answer.headers["X-RateLimit-Used"] == used


def test_a_full_window_is_githubs_403_until_the_clock_passes_its_reset(seeded):
    seeded.rate_limits(core=3)
    for _ in range(3):
        seeded.get(REPO, status=200)
    refused = seeded.get(REPO, status=403)
    assert refused.json == {"message": ANONYMOUS.format("127.0.0.1"), "documentation_url": DOCS}
    assert rate(refused) == ("3", "0", str(RESET), "3", "core")
    assert "ETag" not in refused.headers and "Cache-Control" not in refused.headers
    assert "Retry-After" not in refused.headers  # a primary limit: clients wait for the reset
    seeded.post("/__admin/clock", {"advance": 3_599_000}, 200)
    seeded.get(REPO, status=403)
    seeded.post("/__admin/clock", {"advance": 1000}, 200)
    assert rate(seeded.get(REPO, status=200)) == ("3", "2", str(RESET + 3600), "1", "core")


def test_a_refused_write_writes_nothing(seeded):
    seeded.rate_limits(core=1)
    seeded.get(REPO, status=200)
    refused = seeded.create_ref("refs/heads/topic", B, status=403)
    assert refused.headers["X-RateLimit-Remaining"] == "0"
    seeded.rate_limits(core=10)
    seeded.get(f"{REPO}/git/ref/heads/topic", status=404)


def test_a_user_is_named_by_account_id_once_the_emulator_has_one(seeded):
    seeded.rate_limits(core=2)
    seeded.get(REPO, headers=token("reader"), status=200)
    seeded.get(REPO, headers=token("reader"), status=200)
    login = synthetic_login("reader")
    assert seeded.get(REPO, headers=token("reader"), status=403).json["message"] == \
        f"API rate limit exceeded for user {login}."
    seeded.rate_limits(core=2)
    seeded.create_ref("refs/heads/topic", B, status=201)
    writer = token("writer")
    seeded.post(f"{REPO}/pulls", {"title": "t", "head": "topic", "base": "main"}, 201, writer)
    seeded.get(REPO, headers=writer, status=200)
    message = seeded.get(REPO, headers=writer, status=403).json["message"]
    pull = seeded.get(f"{REPO}/pulls/1", headers=token("other")).json
    assert message == f"API rate limit exceeded for user ID {pull['user']['id']}."


def test_search_and_graphql_count_in_windows_of_their_own(seeded):
    assert rate(seeded.get("/search/issues?q=x", status=404)) == \
        ("10", "9", str(T0 // 1000 + 60), "1", "search")
    assert rate(seeded.get("/search/code?q=x", status=404))[4] == "code_search"
    assert rate(seeded.post("/graphql", {"query": "{viewer{login}}"}, headers=token("t")))[:2] \
        == ("5000", "4999")
    assert rate(seeded.get(REPO))[3] == "1"  # core counted none of them


def test_graphqls_rate_limit_field_shows_the_window_the_request_left(seeded):
    """`rateLimit`, where GraphQL clients read their budget: one point a request (the
    emulator's cost), the same window as the headers, and GitHub's node limit worked out
    from the connections asked for (its documentation's example: 50 + 50 x 10 = 550)."""
    documented = ("{ rateLimit { cost limit remaining used resetAt nodeCount } viewer {"
                  " repositories(first: 50) { edges { repository: node { name"
                  " issues(first: 10) { totalCount edges { node { title body } } } } } } } }")
    for used in (1, 2):
        answer = seeded.post("/graphql", {"query": documented}, headers=token("t"))
        assert answer.json["data"]["rateLimit"] == {
            "cost": 1, "limit": 5000, "remaining": 5000 - used, "used": used,
            "resetAt": timestamp(RESET * 1000), "nodeCount": 550}
        assert rate(answer) == ("5000", str(5000 - used), str(RESET), str(used), "graphql")
    paged = ("query($n: Int!) { ...pulls rateLimit(dryRun: true) { nodeCount } }"
             " fragment pulls on Query { repository(owner: \"synthetic-org\", name: \"example\")"
             " { pullRequests(last: $n) { nodes { ... on PullRequest { labels(first: 3) {"
             " totalCount } } } } } }")
    answer = seeded.post("/graphql", {"query": paged, "variables": {"n": 20}},
                         headers=token("t"))
    assert answer.json["data"]["rateLimit"] == {"nodeCount": 20 + 20 * 3}


def test_the_api_v3_layout_counts_in_the_same_windows(seeded):
    assert rate(seeded.get("/api/v3" + REPO))[3:] == ("1", "core")
    assert rate(seeded.get(REPO))[3] == "2"
    assert seeded.get("/api/v3/rate_limit").json["rate"]["used"] == 2
    assert rate(seeded.get("/api/v3/search/issues?q=x", status=404))[4] == "search"


def test_graphql_without_a_token_is_left_to_its_route_uncounted(seeded):
    """GitHub refuses GraphQL without a token as unauthenticated, not as over a limit of 0."""
    for _ in range(2):
        answer = seeded.post("/graphql", {"query": "{viewer{login}}"})
        assert answer.status_int != 403
        assert rate(answer) == ("0", "0", str(RESET), "0", "graphql")


def test_rate_limit_answers_githubs_shape_uncounted_and_uncached(seeded):
    seeded.get(REPO)
    seeded.get(REPO)
    answer = seeded.get("/rate_limit", status=200)
    body = answer.json
    assert body["rate"] == body["resources"]["core"] == {
        "limit": 60, "used": 2, "remaining": 58, "reset": RESET}
    assert (body["resources"]["search"]["limit"], body["resources"]["graphql"]["limit"]) == \
        (10, 0)
    assert {"core", "search", "graphql", "code_search", "integration_manifest"} <= \
        set(body["resources"])
    assert rate(answer) == ("60", "58", str(RESET), "2", "core")
    assert answer.headers["Cache-Control"] == "no-cache" and "ETag" not in answer.headers
    assert seeded.get("/rate_limit").json["rate"]["used"] == 2
    user = seeded.get("/rate_limit", headers=token("t")).json["resources"]
    assert (user["core"]["limit"], user["search"]["limit"], user["graphql"]["limit"]) == \
        (5000, 30, 5000)


def test_the_admin_settings_apply_to_every_caller_and_a_reset_restores_githubs(seeded):
    assert seeded.get("/__admin/github/rate-limits").json == \
        {"core": None, "search": None, "graphql": None}
    answer = seeded.rate_limits(core=100, graphql=7)
    assert answer.json == {"core": 100, "search": None, "graphql": 7}
    assert seeded.get("/rate_limit").json["resources"]["core"]["limit"] == 100
    assert seeded.get("/rate_limit", headers=token("t")).json["resources"]["graphql"]["limit"] \
        == 7
    checkpoint = answer.headers["x-mockingbird-checkpoint"]
    seeded.rate_limits(search=1)  # a PUT sets them all: core is GitHub's again
    assert seeded.get("/rate_limit").json["resources"]["core"]["limit"] == 60
    seeded.post("/__admin/branches/main/checkout", {"checkpoint": checkpoint}, 200)
    assert seeded.get("/__admin/github/rate-limits").json["core"] == 100
    seeded.post("/__admin/reset", None, 200)
    assert seeded.get("/__admin/github/rate-limits").json["core"] is None


@pytest.mark.parametrize("body,message", [
    ([], "expected {"), ({"core": -1}, "core: expected {"), ({"core": True}, "core: expected {"),
    ({"core": 1.5}, "core: expected {"), ({"core": "5"}, "core: expected {"),
    ({"search": 10 ** 9 + 1}, "search: expected {"), ({"cores": 5}, "cores: expected {"),
])
def test_bad_settings_are_refused_and_change_nothing(gh, body, message):
    refused = gh.app.put_json("/__admin/github/rate-limits", body, status=400)
    assert refused.json["code"] == "mockingbird_control_invalid"
    assert refused.json["message"].startswith(message)
    assert gh.get("/__admin/github/rate-limits").json["core"] is None


def test_git_and_raw_are_not_the_rest_api(app, tmp_path):
    from .conftest import GitHubClient
    client = GitHubClient(app)
    client.post("/__admin/github/repositories", {"owner": "octo", "name": "files",
                                                 "files": {"main": {"a.txt": "hi"}}}, 201)
    client.rate_limits(core=1)
    for path in ("/octo/files.git/info/refs?service=git-upload-pack", "/octo/files/raw/main/a.txt"):
        answer = client.get(path, status=200)
        assert not {"X-RateLimit-Limit", "ETag", "Cache-Control"} & set(answer.headers)
    assert client.get("/repos/octo/files").headers["X-RateLimit-Used"] == "1"


def test_scope_headers_go_with_classic_tokens_only(seeded):
    answer = seeded.get(REPO, headers=token("ghp_classic"))
    assert "repo" in answer.headers["X-OAuth-Scopes"].split(", ")
    assert answer.headers["X-Accepted-OAuth-Scopes"] == "repo"
    assert seeded.get("/rate_limit", headers=token("t")).headers["X-Accepted-OAuth-Scopes"] == ""
    assert "X-OAuth-Scopes" not in seeded.get(REPO, headers=token("github_pat_fine")).headers
    assert "X-OAuth-Scopes" not in seeded.get(REPO).headers


def test_an_installation_counts_in_its_window_and_an_apps_jwt_apart(bot, gh):
    """An installation's tokens share its window; the App's JWT has one of its own."""
    jwt = bearer(sign(bot["app"]["id"], bot["private_key"]))
    first, second = (token(token_of(gh, bot).json["token"]) for _ in range(2))
    demo = "/repos/octo/demo"
    assert rate(gh.get(demo, headers=first)) == ("5000", "4999", str(RESET), "1", "core")
    assert "X-OAuth-Scopes" not in gh.get(demo, headers=second).headers  # (its second)
    assert rate(gh.get("/app", headers=jwt))[3] == "3"  # the two token mints, then this
    assert gh.get("/rate_limit", headers=second).json["resources"]["core"]["used"] == 2
    gh.rate_limits(core=3)
    gh.get(demo, headers=first, status=200)
    refused = gh.get(demo, headers=second, status=403)
    installation = bot["installations"][0]["id"]
    assert refused.json["message"] == f"API rate limit exceeded for installation ID {installation}."
    assert gh.get("/app", headers=jwt, status=403).json["message"] == \
        f"API rate limit exceeded for app ID {bot['app']['id']}."


def test_the_secondary_limit_preset_stays_a_429_with_retry_after(seeded):
    seeded.create_ref("refs/heads/topic", B, status=201)
    seeded.preset("github_rate_limited")
    refused = seeded.open_pull(status=429)
    assert refused.headers["Retry-After"] == "60"
    assert refused.json["message"].startswith("You have exceeded a secondary rate limit")
