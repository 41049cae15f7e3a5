"""Review, protection and merge: GitHub's rules on who may approve, what protection asks,
`mergeable_state` from the trees, and merges that make real commits."""
import pytest

from emulators.github.actors import synthetic_login
from emulators.github.objects import GitObjects
from emulators.runtime import DroppedByFault

from .histories import pr_history, seed_body

REPO = "/repos/synthetic-org/example"
DOC_MERGE = "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request"
BOB = {"Authorization": "token tok-bob"}
PROTECT = {"required_status_checks": {"strict": False, "contexts": ["ci"]},
           "enforce_admins": True, "required_pull_request_reviews": {
               "required_approving_review_count": 1}, "restrictions": None}


def sha(name):
    return pr_history()[1][name]


@pytest.fixture
def pr(gh):
    """A repository of real objects and PR #1 topic -> main (mergeable), PR #2 clash -> main."""
    gh.seed(seed_body())
    gh.post(f"{REPO}/pulls", {"title": "Topic", "head": "topic", "base": "main"}, 201)
    gh.post(f"{REPO}/pulls", {"title": "Clash", "head": "clash", "base": "main"}, 201)
    return gh


def state(client, number=1):
    pull = client.get(f"{REPO}/pulls/{number}", 200).json
    return pull["mergeable"], pull["mergeable_state"]


def merge(client, number=1, status="*", **body):
    return client.app.put_json(f"{REPO}/pulls/{number}/merge", body, status=status)


def passing(client, name="ci", head="t2"):
    client.post(f"{REPO}/check-runs", {"name": name, "head_sha": sha(head),
                                       "conclusion": "success"}, 201)


def test_mergeability_is_computed_from_the_trees(pr):
    created = pr.post(f"{REPO}/pulls", {"title": "Again", "head": "clash", "base": "topic"},
                      201).json
    assert (created["mergeable"], created["mergeable_state"]) == (None, "unknown")
    assert state(pr, 1) == (True, "clean")
    assert state(pr, 2) == (False, "dirty")  # both changed line one of shared.txt
    pr.patch(f"{REPO}/pulls/1", {"state": "closed"}, 200)
    assert state(pr, 1) == (None, "unknown")


def test_protection_round_trip_and_validation(pr):
    assert pr.get(f"{REPO}/branches/main/protection", 404).json["message"] == \
        "Branch not protected"
    saved = pr.app.put_json(f"{REPO}/branches/main/protection", PROTECT).json
    assert saved["required_status_checks"]["contexts"] == ["ci"]
    assert saved["required_pull_request_reviews"]["required_approving_review_count"] == 1
    got = pr.get(f"{REPO}/branches/main/protection", 200).json
    assert got["enabled"] is True and got["enforce_admins"]["enabled"] is True
    missing = pr.app.put_json(f"{REPO}/branches/main/protection", {"enforce_admins": True},
                              status=422)
    assert "required_status_checks" in missing.json["message"]
    assert pr.app.put_json(f"{REPO}/branches/nowhere/protection", PROTECT,
                           status=404).json["message"] == "Branch not found"
    pr.app.delete(f"{REPO}/branches/main/protection", status=204)
    pr.app.delete(f"{REPO}/branches/main/protection", status=404)


def test_protection_blocks_the_merge_the_way_github_refuses_it(pr):
    pr.app.put_json(f"{REPO}/branches/main/protection", PROTECT)
    assert state(pr) == (True, "blocked")
    refused = merge(pr)
    assert refused.status_int == 405 and refused.json == {
        "message": "At least 1 approving review is required by reviewers with write access.",
        "documentation_url": DOC_MERGE, "status": "405"}
    assert pr.post(f"{REPO}/pulls/1/reviews", {"event": "APPROVE"}, 422).json["errors"] == [
        "Can not approve your own pull request"]
    pr.post(f"{REPO}/pulls/1/reviews", {"event": "APPROVE"}, 200, headers=BOB)
    assert merge(pr).json["message"] == 'Required status check "ci" is expected.'
    pr.post(f"{REPO}/check-runs", {"name": "ci", "head_sha": sha("t2"),
                                   "conclusion": "failure"}, 201)
    assert merge(pr).json["message"] == 'Required status check "ci" is failing.'
    passing(pr)  # re-run: the latest run of the name counts
    assert state(pr) == (True, "clean")
    assert merge(pr, sha="0" * 40).status_int == 409
    done = merge(pr, status=200).json
    assert done["merged"] is True and done["message"] == "Pull Request successfully merged"


def test_strict_checks_ask_the_head_to_contain_the_base(pr):
    pr.app.put_json(f"{REPO}/branches/main/protection", {
        **PROTECT, "required_status_checks": {"strict": True, "contexts": ["ci"]},
        "required_pull_request_reviews": None})
    passing(pr)
    assert state(pr) == (True, "behind")  # main moved on (m1) since topic left it
    assert merge(pr).json["message"] == 'Required status check "ci" is expected.'


