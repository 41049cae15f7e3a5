"""The conversation: issues numbered with pull requests, comments, labels, assignees; who acts
(each token is a user)."""
import pytest

from emulators.github.actors import synthetic_login

from .conftest import B

REPO = "/repos/synthetic-org/example"


def token(value):
    return {"Authorization": f"token {value}"}


@pytest.fixture
def talk(seeded):
    seeded.create_ref("refs/heads/topic", B, status=201)
    return seeded


def test_issues_and_pulls_share_one_sequence_of_numbers(talk):
    first = talk.post(f"{REPO}/issues", {"title": "Bug", "body": "It breaks"}, 201).json
    pull = talk.open_pull(status=201).json
    second = talk.post(f"{REPO}/issues", {"title": "Another"}, 201).json
    assert (first["number"], pull["number"], second["number"]) == (1, 2, 3)
    assert "pull_request" not in first
    as_issue = talk.get(f"{REPO}/issues/2", 200).json
    assert as_issue["title"] == "Add topic" and as_issue["pull_request"]["url"].endswith(
        "/pulls/2")
    assert talk.get(f"{REPO}/pulls/1", 404).status_int == 404
    listed = talk.get(f"{REPO}/issues", 200).json
    assert [i["number"] for i in listed] == [3, 2, 1]  # pull requests are issues too
    assert talk.get(REPO, 200).json["open_issues_count"] == 3
    talk.patch(f"{REPO}/issues/1", {"state": "closed"}, 200)
    assert talk.get(REPO, 200).json["open_issues"] == 2
    assert talk.post(f"{REPO}/issues", {"body": "no title"}, 422).json["errors"] == [
        {"resource": "Issue", "code": "missing_field", "field": "title"}]


def test_the_issues_api_edits_and_closes_a_pull_request(talk):
    talk.open_pull(status=201)
    closed = talk.patch(f"{REPO}/issues/1", {"state": "closed", "title": "Renamed"}, 200).json
    assert (closed["state"], closed["title"]) == ("closed", "Renamed")
    pull = talk.get(f"{REPO}/pulls/1", 200).json
    assert (pull["state"], pull["title"]) == ("closed", "Renamed")
    issue = talk.post(f"{REPO}/issues", {"title": "Bug"}, 201).json
    done = talk.patch(f"{REPO}/issues/{issue['number']}", {"state": "closed"}, 200).json
    assert (done["state_reason"], done["closed_by"]["login"]) == ("completed",
                                                                  "mockingbird-user")
    assert [i["number"] for i in talk.get(f"{REPO}/issues?state=closed", 200).json] == [2, 1]


def test_comments_round_trip_and_count(talk):
    talk.open_pull(status=201)
    made = talk.post(f"{REPO}/issues/1/comments", {"body": "/retest"}, 201).json
    assert made["body"] == "/retest" and made["issue_url"].endswith("/issues/1")
    assert made["html_url"].endswith(f"/pull/1#issuecomment-{made['id']}")
    talk.post(f"{REPO}/issues/1/comments", {"body": "second"}, 201)
    assert talk.get(f"{REPO}/issues/1", 200).json["comments"] == 2
    assert talk.get(f"{REPO}/pulls/1", 200).json["comments"] == 2
    edited = talk.patch(f"{REPO}/issues/comments/{made['id']}", {"body": "/rerun"}, 200).json
    assert edited["body"] == "/rerun"
    assert [c["body"] for c in talk.get(f"{REPO}/issues/1/comments", 200).json] == [
        "/rerun", "second"]
    talk.app.delete(f"{REPO}/issues/comments/{made['id']}", status=204)
    assert talk.get(f"{REPO}/issues/comments/{made['id']}", 404).status_int == 404
    assert talk.get(f"{REPO}/issues/1", 200).json["comments"] == 1
    assert talk.post(f"{REPO}/issues/9/comments", {"body": "x"}, 404).status_int == 404
    assert talk.post(f"{REPO}/issues/1/comments", {}, 422).json["errors"][0][
        "code"] == "missing_field"


