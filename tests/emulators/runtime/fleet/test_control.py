"""The fleet's control listener over real loopback listeners: statuses and error bodies,
namespace holds, quiescence, and operations that commit across every service or not at all."""
import json
import threading
import time

import pytest
import requests
import webtest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulators import start_fleet
from emulators.runtime.fleet.control import FleetControl
from testkit.counter_service import service as counter
from testkit.webhook_receiver import Receiver

from .conftest import (BOTH, QUIET, SHA, W1, Gate, gate_service, loader_with, post,
                       repo_status, seed_repo)


@pytest.mark.parametrize("method, path, data, status, body", [
    ("GET", "/__admin/fleet", None, 404, {"error": "not found"}),
    ("GET", "/elsewhere", None, 404, {"error": "not found"}),
    ("POST", "/__admin/health", None, 404, {"error": "not found"}),
    ("GET", "/__admin/fleet/nothing", None, 405, {"error": "method not allowed"}),
    ("PUT", "/__admin/fleet/clock", None, 405, {"error": "method not allowed"}),
    ("POST", "/__admin/fleet/nothing", None, 404, {"error": "not found"}),
    ("POST", "/__admin/fleet/metrics", None, 404, {"error": "not found"}),
    ("GET", "/__admin/fleet/metrics?namespace=a%20b", None, 400, {"error": "invalid namespace"}),
    ("GET", "/__admin/fleet/metrics?namespace=", None, 400, {"error": "invalid namespace"}),
    ("POST", "/__admin/fleet/namespaces/a!/reset", None, 400, {"error": "invalid namespace"}),
    ("POST", "/__admin/fleet/clock", b"[1]", 400, {"error": "expected JSON object"}),
    ("POST", "/__admin/fleet/clock", b"{nope", 400, {"error": "expected JSON object"}),
    ("POST", "/__admin/fleet/clock", b'{"set": NaN}', 400, {"error": "expected JSON object"}),
    ("POST", "/__admin/fleet/clock", {"services": []}, 400,
     {"error": "services must be a nonempty list"}),
    ("POST", "/__admin/fleet/clock", {"services": "hermes"}, 400,
     {"error": "services must be a nonempty list"}),
    ("POST", "/__admin/fleet/clock", {"services": ["hermes", "nope"]}, 400,
     {"error": "unknown service in selection"}),
    ("POST", "/__admin/fleet/clock", {"set": "soon"}, 400,
     {"error": "set must be epoch ms or ISO-8601"}),
    ("POST", "/__admin/fleet/clock", {"advance": "forever"}, 400, {"error": "invalid advance"}),
    ("POST", "/__admin/fleet/clock", {"set": 0, "advance": "-1d"}, 200, None),
    ("POST", "/__admin/fleet/clock", {"set": 8_640_000_000_000_000, "advance": 1}, 400,
     {"error": "invalid advance"}),
    ("POST", "/__admin/fleet/clock", {"freeze": "yes"}, 400,
     {"error": "freeze must be boolean"}),
    ("POST", "/__admin/fleet/clock", {"resume": True}, 400, {"error": 'unknown field "resume"'}),
    ("POST", "/__admin/fleet/wait-until-idle", {"timeoutMs": -1}, 400,
     {"error": "timeoutMs must be an integer from 0 to 60000"}),
    ("POST", "/__admin/fleet/namespaces/w1/snapshots", {"label": 7}, 400,
     {"error": "label must be a string of at most 200 characters"}),
    ("POST", "/__admin/fleet/namespaces/w1/reset/x/restore", None, 404, {"error": "not found"}),
    ("POST", "/__admin/fleet/namespaces/w1/snapshots/x", None, 404, {"error": "not found"}),
    ("GET", "/__admin/fleet/namespaces/w1/reset", None, 405, {"error": "method not allowed"}),
    ("POST", "/__admin/fleet/namespaces/w1/snapshots/nope/restore", None, 404,
     {"error": "no snapshot in this namespace"}),
    ("DELETE", "/__admin/fleet/namespaces/w1/snapshots/nope", None, 404,
     {"error": "no snapshot in this namespace"}),
])
def test_control_statuses_and_error_bodies(shared_fleet, method, path, data, status, body):
    kwargs = {"data": data} if isinstance(data, bytes) else {"json": data}
    answer = requests.request(method, shared_fleet.url + path, **kwargs)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/json"
    if body is not None:
        assert answer.json() == body


