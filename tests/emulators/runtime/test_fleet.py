"""The fleet: real listeners on loopback driven over HTTP — start-up and its files,
the control routes and their errors, namespace holds, quiescence, and operations that commit
across every service or not at all; the CLI as a real process."""
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

import pytest
import requests
import webtest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import emulators
from emulators import start_fleet
from emulators.cli import main
from emulators.runtime import Service
from emulators.runtime.fleet.start import FleetError, FleetStartError
from emulators.runtime.fleet.config import ConfigError, plan
from emulators.runtime.fleet.control import FleetControl
from testkit.counter_service import OPENAPI, provider_app
from testkit.counter_service import service as counter
from tests.emulators.runtime.test_cli import clean_env
from testkit.servers import REPO, unused_port
from testkit.shell import run_as_user, sh_blocks, user_env
from tests.emulators.receiver import Receiver

SHA = "1" * 40
W1 = {"x-mockingbird-namespace": "w1"}
BOTH = {"services": {"hermes": {"port": 0}, "github": {"port": 0}}}
QUIET = {"blockedCommands": 0, "pendingJobs": 0, "pendingWebhooks": 0, "activeConnections": 0}


class Gate:
    """A reset hook that can fail, or wait until the test opens it (a fleet operation in
    flight)."""

    def __init__(self):
        self.entered = threading.Event()
        self.opened = threading.Event()
        self.fail = False

    def __call__(self, instance):
        if self.fail:
            raise RuntimeError("reset hook failed")
        if instance.namespace == "held":
            self.entered.set()
            assert self.opened.wait(10)


def loader_with(**extra):
    """`emulators.load`, plus test services by name."""
    return lambda name: extra[name] if name in extra else emulators.load(name)


def gate_service(gate):
    return Service(name="gate", openapi=OPENAPI, provider_app=provider_app, reset=gate)


@pytest.fixture
def fleet(tmp_path):
    with start_fleet(BOTH, db=str(tmp_path / "fleet.db")) as running:
        yield running


@pytest.fixture(scope="module")
def shared_fleet(tmp_path_factory):
    """One fleet for tests that change nothing a later test reads."""
    with start_fleet(BOTH, db=str(tmp_path_factory.mktemp("fleet") / "fleet.db")) as running:
        yield running


def seed_repo(fleet, name="demo", headers=W1):
    github = fleet.children["github"].url
    answer = requests.post(github + "/__admin/github/repositories", headers=headers, json={
        "owner": "octo", "name": name, "commits": [{"sha": SHA, "parents": []}],
        "branches": {"main": SHA}})
    assert answer.status_code == 201, answer.text


def repo_status(fleet, name="demo", headers=W1):
    return requests.get(f"{fleet.children['github'].url}/repos/octo/{name}",
                        headers=headers).status_code


def post(fleet, path, body=None, **kwargs):
    return requests.post(fleet.admin_url + path, json=body, **kwargs)


# -- start-up, files, health ----------------------------------------------------------------
def test_start_publishes_0600_files_and_removes_only_its_own_on_close(tmp_path):
    ready, connections = tmp_path / "ready.json", tmp_path / "conn.json"
    ready.write_text("stale")
    with start_fleet(BOTH, db=str(tmp_path / "f.db"), ready_file=str(ready),
                     connections_file=str(connections)) as fleet:
        for path in (ready, connections):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
        manifest = json.loads(ready.read_text())
        assert manifest == fleet.manifest
        control = fleet.url
        hermes, github = fleet.children["hermes"].url, fleet.children["github"].url
        assert manifest == {
            "version": 1, "state": "ready", "pid": os.getpid(), "id": fleet.id,
            "startedAt": fleet.started_at, "adminBase": control + "/__admin/fleet",
            "healthUrl": control + "/__admin/health",
            "services": {name: {
                "protocol": "http", "url": url, "healthUrl": url + "/__admin/health",
                "adminUrl": url + "/__admin",
                "namespaces": {"header": "x-mockingbird-namespace",
                               "path": "/__admin/ns/{name}"},
                "processReady": True, "protocolReady": True}
                for name, url in (("hermes", hermes), ("github", github))}}
        assert json.loads(connections.read_text()) == {
            "version": 1, "id": fleet.id, "pid": os.getpid(),
            "services": {"hermes": {"url": hermes}, "github": {"url": github}}}
        assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
        health = requests.get(control + "/__admin/health")
        assert (health.status_code, health.json()) == (200, {
            "status": "ready", "id": fleet.id, "services": {name: {
                "processReady": True, "protocolReady": True, "status": "ready", "url": url}
                for name, url in (("hermes", hermes), ("github", github))}})
        head = requests.head(control + "/__admin/health")
        assert (head.status_code, head.content) == (200, b"")
        assert requests.get(hermes + "/v1/models").status_code == 200
        connections.write_text(json.dumps({"id": "another-fleet"}))  # no longer ours
    assert not ready.exists()
    assert json.loads(connections.read_text()) == {"id": "another-fleet"}
    for url in (control, hermes, github):
        with pytest.raises(requests.ConnectionError):
            requests.get(url + "/__admin/health", timeout=2)