def test_labels_on_issues_and_the_repository(talk):
    talk.open_pull(status=201)
    talk.post(f"{REPO}/labels", {"name": "bug", "color": "d73a4a", "description": "Broken"},
              201)
    assert talk.post(f"{REPO}/labels", {"name": "Bug"}, 422).json["errors"][0][
        "code"] == "already_exists"
    added = talk.post(f"{REPO}/issues/1/labels", {"labels": ["BUG", "needs-review"]}, 200).json
    assert [(label["name"], label["color"]) for label in added] == [
        ("bug", "d73a4a"), ("needs-review", "ededed")]
    assert [label["name"] for label in talk.get(f"{REPO}/labels", 200).json] == [
        "bug", "needs-review"]  # naming a new label on an issue made it
    assert [label["name"] for label in talk.get(f"{REPO}/pulls/1", 200).json["labels"]] == [
        "bug", "needs-review"]
    put = talk.app.put_json(f"{REPO}/issues/1/labels", ["ready"]).json
    assert [label["name"] for label in put] == ["ready"]
    talk.app.delete(f"{REPO}/issues/1/labels/ready", status=200)
    assert talk.app.delete(f"{REPO}/issues/1/labels/ready", status=404).json[
        "message"] == "Label does not exist"
    talk.post(f"{REPO}/issues/1/labels", ["bug"], 200)
    renamed = talk.patch(f"{REPO}/labels/bug", {"new_name": "defect", "color": "#000000"},
                         200).json
    assert (renamed["name"], renamed["color"]) == ("defect", "000000")
    assert [label["name"] for label in talk.get(f"{REPO}/issues/1/labels", 200).json] == [
        "defect"]
    talk.app.delete(f"{REPO}/labels/defect", status=204)
    assert talk.get(f"{REPO}/issues/1/labels", 200).json == []
    assert talk.post(f"{REPO}/labels", {"name": "x", "color": "red"}, 422).status_int == 422


def test_issues_filter_by_label_creator_and_assignee(talk):
    talk.post(f"{REPO}/issues", {"title": "One", "labels": ["bug"]}, 201)
    talk.post(f"{REPO}/issues", {"title": "Two"}, 201, headers=token("tok-bob"))
    bob = synthetic_login("tok-bob")
    talk.post(f"{REPO}/issues/1/assignees", {"assignees": [bob, "nobody-known"]}, 201)
    assert [i["number"] for i in talk.get(f"{REPO}/issues?labels=bug", 200).json] == [1]
    assert [i["number"] for i in talk.get(f"{REPO}/issues?creator={bob}", 200).json] == [2]
    assigned = talk.get(f"{REPO}/issues?assignee={bob}", 200).json
    assert [i["number"] for i in assigned] == [1]
    assert [a["login"] for a in assigned[0]["assignees"]] == [bob]  # unknown users dropped
    unassigned = talk.app.delete_json(f"{REPO}/issues/1/assignees", {"assignees": [bob]}).json
    assert unassigned["assignees"] == [] and unassigned["assignee"] is None


def test_each_token_is_a_user_and_the_credential_map_can_name_it(talk):
    talk.app.put_json("/__admin/credentials", [{"credential": "tok-alice", "user": "alice"}])
    by_alice = talk.post(f"{REPO}/issues", {"title": "A"}, 201, headers=token("tok-alice"))
    assert by_alice.json["user"]["login"] == "alice"
    bearer = talk.post(f"{REPO}/issues", {"title": "B"}, 201,
                       headers={"Authorization": "Bearer tok-carol"}).json
    assert bearer["user"]["login"] == synthetic_login("tok-carol") != "mockingbird-user"
    again = talk.post(f"{REPO}/issues", {"title": "C"}, 201, headers=token("tok-carol")).json
    assert again["user"] == bearer["user"]  # the same token is the same user
    anonymous = talk.post(f"{REPO}/issues", {"title": "D"}, 201).json
    assert anonymous["user"]["login"] == "mockingbird-user"
    assert by_alice.json["author_association"] == "MEMBER"


def test_text_past_githubs_limits_is_refused(talk):
    issue = talk.post(f"{REPO}/issues", {"title": "x" * 257}, 422).json
    assert issue["errors"] == [{"resource": "Issue", "code": "custom", "field": "title",
                                "message": "title is too long (maximum is 256 characters)"}]
    talk.post(f"{REPO}/issues", {"title": "ok"}, 201)
    assert talk.post(f"{REPO}/issues/1/comments", {"body": "y" * 65537}, 422).json[
        "errors"][0]["message"] == "body is too long (maximum is 65536 characters)"
    assert talk.post(f"{REPO}/issues/1/labels", ["fine", "z" * 51], 422).status_int == 422
    assert talk.get(f"{REPO}/labels", 200).json == []  # nothing half made
    assert talk.post(f"{REPO}/issues/1/labels", [f"l{n}" for n in range(101)], 422).json[
        "errors"][0]["message"] == "An issue can have at most 100 labels"
