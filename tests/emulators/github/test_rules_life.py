"""The rule objects of a pull request's life (pulls, statuses, checks, issues, labels, reviews,
protection, node ids), each built with a store and a clock (rulekit.py), no HTTP and no other
rule: a stand-in answers for the siblings it calls."""
import pytest

from emulators.github import errors
from emulators.github.inputs import Page
from emulators.github.models.checks import CheckRules
from emulators.github.models.issues import IssueRules
from emulators.github.models.labels import LabelRules
from emulators.github.models.nodes import Nodes
from emulators.github.models.protection import ProtectionRules
from emulators.github.models.pulls import PullRules
from emulators.github.models.reviews import ReviewRules
from emulators.github.models.statuses import StatusRules

from .rulekit import A, B, C, Kit, rules


@pytest.fixture
def kit():
    return Kit()


@pytest.fixture
def repo(kit):
    return kit.repository(graph={A: [], B: [A], C: [B]}, branches={"main": A, "topic": B})


def test_pulls_open_count_and_refuse_a_twin(kit, repo):
    pulls = PullRules(kit.store, kit.clock, **kit.shared(
        labels={"on_issue": lambda repo, pull: []},
        commits={"pull_diff": lambda repo, head, base: []},
        merges={"mergeability": lambda *args: (True, True, "clean")}))
    pull = pulls.create(repo, title="Add topic", head="org:topic", base="main")
    assert (pull["number"], pull["head"]["sha"], pull["mergeable"]) == (1, B, None)
    assert kit.repos.json(kit.store.repo(repo["key"]))["open_issues_count"] == 1
    with pytest.raises(errors.ValidationFailed) as caught:
        pulls.create(repo, title="again", head="topic", base="main")
    assert caught.value.item["message"] == "A pull request already exists for org:topic."
    with pytest.raises(errors.Unsupported):
        pulls.create(repo, title="fork", head="someone:topic", base="main")
    closed = pulls.update(repo, 1, state="closed")
    assert closed["state"] == "closed" and kit.events == ["pull_request", "pull_request"]
    assert pulls.list(repo, Page(), state="open").total == 0


def test_statuses_combine_the_latest_of_each_context(kit, repo):
    statuses = StatusRules(kit.store, kit.clock, **kit.shared(
        commits={"commit_sha": lambda key, ref: B if ref in ("topic", B) else None}))
    statuses.create(repo, "topic", state="failure", context="ci")
    statuses.create(repo, "topic", state="success", context="ci")
    assert statuses.combined(repo, B)["state"] == "success"  # the latest of `ci` counts
    statuses.create(repo, B, state="pending", context="lint")
    assert statuses.combined(repo, B)["state"] == "pending"
    assert statuses.list(repo, B, Page(1, 2)).total == 3
    with pytest.raises(errors.Unprocessable, match="No commit found for SHA: nope"):
        statuses.create(repo, "nope", state="success")


def test_checks_complete_runs_and_derive_their_suite(kit, repo):
    checks = CheckRules(kit.store, kit.clock, **kit.shared(
        commits={"commit_sha": lambda key, sha, exact: sha if sha == B else None}))
    run = checks.create(repo, name="ci", head_sha=B, status="in_progress")
    suite = checks.suite(repo, run["check_suite"]["id"])
    assert (run["status"], suite["status"]) == ("in_progress", "in_progress")
    done = checks.update(repo, run["id"], conclusion="failure")
    assert (done["status"], done["completed_at"]) == ("completed", "2023-11-14T22:13:20Z")
    suite = checks.suite(repo, suite["id"])
    assert (suite["status"], suite["conclusion"]) == ("completed", "failure")
    with pytest.raises(errors.ValidationFailed) as caught:
        checks.update(repo, run["id"], status="completed", conclusion=None)  # (None: unset)
    assert caught.value.item["field"] == "conclusion"
    checks.rerequest(repo, run["id"])
    assert checks.suite(repo, suite["id"])["status"] == "queued"


def _put_pull(kit):
    return lambda pull, before: kit.store.put_pull(pull)