def test_a_failing_check_that_is_not_required_leaves_the_pr_unstable(pr):
    pr.post(f"{REPO}/statuses/{sha('t2')}", {"state": "failure", "context": "lint"}, 201)
    assert state(pr) == (True, "unstable")
    assert merge(pr).status_int == 200  # unstable still merges


@pytest.mark.parametrize("method,parents", [("merge", 2), ("squash", 1), ("rebase", 1)])
def test_each_method_makes_real_commits_on_the_base(pr, method, parents):
    answer = merge(pr, merge_method=method, status=200).json
    main = pr.get(f"{REPO}/git/ref/heads/main", 200).json["object"]["sha"]
    assert answer["sha"] == main
    pull = pr.get(f"{REPO}/pulls/1", 200).json
    assert (pull["merged"], pull["state"], pull["merge_commit_sha"]) == (True, "closed", main)
    assert pull["merged_by"]["login"] == "mockingbird-user"
    pr.app.get(f"{REPO}/pulls/1/merge", status=204)
    pr.app.get(f"{REPO}/pulls/2/merge", status=404)
    assert merge(pr).json["message"] == "Pull Request is not mergeable"  # merged already
    assert pr.patch(f"{REPO}/pulls/1", {"state": "open"}, 422).json["errors"][0][
        "message"] == "state cannot be changed. The pull request has been merged."
    pr.patch(f"{REPO}/issues/1", {"state": "open"}, 422)
    objects = GitObjects(pr.app.app.emulator.objects("default", "synthetic-org/example"))
    commit = objects.commit(main)
    assert len(commit.parents) == parents
    files = objects.files(commit.tree.decode())
    assert sorted(files) == ["README.md", "docs/guide.md", "docs/notes.md", "feature.txt",
                             "shared.txt"]  # the merged subtree is stored too
    assert objects.blob(files["shared.txt"][1]) == b"A\nb\nC\n"  # both sides' changes
    if method == "rebase":  # each topic commit replayed onto main, messages kept
        replayed = objects.commit(commit.parents[0].decode())
        assert (replayed.message, commit.message) == (b"Add the feature\n",
                                                      b"Shout line three\n")
        assert replayed.parents == [sha("m1").encode()]
    elif method == "squash":
        assert commit.message.startswith(b"Topic (#1)\n\n* Add the feature\n")
    else:
        assert commit.message == b"Merge pull request #1 from synthetic-org/topic\n\nTopic\n"


def test_conflicts_and_drafts_are_405(pr):
    assert merge(pr, 2).json["message"] == "Pull Request is not mergeable"
    pr.post(f"{REPO}/pulls", {"title": "D", "head": "topic", "base": "clash", "draft": True},
            201)
    assert state(pr, 3) == (True, "draft")
    assert merge(pr, 3).json["message"] == "Pull Request is still a draft"
    assert merge(pr, 9).status_int == 404
    assert merge(pr, merge_method="octopus").status_int == 422


def test_reviews_follow_githubs_rules(pr):
    bob = synthetic_login("tok-bob")
    pr.post(f"{REPO}/pulls/1/reviews", {"body": "draft"}, 200, headers=BOB)  # pending
    assert pr.post(f"{REPO}/pulls/1/reviews", {}, 422, headers=BOB).json["errors"] == [
        "User can only have one pending review per pull request"]
    assert pr.get(f"{REPO}/pulls/1/reviews", 200).json == []  # only its author sees it
    mine = pr.get(f"{REPO}/pulls/1/reviews", 200, headers=BOB).json
    assert [(r["state"], r["user"]["login"]) for r in mine] == [("PENDING", bob)]
    assert pr.post(f"{REPO}/pulls/1/reviews/{mine[0]['id']}/events", {}, 422,
                   headers=BOB).json["errors"] == ["Event is required to submit a review"]
    assert pr.post(f"{REPO}/pulls/1/reviews", {"body": "z" * 65537}, 422).json["errors"] == [
        "Body is too long (maximum is 65536 characters)"]
    submitted = pr.post(f"{REPO}/pulls/1/reviews/{mine[0]['id']}/events",
                        {"event": "REQUEST_CHANGES", "body": "fix it"}, 200, headers=BOB).json
    assert submitted["state"] == "CHANGES_REQUESTED" and submitted["commit_id"] == sha("t2")
    assert pr.post(f"{REPO}/pulls/1/reviews", {"event": "REQUEST_CHANGES"}, 422).json[
        "errors"] == ["Can not request changes on your own pull request"]
    assert pr.post(f"{REPO}/pulls/1/reviews", {"event": "COMMENT", "body": "ok"},
                   200).json["state"] == "COMMENTED"  # the author may comment


