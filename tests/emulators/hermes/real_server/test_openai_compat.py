"""Replay the OpenAI-compatible surface side by side with what the real server answers.

Each case is a request and the answer Hermes 0.19.0 gave to it (named after that recorded
exchange): status, the headers that matter, and the body's exact shape (key order
included), with ids, times and model text matched by pattern. The cases run against the
emulator; with HERMES_ORACLE_URL set (a real Hermes Agent API server on loopback) they also run
against the real server, which is how these expectations were checked.
"""
import json
import os
import re

import pytest
import requests

from emulators.hermes import serve
from emulators.hermes.settings import HermesSettings

from .matchers import ABSENT, INT, TEXT, Like, mismatches

KEY = "compare-key-0123456789abcdef"
ORACLE_KEY = "oracle-test-key-0123456789abcdef"
pytestmark = pytest.mark.timeout(60)


CHATCMPL = Like(r"chatcmpl-[0-9a-f]{29}")
RESP = Like(r"resp_[0-9a-f]{28}")
MSG = Like(r"msg_[0-9a-f]{24}")
UUID = Like(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
SECURITY = {  # on every JSON answer a Hermes 0.19.0 handler sends
    "Content-Type": "application/json; charset=utf-8",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer", "X-XSS-Protection": "0",
}
SSE = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
       "X-Accel-Buffering": "no", "X-Frame-Options": ABSENT}


def error(message, code=None, *, short=False, type_="invalid_request_error"):
    if short:
        return {"error": {"message": message, "type": type_}}
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


UNAUTHORIZED = {"error": {"message": "Invalid API key", "type": "invalid_request_error",
                          "code": "invalid_api_key"}}
HEALTH = {"status": "ok", "platform": "hermes-agent", "version": "0.19.0"}
HELLO = {"model": "hermes-agent", "messages": [{"role": "user", "content": "Say hello."}]}


def completion(model="hermes-agent"):
    return {"id": CHATCMPL, "object": "chat.completion", "created": INT, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": TEXT},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": INT, "completion_tokens": INT, "total_tokens": INT}}


RESPONSE = {"id": RESP, "object": "response", "status": "completed", "created_at": INT,
            "model": "hermes-agent",
            "output": [{"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": TEXT}]}],
            "usage": {"input_tokens": INT, "output_tokens": INT, "total_tokens": INT}}


def case(name, method, path, *, auth=True, headers=None, body=None, raw=None, status=200,
         expect_headers=None, json_body=ABSENT, text=ABSENT, frames=None, save=None):
    return pytest.param(dict(method=method, path=path, auth=auth, headers=headers or {},
                             body=body, raw=raw, status=status, expect_headers=expect_headers or {},
                             json_body=json_body, text=text, frames=frames, save=save), id=name)