def test_the_control_documents_itself(shared_fleet):
    document = requests.get(shared_fleet.admin_url + "/openapi.json").json()
    operations = {op["operationId"] for item in document["paths"].values() for op in item.values()}
    assert operations == {"fleet_health", "fleet_metrics", "fleet_clock", "fleet_set_clock",
                          "fleet_wait_until_idle", "fleet_openapi", "fleet_reset",
                          "fleet_snapshot", "fleet_restore", "fleet_delete_snapshot"}
    assert "/__admin/fleet/namespaces/{ns}/snapshots/{id}/restore" in document["paths"]


SEGMENT = st.one_of(st.sampled_from(["w1", "default", "a b", "", "x" * 65, "..", "%2F", "\u00e9",
                                     "reset", "snapshots", "restore", "fleet"]),
                    st.text(max_size=8))
FLEET_PATH = st.one_of(
    st.sampled_from(["/__admin/health", "/__admin/fleet/metrics", "/__admin/fleet/clock",
                     "/__admin/fleet/wait-until-idle", "/__admin/fleet/openapi.json",
                     "/__admin/fleet/", "/__admin/fleet", "/", "/__admin"]),
    st.builds(lambda ns, tail: f"/__admin/fleet/namespaces/{ns}/{tail}", SEGMENT,
              st.sampled_from(["reset", "snapshots", "snapshots/x/restore", "snapshots/x",
                               "reset/x/restore", "other"])),
    st.lists(SEGMENT, max_size=5).map(lambda parts: "/__admin/fleet/" + "/".join(parts)))
JSON_BODY = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["15m", "2030-01-01T00:00:00Z", "hermes", "github", 8.64e15, -1]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["set", "advance", "freeze", "services", "label", "timeoutMs", "x"]),
        inner, max_size=4), max_leaves=8)
BODY = st.one_of(st.none(), JSON_BODY.map(lambda v: json.dumps(v).encode()),
                 st.binary(max_size=12), st.sampled_from([b"NaN", b'{"set": Infinity}', b" "]))


@settings(max_examples=60, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH"]), path=FLEET_PATH,
       namespace=st.one_of(st.none(), SEGMENT), header=st.one_of(st.none(), SEGMENT), body=BODY)
def test_fuzzed_controls_answer_json_and_never_5xx(shared_fleet, method, path, namespace,
                                                   header, body):
    from urllib.parse import quote
    control = webtest.TestApp(FleetControl(shared_fleet))
    query = "" if namespace is None else "?namespace=" + quote(namespace, safe="")
    headers = {} if header is None else {"x-mockingbird-namespace": quote(header, safe="")}
    answer = control.request(quote(path, safe="/%") + query, method=method, body=body or b"",
                             headers=headers, expect_errors=True)
    assert answer.status_int in (200, 201, 400, 404, 405, 409), answer.body
    if method != "HEAD":
        payload = answer.json
        assert isinstance(payload, dict)
        if answer.status_int >= 400:
            assert "error" in payload or payload.get("status") == "busy", payload


def test_admin_key_prefixes_and_namespace_resolution(tmp_path):
    config = {"services": {"hermes": {"port": 0, "adminKey": "hermes-key"},
                           "github": {"port": 0, "adminPrefix": "/_gh"}},
              "adminKey": "fleet-key", "adminPrefix": "/_ctl", "namespace": "w9"}
    with start_fleet(config, db=str(tmp_path / "f.db"), admin_key="ignored") as fleet:
        base = fleet.url + "/_ctl/fleet"
        assert fleet.admin_url == base
        assert requests.get(fleet.url + "/_ctl/health").status_code == 200  # open
        for headers in ({}, {"x-mockingbird-admin-key": "wrong"},
                        {"x-mockingbird-admin-key": "ignored"}):
            answer = requests.get(base + "/metrics", headers=headers)
            assert (answer.status_code, answer.json()) == (401, {"error": "admin key required"})
        key = {"x-mockingbird-admin-key": "fleet-key"}

        def namespace(query="", **headers):
            return requests.get(base + "/metrics" + query, headers={**key, **headers}).json()[
                "namespace"]
        assert namespace() == "w9"
        assert namespace(**W1) == "w1"
        assert namespace("?namespace=w2", **W1) == "w2"
        hermes, github = fleet.children["hermes"], fleet.children["github"]
        assert hermes.admin_url == hermes.url + "/_ctl"
        assert github.admin_url == github.url + "/_gh"
        assert fleet.manifest["services"]["github"]["namespaces"]["path"] == "/_gh/ns/{name}"
        assert requests.get(hermes.admin_url + "/namespaces").status_code == 401
        assert requests.get(hermes.admin_url + "/namespaces",
                            headers={"x-mockingbird-admin-key": "hermes-key"}).status_code == 200
        assert requests.get(github.admin_url + "/namespaces", headers=key).status_code == 200
        for secret in ("fleet-key", "hermes-key", "ignored"):
            assert secret not in json.dumps(fleet.manifest)