def test_requested_reviewers(pr):
    bob = synthetic_login("tok-bob")
    pr.post(f"{REPO}/issues", {"title": "Bob exists"}, 201, headers=BOB)
    asked = pr.post(f"{REPO}/pulls/1/requested_reviewers", {"reviewers": [bob]}, 201).json
    assert [u["login"] for u in asked["requested_reviewers"]] == [bob]
    assert pr.get(f"{REPO}/pulls/1/requested_reviewers", 200).json == {
        "users": asked["requested_reviewers"], "teams": []}
    assert pr.post(f"{REPO}/pulls/1/requested_reviewers", {"reviewers": ["mockingbird-user"]},
                   422).json["message"] == "Review cannot be requested from pull request author."
    assert pr.post(f"{REPO}/pulls/1/requested_reviewers", {"reviewers": ["stranger"]},
                   422).status_int == 422
    pr.post(f"{REPO}/pulls/1/reviews", {"event": "APPROVE"}, 200, headers=BOB)
    assert pr.get(f"{REPO}/pulls/1/requested_reviewers", 200).json["users"] == []


def test_repos_merge_makes_a_merge_commit_or_answers_204(pr):
    made = pr.post(f"{REPO}/merges", {"base": "main", "head": "topic"}, 201).json
    assert [p["sha"] for p in made["parents"]] == [sha("m1"), sha("t2")]
    assert made["commit"]["message"].rstrip() == "Merge topic into main"
    assert made["author"]["login"] == "mockingbird-user"  # the merger's account
    assert pr.get(f"{REPO}/git/ref/heads/main", 200).json["object"]["sha"] == made["sha"]
    pr.app.post_json(f"{REPO}/merges", {"base": "main", "head": "topic"}, status=204)
    assert pr.post(f"{REPO}/merges", {"base": "main", "head": "clash"}, 409).json[
        "message"] == "Merge conflict"
    assert pr.post(f"{REPO}/merges", {"base": "nope", "head": "topic"}, 404).json[
        "message"] == "Base does not exist"


def test_a_merge_accepted_then_dropped_is_merged(pr):
    pr.preset("github_pr_merge_accepted_drop")
    with pytest.raises(DroppedByFault):
        merge(pr)
    assert pr.get(f"{REPO}/pulls/1", 200).json["merged"] is True


def test_rest_ref_writes_to_a_protected_branch_are_refused_as_a_push_is(pr):
    pr.app.put_json(f"{REPO}/branches/main/protection", PROTECT)
    moved = pr.patch(f"{REPO}/git/refs/heads/main", {"sha": sha("t2"), "force": True}, 422)
    assert moved.json["message"] == ("Protected branch update failed for refs/heads/main. "
                                     "Cannot force-push to this branch")
    ahead = pr.post(f"{REPO}/merges", {"base": "topic", "head": "main"}, 201).json["sha"]
    pr.app.put_json(f"{REPO}/branches/topic/protection", {**PROTECT, "allow_deletions": False})
    assert pr.app.delete(f"{REPO}/git/refs/heads/topic", status=422).json["message"].endswith(
        "Cannot delete this branch")
    assert pr.patch(f"{REPO}/git/refs/heads/main", {"sha": ahead}, 422).json["message"].endswith(
        "Changes must be made through a pull request.")
    pr.app.delete(f"{REPO}/branches/main/protection", status=204)
    assert pr.patch(f"{REPO}/git/refs/heads/main", {"sha": ahead}, 200).json["object"][
        "sha"] == ahead


def test_the_mergeability_pending_preset_makes_a_client_poll(pr):
    pr.preset("github_mergeability_pending")
    assert [state(pr) for _ in range(4)] == [(None, "unknown")] * 3 + [(True, "clean")]


def test_a_dismissed_approval_no_longer_counts(pr):
    reviews_only = {**PROTECT, "required_status_checks": None}
    pr.app.put_json(f"{REPO}/branches/main/protection", reviews_only)
    approval = pr.post(f"{REPO}/pulls/1/reviews", {"event": "APPROVE"}, 200, headers=BOB).json
    assert state(pr) == (True, "clean")
    dismissals = f"{REPO}/pulls/1/reviews/{approval['id']}/dismissals"
    assert pr.app.put_json(dismissals, {}, status=422).json["errors"] == [
        "Message is required to dismiss a review"]
    dismissed = pr.app.put_json(dismissals, {"message": "stale"}).json
    assert dismissed["state"] == "DISMISSED"
    assert state(pr) == (True, "blocked")
    pending = pr.post(f"{REPO}/pulls/1/reviews", {}, 200, headers=BOB).json
    assert pr.app.put_json(f"{REPO}/pulls/1/reviews/{pending['id']}/dismissals",
                           {"message": "x"}, status=422).json["errors"] == [
        "Can not dismiss a pending review"]