CASES = [
    case("health", "GET", "/health", auth=False, json_body=HEALTH, expect_headers=SECURITY),
    case("v1_health", "GET", "/v1/health", auth=False, json_body=HEALTH),
    case("health_wrong_bearer", "GET", "/health", auth="Bearer wrong", json_body=HEALTH),
    case("health_detailed_no_auth", "GET", "/health/detailed", auth=False, status=401,
         json_body=UNAUTHORIZED, expect_headers=SECURITY),
    case("models", "GET", "/v1/models", json_body={"object": "list", "data": [{
        "id": "hermes-agent", "object": "model", "created": INT, "owned_by": "hermes",
        "permission": [], "root": "hermes-agent", "parent": None}]}, expect_headers=SECURITY),
    case("models_no_auth", "GET", "/v1/models", auth=False, status=401, json_body=UNAUTHORIZED),
    case("models_wrong_bearer", "GET", "/v1/models", auth="Bearer not-the-key", status=401,
         json_body=UNAUTHORIZED),
    case("models_basic_scheme", "GET", "/v1/models", auth="Basic {key}", status=401,
         json_body=UNAUTHORIZED),
    case("models_lowercase_bearer", "GET", "/v1/models", auth="bearer {key}", status=401,
         json_body=UNAUTHORIZED),
    case("models_bearer_extra_spaces", "GET", "/v1/models", auth="Bearer   {key}  "),
    case("capabilities_no_auth", "GET", "/v1/capabilities", auth=False, status=401,
         json_body=UNAUTHORIZED),
    case("chat_completions", "POST", "/v1/chat/completions", body=HELLO,
         json_body=completion(),
         expect_headers={**SECURITY, "X-Hermes-Session-Id": "api-a46d5df2789d4c01"}),
    case("chat_completions_no_auth", "POST", "/v1/chat/completions", auth=False, body=HELLO,
         status=401, json_body=UNAUTHORIZED),
    case("chat_completions_invalid_json_with_bad_key", "POST", "/v1/chat/completions",
         auth="Bearer nope", raw=b"{not json", status=401, json_body=UNAUTHORIZED),
    case("chat_completions_invalid_json", "POST", "/v1/chat/completions", raw=b"{not json",
         status=400, json_body=error("Invalid JSON in request body")),
    case("chat_completions_missing_messages", "POST", "/v1/chat/completions",
         body={"model": "hermes-agent"}, status=400,
         json_body=error("Missing or invalid 'messages' field", short=True)),
    case("chat_completions_empty_messages", "POST", "/v1/chat/completions",
         body={"messages": []}, status=400,
         json_body=error("Missing or invalid 'messages' field", short=True)),
    case("chat_completions_messages_not_list", "POST", "/v1/chat/completions",
         body={"messages": "hello"}, status=400,
         json_body=error("Missing or invalid 'messages' field", short=True)),
    case("chat_completions_only_system", "POST", "/v1/chat/completions",
         body={"messages": [{"role": "system", "content": "sys"}]}, status=400,
         json_body=error("No user message found in messages", short=True)),
    case("chat_completions_last_is_assistant", "POST", "/v1/chat/completions",
         body={"messages": [{"role": "user", "content": "q"},
                            {"role": "assistant", "content": "a"}]}, json_body=completion()),
    case("chat_completions_custom_model", "POST", "/v1/chat/completions",
         body={"model": "custom-name", "messages": [{"role": "user", "content": "hi"}]},
         json_body=completion("custom-name")),
    case("chat_completions_session_id_header", "POST", "/v1/chat/completions", body=HELLO,
         headers={"X-Hermes-Session-Id": "oracle-session-1"},
         expect_headers={"X-Hermes-Session-Id": "oracle-session-1"}),
    case("chat_completions_session_id_unsafe", "POST", "/v1/chat/completions", body=HELLO,
         headers={"X-Hermes-Session-Id": "../etc"}, status=400,
         json_body=error("Invalid session ID", short=True)),
    case("chat_completions_session_key_header", "POST", "/v1/chat/completions", body=HELLO,
         headers={"X-Hermes-Session-Key": "agent:main:oracle"},
         expect_headers={"X-Hermes-Session-Key": "agent:main:oracle"}),
    case("chat_completions_session_key_too_long", "POST", "/v1/chat/completions", body=HELLO,
         headers={"X-Hermes-Session-Key": "k" * 257}, status=400,
         json_body=error("Session key too long", short=True)),
    case("chat_completions_stream", "POST", "/v1/chat/completions",
         body={**HELLO, "stream": True}, expect_headers={
             **SSE, "X-Hermes-Session-Id": "api-a46d5df2789d4c01"}, frames="chat"),
    case("responses_missing_input", "POST", "/v1/responses", body={"model": "hermes-agent"},
         status=400, json_body=error("Missing 'input' field")),
    case("responses_input_wrong_type", "POST", "/v1/responses", body={"input": 42},
         status=400, json_body=error("'input' must be a string or array")),
    case("responses_invalid_json", "POST", "/v1/responses", raw=b"{not json", status=400,
         json_body=error("Invalid JSON in request body", short=True)),
    case("responses_conversation_and_previous", "POST", "/v1/responses",
         body={"input": "x", "conversation": "c1", "previous_response_id": "resp_x"},
         status=400, json_body=error("Cannot use both 'conversation' and 'previous_response_id'")),
    case("responses_previous_unknown", "POST", "/v1/responses",
         body={"input": "x", "previous_response_id": "resp_nope"}, status=404,
         json_body=error("Previous response not found: resp_nope")),
    case("responses_no_user_message", "POST", "/v1/responses", body={"input": "   "},
         status=400, json_body=error("No user message found in input")),
    case("responses_create", "POST", "/v1/responses",
         body={"model": "hermes-agent", "input": "Say hello."}, json_body=RESPONSE,
         expect_headers={**SECURITY, "X-Hermes-Session-Id": UUID}, save="created"),
    case("responses_chain", "POST", "/v1/responses",
         body={"input": "And again.", "previous_response_id": "{created}"}, json_body=RESPONSE,
         expect_headers={"X-Hermes-Session-Id": "{created.session}"}),
    case("responses_get", "GET", "/v1/responses/{created}", json_body=RESPONSE),
    case("responses_get_no_auth", "GET", "/v1/responses/{created}", auth=False, status=401,
         json_body=UNAUTHORIZED),
    case("responses_delete", "DELETE", "/v1/responses/{created}",
         json_body={"id": RESP, "object": "response", "deleted": True}),
    case("responses_delete_again", "DELETE", "/v1/responses/{created}", status=404,
         json_body=error(Like(r"Response not found: resp_[0-9a-f]{28}"))),
    case("responses_get_after_delete", "GET", "/v1/responses/{created}", status=404,
         json_body=error(Like(r"Response not found: resp_[0-9a-f]{28}"))),
    case("responses_get_unknown", "GET", "/v1/responses/resp_unknown", status=404,
         json_body=error("Response not found: resp_unknown")),
    case("responses_store_false", "POST", "/v1/responses",
         body={"input": "Not stored.", "store": False}, json_body=RESPONSE, save="unstored"),
    case("responses_store_false_get", "GET", "/v1/responses/{unstored}", status=404),
    case("responses_stream", "POST", "/v1/responses", body={"input": "Say hello.",
                                                            "stream": True},
         expect_headers={**SSE, "X-Hermes-Session-Id": UUID}, frames="responses"),
    case("unknown_route", "GET", "/v1/does-not-exist", status=404, text="404: Not Found",
         expect_headers={"Content-Type": "text/plain; charset=utf-8", "X-Frame-Options": ABSENT}),
    case("unknown_route_no_auth", "GET", "/v1/does-not-exist", auth=False, status=404,
         text="404: Not Found"),
    case("wrong_method_get_chat", "GET", "/v1/chat/completions", status=405,
         text="405: Method Not Allowed", expect_headers={"Allow": "POST"}),
    case("wrong_method_post_models", "POST", "/v1/models", body={}, status=405,
         text="405: Method Not Allowed", expect_headers={"Allow": "GET"}),
    case("wrong_method_put_health", "PUT", "/health", auth=False, body={}, status=405,
         text="405: Method Not Allowed", expect_headers={"Allow": "GET"}),
    case("wrong_method_get_responses", "GET", "/v1/responses", status=405,
         text="405: Method Not Allowed", expect_headers={"Allow": "POST"}),
    case("body_too_large_before_auth_and_routing", "POST", "/v1/nope", auth=False,
         headers={"Content-Length": "10000001"}, raw=b"", status=413,
         json_body=error("Request body too large.", "body_too_large")),
    case("wrong_method_post_response_item", "POST", "/v1/responses/resp_x", body={},
         status=405, text="405: Method Not Allowed", expect_headers={"Allow": "DELETE,GET"}),
    case("wrong_method_head_health", "HEAD", "/health", auth=False, status=405,
         expect_headers={"Allow": "GET"}),
    case("get_with_origin_not_allowed", "GET", "/v1/models",
         headers={"Origin": "http://localhost:3000"}, status=403, text="",
         expect_headers={"Content-Type": ABSENT}),
    case("options_preflight_no_origin", "OPTIONS", "/v1/chat/completions", auth=False,
         status=403, text=""),
    case("options_preflight_with_origin", "OPTIONS", "/v1/chat/completions", auth=False,
         headers={"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST"},
         status=403, text=""),
]


