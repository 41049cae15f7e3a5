"""GitHub webhooks end to end: a real receiver on loopback verifies each signature and every
payload validates against GitHub's webhook schemas (openapi/webhooks.json)."""
import hashlib
import hmac
import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from emulators.github.app import create_service
from emulators.pytest_plugin import test_app
from testkit.webhook_receiver import Receiver
from testkit.servers import REPO as ROOT, unused_port

from .conftest import B, C, E

REPO = "/repos/synthetic-org/example"
SCHEMAS = json.loads((Path(__file__).resolve().parent / "openapi" / "webhooks.json")
                     .read_text())["webhooks"]
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


def check_payload(event, payload):
    """Validate a payload against GitHub's schema for its event (and action)."""
    name = event if event != "pull_request" else f"pull-request-{payload['action']}"
    validator = jsonschema.Draft202012Validator(SCHEMAS[name]["payload"])
    problems = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                for e in validator.iter_errors(payload)]
    assert problems == [], f"{name}: {problems[:20]}"


@pytest.fixture
def receiver():
    server = Receiver(secret="It's a Secret to Everybody")
    yield server
    server.close()


@pytest.fixture
def hooked(seeded, receiver):
    res = seeded.app.put_json("/__admin/webhook-endpoints",
                              [{"url": receiver.url, "secret": receiver.secret}])
    assert res.json["endpoints"][0]["secret"] == "(set)"
    receiver.wait_for(1)
    return seeded


def flush(client):
    client.post("/__admin/webhooks/flush", None, 200)


def test_every_event_arrives_signed_in_order_and_follows_githubs_schemas(hooked, receiver):
    hooked.create_ref("refs/heads/topic", B, status=201)
    hooked.open_pull(body="First", status=201)
    hooked.patch(f"{REPO}/pulls/1", {"title": "Renamed", "body": "Second"}, 200)
    hooked.patch(f"{REPO}/git/refs/heads/topic", {"sha": E}, 200)
    hooked.patch(f"{REPO}/pulls/1", {"state": "closed"}, 200)
    hooked.patch(f"{REPO}/pulls/1", {"state": "open"}, 200)
    hooked.create_ref("refs/tags/v1", C, status=201)
    flush(hooked)
    assert receiver.events() == [
        ("ping", None), ("create", None), ("push", None), ("pull_request", "opened"),
        ("pull_request", "edited"), ("push", None), ("pull_request", "synchronize"),
        ("pull_request", "closed"), ("pull_request", "reopened"), ("create", None),
        ("push", None)]
    assert receiver.refused == []
    repository_id = str(hooked.get(REPO, 200).json["id"])
    ids = set()
    for headers, payload in receiver.received:
        check_payload(headers["X-Github-Event"], payload)
        assert headers["User-Agent"].startswith("GitHub-Hookshot/")
        assert UUID.match(headers["X-Github-Delivery"]) and headers["X-Github-Hook-Id"] == "1"
        # the legacy SHA-1 signature too, for receivers that still check it
        assert headers["X-Hub-Signature"] == "sha1=" + hmac.new(
            receiver.secret.encode(), json.dumps(payload, separators=(",", ":")).encode(),
            hashlib.sha1).hexdigest()
        target = (headers.get("X-Github-Hook-Installation-Target-Type"),
                  headers.get("X-Github-Hook-Installation-Target-Id"))
        # a repository webhook's target: the repository (the namespace-wide ping names none)
        assert target == ((None, None) if headers["X-Github-Event"] == "ping"
                          else ("repository", repository_id))
        ids.add(headers["X-Github-Delivery"])
    assert len(ids) == len(receiver.received)

    payloads = [payload for _, payload in receiver.received]
    ping, create, push, opened, edited, moved, sync = payloads[:7]
    assert ping["hook"]["config"]["url"] == receiver.url and ping["hook_id"] == 1
    assert (create["ref"], create["ref_type"], create["master_branch"]) == \
        ("topic", "branch", "main")
    assert (push["ref"], push["before"], push["after"], push["created"]) == \
        ("refs/heads/topic", "0" * 40, B, True)
    assert push["sender"]["login"] == "mockingbird-user"
    assert (opened["number"], opened["pull_request"]["body"]) == (1, "First")
    assert edited["changes"] == {"title": {"from": "Add topic"}, "body": {"from": "First"}}
    assert (moved["before"], moved["after"], moved["forced"]) == (B, E, False)
    assert [c["id"] for c in moved["commits"]] == [C, E]  # parents first
    assert (sync["before"], sync["after"], sync["pull_request"]["head"]["sha"]) == (B, E, E)
    assert payloads[-2]["ref_type"] == "tag" and payloads[-1]["ref"] == "refs/tags/v1"


def test_deleting_a_branch_sends_delete_push_and_closes_its_pulls(hooked, receiver):
    hooked.create_ref("refs/heads/topic", B, status=201)
    hooked.open_pull(status=201)
    hooked.app.delete(f"{REPO}/git/refs/heads/topic", status=204)
    flush(hooked)
    assert receiver.events()[4:] == [("delete", None), ("push", None),
                                     ("pull_request", "closed")]
    for headers, payload in receiver.received:
        check_payload(headers["X-Github-Event"], payload)
    delete, push, closed = [payload for _, payload in receiver.received[4:]]
    assert (delete["ref"], delete["ref_type"]) == ("topic", "branch")
    assert (push["before"], push["after"], push["deleted"], push["head_commit"]) == \
        (B, "0" * 40, True, None)
    assert closed["pull_request"]["state"] == "closed"