def test_issues_share_the_pull_numbers_and_close_as_the_actor(kit, repo):
    kit.pull(repo, kit.store.next_id("pull_numbers:org/r"))  # PR 1 takes the first number
    issues = IssueRules(kit.store, kit.clock, **kit.shared(
        labels={"names": lambda repo, names: list(names), "on_issue": lambda repo, issue: [],
                "ref_json": lambda repo, name: {"name": name}},
        pulls={"put": _put_pull(kit)}))
    issue = issues.create(repo, title="Bug", labels=["bug"], assignees=["nobody"])
    assert (issue["number"], issue["assignees"]) == (2, [])  # a stranger is dropped
    closed = issues.update(repo, 2, state="closed")
    assert (closed["state_reason"], closed["closed_by"]["login"]) == ("completed", "octocat")
    assert kit.repos.json(kit.store.repo(repo["key"]))["open_issues_count"] == 0
    assert issues.get(repo, 1)["pull_request"]["url"].endswith("/pulls/1")
    comment = issues.create_comment(repo, 2, "hello")
    assert issues.conversation(repo, 2)["comments"] == 1 and comment["body"] == "hello"
    assert issues.list(repo, Page(), state="all", labels=["BUG"]).total == 1


def test_labels_are_made_on_use_and_renamed_everywhere(kit, repo):
    kit.store.put_item("issues", "org/r:1", {"repo": "org/r", "number": 1, "labels": ["bug"],
                                             "state": "open"})
    labels = LabelRules(kit.store, kit.clock, **kit.shared(
        issues={"put": lambda row, before: kit.store.put_item(
            "issues", f"org/r:{row['number']}", row)},
        pulls={"put": _put_pull(kit)}))
    assert labels.names(repo, ["Bug", "bug", "new"]) == ["Bug", "new"]
    assert labels.get(repo, "BUG")["color"] == "ededed"
    with pytest.raises(errors.ValidationFailed):
        labels.create(repo, "new")
    labels.update(repo, "bug", new_name="defect", color="00ff00")
    assert kit.store.item("issues", "org/r:1")["labels"] == ["defect"]
    labels.delete(repo, "defect")
    assert kit.store.item("issues", "org/r:1")["labels"] == []


def refused(reason):
    """What a review refusal says (`errors[0]`)."""
    return pytest.raises(errors.ReviewRefused, match=reason)


def test_reviews_hold_githubs_rules_of_who_acts(kit, repo):
    pull = kit.pull(repo)
    reviews = ReviewRules(kit.store, kit.clock, **kit.shared(
        pulls={"find": lambda repo, number: pull, "put": _put_pull(kit)}))
    approved = reviews.create(repo, 1, event="APPROVE")
    assert (approved["state"], approved["commit_id"]) == ("APPROVED", B)
    assert list(reviews.latest(repo, pull)) == ["octocat"]
    with refused("needs a body"):
        reviews.create(repo, 1, event="COMMENT")
    pending = reviews.create(repo, 1, body="later")
    with refused("one pending review"):
        reviews.create(repo, 1)
    kit.accounts = type(kit.accounts)(kit.store, "http://gh.test", actor="author")
    own = ReviewRules(kit.store, kit.clock, **kit.shared(pulls={"find": lambda *a: pull}))
    with refused("your own pull request"):
        own.create(repo, 1, event="APPROVE")
    assert reviews.dismiss(repo, 1, approved["id"], "stale")["state"] == "DISMISSED"
    assert reviews.get(repo, 1, pending["id"])["state"] == "PENDING"


def test_protection_says_what_a_merge_and_a_push_need(kit, repo):
    verdicts = {"statuses": [], "runs": [], "reviews": {}}
    protection = ProtectionRules(kit.store, kit.clock, repos=kit.repos, rules=rules(
        statuses={"latest": lambda key, sha: verdicts["statuses"]},
        checks={"latest": lambda key, sha: verdicts["runs"]},
        reviews={"latest": lambda repo, pull: verdicts["reviews"]}))
    protection.update(repo, "main", checks={"strict": False, "contexts": ["ci"]},
                      reviews={"count": 1, "dismiss_stale": False, "code_owners": False,
                               "last_push": False})
    pull = {"base_ref": "main"}
    assert protection.merge_blocker(repo, pull, B, A) == \
        "At least 1 approving review is required by reviewers with write access."
    verdicts["reviews"] = {"x": {"state": "APPROVED", "commit_id": B}}
    assert protection.merge_blocker(repo, pull, B, A) == 'Required status check "ci" is expected.'
    verdicts["statuses"] = [{"context": "ci", "state": "success"}]
    assert protection.merge_blocker(repo, pull, B, A) is None
    assert protection.push_refusal(repo, "refs/heads/main", A, B, forced=False)[1] == \
        "Changes must be made through a pull request."
    assert protection.push_refusal(repo, "refs/heads/topic", B, C, forced=False) is None
    with pytest.raises(errors.NotFound, match="Branch not found"):
        protection.update(repo, "nope")