ENDPOINTS = [("health", "GET", "/health"), ("health_detailed", "GET", "/health/detailed"),
             ("models", "GET", "/v1/models"), ("chat_completions", "POST", "/v1/chat/completions"),
             ("responses", "POST", "/v1/responses"), ("runs", "POST", "/v1/runs"),
             ("run_status", "GET", "/v1/runs/{run_id}"),
             ("run_events", "GET", "/v1/runs/{run_id}/events"),
             ("run_approval", "POST", "/v1/runs/{run_id}/approval"),
             ("run_stop", "POST", "/v1/runs/{run_id}/stop"), ("skills", "GET", "/v1/skills"),
             ("toolsets", "GET", "/v1/toolsets"), ("sessions", "GET", "/api/sessions"),
             ("session_create", "POST", "/api/sessions"),
             ("session", "GET", "/api/sessions/{session_id}"),
             ("session_update", "PATCH", "/api/sessions/{session_id}"),
             ("session_delete", "DELETE", "/api/sessions/{session_id}"),
             ("session_messages", "GET", "/api/sessions/{session_id}/messages"),
             ("session_fork", "POST", "/api/sessions/{session_id}/fork"),
             ("session_chat", "POST", "/api/sessions/{session_id}/chat"),
             ("session_chat_stream", "POST", "/api/sessions/{session_id}/chat/stream")]
