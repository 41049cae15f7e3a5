"""GitHub's response schemas: the check itself can fail, sees every operation, and the values
behind the full shapes are true to the emulator's state (counts, author, push time)."""
import copy

from .conftest import A, B, BASE, C
from .schema_check import SCHEMAS

REPO = "/repos/synthetic-org/example"


def test_a_cut_down_repository_breaks_the_schema(seeded):
    repo = seeded.get(REPO, 200).json
    schema = SCHEMAS.schema_for("GET", "/repos/{owner}/{repo}", 200, repo)
    assert SCHEMAS.problems(schema, repo) == []
    cut = copy.deepcopy(repo)
    del cut["archive_url"], cut["owner"]["avatar_url"]
    cut["pushed_at"], cut["description"] = "yesterday", 3
    assert sorted(SCHEMAS.problems(schema, cut)) == [
        "<root>: 'archive_url' is a required property",
        "description: 3 is not of type 'string', 'null'",
        "owner: 'avatar_url' is a required property",
        "pushed_at: 'yesterday' is not a 'date-time'"]


def test_every_operation_and_error_is_checked(seeded, answer_recorder):
    before = answer_recorder.checked
    seeded.get(REPO, 200)
    seeded.get(f"{REPO}/git/ref/heads/main", 200)
    seeded.get(f"{REPO}/git/matching-refs/heads", 200)
    seeded.get(f"{REPO}/git/refs", 200)
    seeded.create_ref("refs/heads/topic", B, status=201)
    seeded.patch(f"{REPO}/git/refs/heads/topic", {"sha": C}, 200)
    seeded.open_pull(status=201)
    seeded.get(f"{REPO}/pulls", 200)
    seeded.get(f"{REPO}/pulls/1", 200)
    seeded.patch(f"{REPO}/pulls/1", {"state": "closed"}, 200)
    seeded.get(f"{REPO}/pulls/9", 404)
    seeded.get(f"{REPO}/pulls?state=nope", 422)
    seeded.get("/nowhere", 404)
    assert answer_recorder.checked - before == 13


def test_pull_author_is_a_full_user_and_counts_follow_the_graph(seeded):
    seeded.create_ref("refs/heads/topic", C, status=201)
    created = seeded.open_pull(status=201).json
    assert created["user"]["login"] == "mockingbird-user"
    assert created["user"]["type"] == "User" and created["author_association"] == "MEMBER"
    assert created["user"]["url"] == f"{BASE}/users/mockingbird-user"
    # GitHub computes mergeability after the create answer
    assert (created["mergeable"], created["mergeable_state"]) == (None, "unknown")
    pr = seeded.get(f"{REPO}/pulls/1", 200).json
    assert (pr["commits"], pr["mergeable"], pr["mergeable_state"]) == (2, True, "clean")
    assert pr["user"] == created["user"]
    assert pr["head"]["user"] == pr["base"]["repo"]["owner"] != pr["user"]
    assert pr["diff_url"] == f"{BASE}/synthetic-org/example/pull/1.diff"
    assert pr["_links"]["commits"]["href"] == f"{BASE}{REPO}/pulls/1/commits"
    assert pr["statuses_url"] == f"{BASE}{REPO}/statuses/{C}"
    listed = seeded.get(f"{REPO}/pulls", 200).json[0]
    assert "commits" not in listed and listed["user"] == pr["user"]


def test_repository_counts_open_pulls_and_stamps_pushes(seeded):
    repo = seeded.get(REPO, 200).json
    assert repo["open_issues_count"] == repo["open_issues"] == 0
    seeded.advance(5000)
    seeded.create_ref("refs/heads/topic", B, status=201)
    seeded.open_pull(status=201)
    repo = seeded.get(REPO, 200).json
    assert repo["open_issues_count"] == repo["open_issues"] == 1
    assert repo["pushed_at"] == "2023-11-14T22:13:25Z" != repo["created_at"]
    seeded.patch(f"{REPO}/pulls/1", {"state": "closed"}, 200)
    assert seeded.get(REPO, 200).json["open_issues_count"] == 0


def test_main_is_reachable_so_the_first_commit_counts_once(seeded):
    seeded.create_ref("refs/heads/topic", B, status=201)
    seeded.open_pull(status=201)
    assert seeded.get(f"{REPO}/pulls/1", 200).json["commits"] == 1
    assert seeded.get(f"{REPO}/git/ref/heads/main", 200).json["object"]["sha"] == A
