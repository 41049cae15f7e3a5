"""CI results: commit statuses and the combined state (GitHub's rule), check runs (a conclusion
completes them, latest per name) and the check suites GitHub makes for them."""
import pytest

from .conftest import A, B, C
from .histories import pr_history, seed_body

REPO = "/repos/synthetic-org/example"


@pytest.fixture
def ci(gh):
    gh.seed(seed_body())
    return gh


def sha(name):
    return pr_history()[1][name]


def status(client, ref, state, context="ci", **extra):
    return client.post(f"{REPO}/statuses/{ref}", {"state": state, "context": context, **extra})


@pytest.mark.parametrize("states,combined", [
    ([], "pending"),
    (["success"], "success"),
    (["success", "pending"], "pending"),
    (["success", "failure"], "failure"),
    (["pending", "error"], "failure"),
    (["success", "success"], "success"),
])
def test_the_combined_state_follows_githubs_rule(ci, states, combined):
    for n, state in enumerate(states):
        assert status(ci, sha("t2"), state, context=f"ctx-{n}").status_int == 201
    answer = ci.get(f"{REPO}/commits/topic/status", 200).json
    assert (answer["state"], answer["total_count"], answer["sha"]) == (combined, len(states),
                                                                       sha("t2"))


def test_only_the_latest_status_of_each_context_counts(ci):
    status(ci, sha("t2"), "failure")
    status(ci, sha("t2"), "success", description="fixed", target_url="https://ci.example/1")
    combined = ci.get(f"{REPO}/commits/{sha('t2')}/status", 200).json
    assert combined["state"] == "success"
    assert ci.get(f"{REPO}/commits/heads/topic/status", 200).json == combined
    assert [(s["context"], s["state"], s["description"]) for s in combined["statuses"]] == [
        ("ci", "success", "fixed")]
    listed = ci.get(f"{REPO}/commits/topic/statuses", 200).json
    assert [s["state"] for s in listed] == ["success", "failure"]  # newest first, all kept
    assert listed[0]["creator"]["login"] == "mockingbird-user"
    assert listed[0]["url"] == f"http://127.0.0.1:8828{REPO}/statuses/{sha('t2')}"


def test_status_writes_are_checked(ci):
    bad = status(ci, sha("t2"), "great")
    assert bad.status_int == 422 and bad.json["errors"] == [{
        "resource": "Status", "code": "custom", "field": "state",
        "message": "state is not included in the list"}]
    missing = status(ci, "f" * 40, "success")
    assert missing.status_int == 422
    assert missing.json["message"] == f"No commit found for SHA: {'f' * 40}"
    assert ci.get(f"{REPO}/commits/nowhere/status", 404).json["message"] == "Not Found"
    # a synthetic repository's seeded SHAs carry statuses too
    ci.seed(name="synthetic")
    assert ci.post(f"/repos/synthetic-org/synthetic/statuses/{A}", {"state": "success"},
                   201).json["context"] == "default"


def run(client, name, head="t2", **fields):
    return client.post(f"{REPO}/check-runs", {"name": name, "head_sha": sha(head), **fields})


def test_a_conclusion_completes_the_run(ci):
    created = run(ci, "ci", conclusion="failure")
    assert created.status_int == 201
    body = created.json
    assert (body["status"], body["conclusion"]) == ("completed", "failure")
    assert body["completed_at"] == body["started_at"] == "2023-11-14T22:13:20Z"
    assert body["app"]["slug"] == "mockingbird-ci"
    queued = run(ci, "lint").json
    assert (queued["status"], queued["conclusion"], queued["completed_at"]) == ("queued", None,
                                                                                None)
    updated = ci.patch(f"{REPO}/check-runs/{queued['id']}", {
        "conclusion": "success", "output": {"title": "Lint", "summary": "clean"}}, 200).json
    assert (updated["status"], updated["conclusion"]) == ("completed", "success")
    assert updated["output"]["summary"] == "clean"
    assert ci.get(f"{REPO}/check-runs/{queued['id']}", 200).json == updated


