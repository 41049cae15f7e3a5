"""Hermes under the shared runtime: reset, timeline checkout, auth, and a fuzz for 5xx answers."""
import json

import pytest
import webtest
from hypothesis import HealthCheck, given, settings, strategies as st

from emulators.hermes.app import create_service
from emulators.hermes.settings import HermesSettings
from emulators.runtime.app import Runtime
from emulators.runtime.settings import Settings

from .conftest import FIRST_RUN, SECOND_RUN, HermesClient


def test_reset_clears_runs_reservations_scope_and_the_id_counter(client, app):
    run_id = client.submit(key="k").json["run_id"]
    client.admin("/hermes/scope", {"profile": "p", "identity": "i"}, status=200)
    app.post("/__admin/reset", status=200)
    assert client.run(run_id).status_int == 404
    assert client.submit(key="k").json == {"run_id": FIRST_RUN, "status": "started",
                                           "replayed": False}


def test_checkout_restores_runs_reservations_and_the_counter(client, app):
    first = client.submit(key="k").json["run_id"]
    checkpoint = app.post_json("/__admin/checkpoints", {}, status=201).json["id"]
    client.observe(first, {"status": "completed"}, status=200)
    assert client.submit().json["run_id"] == SECOND_RUN
    app.post_json("/__admin/branches/main/checkout", {"checkpoint": checkpoint}, status=200)
    assert client.run(first).json["status"] == "queued"
    assert client.run(SECOND_RUN).status_int == 404
    assert client.submit().json["run_id"] == SECOND_RUN


def test_operation_ids_reach_the_journal(client, app):
    run_id = client.submit().json["run_id"]
    client.run(run_id)
    client.stop(run_id)
    client.observe(run_id, {"status": "cancelled"}, status=200)  # so the stream ends
    client.app.get(f"/v1/runs/{run_id}/events", status=200)
    ops = [e.get("operationId") for e in app.get("/__admin/requests").json["requests"]]
    assert {"RunCreate", "RunGet", "RunStop", "RunEvents"} <= set(ops)


@pytest.fixture
def locked(tmp_path):
    service = create_service(HermesSettings(api_key="k" * 20, events_wait_s=0))
    return webtest.TestApp(Runtime(service, Settings(db=str(tmp_path / "a.sqlite3"))))


@pytest.mark.parametrize("header", [None, "Bearer wrong", "bearer " + "k" * 20,
                                    "Basic " + "k" * 20])
def test_bearer_auth_when_a_key_is_configured(locked, header):
    headers = {"Authorization": header} if header else {}
    res = locked.post("/v1/runs", b"{", headers=headers, status=401)  # auth before JSON
    assert res.json == {"error": {"message": "Invalid API key", "type": "invalid_request_error",
                                  "code": "invalid_api_key"}}
    assert locked.get("/v1/runs/run_x", headers=headers, status=401)


def test_bearer_with_extra_spaces_is_accepted(locked):
    res = locked.post("/v1/runs", b'{"input":"x"}',
                      headers={"Authorization": "Bearer   " + "k" * 20 + "  "}, status=202)
    assert res.json["replayed"] is False
    assert locked.get("/v1/does-not-exist", status=404).text == "404: Not Found"  # before auth


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.sampled_from(["input", "content", "role", "model",
                                                       "session_id", "conversation_history",
                                                       "status", "events", "usage", "approval",
                                                       "choice", "text", "x"]), inner,
                                      max_size=4), max_leaves=8)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=JSON, key=st.sampled_from([None, "k", " ", "a b"]), raw=st.binary(max_size=12))
def test_no_request_gets_a_5xx_other_than_the_documented_501(tmp_path_factory, body, key, raw):
    app = webtest.TestApp(Runtime(create_service(HermesSettings(events_wait_s=0)), Settings(
        db=str(tmp_path_factory.mktemp("fuzz") / "f.sqlite3"))))
    client = HermesClient(app)
    encoded = json.dumps(body).encode()
    for res in (client.submit(raw=encoded, key=key), client.submit(raw=raw, key=key)):
        assert res.status_int < 500 or res.status_int == 501, res.text
        assert "Traceback" not in res.text
    run_id = client.submit().json["run_id"]
    for res in (client.observe(run_id, body), client.approval(run_id, encoded),
                client.steer(run_id, encoded), client.approval(run_id, raw),
                client.steer(run_id, raw)):
        assert res.status_int < 500, res.text