FEATURES = {name: True for name in (
    "chat_completions", "chat_completions_streaming", "responses_api", "responses_streaming",
    "run_submission", "run_status", "run_events_sse", "run_stop", "run_approval_response",
    "tool_progress_events", "approval_events", "session_resources", "session_chat",
    "session_chat_streaming", "session_fork")}
CAPABILITIES = {  # 0.19.0's map: no idempotency block, no steer feature or endpoint
    "object": "hermes.api_server.capabilities", "platform": "hermes-agent",
    "model": "hermes-agent", "auth": {"type": "bearer", "required": True},
    "runtime": {"mode": "server_agent", "tool_execution": "server", "split_runtime": False,
                "description": TEXT},
    "features": {**FEATURES, "admin_config_rw": False, "jobs_admin": False,
                 "memory_write_api": False, "skills_api": True, "audio_api": False,
                 "realtime_voice": False, "session_continuity_header": "X-Hermes-Session-Id",
                 "session_key_header": "X-Hermes-Session-Key", "cors": False},
    "endpoints": {name: {"method": method, "path": path} for name, method, path in ENDPOINTS}}
STEER = "/v1/runs/run_doesnotexist/steer"
NOT_FOUND = {"Content-Type": "text/plain; charset=utf-8", "X-Frame-Options": ABSENT}
# What only the emulator's 0.19.0 preset (hermes_run_keys_ignored) answers as 0.19.0 does:
# that release has no steer route at all.
RELEASE_CASES = [
    case("steer_route", "POST", STEER, body={"text": "x"}, status=404, text="404: Not Found",
         expect_headers=NOT_FOUND),
    case("steer_route_no_auth", "POST", STEER, auth=False, body={"text": "x"}, status=404,
         text="404: Not Found", expect_headers=NOT_FOUND),
    case("steer_route_get", "GET", STEER, status=404, text="404: Not Found",
         expect_headers=NOT_FOUND),
    case("steer_route_profile_prefix", "POST", "/p/someprofile" + STEER, body={"text": "x"},
         status=404, text="404: Not Found", expect_headers=NOT_FOUND),
    case("capabilities", "GET", "/v1/capabilities", json_body=CAPABILITIES,
         expect_headers=SECURITY),
]


def chat_frames(frames):
    """The chat stream's frames, as (event, data) pairs."""
    chunk = {"id": CHATCMPL, "object": "chat.completion.chunk", "created": INT,
             "model": "hermes-agent"}
    expected = [(None, {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant"},
                                              "finish_reason": None}]})]
    expected += [(None, {**chunk, "choices": [{"index": 0, "delta": {"content": TEXT},
                                               "finish_reason": None}]})] * (len(frames) - 3)
    expected += [(None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": INT, "completion_tokens": INT,
                                   "total_tokens": INT}}),
                 (None, "[DONE]")]
    problems = mismatches(expected, frames, "frames")
    ids = {data["id"] for _, data in frames if isinstance(data, dict)}
    return problems + ([] if len(ids) == 1 else [f"chunk ids differ: {ids}"])


def responses_frames(frames):
    """The Responses stream's events with sequence numbers from 0."""
    head = {"id": RESP, "object": "response"}
    item = {"id": MSG, "type": "message"}
    text = [{"type": "output_text", "text": TEXT}]
    expected = [
        ("response.created", {"type": "response.created", "response": {
            **head, "status": "in_progress", "created_at": INT, "model": "hermes-agent",
            "output": []}, "sequence_number": 0}),
        ("response.output_item.added", {
            "type": "response.output_item.added", "output_index": 0,
            "item": {**item, "status": "in_progress", "role": "assistant", "content": []},
            "sequence_number": 1}),
        ("response.output_text.delta", {
            "type": "response.output_text.delta", "item_id": MSG, "output_index": 0,
            "content_index": 0, "delta": TEXT, "logprobs": [], "sequence_number": 2}),
        ("response.output_text.done", {
            "type": "response.output_text.done", "item_id": MSG, "output_index": 0,
            "content_index": 0, "text": TEXT, "logprobs": [], "sequence_number": 3}),
        ("response.output_item.done", {
            "type": "response.output_item.done", "output_index": 0,
            "item": {**item, "status": "completed", "role": "assistant", "content": text},
            "sequence_number": 4}),
        ("response.completed", {"type": "response.completed", "response": {
            **RESPONSE, "id": RESP}, "sequence_number": 5}),
    ]
    return mismatches(expected, frames, "events")


