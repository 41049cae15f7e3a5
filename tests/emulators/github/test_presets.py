"""The seven GitHub presets: exact canned answers, one shot per write, accepted-then-dropped."""
import pytest

from emulators.github.presets import PRESETS

from .conftest import B, C

REPO = "/repos/synthetic-org/example"
PULLS = f"{REPO}/pulls"
TROUBLE = "https://docs.github.com/rest/using-the-rest-api/troubleshooting-the-rest-api"


@pytest.fixture
def topic(seeded):
    seeded.create_ref("refs/heads/topic", B, status=201)
    return seeded


def journal(client, operation):
    res = client.get(f"/__admin/requests?operationId={operation}", status=200)
    return res.json["requests"]


def writes(client):
    """One request of each of the four write operations, in a state where each would succeed."""
    return [
        client.post(f"{REPO}/git/refs", {"ref": "refs/heads/w", "sha": B}),
        client.patch(f"{REPO}/git/refs/heads/topic", {"sha": C}),
        client.post(PULLS, {"title": "t", "head": "topic", "base": "main"}),
        client.patch(f"{PULLS}/1", {"title": "t2"}),
    ]


def test_presets_are_listed_in_declaration_order_with_reference_descriptions(gh):
    listed = gh.get("/__admin/faults/presets", status=200).json["presets"]
    assert [p["name"] for p in listed] == list(PRESETS)
    by_name = {p["name"]: p for p in listed}
    assert by_name["github_pr_create_accepted_drop"]["description"] == \
        "Accept one successful pulls/create mutation, then drop its response"
    assert by_name["github_unavailable"]["description"] == \
        "Reject one request per supported mutation operation before writing, with503"
    assert by_name["github_rate_limited"]["description"] == \
        "Script one secondary-limit429 per mutation operation, with a60second retry hint"


def test_applying_a_preset_expands_rule_ids(gh):
    res = gh.preset("github_denied")
    assert [r["id"] for r in res.json["rules"]] == [f"github_denied_{n}" for n in range(1, 6)]
    res = gh.preset("github_pr_create_accepted_drop")
    assert [r["id"] for r in res.json["rules"]] == ["github_pr_create_accepted_drop"]


@pytest.mark.parametrize("preset,status,body,headers", [
    ("github_unavailable", 503, {"message": "Service Unavailable",
                                 "documentation_url": TROUBLE, "status": "503"}, {}),
    ("github_denied", 403, {"message": "Resource not accessible by integration",
                            "documentation_url": TROUBLE + "#resource-not-accessible",
                            "status": "403"}, {}),
    ("github_rate_limited", 429, {
        "message": "You have exceeded a secondary rate limit. Please wait a few minutes before "
                   "you try again.",
        "documentation_url": "https://docs.github.com/rest/using-the-rest-api/"
                             "rate-limits-for-the-rest-api#exceeding-the-rate-limit",
        "status": "429"},
     {"Retry-After": "60", "X-RateLimit-Remaining": "1", "X-RateLimit-Resource": "core"}),
])
def test_rejecting_presets_fire_once_per_write_operation(topic, preset, status, body, headers):
    topic.open_pull(head="topic", status=201)  # PR 1 exists so the update would succeed
    topic.preset(preset)
    for res in writes(topic):
        assert res.status_int == status, res.request.path
        assert res.json == body
        assert "x-github-api-version-selected" not in res.headers
        assert "x-mockingbird-checkpoint" not in res.headers
        for name, value in headers.items():
            assert res.headers[name] == value
    assert topic.get(f"{REPO}/git/ref/heads/topic").json["object"]["sha"] == B  # untouched
    assert [r.status_int for r in writes(topic)][:2] == [201, 200]  # one shot each
    faulted = [e for e in journal(topic, "git/create-ref") if e["status"] == status]
    assert [e.get("faultId") for e in faulted] == [f"{preset}_1"]


def test_rejecting_preset_fires_before_validation_and_version_gate(seeded):
    seeded.preset("github_unavailable")
    res = seeded.post("/repos/nobody/nothing/pulls", [1],
                      headers={"X-GitHub-Api-Version": "2022-11-28"})
    assert res.status_int == 503


def test_reads_are_never_faulted_by_presets(seeded):
    seeded.preset("github_denied")
    assert seeded.get(REPO).status_int == 200
    assert seeded.get(PULLS).status_int == 200


def dropped(call):
    """Run a request that the emulator should drop; return the raised error."""
    with pytest.raises(OSError) as caught:
        call()
    return caught.value