def test_completed_without_a_conclusion_and_unknown_values_are_422(ci):
    answer = run(ci, "ci", status="completed")
    assert answer.status_int == 422 and answer.json["errors"][0]["field"] == "conclusion"
    assert run(ci, "ci", conclusion="great").status_int == 422
    assert ci.post(f"{REPO}/check-runs", {"name": "ci"}).json["errors"] == [
        {"resource": "CheckRun", "code": "missing_field", "field": "head_sha"}]
    assert run(ci, "ci", head="t2", head_sha="f" * 40).status_int == 422
    assert ci.get(f"{REPO}/check-runs/999", 404).json["message"] == "Not Found"


def test_listing_shows_the_latest_run_per_name_unless_filter_all(ci):
    first = run(ci, "ci", conclusion="failure").json
    run(ci, "lint", conclusion="success")
    again = run(ci, "ci", conclusion="success").json
    latest = ci.get(f"{REPO}/commits/topic/check-runs", 200).json
    assert latest["total_count"] == 2
    assert [(r["name"], r["id"]) for r in latest["check_runs"]] == [("ci", again["id"]),
                                                                    ("lint", 2)]
    every = ci.get(f"{REPO}/commits/topic/check-runs?filter=all", 200).json
    assert [r["id"] for r in every["check_runs"]] == [again["id"], 2, first["id"]]
    named = ci.get(f"{REPO}/commits/{sha('t2')}/check-runs?check_name=lint", 200).json
    assert [r["name"] for r in named["check_runs"]] == ["lint"]


def test_one_suite_per_head_commit_follows_its_latest_runs(ci):
    run(ci, "ci", status="in_progress")
    failed = run(ci, "lint", conclusion="failure").json
    suites = ci.get(f"{REPO}/commits/topic/check-suites", 200).json
    assert suites["total_count"] == 1
    suite = suites["check_suites"][0]
    assert (suite["status"], suite["conclusion"], suite["head_branch"]) == (
        "in_progress", None, "topic")
    assert failed["check_suite"] == {"id": suite["id"]}
    ci.patch(f"{REPO}/check-runs/1", {"conclusion": "success"}, 200)
    suite = ci.get(f"{REPO}/check-suites/{suite['id']}", 200).json
    assert (suite["status"], suite["conclusion"], suite["latest_check_runs_count"]) == (
        "completed", "failure", 2)
    # rerequested, the suite waits again; the re-made run replaces the failed one
    assert ci.post(f"{REPO}/check-runs/{failed['id']}/rerequest", None, 201).json == {}
    assert ci.get(f"{REPO}/check-suites/{suite['id']}", 200).json["status"] == "queued"
    run(ci, "lint", conclusion="success")
    suite = ci.get(f"{REPO}/check-suites/{suite['id']}", 200).json
    assert (suite["status"], suite["conclusion"]) == ("completed", "success")
    runs = ci.get(f"{REPO}/check-suites/{suite['id']}/check-runs", 200).json
    assert sorted(r["conclusion"] for r in runs["check_runs"]) == ["success", "success"]
    # a run lists the open pull requests whose head it ran on
    ci.post(f"{REPO}/pulls", {"title": "Topic", "head": "topic", "base": "main"}, 201)
    assert [p["number"] for p in ci.get(f"{REPO}/check-runs/1", 200).json[
        "pull_requests"]] == [1]


def test_the_lost_update_preset_answers_and_applies_nothing(ci):
    queued = run(ci, "ci").json
    ci.preset("github_check_run_update_lost")
    answer = ci.patch(f"{REPO}/check-runs/{queued['id']}", {"conclusion": "success"}, 200).json
    assert answer["status"] == "completed"
    assert ci.get(f"{REPO}/check-runs/{queued['id']}", 200).json["status"] == "queued"
    ci.patch(f"{REPO}/check-runs/{queued['id']}", {"conclusion": "success"}, 200)  # one shot
    assert ci.get(f"{REPO}/check-runs/{queued['id']}", 200).json["status"] == "completed"


def test_check_runs_on_a_synthetic_repository(seeded):
    seeded.create_ref("refs/heads/topic", C, status=201)
    created = seeded.post(f"{REPO}/check-runs", {"name": "ci", "head_sha": C,
                                                 "conclusion": "success"}, 201).json
    suite = seeded.get(f"{REPO}/check-suites/{created['check_suite']['id']}", 200).json
    assert suite["head_commit"]["id"] == C and suite["head_branch"] == "topic"
    assert seeded.get(f"{REPO}/commits/{B}/check-runs", 200).json["total_count"] == 0
