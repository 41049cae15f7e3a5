"""Pure rules of the GitHub emulator: node ids, ref names, ancestry, seeding order, encoding."""
import pytest

from emulators.github import errors
from emulators.github.context import form_encode
from emulators.github.git import is_ancestor, valid_ref_name
from emulators.github.ids import node_id
from emulators.github.models import GitHubBackend
from emulators.github.resources.request import number
from emulators.github.schemas import refs as refs_schema
from emulators.github.times import epoch_s, normalized, timestamp
from emulators.runtime.state.db import Database
from emulators.runtime.state.records import Records

A, B, C, D = ("a" * 40, "b" * 40, "c" * 40, "d" * 40)


@pytest.fixture
def backend():
    db = Database(":memory:")
    clock = {"now": 1_700_000_000_000}
    yield GitHubBackend(Records(db, "github", "default", "github"), now_ms=lambda: clock["now"],
                        transaction=db.transaction, base_url="http://gh.test/emulators/github/")
    db.close()


def seed_body(**overrides):
    body = {"owner": "synthetic-org", "name": "example",
            "commits": [{"sha": A, "parents": []}, {"sha": B, "parents": [A]}],
            "branches": {"main": A}}
    body.update(overrides)
    return body


def test_node_ids_match_the_reference_vectors():
    assert node_id("github", "O_", 1) == "O_bhMQDVylN2a9TB"
    assert node_id("github", "R_", 1) == "R_fVhVAe4cNeeV7R"
    assert node_id("github", "R_", 2) == "R_C3d3hzqnmJFKcv"
    assert [node_id("github", "REF_", n) for n in (1, 2, 3)] == [
        "REF_0kws1og1JQOhmC", "REF_GLm9xBoBmWIp2B", "REF_RUcd6Qtr8CgHLy"]
    assert [node_id("github-pulls", "PR_", n) for n in (1, 2)] == [
        "PR_axxPzeIxNvGhn9", "PR_pXAjqw7lrTht31"]


def test_timestamps_are_to_the_second_as_github_sends_them():
    assert timestamp(1_700_000_000_000) == "2023-11-14T22:13:20Z"
    assert timestamp(1_700_000_000_999) == "2023-11-14T22:13:20Z"
    assert normalized("2023-11-14T23:13:20.750+01:00") == "2023-11-14T22:13:20Z"
    assert normalized("2023-11-14T22:13:20") == "2023-11-14T22:13:20Z"  # no zone: UTC
    assert epoch_s("2023-11-14T22:13:20Z") == 1_700_000_000
    with pytest.raises(ValueError):
        normalized("yesterday")


@pytest.mark.parametrize("name", [
    "heads/bad", "refs/heads", "refs/heads/bad..name", "refs/heads/.hidden", "refs/heads/a.lock",
    "refs/heads/a//b", "refs/heads/a b", "refs/heads/a@{b", "refs/heads/a.", "refs/heads/a~1",
    "refs/heads/a^", "refs/heads/a:b", "refs/heads/a?", "refs/heads/a*", "refs/heads/a[",
    "refs/heads/a\\b", "refs/heads/a\x7f", "refs/heads/a\tb", "refs/heads/", "/refs/heads/a",
    None, 3])
def test_invalid_ref_names(name):
    assert not valid_ref_name(name)


@pytest.mark.parametrize("name", ["refs/heads/main", "refs/heads/topic/nested", "refs/tags/v1",
                                  "refs/heads/a.b", "refs/heads/a@b", "refs/pull/1/head"])
def test_valid_ref_names(name):
    assert valid_ref_name(name)


def test_ancestry_walks_a_100k_chain_without_recursion():
    shas = [f"{n:040x}" for n in range(100_000)]
    graph = {sha: ([shas[i - 1]] if i else []) for i, sha in enumerate(shas)}
    assert is_ancestor(graph, shas[0], shas[-1])
    assert not is_ancestor(graph, shas[-1], shas[0])
    assert is_ancestor(graph, shas[5], shas[5])
    assert not is_ancestor(graph, "f" * 40, shas[5])


def test_pull_numbers_are_decimal_safe_integers():
    assert number("12") == 12
    for raw in ("0", "01", "-1", "1.5", "abc", "0x1", "1e0", "", str(2 ** 53)):
        with pytest.raises(errors.NotFound):
            number(raw)


def test_form_encoding_is_whatwg():
    assert form_encode([("head", "SYNTHETIC-ORG:topic-2"), ("q", "a b~*")]) == \
        "head=SYNTHETIC-ORG%3Atopic-2&q=a+b%7E*"


def test_seed_builds_the_repository_shape(backend):
    repo = backend.seeding.seed(seed_body(private=True))
    assert list(repo)[:12] == ["id", "node_id", "name", "full_name", "owner", "private", "fork",
                               "default_branch", "url", "html_url", "created_at", "updated_at"]
    assert repo["node_id"] == "R_fVhVAe4cNeeV7R"
    user = "http://gh.test/emulators/github/users/synthetic-org"
    assert repo["owner"] == {
        "login": "synthetic-org", "id": 1, "node_id": "O_bhMQDVylN2a9TB",
        "avatar_url": "http://gh.test/emulators/github/avatars/u/1?v=4", "gravatar_id": "",
        "url": user, "html_url": "http://gh.test/emulators/github/synthetic-org",
        "followers_url": f"{user}/followers", "following_url": f"{user}/following{{/other_user}}",
        "gists_url": f"{user}/gists{{/gist_id}}",
        "starred_url": f"{user}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{user}/subscriptions", "organizations_url": f"{user}/orgs",
        "repos_url": f"{user}/repos", "events_url": f"{user}/events{{/privacy}}",
        "received_events_url": f"{user}/received_events", "type": "Organization",
        "user_view_type": "public", "site_admin": False}
    assert repo["organization"] == repo["owner"]
    assert (repo["open_issues_count"], repo["pushed_at"], repo["license"]) == \
        (0, repo["created_at"], None)
    assert repo["url"] == "http://gh.test/emulators/github/repos/synthetic-org/example"
    assert repo["private"] is True and repo["created_at"] == "2023-11-14T22:13:20Z"