def test_the_rules_check_what_a_write_holds_with_no_schema_before_them(kit, repo):
    """GraphQL's mutations reach the rules with typed values and no REST schema: what a schema
    checks of a write's text, the rule checks too (the schema with the rule's own check)."""
    pull = kit.pull(repo)
    pulls = PullRules(kit.store, kit.clock, **kit.shared())
    with pytest.raises(errors.ValidationFailed) as caught:
        pulls.create(repo, title="  ", head="topic", base="main")
    assert caught.value.item == {"resource": "PullRequest", "code": "invalid", "field": "title"}
    issues = IssueRules(kit.store, kit.clock, **kit.shared(
        labels={"names": lambda repo, names: list(names)}))
    with pytest.raises(errors.ValidationFailed) as caught:
        issues.create(repo, title="x" * 257)
    assert caught.value.item["message"] == "title is too long (maximum is 256 characters)"
    with pytest.raises(errors.ValidationFailed) as caught:
        issues.create_comment(repo, 1, "")
    assert caught.value.item["code"] == "missing_field"
    labels = LabelRules(kit.store, kit.clock, **kit.shared())
    with pytest.raises(errors.ValidationFailed) as caught:
        labels.names(repo, [f"l{n}" for n in range(101)])
    assert caught.value.item["message"] == "An issue can have at most 100 labels"
    assert labels.list(repo, Page()).total == 0  # refused before any label was made
    reviews = ReviewRules(kit.store, kit.clock, **kit.shared(pulls={"find": lambda *a: pull}))
    with pytest.raises(errors.Unsupported, match="review comments on lines"):
        reviews.create(repo, 1, event="COMMENT", body="x", comments=[{"path": "a", "body": "b"}])
    with refused("Body is too long"):
        reviews.create(repo, 1, event="COMMENT", body="x" * 65537)
    with pytest.raises(errors.Unsupported, match="teams"):
        reviews.request(repo, 1, [], teams=["T_1"])


def test_the_review_decision_counts_approvals_as_a_merge_does(kit, repo):
    latest = {}
    protection = ProtectionRules(kit.store, kit.clock, repos=kit.repos, rules=rules(
        reviews={"latest": lambda repo, pull: latest}))
    pull = {"base_ref": "main"}
    assert protection.review_decision(repo, pull, B) is None  # no review, none required
    latest["x"] = {"state": "APPROVED", "commit_id": A}
    assert protection.review_decision(repo, pull, B) == "APPROVED"
    protection.update(repo, "main", reviews={"count": 1, "dismiss_stale": True,
                                             "code_owners": False, "last_push": False})
    assert protection.review_decision(repo, pull, B) == "REVIEW_REQUIRED"  # stale: of A
    assert protection.merge_blocker(repo, pull, B, A).startswith("At least 1 approving")
    latest["x"] = {"state": "APPROVED", "commit_id": B}
    assert protection.review_decision(repo, pull, B) == "APPROVED"
    latest["y"] = {"state": "CHANGES_REQUESTED", "commit_id": B}
    assert protection.review_decision(repo, pull, B) == "CHANGES_REQUESTED"
    assert protection.required_contexts(repo, "main") == frozenset()


def test_a_node_id_names_its_record_and_its_repository(kit, repo):
    pull = kit.pull(repo)
    kit.store.put_item("issues", "org/r:2", {"repo": "org/r", "number": 2, "node_id": "I_2"})
    nodes = Nodes(kit.store)
    assert nodes.find("R_1") == ("Repository", repo, repo)
    assert nodes.find("O_1")[:2] == ("Account", kit.store.owner("org"))
    assert nodes.find(pull["node_id"]) == ("PullRequest", kit.store.pull("org/r", 1), repo)
    assert nodes.find("I_2")[0::2] == ("Issue", repo)
    assert nodes.find("I_3") is None and nodes.find("X_1") is None and nodes.find("") is None