# -- operations -----------------------------------------------------------------------------
def test_clock_moves_every_selected_service_and_the_fleet_clock(fleet):
    answer = post(fleet, "/clock?namespace=w1", {"set": "2030-01-01T00:00:00Z", "freeze": True})
    at = 1_893_456_000_000
    state = {"now": at, "frozen": True}
    assert answer.status_code == 200
    body = answer.json()
    assert {name: {k: v for k, v in s["result"].items() if k != "offsetMs"}
            for name, s in body["services"].items()} == {"hermes": state, "github": state}
    assert (body["status"], body["namespace"]) == ("ok", "w1")
    answer = post(fleet, "/clock", {"advance": "15m", "services": ["hermes"]}, headers=W1)
    assert answer.json()["services"] == {"hermes": {"status": "ok", "result": {
        "now": at + 900_000, "frozen": True,
        "offsetMs": answer.json()["services"]["hermes"]["result"]["offsetMs"]}}}
    clock = requests.get(fleet.admin_url + "/clock?namespace=w1").json()
    assert (clock["namespace"], clock["now"], clock["frozen"]) == ("w1", at + 900_000, True)
    assert clock["services"]["hermes"]["now"] == at + 900_000
    assert clock["services"]["github"]["now"] == at  # not selected
    github = fleet.children["github"]
    assert requests.get(github.admin_url + "/clock?namespace=w1").json()["now"] == at
    assert requests.get(fleet.admin_url + "/clock").json()["frozen"] is False  # default
    post(fleet, "/clock?namespace=w1", {"freeze": False})
    live = requests.get(fleet.admin_url + "/clock?namespace=w1").json()
    assert live["frozen"] is False and live["services"]["github"]["frozen"] is False
    assert at + 900_000 <= live["services"]["github"]["now"] < at + 960_000


def test_reset_snapshot_and_restore_across_services_and_processes(fleet, tmp_path):
    github = fleet.children["github"]
    seed_repo(fleet)
    seed_repo(fleet, headers={})  # the default namespace: never touched below
    run = requests.post(fleet.children["hermes"].url + "/v1/runs", json={"input": "hi"},
                        headers=W1)
    assert run.status_code in (200, 201, 202), run.text
    run_id = run.json()["run_id"]
    assert requests.post(github.admin_url + "/faults?namespace=w1", json={
        "method": "GET", "path": "/repos/{owner}/{repo}", "status": 503,
        "count": 2}).status_code == 201
    assert repo_status(fleet) == 503  # one of two used
    post(fleet, "/clock?namespace=w1", {"set": 1_000_000, "freeze": True})
    created = post(fleet, "/namespaces/w1/snapshots", {"label": "seeded"})
    assert created.status_code == 201
    snap = created.json()
    snapshot_id = snap["id"]
    assert (snap["status"], snap["namespace"], snap["label"]) == ("ok", "w1", "seeded")
    for name in ("hermes", "github"):
        result = snap["services"][name]["result"]
        assert result["checkpoint"] == f"{snapshot_id}:{name}"
        assert result["timelineCheckpoint"].startswith("cp_")
    seed_repo(fleet, "later")
    post(fleet, "/clock?namespace=w1", {"advance": "1h"})

    reset = post(fleet, "/namespaces/w1/reset")
    assert (reset.status_code, reset.json()) == (200, {
        "status": "ok", "namespace": "w1",
        "services": {"hermes": {"status": "ok"}, "github": {"status": "ok"}}})
    assert repo_status(fleet) == 404 and repo_status(fleet, headers={}) == 200
    hermes_runs = fleet.children["hermes"].url + f"/v1/runs/{run_id}"
    assert requests.get(hermes_runs, headers=W1).status_code == 404
    assert requests.get(github.admin_url + "/faults?namespace=w1").json()["faults"] == []
    assert requests.get(fleet.admin_url + "/clock?namespace=w1").json()["frozen"] is False

    assert post(fleet, f"/namespaces/w2/snapshots/{snapshot_id}/restore").json() == {
        "error": "no snapshot in this namespace"}
    restored = post(fleet, f"/namespaces/w1/snapshots/{snapshot_id}/restore")
    assert restored.status_code == 200, restored.text
    assert set(restored.json()["services"]) == {"hermes", "github"}
    assert requests.get(hermes_runs, headers=W1).status_code == 200
    assert [repo_status(fleet), repo_status(fleet)] == [503, 200]  # the counter came back
    assert repo_status(fleet, "later") == 404
    clock = requests.get(fleet.admin_url + "/clock?namespace=w1").json()
    assert (clock["now"], clock["frozen"], clock["services"]["github"]["now"]) == \
        (1_000_000, True, 1_000_000)

    fleet.close()  # the snapshot is in the database, not in this process
    with start_fleet(BOTH, db=fleet.db_path) as again:
        assert post(again, f"/namespaces/w1/snapshots/{snapshot_id}/restore").status_code == 200
        assert repo_status(again) == 503
        gone = requests.delete(again.admin_url + f"/namespaces/w1/snapshots/{snapshot_id}")
        assert gone.json() == {"status": "ok", "namespace": "w1", "id": snapshot_id}
        assert post(again, f"/namespaces/w1/snapshots/{snapshot_id}/restore").status_code == 404