def test_health_answers_503_when_a_service_stops(fleet):
    fleet.children["github"].server.close()
    health = requests.get(fleet.url + "/__admin/health")
    assert health.status_code == 503
    body = health.json()
    assert body["status"] == "failed"
    assert body["services"]["github"] == {"processReady": True, "protocolReady": False,
                                          "status": "failed",
                                          "url": fleet.children["github"].url}
    assert body["services"]["hermes"]["status"] == "ready"


def test_a_service_that_cannot_start_closes_every_listener_started(tmp_path):
    hermes_port = unused_port()
    ready = tmp_path / "ready.json"
    ready.write_text("{}")
    config = {"services": {"hermes": {"port": hermes_port}, "nope": {"port": 0}}}
    with pytest.raises(FleetStartError) as failed:
        start_fleet(config, db=str(tmp_path / "f.db"), ready_file=str(ready))
    assert str(failed.value) == "service nope failed to start; all started listeners were closed"
    assert isinstance(failed.value.cause, LookupError)
    assert not ready.exists()  # a stale file goes before boot, whatever happens next
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", hermes_port), timeout=1).close()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(FleetStartError, match="^service github failed") as failed:
            start_fleet({"services": {"hermes": {"port": 0}, "github": {"port": port}}},
                        db=str(tmp_path / "f.db"))
        assert str(failed.value.cause) == (f"cannot listen on 127.0.0.1:{port}: Address"
                                           " already in use")
        with pytest.raises(FleetError, match="for the fleet control: Address already in use;"
                                             " all started listeners were closed$"):
            start_fleet({"services": {"hermes": {"port": hermes_port}},
                         "control": {"port": port}}, db=str(tmp_path / "f.db"))
    with pytest.raises(FleetError, match=f"^cannot write {tmp_path}/no/ready.json: No such file"
                                         " or directory; all started listeners were closed$"):
        start_fleet({"services": {"hermes": {"port": hermes_port}}}, db=str(tmp_path / "f.db"),
                    ready_file=str(tmp_path / "no" / "ready.json"))
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", hermes_port), timeout=1).close()
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(FleetError, match=f"^cannot open {tmp_path}/file/f.db: "):
        start_fleet(BOTH, db=str(tmp_path / "file" / "f.db"))


@pytest.mark.parametrize("config, message", [
    ([], "config: expected a JSON object"),
    ({"services": {}}, "config must contain at least one service"),
    ({}, "config must contain at least one service"),
    ({"services": {"Hermes": {}}}, 'config: invalid service name "Hermes": it must match'
                                   " /^[a-z0-9]+(?:-[a-z0-9]+)*$/"),
    ({"services": {"hermes": {"protocol": "postgres"}}},
     'config: services.hermes.protocol: only "http" services are served here (got "postgres")'),
    ({"services": {"hermes": {"fixtures": {}}}}, 'config: services.hermes: unsupported field'
     ' "fixtures" (known: protocol, port, host, adminPrefix, adminKey, seed)'),
    ({"services": {"hermes": {"port": 70000}}},
     "config: services.hermes.port must be a TCP port from 0 to 65535 (got 70000)"),
    ({"services": {"hermes": {"port": "1"}}},
     'config: services.hermes.port must be a TCP port from 0 to 65535 (got "1")'),
    ({"services": {"hermes": {"adminPrefix": "admin"}}}, "config: services.hermes.adminPrefix"
     ' must be an absolute path of plain segments, like /__admin (got "admin")'),
    ({"services": {"hermes": {"adminKey": ""}}},
     "config: services.hermes.adminKey must be a non-empty string"),
    ({"services": {"hermes": {"seed": True}}},
     "config: services.hermes.seed must be an integer or a string"),
    ({"services": {"hermes": []}}, "config: services.hermes must be an object"),
    ({"services": {"hermes": {}}, "log": "loud"},
     'config: log must be pretty, json or off (got "loud")'),
    ({"services": {"hermes": {}}, "namespace": "a b"},
     "config: namespace must match /^[A-Za-z0-9_.-]{1,64}$/"),
    ({"services": {"hermes": {}}, "control": {"port": -1}},
     "config: control.port must be a TCP port from 0 to 65535 (got -1)"),
    ({"services": {"hermes": {}}, "control": {"tls": True}},
     'config: control: unsupported field "tls" (known: host, port)'),
    ({"services": {"hermes": {}}, "extra": 1}, 'config: unsupported field "extra" (known:'
     " services, log, adminPrefix, adminKey, namespace, control, db)"),
])
def test_a_bad_config_is_refused_before_anything_starts(config, message):
    with pytest.raises(ConfigError) as refused:
        plan(config)
    assert str(refused.value) == message