def test_the_admin_plane_lists_deliveries_and_events(hooked, receiver):
    hooked.create_ref("refs/heads/topic", B, status=201)
    flush(hooked)
    deliveries = hooked.get("/__admin/webhooks", 200).json["deliveries"]
    assert [(d["event"], d["status"], d["response_status"]) for d in deliveries] == [
        ("ping", "delivered", 204), ("create", "delivered", 204), ("push", "delivered", 204)]
    assert [d["event"] for d in hooked.get("/__admin/webhooks?type=push", 200)
            .json["deliveries"]] == ["push"]
    events = hooked.get("/__admin/webhooks/events", 200).json["events"]
    assert events[1]["payload"]["ref"] == "topic"
    hooked.post(f"/__admin/webhooks/{deliveries[2]['id']}/replay", None, 200)
    flush(hooked)
    assert receiver.received[-1][0]["X-Github-Delivery"] == deliveries[2]["id"]
    res = hooked.post("/__admin/webhooks/nope/replay", None, 404)
    assert res.json["error"]["message"] == "no delivery nope"


@pytest.mark.parametrize("mode,expected", [
    ("drop", [("push", None)]),
    ("duplicate", [("create", None), ("create", None), ("push", None)]),
    ("reorder", [("push", None), ("create", None)])])
def test_delivery_faults_from_the_admin_plane(hooked, receiver, mode, expected):
    res = hooked.post("/__admin/webhooks/faults", {"mode": mode}, 201)
    assert res.json == {"namespace": "default", "mode": mode}
    hooked.create_ref("refs/heads/topic", B, status=201)
    flush(hooked)
    assert receiver.events()[1:] == expected
    res = hooked.post("/__admin/webhooks/faults", {"mode": "lose"}, 400)
    assert res.json["error"]["message"] == "mode must be duplicate, reorder or drop"


def test_endpoints_belong_to_their_namespace(seeded, receiver):
    other = Receiver()
    try:
        seeded.app.put_json("/__admin/webhook-endpoints?namespace=w1", [{"url": other.url}])
        seeded.app.put_json("/__admin/webhook-endpoints",
                            [{"url": receiver.url, "secret": receiver.secret,
                              "events": ["pull_request"]}])
        seeded.create_ref("refs/heads/topic", B, status=201)
        seeded.open_pull(status=201)
        flush(seeded)
        seeded.post("/__admin/webhooks/flush?namespace=w1", None, 200)
        assert receiver.events() == [("ping", None), ("pull_request", "opened")]
        assert other.events() == [("ping", None)]  # w1 has no repository and saw nothing else
        bad = seeded.app.put_json("/__admin/webhook-endpoints", {"url": "x"}, status=400)
        assert bad.json["error"]["message"] == "expected [{url, secret?, events?}]"
        seeded.app.delete("/__admin/webhook-endpoints", status=200)
        assert seeded.get("/__admin/webhook-endpoints", 200).json == {"endpoints": []}
    finally:
        other.close()


def test_no_endpoint_means_no_payload_is_built(seeded):
    seeded.create_ref("refs/heads/topic", B, status=201)
    assert seeded.get("/__admin/webhooks", 200).json == {"deliveries": []}
    # the acting user is only created when something needed it
    assert seeded.open_pull(status=201).json["user"]["id"] == 2


# A worker that queues events and dies before its dispatcher sends any of them.
DYING_WORKER = """
import sys
from emulators.runtime import webhooks
webhooks.WebhookHub.wake = lambda self: None  # its dispatcher never gets to run
from emulators.github.app import create_service
from emulators.pytest_plugin import test_app
from tests.emulators.github.conftest import B, graph_body
app = test_app(create_service(), sys.argv[1])
app.post_json("/__admin/github/repositories", graph_body(), status=201)
app.put_json("/__admin/webhook-endpoints", [{"url": sys.argv[2], "secret": "s3"}])
app.post_json("/repos/synthetic-org/example/git/refs", {"ref": "refs/heads/topic", "sha": B},
              status=201)
"""


def test_a_new_process_resumes_what_a_dead_one_queued_on_its_first_request(tmp_path):
    """Queued rows are shared: the next process to serve any request (here a plain read, no
    webhook activity) sends them, in order, without waiting for its own next event."""
    db = tmp_path / "shared.sqlite3"
    port = unused_port()
    url = f"http://127.0.0.1:{port}/hook"
    subprocess.run([sys.executable, "-c", DYING_WORKER, str(db), url], cwd=ROOT,
                   check=True, timeout=60)
    receiver = Receiver(secret="s3", port=port)
    try:
        assert receiver.received == []
        restarted = test_app(create_service(), db)
        assert restarted.runtime.webhooks.pending() == 3
        restarted.get("/repos/synthetic-org/example", status=200)
        receiver.wait_for(3)
        assert receiver.events() == [("ping", None), ("create", None), ("push", None)]
    finally:
        receiver.close()
