"""Submission body rules and headers of `/v1/runs`."""
import pytest

ENV = {"type": "invalid_request_error", "param": None, "code": None}


@pytest.mark.parametrize("raw", [b"", b"   ", b"{", b'{"input":NaN}', b'{"input":"x",}',
                                 b"{'input':'x'}"])
def test_invalid_json(client, raw):
    res = client.submit(raw=raw)
    assert res.status_int == 400
    assert res.json == {"error": {"message": "Invalid JSON", **ENV}}


@pytest.mark.parametrize("body,message", [
    ({}, "Missing 'input' field"),
    ({"input": ""}, "Missing 'input' field"),
    ({"input": []}, "Missing 'input' field"),
    ({"input": 0}, "Missing 'input' field"),
    ({"input": 5}, "No user message found in input"),
    ({"input": True}, "No user message found in input"),
    ({"input": {"a": 1}}, "No user message found in input"),
    ({"input": [{"role": "user"}]}, "No user message found in input"),
    ({"input": [{"content": ""}]}, "No user message found in input"),
    ({"input": "x", "conversation_history": "nope"},
     "'conversation_history' must be an array of message objects"),
    ({"input": "x", "conversation_history": [{"role": "u", "content": None}, {"role": "u"}]},
     "conversation_history[1] must have 'role' and 'content' fields"),
    ({"input": "x", "conversation_history": [1]},
     "conversation_history[0] must have 'role' and 'content' fields"),
])
def test_body_errors(client, body, message):
    res = client.submit(body)
    assert res.status_int == 400
    assert res.json == {"error": {"message": message, **ENV}}


@pytest.mark.parametrize("body", [
    {"input": [{"role": "assistant", "content": "x"}]},
    {"input": "x", "conversation_history": {}},
    {"input": "x", "conversation_history": 0},
    {"input": "x", "instructions": 5, "previous_response_id": "resp_missing", "extra": [1]},
    {"input": ["junk", {"content": "x"}]},
])
def test_accepted_bodies(client, body):
    assert client.submit(body).status_int == 202


@pytest.mark.parametrize("raw,message", [
    (b"[1]", "non-object submission roots are outside the verified subset"),
    (b"null", "non-object submission roots are outside the verified subset"),
    (b'{"input":"x","hosted_room_dispatch":null}',
     "hosted-room dispatch is outside the peer-run subset"),
    (b'{"_room_execution_policy":1}', "hosted-room dispatch is outside the peer-run subset"),
    (b'{"input":[{"content":"x"},"y"]}',
     "malformed input elements are outside the verified subset"),
])
def test_mock_501s(client, raw, message):
    res = client.submit(raw=raw)
    assert res.status_int == 501
    assert res.json["error"] == {"message": "Mockingbird: " + message,
                                 "type": "mockingbird_unsupported", "param": None,
                                 "code": "operation_not_implemented"}


def test_content_type_is_ignored_and_bom_dropped(client, app):
    res = app.post("/v1/runs", b'\xef\xbb\xbf{"input":"x"}', headers={"Content-Type": "text/plain"})
    assert res.status_int == 202


def test_duplicate_keys_last_wins(client):
    assert client.submit(raw=b'{"input":"","input":"x"}').status_int == 202


def test_memory_key_too_long_or_with_nul_is_upstream_400(client):
    res = client.submit(memory="m" * 257)
    assert res.status_int == 400
    assert res.json == {"error": {"message": "Session key too long",
                                  "type": "invalid_request_error"}}
    assert client.submit(memory="m" * 256).status_int == 202
    res = client.submit(memory="a\x00b", raw=b"{")  # header checks come before the body
    assert res.json == {"error": {"message": "Invalid session key",
                                  "type": "invalid_request_error"}}


def test_oversized_body_is_413(app):
    res = app.post("/v1/runs", b"x", headers={"Content-Length": "10000001"}, status="*",
                   expect_errors=True)
    assert res.status_int == 413
    assert res.json["error"]["code"] == "body_too_large"