def test_precedence_of_admin_key_prefix_log_and_db():
    resolved = plan({"services": {"hermes": {"adminKey": "own", "adminPrefix": "/_h/"},
                                  "github": {"port": 9, "seed": "s"}},
                     "adminKey": "file", "adminPrefix": "/_file"},
                    admin_key="cli", admin_prefix="/_cli", log="json", db="cli.db")
    hermes, github = resolved.children
    assert (resolved.admin_key, resolved.admin_prefix, resolved.log, resolved.db) == \
        ("file", "/_file", "json", "cli.db")
    assert (hermes.admin_key, hermes.admin_prefix, hermes.port) == ("own", "/_h", None)
    assert (github.admin_key, github.admin_prefix, github.port, github.seed) == \
        ("file", "/_file", 9, "s")
    fallback = plan({"services": {"hermes": {}}, "log": "off", "db": "file.db"},
                    admin_key="cli", admin_prefix="/_cli", log="json", db="cli.db")
    assert (fallback.admin_key, fallback.admin_prefix, fallback.log, fallback.db) == \
        ("cli", "/_cli", "off", "file.db")
    assert fallback.children[0].admin_key == "cli"


# -- the control routes ---------------------------------------------------------------------
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


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_readme_runs_top_to_bottom_as_a_user_runs_it(tmp_path):
    """Both walk-throughs of emulators/README.md in one shell with no venv activated: the
    first starts and stops its GitHub emulator, so the fleet then finds its ports free."""
    ports = {8827: unused_port(), 8828: unused_port(), 8829: unused_port()}
    done = run_as_user("\n".join(sh_blocks("emulators/README.md")),
                       user_env(TMPDIR=str(tmp_path)), ports)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines()
             if not line.startswith(("github ", "hermes ", "control ", "fleet "))]
    codes = [line for line in lines if re.fullmatch(r"\d{3}", line)]
    assert codes == ["200", "404", "503", "200", "200", "404", "404", "200"]
    assert '"now":1893456900000' in done.stdout and '"requests":[' in done.stdout
    health, clock, reset, gone, restored, back, final = lines[-7:]
    assert '"status":"ready"' in health and '"now":1893456000000' in clock
    assert (gone, back) == ("404", "200")
    for answer in (reset, restored):
        assert json.loads(answer)["status"] == "ok"
    assert (json.loads(final)["now"], json.loads(final)["frozen"]) == (1_893_456_000_000, True)


# -- the command line -----------------------------------------------------------------------
@pytest.mark.parametrize("args, message", [
    (["serve"], "choose a service (hermes or github), or a fleet with --config FILE"),
    (["serve", "hermes", "--config", "f.json"], "give a service or --config FILE, not both"),
    (["serve", "hermes", "--ready-json"], "--ready-json only applies to a fleet (--config FILE)"),
    (["serve", "github", "--ready-file", "r"],
     "--ready-file only applies to a fleet (--config FILE)"),
    (["serve", "--config", "f.json", "--port", "1"],
     "--port does not apply with --config: set it per service in the file"),
    (["serve", "--config", "f.json", "--host", "::1"],
     "--host does not apply with --config: set it per service in the file"),
])
def test_cli_fleet_options_are_strict(capsys, args, message):
    assert main(args, environ={}) == 2
    assert capsys.readouterr().err.splitlines()[-1] == \
        f"python -m emulators serve: error: {message}"


def test_cli_config_errors_exit_1(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(signal, "signal", lambda *args: None)  # keep pytest's own handlers
    assert main(["serve", "--config", str(tmp_path / "none.json")], environ={}) == 1
    assert capsys.readouterr().err.startswith(f"error: cannot read config {tmp_path}/none.json:")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"services": {"hermes": {"protocol": "redis"}}}))
    assert main(["serve", "--config", str(bad)], environ={}) == 1
    assert capsys.readouterr().err == ('error: config: services.hermes.protocol: only "http"'
                                       ' services are served here (got "redis")\n')


