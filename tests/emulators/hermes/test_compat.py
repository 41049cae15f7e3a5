"""The OpenAI-compatible surface in-process: scripted replies, failures, idempotency, the
responses store, CORS and the concurrency preset, as Hermes 0.19.0 answers."""
import json

import pytest
import webtest
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from emulators.hermes.app import create_service
from emulators.hermes.settings import HermesSettings
from emulators.runtime.app import Runtime
from emulators.runtime.settings import Settings

from .conftest import T0

KEY = "compat-key-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture
def api(tmp_path):
    settings = HermesSettings(api_key=KEY, cors_origins=("http://app.example",))
    runtime = Runtime(create_service(settings), Settings(db=str(tmp_path / "e.sqlite3")))
    app = webtest.TestApp(runtime)
    app.post_json("/__admin/clock", {"set": T0, "freeze": True}, status=200)
    return app


def chat(api, content="hi", status=200, headers=None, **extra):
    body = {"model": "hermes-agent", "messages": [{"role": "user", "content": content}], **extra}
    return api.post_json("/v1/chat/completions", body, headers={**AUTH, **(headers or {})},
                         status=status)


def respond(api, status=200, headers=None, **body):
    return api.post_json("/v1/responses", body, headers={**AUTH, **(headers or {})},
                         status=status)


def script(api, *replies, status=200):
    return api.post_json("/__admin/hermes/replies", {"replies": list(replies)}, status=status)


def frames(res):
    out = []
    for block in res.text.split("\n\n"):
        if not block:
            continue
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        data = lines["data"]
        out.append((lines.get("event"), data if data == "[DONE]" else json.loads(data)))
    return out


def test_synthetic_reply_is_derived_from_the_input_and_deterministic(api, tmp_path):
    first = chat(api, "What is 6 x 7?").json
    assert first["choices"][0]["message"]["content"] == "Hermes emulator reply to: What is 6 x 7?"
    assert first["created"] == T0 // 1000
    assert first["usage"] == {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}
    # A fresh emulator with the same seed hands out the same ids.
    again = Runtime(create_service(HermesSettings(api_key=KEY)),
                    Settings(db=str(tmp_path / "other.sqlite3")))
    assert chat(webtest.TestApp(again), "What is 6 x 7?").json["id"] == first["id"]


def test_scripted_replies_are_consumed_in_order_per_namespace(api):
    script(api, {"text": "one"}, {"text": "two"})
    api.post_json("/__admin/hermes/replies", {"text": "other ns"},
                  headers={"x-mockingbird-namespace": "w2"}, status=200)
    assert api.get("/__admin/hermes/replies").json == {"replies": [{"text": "one"},
                                                                   {"text": "two"}]}
    assert chat(api).json["choices"][0]["message"]["content"] == "one"
    assert respond(api, input="x").json["output"][0]["content"][0]["text"] == "two"
    assert chat(api, "again").json["choices"][0]["message"]["content"].startswith("Hermes")
    other = chat(api, headers={"x-mockingbird-namespace": "w2"}).json
    assert other["choices"][0]["message"]["content"] == "other ns"
    script(api, {"text": "dropped"})
    assert api.delete("/__admin/hermes/replies").json == {"replies": []}
    assert chat(api).json["choices"][0]["message"]["content"].startswith("Hermes")


def test_replies_control_rejects_bad_scripts(api):
    bad = [{"txt": "typo"}, {"deltas": "abc"}, {"deltas": [5]}, {"deltas": [{"args": {}}]},
           {"usage": {"input_tokens": 1}}, {"failed": "yes"}, {"delay_ms": -1}]
    for reply in bad:
        res = api.post_json("/__admin/hermes/replies", reply, status=400)
        assert res.json["error"]["message"].startswith("replies: ")
    assert api.get("/__admin/hermes/replies").json == {"replies": []}