def test_pr_create_accepted_drop_commits_then_drops_and_listing_recovers(topic):
    topic.preset("github_pr_create_accepted_drop")
    dropped(lambda: topic.app.post_json(PULLS, {"title": "t", "head": "topic", "base": "main"}))
    found = topic.get(f"{PULLS}?head=synthetic-org:topic&base=main").json
    assert [p["number"] for p in found] == [1]
    entry = journal(topic, "pulls/create")[-1]
    assert entry["status"] == 0 and entry["accepted"] is True
    assert entry["checkpoint"].startswith("cp_")
    assert entry["ids"] == {"pullNumber": "1"}
    retry = topic.open_pull()
    assert retry.status_int == 422
    assert retry.json["errors"][0]["message"] == \
        "A pull request already exists for synthetic-org:topic."


def test_pr_update_accepted_drop_then_retry_succeeds(topic):
    topic.open_pull(status=201)
    topic.preset("github_pr_update_accepted_drop")
    dropped(lambda: topic.app.patch_json(f"{PULLS}/1", {"title": "renamed"}))
    assert topic.get(f"{PULLS}/1").json["title"] == "renamed"
    assert topic.patch(f"{PULLS}/1", {"title": "renamed"}).status_int == 200


def test_ref_create_accepted_drop_then_retry_is_already_exists(seeded):
    seeded.preset("github_ref_create_accepted_drop")
    dropped(lambda: seeded.app.post_json(f"{REPO}/git/refs", {"ref": "refs/heads/x", "sha": B}))
    assert seeded.get(f"{REPO}/git/ref/heads/x").json["object"]["sha"] == B
    assert journal(seeded, "git/create-ref")[-1]["ids"] == {"ref": "refs/heads/x"}
    assert seeded.create_ref("refs/heads/x", B).json["message"] == "Reference already exists"


def test_ref_update_accepted_drop_then_retry_succeeds(topic):
    topic.preset("github_ref_update_accepted_drop")
    dropped(lambda: topic.app.patch_json(f"{REPO}/git/refs/heads/topic", {"sha": C}))
    assert topic.get(f"{REPO}/git/ref/heads/topic").json["object"]["sha"] == C
    entry = journal(topic, "git/update-ref")[-1]
    assert entry["status"] == 0 and entry["accepted"] is True
    assert topic.patch(f"{REPO}/git/refs/heads/topic", {"sha": C}).status_int == 200


def test_accepted_drop_is_spent_by_an_invalid_request(topic):
    topic.preset("github_pr_create_accepted_drop")
    res = topic.open_pull(head="nothing")
    assert res.status_int == 422
    entry = journal(topic, "pulls/create")[-1]
    assert entry["status"] == 422 and "accepted" not in entry
    assert topic.open_pull(status=201).json["number"] == 1  # preset spent: answered normally


def test_every_successful_write_is_journaled_accepted_with_its_checkpoint(topic):
    res = topic.open_pull(status=201)
    entry = journal(topic, "pulls/create")[-1]
    assert entry["accepted"] is True and entry["status"] == 201
    assert entry["checkpoint"] == res.headers["x-mockingbird-checkpoint"]
    assert entry["ids"] == {"pullNumber": "1"}
    ref = journal(topic, "git/create-ref")[-1]
    assert ref["accepted"] is True and ref["ids"] == {"ref": "refs/heads/topic"}
    failed = topic.open_pull()
    assert failed.status_int == 422
    assert "accepted" not in journal(topic, "pulls/create")[-1]


def test_a_history_branch_is_isolated_from_main(topic):
    res = topic.post(PULLS, {"title": "t", "head": "topic", "base": "main"}, 201,
                     headers={"x-mockingbird-branch": "experiment"})
    assert res.headers["x-mockingbird-branch"] == "experiment"
    assert topic.get(PULLS).json == []
    listed = topic.get(PULLS, headers={"x-mockingbird-branch": "experiment"}).json
    assert [p["number"] for p in listed] == [1]


def test_refs_move_checkpoint_restores_the_moved_state(seeded):
    moved = seeded.post("/__admin/github/refs/move", {
        "owner": "synthetic-org", "repo": "example", "ref": "refs/heads/main", "sha": B}, 200)
    seeded.patch(f"{REPO}/git/refs/heads/main", {"sha": C})
    seeded.post("/__admin/branches/main/checkout", {"checkpoint": moved.json["checkpoint"]}, 200)
    assert seeded.get(f"{REPO}/git/ref/heads/main").json["object"]["sha"] == B