def test_cli_prints_start_up_lines_and_stops_on_a_signal(capsys, monkeypatch, tmp_path):
    handlers, done = {}, {}
    monkeypatch.setattr(signal, "signal", lambda signum, handler: handlers.setdefault(
        signum, handler))
    config = tmp_path / "fleet.json"
    config.write_text(json.dumps({**BOTH, "adminPrefix": "/_ctl"}))
    thread = threading.Thread(target=lambda: done.setdefault("rc", main(
        ["serve", "--config", str(config), "--db", str(tmp_path / "f.db"), "--admin-key", "k",
         "--log", "off"], environ={})))
    thread.start()
    out = ""
    try:
        deadline = time.monotonic() + 10
        while "fleet state:" not in out and time.monotonic() < deadline:
            time.sleep(0.02)
            out += capsys.readouterr().out
    finally:
        while signal.SIGTERM not in handlers and thread.is_alive():
            time.sleep(0.01)
        handlers[signal.SIGTERM]()
        thread.join(10)
    assert done["rc"] == 0
    lines = out.splitlines()
    assert len(lines) == 8, out
    hermes, github, control = (line.rsplit(" ", 1)[1] for line in (lines[0], lines[2], lines[4]))
    lock = "(x-mockingbird-admin-key required)"
    assert lines == [f"hermes emulator listening on {hermes}",
                     f"hermes admin: {hermes}/_ctl {lock}",
                     f"github emulator listening on {github}",
                     f"github admin: {github}/_ctl {lock}",
                     f"fleet control listening on {control}",
                     f"fleet health: GET {control}/_ctl/health",
                     f"fleet admin: {control}/_ctl/fleet {lock}", f"fleet state: {tmp_path}/f.db"]
    with pytest.raises(requests.ConnectionError):
        requests.get(control + "/_ctl/health", timeout=2)


def test_cli_serves_a_fleet_until_sigterm(tmp_path):
    config, ready, connections = (tmp_path / name for name in ("fleet.json", "ready.json",
                                                               "conn.json"))
    config.write_text(json.dumps({"services": {"hermes": {"port": 0}, "github": {"port": 0}},
                                  "log": "json"}))
    connections.write_text("stale")
    proc = subprocess.Popen(
        [sys.executable, "-m", "emulators", "serve", "--config", str(config), "--ready-json",
         "--ready-file", str(ready), "--connections-file", str(connections),
         "--db", str(tmp_path / "f.db")], cwd=REPO, env=clean_env(EMULATORS_ADMIN_KEY="k"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        manifest = json.loads(proc.stdout.readline())
        assert manifest == json.loads(ready.read_text())
        assert manifest["id"] == json.loads(connections.read_text())["id"]
        assert manifest["pid"] == proc.pid
        assert stat.S_IMODE(ready.stat().st_mode) == 0o600
        assert stat.S_IMODE(connections.stat().st_mode) == 0o600
        assert requests.get(manifest["healthUrl"]).json()["status"] == "ready"
        assert requests.get(manifest["adminBase"] + "/metrics").status_code == 401  # env key
        reset = requests.post(manifest["adminBase"] + "/namespaces/w1/reset",
                              headers={"x-mockingbird-admin-key": "k"})
        assert reset.status_code == 200
        github = manifest["services"]["github"]["url"]
        requests.get(github + "/repos/octo/demo", headers=W1)
        logged = json.loads(proc.stdout.readline())
        assert (logged["service"], logged["path"], logged["namespace"], logged["status"]) == \
            ("github", "/repos/octo/demo", "w1", 404)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr.read() == ""
    assert not ready.exists() and not connections.exists()
    with pytest.raises(requests.ConnectionError):
        requests.get(manifest["healthUrl"], timeout=2)


def test_cli_start_failure_exits_1_after_deleting_stale_files(tmp_path):
    config, ready = tmp_path / "fleet.json", tmp_path / "ready.json"
    config.write_text(json.dumps({"services": {"hermes": {"port": 0}, "ghost": {"port": 0}}}))
    ready.write_text('{"id": "old"}')
    done = subprocess.run(
        [sys.executable, "-m", "emulators", "serve", "--config", str(config), "--ready-file",
         str(ready), "--db", str(tmp_path / "f.db")], cwd=REPO, env=clean_env(),
        capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == ("error: service ghost failed to start; all started listeners were"
                           " closed (unknown emulator 'ghost'; choose one of hermes, github)\n")
    assert not ready.exists()


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