def parse_sse(text):
    frames = []
    for block in text.split("\n\n"):
        if not block.strip() or block.startswith(":"):
            continue
        event, data = None, None
        for line in block.split("\n"):
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
        frames.append((event, data if data == "[DONE]" else json.loads(data)))
    return frames


def fill(value, saved):
    """Put saved ids into a case's strings: {created}, {created.session}."""
    if isinstance(value, str):
        return re.sub(r"\{(\w+(?:\.\w+)?)\}", lambda m: saved.get(m.group(1), m.group(0)), value)
    if isinstance(value, dict):
        return {k: fill(v, saved) for k, v in value.items()}
    return value


def replay(base, key, spec, saved):
    """Send one case; return its list of mismatches."""
    headers = dict(spec["headers"])
    if spec["auth"] is True:
        headers["Authorization"] = f"Bearer {key}"
    elif spec["auth"]:
        headers["Authorization"] = spec["auth"].replace("{key}", key)
    data = spec["raw"]
    if spec["body"] is not None:
        data = json.dumps(fill(spec["body"], saved)).encode()
        headers["Content-Type"] = "application/json"
    res = requests.request(spec["method"], base + fill(spec["path"], saved),
                           headers=headers, data=data, timeout=30)
    problems = [] if res.status_code == spec["status"] else [
        f"status {res.status_code} != {spec['status']}: {res.text[:300]}"]
    for name, value in fill(spec["expect_headers"], saved).items():
        actual = res.headers.get(name)
        if value is ABSENT:
            problems += [] if actual is None else [f"header {name}: {actual!r} should be absent"]
        else:
            problems += mismatches(value, actual, f"header {name}")
    if spec["json_body"] is not ABSENT:
        problems += mismatches(spec["json_body"], res.json())
    if spec["text"] is not ABSENT:
        problems += mismatches(spec["text"], res.text)
    if spec["frames"] == "chat":
        problems += chat_frames(parse_sse(res.text))
    elif spec["frames"] == "responses":
        problems += responses_frames(parse_sse(res.text))
    if spec["save"] and res.status_code == 200:
        saved[spec["save"]] = res.json()["id"]
        saved[spec["save"] + ".session"] = res.headers["X-Hermes-Session-Id"]
    return problems


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    db = tmp_path_factory.mktemp("hermes-compare") / "e.sqlite3"
    with serve(HermesSettings(api_key=KEY), db=str(db)) as server:
        yield server.url, KEY, {}


@pytest.fixture(scope="module")
def emulator_0_19(tmp_path_factory):
    db = tmp_path_factory.mktemp("hermes-compare-0-19") / "e.sqlite3"
    with serve(HermesSettings(api_key=KEY), db=str(db)) as server:
        requests.post(server.url + "/__admin/faults", json={"preset": "hermes_run_keys_ignored"},
                      timeout=10).raise_for_status()
        yield server.url, KEY, {}


def oracle_target(saved):
    """(base URL, key, saved values) of the real server named by HERMES_ORACLE_URL, else skip."""
    url = os.environ.get("HERMES_ORACLE_URL")
    if not url:
        pytest.skip("HERMES_ORACLE_URL is not set (a real Hermes server to compare with)")
    return url.rstrip("/"), os.environ.get("HERMES_ORACLE_KEY", ORACLE_KEY), saved


@pytest.fixture(scope="module")
def oracle():
    return oracle_target({})


@pytest.mark.parametrize("spec", CASES)
def test_emulator_answers_as_recorded(emulator, spec):
    base, key, saved = emulator
    assert replay(base, key, spec, saved) == []


def differing(replay, target, cases):
    """{case id: what differs} for the cases whose answers from `target` differ from the
    recorded ones, replayed in order (a chain: later cases use what earlier ones saved)."""
    base, key, saved = target
    problems = {spec.id: replay(base, key, spec.values[0], saved) for spec in cases}
    return {name: found for name, found in problems.items() if found}


def test_real_server_answers_as_recorded(oracle):
    """The same table against the real server: how the expectations above were checked."""
    assert differing(replay, oracle, CASES) == {}


@pytest.mark.parametrize("spec", RELEASE_CASES)
def test_emulator_with_the_0_19_preset_answers_as_recorded(emulator_0_19, spec):
    base, key, saved = emulator_0_19
    assert replay(base, key, spec, saved) == []


def test_real_server_answers_the_release_cases_as_recorded(oracle):
    assert differing(replay, oracle, RELEASE_CASES) == {}