def test_a_failing_service_rolls_the_whole_operation_back(tmp_path):
    gate = Gate()
    config = {"services": {"hermes": {"port": 0}, "gate": {"port": 0}}}
    with start_fleet(config, db=str(tmp_path / "f.db"),
                     loader=loader_with(gate=gate_service(gate))) as fleet:
        hermes = fleet.children["hermes"].url
        run_id = requests.post(hermes + "/v1/runs", json={"input": "hi"},
                               headers=W1).json()["run_id"]
        gate_url = fleet.children["gate"].url
        requests.post(gate_url + "/counter", headers=W1)
        gate.fail = True
        failed = post(fleet, "/namespaces/w1/reset")
        assert (failed.status_code, failed.json()) == (500, {
            "status": "failed", "namespace": "w1", "failedService": "gate",
            "services": {"hermes": {"status": "ok"}},
            "rollback": {"hermes": "restored", "gate": "restored"}, "rolledBack": True})
        # hermes was reset before gate failed: the rollback undid it too
        assert requests.get(hermes + f"/v1/runs/{run_id}", headers=W1).status_code == 200
        assert requests.get(gate_url + "/counter", headers=W1).json() == {"value": 1}
        gate.fail = False
        assert post(fleet, "/namespaces/w1/reset").status_code == 200
        assert requests.get(hermes + f"/v1/runs/{run_id}", headers=W1).status_code == 404


def test_an_operation_holds_its_namespace_and_runs_alone_there(tmp_path):
    gate = Gate()
    config = {"services": {"hermes": {"port": 0}, "gate": {"port": 0}}}
    with start_fleet(config, db=str(tmp_path / "f.db"),
                     loader=loader_with(gate=gate_service(gate))) as fleet:
        gate_url, hermes = fleet.children["gate"].url, fleet.children["hermes"].url
        held = {"x-mockingbird-namespace": "held"}
        answers = {}
        first = threading.Thread(target=lambda: answers.setdefault(
            "held", post(fleet, "/namespaces/held/reset", timeout=20)))
        first.start()
        try:
            assert gate.entered.wait(10)
            for url, headers in ((gate_url + "/counter", held), (hermes + "/v1/models", held),
                                 (gate_url + "/__admin/ns/held/counter", {}),
                                 (gate_url + "/__admin/requests?namespace=held", W1)):
                answer = requests.get(url, headers=headers, timeout=5)
                assert (answer.status_code, answer.json()) == (409, {
                    "error": "fleet control in progress", "namespace": "held"}), url
            assert requests.get(gate_url + "/__admin/health").status_code == 200
            again = post(fleet, "/clock?namespace=held", {"advance": 1}, timeout=5)
            assert (again.status_code, again.json()) == (409, {
                "error": "another fleet operation is in progress"})
            other = threading.Thread(target=lambda: answers.setdefault(
                "w2", post(fleet, "/namespaces/w2/reset", timeout=20)))
            other.start()  # another namespace is not refused: it waits for the database
            time.sleep(0.1)
            assert "w2" not in answers
        finally:
            gate.opened.set()
            first.join(20)
        other.join(20)
        assert answers["held"].status_code == 200 and answers["w2"].status_code == 200
        assert requests.get(gate_url + "/counter", headers=held).status_code == 200