def test_chat_stream_has_tool_progress_events_and_finish_usage(api):
    script(api, {"deltas": ["Looking", {"tool": "terminal", "id": "call_1", "label": "ls -la",
                                        "emoji": "💻"}, {"tool": "_thinking"}, " done"],
                 "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}})
    res = chat(api, stream=True)
    assert res.headers["Content-Type"] == "text/event-stream"
    assert "X-Frame-Options" not in res.headers  # upstream streams skip the security headers
    items = frames(res)
    assert [(event, data if event or data == "[DONE]" else data["choices"][0]["delta"])
            for event, data in items] == [
        (None, {"role": "assistant"}), (None, {"content": "Looking"}),
        ("hermes.tool.progress", {"tool": "terminal", "emoji": "💻", "label": "ls -la",
                                  "toolCallId": "call_1", "status": "running"}),
        ("hermes.tool.progress", {"tool": "terminal", "toolCallId": "call_1",
                                  "status": "completed"}),
        (None, {"content": " done"}), (None, {}), (None, "[DONE]")]
    assert items[-2][1]["usage"] == {"prompt_tokens": 3, "completion_tokens": 2,
                                     "total_tokens": 5}
    assert items[-2][1]["choices"][0]["finish_reason"] == "stop"


def test_failed_run_without_text_is_502_agent_incomplete(api):
    script(api, {"failed": True, "error": "provider down"})
    res = chat(api, status=502)
    assert res.json == {"error": {"message": "provider down", "type": "server_error",
                                  "param": None, "code": "agent_incomplete",
                                  "hermes": {"completed": False, "partial": False,
                                             "failed": True}}}
    assert res.headers["X-Hermes-Completed"] == "false"
    assert res.headers["X-Hermes-Partial"] == "false"


def test_partial_text_is_200_with_length_finish_and_hermes_block(api):
    script(api, {"text": "half an answ", "partial": True, "error": "output truncated"})
    res = chat(api)
    assert res.json["choices"][0]["finish_reason"] == "length"
    assert res.json["hermes"] == {"completed": False, "partial": True, "failed": False,
                                  "error": "output truncated", "error_code": "output_truncated"}
    assert res.headers["X-Hermes-Error"] == "output truncated"
    assert res.headers["X-Hermes-Partial"] == "true"


def test_exception_is_500_internal_server_error_and_never_cached(api):
    script(api, {"exception": "boom"}, {"text": "recovered"})
    assert chat(api, status=500, headers={"Idempotency-Key": "k"}).json["error"] == {
        "message": "Internal server error: boom", "type": "server_error", "param": None,
        "code": None}
    retry = chat(api, headers={"Idempotency-Key": "k"}).json
    assert retry["choices"][0]["message"]["content"] == "recovered"


def test_stream_failure_ends_with_error_finish(api):
    script(api, {"deltas": ["par"], "failed": True, "error": "died"})
    final = frames(chat(api, stream=True))[-2][1]
    assert final["choices"][0]["finish_reason"] == "error"
    assert final["error"] == {"message": "died", "type": "agent_error"}
    assert final["hermes"]["failed"] is True


def test_idempotency_key_replays_the_cached_result_with_new_ids(api):
    script(api, {"text": "cached answer"}, {"text": "second run"}, {"text": "third run"})
    first = chat(api, headers={"Idempotency-Key": "k1"}).json
    replay = chat(api, headers={"Idempotency-Key": "k1"}).json
    assert replay["choices"] == first["choices"] and replay["id"] != first["id"]
    # A different body under the same key runs again and replaces the entry (no 409).
    assert chat(api, "changed", headers={"Idempotency-Key": "k1"}).json["choices"][0][
        "message"]["content"] == "second run"
    assert chat(api, "changed", headers={"Idempotency-Key": "k1"}).json["choices"][0][
        "message"]["content"] == "second run"
    # Streams never use the cache.
    assert "third" in frames(chat(api, "changed", stream=True,
                                  headers={"Idempotency-Key": "k1"}))[1][1]["choices"][0][
        "delta"]["content"]


def test_idempotency_cache_expires_after_300_seconds(api):
    script(api, {"text": "a"}, {"text": "b"})
    assert chat(api, headers={"Idempotency-Key": "k"}).json["choices"][0]["message"][
        "content"] == "a"
    api.post_json("/__admin/clock", {"advance": 301_000}, status=200)
    assert chat(api, headers={"Idempotency-Key": "k"}).json["choices"][0]["message"][
        "content"] == "b"


def test_responses_output_lists_tool_calls_before_the_message(api):
    script(api, {"deltas": [{"tool": "search", "id": "call_9", "arguments": {"q": "x"},
                             "result": {"hits": 1}}, "found it"]})
    output = respond(api, input="find").json["output"]
    assert output == [
        {"type": "function_call", "name": "search", "arguments": '{"q": "x"}',
         "call_id": "call_9"},
        {"type": "function_call_output", "call_id": "call_9", "output": '{"hits": 1}'},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "found it"}]}]


