"""The webhooks of a pull request's life, received by an app-like receiver that verifies each
signature; every payload validates against GitHub's webhook schema for its event and action."""
import json
from pathlib import Path

import jsonschema
import pytest

from emulators.github.actors import synthetic_login
from testkit.webhook_receiver import Receiver

from .histories import pr_history, seed_body
from .test_fidelity import not_githubs_times

REPO = "/repos/synthetic-org/example"
SCHEMAS = json.loads((Path(__file__).resolve().parent / "openapi" / "webhooks.json")
                     .read_text())["webhooks"]
BOB = {"Authorization": "token tok-bob"}


def schema_name(event, payload):
    """GitHub's webhook name of a delivery: `check-run-completed`, `status`, ..."""
    if "action" not in payload:
        return event
    return f"{event.replace('_', '-')}-{payload['action'].replace('_', '-')}"


def problems(event, payload):
    validator = jsonschema.Draft202012Validator(SCHEMAS[schema_name(event, payload)]["payload"])
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(payload)]


@pytest.fixture
def receiver():
    server = Receiver(secret="app-secret")
    yield server
    server.close()


def test_every_event_of_a_pull_requests_life_arrives_signed_and_valid(gh, receiver):
    gh.seed(seed_body())
    gh.app.put_json("/__admin/webhook-endpoints", [{"url": receiver.url,
                                                    "secret": receiver.secret}])
    head = pr_history()[1]["t2"]
    gh.post(f"{REPO}/issues", {"title": "Bob exists"}, 201, headers=BOB)
    gh.post(f"{REPO}/pulls", {"title": "Topic", "head": "topic", "base": "main"}, 201)
    gh.post(f"{REPO}/statuses/{head}", {"state": "success", "context": "lint"}, 201)
    gh.post(f"{REPO}/check-runs", {"name": "ci", "head_sha": head, "status": "in_progress"},
            201)
    gh.patch(f"{REPO}/check-runs/1", {"conclusion": "failure"}, 200)
    gh.post(f"{REPO}/check-runs/1/rerequest", None, 201)
    gh.post(f"{REPO}/check-runs", {"name": "ci", "head_sha": head, "conclusion": "success"},
            201)
    gh.post(f"{REPO}/issues/2/comments", {"body": "/merge"}, 201)
    comment = gh.get(f"{REPO}/issues/2/comments", 200).json[0]["id"]
    gh.patch(f"{REPO}/issues/comments/{comment}", {"body": "/merge please"}, 200)
    gh.post(f"{REPO}/issues/2/labels", ["ready"], 200)
    gh.app.delete(f"{REPO}/issues/2/labels/ready", status=200)
    gh.post(f"{REPO}/issues/1/labels", ["ready"], 200)
    gh.patch(f"{REPO}/labels/ready", {"color": "00ff00"}, 200)
    gh.post(f"{REPO}/issues/1/assignees", {"assignees": [synthetic_login("tok-bob")]}, 201)
    gh.patch(f"{REPO}/issues/1", {"state": "closed"}, 200)
    gh.post(f"{REPO}/pulls/2/requested_reviewers",
            {"reviewers": [synthetic_login("tok-bob")]}, 201)
    gh.post(f"{REPO}/pulls/2/reviews", {"event": "APPROVE"}, 200, headers=BOB)
    review = gh.get(f"{REPO}/pulls/2/reviews", 200).json[0]["id"]
    gh.app.put_json(f"{REPO}/pulls/2/reviews/{review}/dismissals", {"message": "stale"})
    gh.post(f"{REPO}/pulls/2/reviews", {"event": "APPROVE"}, 200, headers=BOB)
    gh.app.put_json(f"{REPO}/pulls/2/merge", {"merge_method": "squash"})
    gh.app.delete(f"{REPO}/issues/comments/{comment}", status=204)
    gh.post("/__admin/webhooks/flush", None, 200)

    events = receiver.events()
    assert receiver.refused == []
    assert events == [
        ("ping", None), ("issues", "opened"), ("pull_request", "opened"), ("status", None),
        ("check_run", "created"), ("check_run", "completed"), ("check_suite", "completed"),
        ("check_run", "rerequested"), ("check_run", "created"),
        ("check_suite", "completed"), ("issue_comment", "created"),
        ("issue_comment", "edited"), ("label", "created"), ("pull_request", "labeled"),
        ("pull_request", "unlabeled"), ("issues", "labeled"), ("label", "edited"),
        ("issues", "assigned"), ("issues", "closed"), ("pull_request", "review_requested"),
        ("pull_request_review", "submitted"), ("pull_request_review", "dismissed"),
        ("pull_request_review", "submitted"), ("push", None), ("pull_request", "closed"),
        ("issue_comment", "deleted")]
    for headers, payload in receiver.received:
        assert problems(headers["X-Github-Event"], payload) == [], headers["X-Github-Event"]
        assert not_githubs_times(payload) == [], headers["X-Github-Event"]
    payloads = [payload for _, payload in receiver.received]
    suites = [p for h, p in receiver.received if h["X-Github-Event"] == "check_suite"]
    assert [s["check_suite"]["conclusion"] for s in suites] == ["failure", "success"]
    review = next(p for h, p in receiver.received
                  if h["X-Github-Event"] == "pull_request_review")
    assert review["sender"]["login"] == synthetic_login("tok-bob")
    # the webhook spells the state in lower case, unlike the REST answer
    assert (review["review"]["state"], review["pull_request"]["number"]) == ("approved", 2)
    closed = payloads[-2]
    assert closed["pull_request"]["merged"] is True
    assert closed["pull_request"]["merge_commit_sha"] == payloads[-3]["after"]