def test_second_repository_of_an_owner_shares_the_first_login_casing(backend):
    first = backend.seeding.seed(seed_body())
    second = backend.seeding.seed(seed_body(owner="SYNTHETIC-ORG", name="other"))
    assert second["owner"] == first["owner"]
    assert second["full_name"] == "synthetic-org/other"
    assert second["id"] != first["id"]


def test_seed_branch_refs_follow_javascript_key_order(backend):
    backend.seeding.seed(seed_body(branches={"main": A, "10": B, "2": A}))
    repo = backend.repos.find("synthetic-org", "example")
    refs = {r["ref"]: r["node_id"] for r in backend.refs.matching(repo, "")}
    assert refs == {"refs/heads/2": "REF_0kws1og1JQOhmC", "refs/heads/10": "REF_GLm9xBoBmWIp2B",
                    "refs/heads/main": "REF_RUcd6Qtr8CgHLy"}


SEED_CASES = [
    ([], 400, "Synthetic owner and name must be nonempty path segments"),
    (seed_body(owner=".."), 400, "Synthetic owner and name must be nonempty path segments"),
    (seed_body(name="a/b"), 400, "Synthetic owner and name must be nonempty path segments"),
    (seed_body(private=None, default_branch=""), 400, "private must be boolean"),
    (seed_body(default_branch="has space", commits={}), 400, "Invalid synthetic default branch"),
    (seed_body(commits={}), 400, "commits must be an array and branches an object"),
    (seed_body(branches=[]), 400, "commits must be an array and branches an object"),
    (seed_body(commits=[{"sha": A.upper(), "parents": []}]), 400,
     "Commit requires a lowercase 40-hex SHA and parent SHAs"),
    (seed_body(commits=[{"sha": A}]), 400,
     "Commit requires a lowercase 40-hex SHA and parent SHAs"),
    (seed_body(commits=[{"sha": A, "parents": []}, {"sha": A, "parents": []}, 5]), 400,
     "Duplicate synthetic commit"),
    (seed_body(commits=[{"sha": A, "parents": [C]}]), 400, "Every parent must be seeded"),
    (seed_body(commits=[{"sha": A, "parents": [A]}], branches={"main": "x"}), 400,
     "Synthetic ancestry must be acyclic"),
    (seed_body(commits=[{"sha": A, "parents": [B]}, {"sha": B, "parents": [A]}]), 400,
     "Synthetic ancestry must be acyclic"),
    (seed_body(branches={"main": A, "x y": A}), 400, "Branch must name a seeded commit"),
    (seed_body(branches={"main": C}), 400, "Branch must name a seeded commit"),
    (seed_body(branches={"": A}), 400, "Branch must name a seeded commit"),
    (seed_body(branches={"dev": A}), 400, "Seeded branches must include the default branch"),
]


@pytest.mark.parametrize("body,status,message", SEED_CASES)
def test_seed_validation_order(backend, body, status, message):
    with pytest.raises(errors.SeedInvalid) as caught:
        backend.seeding.seed(body)
    assert (caught.value.status, caught.value.message) == (status, message)
    assert caught.value.body() == {"message": message, "code": "mockingbird_seed_invalid"}


def test_seed_conflict_comes_before_field_checks_and_writes_nothing(backend):
    backend.seeding.seed(seed_body())
    with pytest.raises(errors.SeedInvalid) as caught:
        backend.seeding.seed(seed_body(owner="Synthetic-Org", private="yes"))
    assert caught.value.status == 409
    with pytest.raises(errors.SeedInvalid):
        backend.seeding.seed(seed_body(name="broken", branches={"main": C}))
    with pytest.raises(errors.NotFound):
        backend.repos.find("synthetic-org", "broken")


def test_empty_repository_seed_defaults(backend):
    repo = backend.seeding.seed({"owner": "o", "name": "r", "commits": None, "branches": None})
    assert repo["default_branch"] == "main"
    with pytest.raises(errors.EmptyRepository):  # GitHub: 409 "Git Repository is empty."
        backend.refs.matching(backend.repos.find("o", "r"), "")


def test_seed_handles_a_100k_commit_chain(backend):
    shas = [f"{n:040x}" for n in range(1, 100_001)]
    commits = [{"sha": sha, "parents": [shas[i - 1]] if i else []} for i, sha in enumerate(shas)]
    backend.seeding.seed(seed_body(commits=commits, branches={"main": shas[0]}))
    ref = backend.refs.update(backend.repos.find("synthetic-org", "example"), "refs/heads/main",
                              shas[-1])
    assert ref["object"]["sha"] == shas[-1]


def test_patterns_do_not_accept_a_trailing_newline(backend):
    with pytest.raises(errors.SeedInvalid):
        backend.seeding.seed(seed_body(owner="synthetic-org\n"))
    with pytest.raises(errors.SeedInvalid):
        backend.seeding.seed(seed_body(commits=[{"sha": A + "\n", "parents": []}]))
    backend.seeding.seed(seed_body())
    with pytest.raises(errors.Unprocessable):
        refs_schema.update({"sha": B + "\n"}, "heads/main")