def test_requests_in_flight_make_the_namespace_busy(tmp_path):
    config = {"services": {"hermes": {"port": 0}, "counter": {"port": 0}}}
    with start_fleet(config, db=str(tmp_path / "f.db"),
                     loader=loader_with(counter=counter)) as fleet:
        streamed = []

        def stream():
            with requests.get(fleet.children["counter"].url + "/stream?n=4&wait=1",
                              headers=W1, stream=True, timeout=10) as answer:
                streamed.append(answer.content)
        reader = threading.Thread(target=stream)
        reader.start()
        deadline = time.monotonic() + 5
        while requests.get(fleet.admin_url + "/metrics?namespace=w1").json()["services"][
                "counter"]["activeRequests"] != 1:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        busy = post(fleet, "/namespaces/w1/reset")
        diagnostics = {**QUIET, "activeRequests": 1, "unmatchedRequests": 0}
        assert (busy.status_code, busy.json()) == (409, {
            "error": "namespace is not quiescent", "services": {"counter": diagnostics}})
        waited = post(fleet, "/wait-until-idle?namespace=w1")
        assert (waited.status_code, waited.json()["status"]) == (409, "busy")
        assert post(fleet, "/namespaces/w1/reset", {"services": ["hermes"]}).status_code == 200
        assert post(fleet, "/namespaces/w2/reset").status_code == 200
        idle = post(fleet, "/wait-until-idle?namespace=w1", {"timeoutMs": 5000})
        assert (idle.status_code, idle.json()) == (200, {
            "status": "idle", "namespace": "w1", "services": {
                name: {**QUIET, "activeRequests": 0, "unmatchedRequests": 0}
                for name in ("hermes", "counter")}})
        reader.join(10)
        assert streamed == [b"data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\n"]
        assert post(fleet, "/namespaces/w1/reset").status_code == 200


def test_pending_webhooks_keep_the_namespace_busy_and_snapshots_keep_the_hub(fleet):
    """`pendingWebhooks` counts queued deliveries, which refuse an operation and
    hold wait-until-idle; a fleet snapshot brings the namespace's endpoints and log back."""
    github = fleet.children["github"].admin_url
    seed_repo(fleet)
    receiver = Receiver(secret="s", statuses=[500])  # the ping fails once: retried in 1 s
    try:
        assert requests.put(github + "/webhook-endpoints?namespace=w1", json=[
            {"url": receiver.url, "secret": "s"}]).status_code == 200
        metrics = requests.get(fleet.admin_url + "/metrics?namespace=w1").json()["services"]
        assert metrics["github"]["pendingWebhooks"] == 1
        assert metrics["hermes"]["pendingWebhooks"] == 0  # no hub
        busy = post(fleet, "/namespaces/w1/reset")
        assert busy.status_code == 409
        assert busy.json()["services"]["github"]["pendingWebhooks"] == 1
        assert post(fleet, "/namespaces/w2/reset").status_code == 200  # another namespace
        idle = post(fleet, "/wait-until-idle?namespace=w1", {"timeoutMs": 10_000})
        assert (idle.status_code, idle.json()["services"]["github"]["pendingWebhooks"]) == \
            (200, 0)
        assert receiver.events() == [("ping", None)]

        snap = post(fleet, "/namespaces/w1/snapshots").json()["id"]
        log = requests.get(github + "/webhooks?namespace=w1").json()["deliveries"]
        assert [(d["event"], d["status"], d["attempts"]) for d in log] == [
            ("ping", "delivered", 2)]
        endpoints = requests.get(github + "/webhook-endpoints?namespace=w1").json()
        assert requests.delete(github + "/webhook-endpoints?namespace=w1").status_code == 200
        assert post(fleet, "/namespaces/w1/reset").status_code == 200
        assert requests.get(github + "/webhooks?namespace=w1").json()["deliveries"] == []

        assert post(fleet, f"/namespaces/w1/snapshots/{snap}/restore").status_code == 200
        assert requests.get(github + "/webhooks?namespace=w1").json()["deliveries"] == log
        assert requests.get(github + "/webhook-endpoints?namespace=w1").json() == endpoints
        # the restored endpoint is live: the next event reaches it under the same hook id
        requests.post(fleet.children["github"].url + "/repos/octo/demo/git/refs", headers=W1,
                      json={"ref": "refs/heads/topic", "sha": SHA}).raise_for_status()
        received = receiver.wait_for(3)
        assert [(h["X-Github-Event"], h["X-Github-Hook-Id"]) for h, _ in received[1:]] == [
            ("create", str(endpoints["endpoints"][0]["id"])),
            ("push", str(endpoints["endpoints"][0]["id"]))]
    finally:
        receiver.close()