def test_conversation_name_chains_to_its_latest_response(api):
    first = respond(api, input="one", conversation="chat-a")
    second = respond(api, input="two", conversation="chat-a")
    assert second.headers["X-Hermes-Session-Id"] == first.headers["X-Hermes-Session-Id"]
    third = respond(api, input="three", conversation="chat-b")
    assert third.headers["X-Hermes-Session-Id"] != first.headers["X-Hermes-Session-Id"]
    api.delete(f"/v1/responses/{second.json['id']}", headers=AUTH, status=200)
    # Deleting the latest response forgets the name: the next turn starts a new session.
    fourth = respond(api, input="four", conversation="chat-a")
    assert fourth.headers["X-Hermes-Session-Id"] != first.headers["X-Hermes-Session-Id"]


def test_store_keeps_the_100_most_recently_used_responses(api):
    ids = [respond(api, input=f"n{i}").json["id"] for i in range(101)]
    api.get(f"/v1/responses/{ids[1]}", headers=AUTH, status=200)  # refreshes its LRU place
    respond(api, input="one more")
    api.get(f"/v1/responses/{ids[0]}", headers=AUTH, status=404)  # evicted first
    api.get(f"/v1/responses/{ids[2]}", headers=AUTH, status=404)  # then the least recent
    api.get(f"/v1/responses/{ids[1]}", headers=AUTH, status=200)
    api.get(f"/v1/responses/{ids[100]}", headers=AUTH, status=200)


def test_response_stream_persists_and_can_fail(api):
    script(api, {"failed": True, "error": "model gone"})
    events = frames(respond(api, input="x", stream=True))
    assert [event for event, _ in events] == ["response.created", "response.failed"]
    failed = events[-1][1]["response"]
    assert failed["status"] == "failed"
    assert failed["error"] == {"message": "model gone", "type": "server_error"}
    assert api.get(f"/v1/responses/{failed['id']}", headers=AUTH).json == failed


def test_auth_runs_before_the_concurrency_cap_and_the_body(api):
    api.post_json("/__admin/faults", {"preset": "hermes_chat_throttled"}, status=201)
    api.post("/v1/chat/completions", b"{bad", status=401)  # auth comes first
    res = api.post("/v1/chat/completions", b"{bad", headers=AUTH, status=429)
    assert res.json == {"error": {"message": "Too many concurrent runs (max 10)",
                                  "type": "rate_limit_error", "param": None,
                                  "code": "rate_limit_exceeded"}}
    assert res.headers["Retry-After"] == "1"
    assert respond(api, status=429, input="x").json["error"]["code"] == "rate_limit_exceeded"
    api.delete("/__admin/faults", status=200)  # the runs finished: capacity again
    assert chat(api).status_code == 200


def test_allowed_origin_gets_cors_headers_and_preflight(api):
    origin = {"Origin": "http://app.example"}
    res = api.get("/v1/models", headers={**AUTH, **origin}, status=200)
    assert res.headers["Access-Control-Allow-Origin"] == "http://app.example"
    assert res.headers["Vary"] == "Origin" and res.headers["Access-Control-Max-Age"] == "600"
    pre = api.options("/v1/chat/completions", headers=origin, status=200)
    assert pre.headers["Access-Control-Allow-Methods"] == "GET, POST, DELETE, OPTIONS"
    assert pre.headers["Access-Control-Allow-Headers"] == (
        "Authorization, Content-Type, Idempotency-Key")
    assert "Content-Type" not in pre.headers and pre.body == b""
    api.get("/v1/models", headers={**AUTH, "Origin": "http://evil.example"}, status=403)


