"""RunCreate, RunGet and RunStop on the wire."""
from .conftest import FIRST_RUN, SECOND_RUN, T0_S


def test_first_admission_is_202_started_with_the_deterministic_id(client):
    res = client.submit()
    assert res.status_int == 202
    assert res.json == {"run_id": FIRST_RUN, "status": "started", "replayed": False}
    assert "Idempotency-Replayed" not in res.headers
    assert "ns=default" in res.headers["x-mockingbird"]
    assert res.headers["x-mockingbird-checkpoint"].startswith("cp_")
    assert client.submit().json["run_id"] == SECOND_RUN


def test_poll_returns_the_queued_record(client):
    run_id = client.submit({"input": "x"}).json["run_id"]
    res = client.run(run_id)
    assert res.status_int == 200
    assert res.json == {"object": "hermes.run", "run_id": run_id, "status": "queued",
                        "updated_at": T0_S, "created_at": T0_S, "session_id": run_id,
                        "model": "hermes-agent"}


def test_session_id_and_any_explicit_model_are_kept(client):
    run_id = client.submit({"input": "x", "session_id": "s1", "model": None}).json["run_id"]
    assert client.run(run_id).json["session_id"] == "s1"
    assert client.run(run_id).json["model"] is None
    falsy = client.submit({"input": "x", "session_id": "", "model": ""}).json["run_id"]
    assert client.run(falsy).json["session_id"] == falsy
    assert client.run(falsy).json["model"] == ""


def test_unknown_run_is_404_run_not_found(client):
    res = client.run("run_missing")
    assert res.status_int == 404
    assert res.json == {"error": {"message": "Run not found: run_missing",
                                  "type": "invalid_request_error", "param": None,
                                  "code": "run_not_found"}}


def test_memory_key_is_echoed_only_when_nonempty(client):
    assert client.submit(memory="  mem  ").headers["X-Hermes-Session-Key"] == "mem"
    assert "X-Hermes-Session-Key" not in client.submit(memory="   ").headers


def test_stop_answers_two_fields_then_keeps_stopping(client):
    run_id = client.submit().json["run_id"]
    client.advance(5)
    res = client.stop(run_id, body=b"not json at all")
    assert res.status_int == 200
    assert res.json == {"run_id": run_id, "status": "stopping"}
    record = client.run(run_id).json
    assert record["status"] == "stopping" and record["last_event"] == "run.stopping"
    assert record["updated_at"] == T0_S + 0.005 and record["created_at"] == T0_S
    assert client.stop(run_id).json == {"run_id": run_id, "status": "stopping"}


def test_stop_on_terminal_run_returns_the_full_unchanged_record(client):
    run_id = client.submit().json["run_id"]
    client.observe(run_id, {"status": "completed", "output": "done"}, status=200)
    before = client.run(run_id).json
    client.advance(1000)
    assert client.stop(run_id).json == before


def test_stop_unknown_run_is_404(client):
    assert client.stop("run_nope").json["error"]["code"] == "run_not_found"


def test_polling_changes_nothing(client):
    run_id = client.submit().json["run_id"]
    first = client.run(run_id).json
    assert [client.run(run_id).json for _ in range(3)] == [first] * 3


def test_namespaces_are_isolated(app):
    from .conftest import HermesClient
    a, b = HermesClient(app, "a"), HermesClient(app, "b")
    run_a = a.submit().json["run_id"]
    assert run_a == "run_4a3033333169443477756e7a31375069"
    assert b.submit().json["run_id"] == "run_43436d49743878746c77354658534665"
    assert b.run(run_a).status_int == 404
    assert "ns=b" in b.run(run_a).headers["x-mockingbird"]


def test_unknown_path_and_wrong_method_answer_like_aiohttp(client, app):
    res = app.get("/v1/does-not-exist", status=404)
    assert res.text == "404: Not Found" and res.content_type == "text/plain"
    res = app.get("/v1/runs", status=405)
    assert res.text == "405: Method Not Allowed" and res.headers["Allow"] == "POST"
    assert app.delete("/v1/runs/x", status=405).headers["Allow"] == "GET"
    assert app.get("/v1/runs/a/b", status=404).text == "404: Not Found"
