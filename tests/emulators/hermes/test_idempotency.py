"""Idempotency on the wire: trimming, key rules, replay, conflict, order of checks."""
import pytest

from .conftest import FIRST_RUN, T0


def test_replay_returns_the_original_run_with_the_replay_header(client):
    first = client.submit(key="delivery-1")
    again = client.submit(key="delivery-1")
    assert again.status_int == 202
    assert again.json == {"run_id": first.json["run_id"], "status": "queued", "replayed": True}
    assert again.headers["Idempotency-Replayed"] == "true"


def test_replay_reports_the_current_status(client):
    run_id = client.submit(key="k").json["run_id"]
    client.observe(run_id, {"status": "completed", "output": "x"}, status=200)
    assert client.submit(key="k").json == {"run_id": run_id, "status": "completed",
                                           "replayed": True}


def test_changed_body_with_same_key_is_409_conflict(client):
    client.submit({"input": "a"}, key="k")
    res = client.submit({"input": "b"}, key="k")
    assert res.status_int == 409
    assert res.json == {"error": {
        "message": "Idempotency-Key was already used with a different request payload",
        "type": "invalid_request_error", "param": None, "code": "idempotency_key_conflict"}}


def test_key_order_does_not_matter_but_number_form_does(client):
    client.submit(raw=b'{"input":"x","n":1.0,"a":[1,2]}', key="k")
    assert client.submit(raw=b'{"a":[1,2],"n":1e0,"input":"x"}', key="k").json["replayed"] is True
    assert client.submit(raw=b'{"a":[1,2],"n":1,"input":"x"}', key="k").status_int == 409
    assert client.submit(raw=b'{"a":[2,1],"n":1.0,"input":"x"}', key="k").status_int == 409


def test_memory_key_is_part_of_the_fingerprint(client):
    client.submit(key="k", memory="m1")
    assert client.submit(key="k", memory=" m1 ").json["replayed"] is True
    assert client.submit(key="k", memory="m2").status_int == 409


def test_key_is_trimmed_with_python_whitespace(client):
    run_id = client.submit(key="delivery").json["run_id"]
    res = client.submit(headers={"Idempotency-Key": "\x85delivery\xa0"})
    assert res.json == {"run_id": run_id, "status": "queued", "replayed": True}


def test_blank_key_means_keyless(client):
    a = client.submit(key="   ").json
    b = client.submit(key="").json
    assert a["run_id"] != b["run_id"] and not a["replayed"] and not b["replayed"]


@pytest.mark.parametrize("key", ["a b", "x" * 256, "\xe9", "a\x7fb"])
def test_invalid_keys_are_rejected(client, key):
    res = client.submit(headers={"Idempotency-Key": key})
    assert res.status_int == 400
    assert res.json["error"] == {"message":
                                 "Idempotency-Key must be 1-255 visible ASCII characters",
                                 "type": "invalid_request_error", "param": None,
                                 "code": "invalid_idempotency_key"}


def test_255_character_key_is_fine(client):
    assert client.submit(key="x" * 255).status_int == 202


def test_json_errors_win_over_key_errors_which_win_over_body_errors(client):
    bad = {"Idempotency-Key": "a b"}
    assert client.submit(raw=b"{", headers=bad).json["error"]["message"] == "Invalid JSON"
    res = client.submit({"nope": 1}, headers=bad)
    assert res.json["error"]["code"] == "invalid_idempotency_key"


def test_validation_failures_reserve_nothing_and_keep_the_counter(client):
    client.submit({"input": ""}, key="k", status=400)
    client.submit(raw=b"[1]", key="k", status=501)
    assert client.submit(key="k").json == {"run_id": FIRST_RUN, "status": "started",
                                           "replayed": False}


def test_lone_surrogate_in_keyed_body_is_the_mock_501(client):
    res = client.submit(raw=b'{"input":"\\ud800"}', key="k")
    assert res.status_int == 501
    assert res.json["error"] == {
        "message": "Mockingbird: lone Unicode surrogates cannot be fingerprinted by the pinned"
                   " provider", "type": "mockingbird_unsupported", "param": None,
        "code": "operation_not_implemented"}
    assert client.submit(raw=b'{"input":"\\ud800"}').status_int == 202


def test_reservation_expires_after_24_hours_only_through_keyed_admission(client):
    run_id = client.submit(key="k").json["run_id"]
    client.observe(run_id, {"status": "completed"}, status=200)
    client.clock(set=T0 + 86_400_000)
    assert client.submit(key="k").json["replayed"] is True  # equality keeps it
    client.clock(set=T0 + 86_400_001)
    client.submit(key="other")  # a valid keyed admission prunes
    fresh = client.submit(key="k").json
    assert fresh["replayed"] is False and fresh["run_id"] != run_id


def test_pruning_commits_even_when_the_request_conflicts(client):
    old = client.submit({"input": "a"}, key="old").json["run_id"]
    client.observe(old, {"status": "failed"}, status=200)
    client.submit({"input": "a"}, key="c")
    client.clock(set=T0 + 86_400_001)
    assert client.submit({"input": "b"}, key="c").status_int == 409
    assert client.submit({"input": "a"}, key="old").json["replayed"] is False


def test_unfinished_reservations_never_expire(client):
    run_id = client.submit(key="k").json["run_id"]
    client.clock(set=T0 + 10 * 86_400_000)
    client.submit(key="other")
    assert client.submit(key="k").json == {"run_id": run_id, "status": "queued", "replayed": True}


def test_scopes_isolate_keys_and_runs(client):
    run_id = client.submit(key="k").json["run_id"]
    scope = {"profile": "p2", "identity": "listener-2"}
    assert client.admin("/hermes/scope", scope).json == {**scope, "simulated": True}
    assert client.run(run_id).status_int == 404
    other = client.submit(key="k").json
    assert other["replayed"] is False and other["run_id"] != run_id
    client.admin("/hermes/scope", {"profile": "default",
                                   "identity": "unauthenticated-test-listener"}, status=200)
    assert client.run(run_id).status_int == 200
    assert client.submit(key="k").json["run_id"] == run_id


@pytest.mark.parametrize("body", [{}, {"profile": "p"}, {"profile": "", "identity": "i"},
                                  {"profile": "p", "identity": "i", "x": 1},
                                  {"profile": "p\x00", "identity": "i"}, ["p", "i"],
                                  {"profile": 1, "identity": "i"}])
def test_scope_control_validation(client, body):
    res = client.admin("/hermes/scope", body)
    assert res.status_int == 400
    assert res.json["error"]["message"] == (
        "scope: expected nonempty synthetic profile and identity without NUL")