def test_capabilities_are_truthful_about_the_emulator(api):
    caps = api.get("/v1/capabilities", headers=AUTH).json
    assert caps["auth"] == {"type": "bearer", "required": True}
    assert caps["features"]["run_steer"] is True and caps["features"]["cors"] is True
    assert caps["features"]["session_resources"] is True and caps["features"]["jobs_admin"] is False
    assert caps["idempotency"] == {"supported": True, "durable": True,
                                   "retention_seconds": 86400}
    for endpoint in caps["endpoints"].values():  # every advertised endpoint answers
        path = endpoint["path"].replace("{run_id}", "run_x").replace("{session_id}", "s")
        res = api.request(path, method=endpoint["method"], headers=AUTH, status="*")
        assert res.content_type != "text/plain", (endpoint, res.status)  # no router 404/405


def test_session_key_without_api_key_is_accepted_and_echoed(tmp_path):
    runtime = Runtime(create_service(HermesSettings()), Settings(db=str(tmp_path / "o.sqlite3")))
    res = chat(webtest.TestApp(runtime), headers={"X-Hermes-Session-Key": "agent:main:x"})
    assert res.headers["X-Hermes-Session-Key"] == "agent:main:x"


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.sampled_from([
                        "messages", "role", "content", "input", "model", "stream", "store",
                        "previous_response_id", "conversation", "conversation_history",
                        "instructions", "type", "text", "deltas", "tool", "usage", "failed",
                        "replies", "x"]), inner, max_size=4), max_leaves=8)


@hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=JSON, raw=st.binary(max_size=12),
       session=st.sampled_from([None, "s1", "../x", "a\tb", "x" * 300]))
def test_no_request_gets_a_5xx(tmp_path_factory, body, raw, session):
    runtime = Runtime(create_service(HermesSettings()), Settings(
        db=str(tmp_path_factory.mktemp("fuzz") / "f.sqlite3")))
    app = webtest.TestApp(runtime)
    headers = {"X-Hermes-Session-Id": session} if session else {}
    encoded = json.dumps(body).encode()
    for path in ("/v1/chat/completions", "/v1/responses"):
        for data in (encoded, raw):
            res = app.post(path, data, headers=headers, status="*")
            assert res.status_int < 500, res.text
            assert "Traceback" not in res.text
    res = app.post("/__admin/hermes/replies", encoded, status="*")
    assert res.status_int in (200, 400), res.text


@pytest.mark.parametrize("path,raw,message,code", [
    ("/v1/chat/completions", b"[1, 2]", "Request body must be a JSON object", None),
    ("/v1/chat/completions", b'"hi"', "Request body must be a JSON object", None),
    ("/v1/chat/completions", b'{"messages": [null]}',
     "Invalid type for 'messages[0]': expected an object, but got null instead.", "invalid_type"),
    ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "x"}, 3]}',
     "Invalid type for 'messages[1]': expected an object, but got a number instead.",
     "invalid_type"),
    ("/v1/responses", b"[1, 2]", "Request body must be a JSON object", None),
])
def test_a_clients_shape_mistake_is_a_400_in_the_openai_envelope(api, path, raw, message, code):
    # The real server crashes with a 500 here; a client's mistake is a 4xx, never a 5xx.
    res = api.post(path, raw, headers={**AUTH, "Content-Type": "application/json"}, status=400)
    error = res.json["error"]
    assert (error["message"], error["type"]) == (message, "invalid_request_error")
    assert error.get("code") == code


def test_deeply_nested_body_is_invalid_json_not_a_5xx(api):
    deep = b"[" * 5000 + b"]" * 5000
    for path in ("/v1/chat/completions", "/v1/responses", "/v1/runs"):
        res = api.post(path, deep, headers={**AUTH, "Content-Type": "application/json"},
                       status=400)
        assert res.json["error"]["message"].startswith("Invalid JSON")
