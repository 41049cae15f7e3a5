"""The sessions API in-process (as Hermes 0.19.0 serves it): CRUD, paging, fork, session chat
and its stream, and sessions filled by chat completions, responses and runs."""
import json

import pytest
import webtest

from emulators.hermes.app import create_service
from emulators.hermes.settings import HermesSettings
from emulators.runtime.app import Runtime
from emulators.runtime.settings import Settings

from .conftest import T0, T0_S

KEY = "sessions-key-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {KEY}"}
SESSION_KEYS = [
    "id", "source", "user_id", "model", "title", "started_at", "ended_at", "end_reason",
    "message_count", "tool_call_count", "input_tokens", "output_tokens", "cache_read_tokens",
    "cache_write_tokens", "reasoning_tokens", "estimated_cost_usd", "actual_cost_usd",
    "api_call_count", "parent_session_id", "has_system_prompt", "has_model_config"]
MESSAGE_KEYS = ["id", "session_id", "role", "content", "tool_call_id", "tool_calls",
                "tool_name", "timestamp", "token_count", "finish_reason", "reasoning",
                "reasoning_content"]


@pytest.fixture
def api(tmp_path):
    runtime = Runtime(create_service(HermesSettings(api_key=KEY)),
                      Settings(db=str(tmp_path / "e.sqlite3")))
    app = webtest.TestApp(runtime)
    app.post_json("/__admin/clock", {"set": T0, "freeze": True}, status=200)
    return app


def advance(api, seconds):
    api.post_json("/__admin/clock", {"advance": int(seconds * 1000)}, status=200)


def create(api, status=201, **body):
    return api.post_json("/api/sessions", body, headers=AUTH, status=status)


def get(api, session_id, status=200):
    return api.get(f"/api/sessions/{session_id}", headers=AUTH, status=status)


def patch(api, session_id, body, status=200):
    return api.patch_json(f"/api/sessions/{session_id}", body, headers=AUTH, status=status)


def messages(api, session_id):
    return api.get(f"/api/sessions/{session_id}/messages", headers=AUTH).json["data"]


def raw_post(api, path, data, status):
    return api.post(path, data, headers={**AUTH, "Content-Type": "application/json"},
                    status=status)


def error(message, code=None):
    return {"error": {"message": message, "type": "invalid_request_error", "param": None,
                      "code": code}}


def test_create_returns_the_full_object_in_wire_order(api):
    res = create(api, id="s1", title="First", model="m1", system_prompt="Be brief.")
    assert res.json["object"] == "hermes.session"
    session = res.json["session"]
    assert list(session) == SESSION_KEYS
    assert session == {**session, "id": "s1", "source": "api_server", "model": "m1",
                       "title": "First", "started_at": T0_S, "message_count": 0,
                       "estimated_cost_usd": None, "has_system_prompt": True,
                       "has_model_config": False}
    assert res.headers["X-Frame-Options"] == "DENY"
    assert get(api, "s1").json == res.json


def test_create_ids_generated_aliased_stripped_and_refused(api):
    generated = create(api).json["session"]
    assert generated["id"].startswith(f"api_{int(T0_S)}_") and len(generated["id"]) == 23
    assert generated["model"] == "hermes-agent" and generated["has_system_prompt"] is False
    assert create(api, session_id="alias").json["session"]["id"] == "alias"
    assert create(api, id="a", session_id="b").json["session"]["id"] == "a"
    get(api, "b", status=404)
    assert create(api, id=12345).json["session"]["id"] == "12345"
    assert create(api, id="  padded  ").json["session"]["id"] == "padded"
    for bad in ("../etc", "a/b", "a\\b", "C:x", "bad\nid", "   "):
        assert create(api, id=bad, status=400).json == error("Invalid session ID",
                                                             "invalid_session_id")
    assert create(api, id="ab:c").json["session"]["id"] == "ab:c"
    create(api, id="a" * 256)
    assert create(api, id="a" * 257, status=400).json == error("Session ID too long",
                                                               "invalid_session_id")
    assert create(api, id="alias", status=409).json == error("Session already exists: alias",
                                                             "session_exists")
    assert create(api, id="sp", system_prompt=5, status=400).json == error(
        "system_prompt must be a string", "invalid_system_prompt")


def test_bodies_follow_the_shared_json_rules(api):
    for data in (b"{bad", b""):
        assert raw_post(api, "/api/sessions", data, 400).json == error(
            "Invalid JSON in request body")
    assert raw_post(api, "/api/sessions", b"[1]", 400).json == error(
        "Request body must be a JSON object")


def test_titles_are_sanitised_unique_and_bounded(api):
    create(api, id="t1", title="Shared")
    assert create(api, id="t2", title="Shared", status=400).json == error(
        "Title already in use by session t1", "invalid_title")
    get(api, "t2", status=404)  # the refused session is not kept
    assert create(api, id="blank", title="   ").json["session"]["title"] is None
    assert create(api, id="long", title="t" * 101, status=400).json == error(
        "Title too long (101 chars, max 100)", "invalid_title")
    get(api, "long", status=404)
    assert patch(api, "t1", {"title": "  Spaced \t\t out  "}).json["session"]["title"] == (
        "Spaced out")
    assert patch(api, "t1", {"title": "Clean\u200b\u0001 it"}).json["session"]["title"] == (
        "Clean it")
    assert patch(api, "t1", {"title": 123}).json["session"]["title"] == "123"
    assert patch(api, "t1", {"title": "123"}).json["session"]["title"] == "123"  # its own
    assert patch(api, "blank", {"title": "123"}, status=400).json == error(
        "Title '123' is already in use by session t1", "invalid_title")
    assert patch(api, "t1", {"title": None}).json["session"]["title"] is None


def test_patch_refuses_unknown_fields_without_applying_anything(api):
    create(api, id="p", title="Before")
    assert patch(api, "p", {"zeta": 1, "alpha": 2, "title": "After"}, status=400).json == error(
        "Unsupported session fields: alpha, zeta", "unsupported_session_field")
    assert get(api, "p").json["session"]["title"] == "Before"
    assert patch(api, "p", {}).json["session"]["title"] == "Before"
    assert api.patch("/api/sessions/p", b"[]", headers={
        **AUTH, "Content-Type": "application/json"}, status=400).json == error(
        "Request body must be a JSON object")
    # an unknown session is 404 before the body is read
    assert api.patch("/api/sessions/nope", b"nope", headers={
        **AUTH, "Content-Type": "application/json"}, status=404).json == error(
        "Session not found: nope", "session_not_found")


def test_end_reason_ends_once_and_titles_still_change(api):
    create(api, id="e")
    advance(api, 5)
    ended = patch(api, "e", {"end_reason": "user_closed"}).json["session"]
    assert (ended["ended_at"], ended["end_reason"]) == (T0_S + 5, "user_closed")
    advance(api, 5)
    again = patch(api, "e", {"end_reason": "second"}).json["session"]
    assert (again["ended_at"], again["end_reason"]) == (T0_S + 5, "user_closed")
    assert patch(api, "e", {"title": "Ended"}).json["session"]["title"] == "Ended"


def test_delete_takes_messages_and_orphans_forks(api):
    create(api, id="d")
    api.post_json("/api/sessions/d/chat", {"message": "hello"}, headers=AUTH)
    api.post_json("/api/sessions/d/fork", {"id": "d2"}, headers=AUTH, status=201)
    assert api.delete("/api/sessions/d", headers=AUTH).json == {
        "object": "hermes.session.deleted", "id": "d", "deleted": True}
    for path in ("/api/sessions/d", "/api/sessions/d/messages"):
        assert api.get(path, headers=AUTH, status=404).json == error(
            "Session not found: d", "session_not_found")
    api.delete("/api/sessions/d", headers=AUTH, status=404)
    assert get(api, "d2").json["session"]["parent_session_id"] is None
    assert len(messages(api, "d2")) == 2


def test_list_pages_by_activity_and_reports_a_full_page_as_has_more(api):
    for n in (1, 2, 3):
        create(api, id=f"page-{n}", title=f"Page {n}")
        advance(api, 1)
    page = api.get("/api/sessions?source=api_server&limit=2", headers=AUTH).json
    assert [row["id"] for row in page["data"]] == ["page-3", "page-2"]
    assert (page["limit"], page["offset"], page["has_more"]) == (2, 0, True)
    row = page["data"][0]
    assert list(row) == SESSION_KEYS[:19] + ["last_active", "preview"] + SESSION_KEYS[19:]
    assert (row["last_active"], row["preview"]) == (T0_S + 2, "")
    second = api.get("/api/sessions?limit=2&offset=2", headers=AUTH).json
    assert [r["id"] for r in second["data"]] == ["page-1"] and second["has_more"] is False
    zero = api.get("/api/sessions?limit=0", headers=AUTH).json
    assert (zero["data"], zero["has_more"]) == ([], True)
    odd = api.get("/api/sessions?limit=abc&offset=-3", headers=AUTH).json
    assert (odd["limit"], odd["offset"]) == (50, 0)
    assert api.get("/api/sessions?limit=1000", headers=AUTH).json["limit"] == 200
    assert api.get("/api/sessions?source=cron", headers=AUTH).json["data"] == []
    # a turn in the oldest session moves it to the top, with its first user message as preview
    long_text = "Touch page one\nplease " + "x" * 80
    api.post_json("/v1/chat/completions", {"messages": [{"role": "user", "content": long_text}]},
                  headers={**AUTH, "X-Hermes-Session-Id": "page-1"})
    top = api.get("/api/sessions?limit=1", headers=AUTH).json["data"][0]
    assert top["id"] == "page-1" and top["preview"] == long_text.replace("\n", " ")[:60] + "..."


def test_session_chat_appends_the_turn_and_moves_the_counters(api):
    create(api, id="c", title="Chat", model="own-model")
    res = api.post_json("/api/sessions/c/chat", {"message": "Hi there"}, headers=AUTH)
    assert res.json == {"object": "hermes.session.chat.completion", "session_id": "c",
                        "message": {"role": "assistant",
                                    "content": "Hermes emulator reply to: Hi there"},
                        "usage": {"input_tokens": 2, "output_tokens": 6, "total_tokens": 8}}
    assert res.headers["X-Hermes-Session-Id"] == "c"
    keyed = api.post_json("/api/sessions/c/chat", {
        "input": [{"type": "text", "text": "Parts"}], "system_message": "Be brief."},
        headers={**AUTH, "X-Hermes-Session-Key": "agent:main:x"})
    assert keyed.headers["X-Hermes-Session-Key"] == "agent:main:x"
    transcript = messages(api, "c")
    assert [m["role"] for m in transcript] == ["user", "assistant", "user", "assistant"]
    assert [m["content"] for m in transcript[::2]] == ["Hi there", "Parts"]
    assert list(transcript[0]) == MESSAGE_KEYS
    assert [m["finish_reason"] for m in transcript] == [None, "stop", None, "stop"]
    assert [m["id"] for m in transcript] == sorted(m["id"] for m in transcript)
    session = get(api, "c").json["session"]
    assert session["message_count"] == 4 and session["api_call_count"] == 2
    assert (session["model"], session["title"]) == ("hermes-agent", "Chat")
    assert session["has_system_prompt"] is session["has_model_config"] is True
    assert session["estimated_cost_usd"] == 0.0 and session["ended_at"] is None


def test_session_chat_validates_in_upstream_order(api):
    create(api, id="v")
    post = lambda body, status, path="/api/sessions/v/chat", headers=None: api.post_json(  # noqa
        path, body, headers={**AUTH, **(headers or {})}, status=status).json
    for body in ({}, {"message": "   "}, {"message": 5},
                 {"message": [{"type": "input_file", "file_id": "f"}]}):
        assert post(body, 400) == error("Missing 'message' field", "missing_message")
    for body in ({"message": "x", "system_message": 5}, {"message": "x", "instructions": ["a"]}):
        assert post(body, 400) == error("system_message must be a string",
                                        "invalid_system_message")
    assert post({"message": "x"}, 404, "/api/sessions/nope/chat") == error(
        "Session not found: nope", "session_not_found")
    assert raw_post(api, "/api/sessions/nope/chat", b"bad", 404).json["error"]["code"] == (
        "session_not_found")
    assert post({"message": "x"}, 400, "/api/sessions/nope/chat",
                {"X-Hermes-Session-Key": "k" * 300}) == {
        "error": {"message": "Session key too long", "type": "invalid_request_error"}}
    assert raw_post(api, "/api/sessions/v/chat/stream", b"bad", 400).json == error(
        "Invalid JSON in request body")
    assert messages(api, "v") == []


def test_session_chat_stream_sends_named_events_and_stores_the_turn(api):
    create(api, id="st")
    api.post_json("/__admin/hermes/replies", {"text": "Hello from the emulator."})
    res = api.post_json("/api/sessions/st/chat/stream", {"message": "Stream it"},
                        headers={**AUTH, "X-Hermes-Session-Key": "agent:main:s"})
    assert res.content_type == "text/event-stream"
    assert res.headers["X-Hermes-Session-Id"] == "st"
    assert "X-Frame-Options" not in res.headers
    events = []
    for block in res.text.strip().split("\n\n"):
        name, data = block.split("\n")
        events.append((name[len("event: "):], json.loads(data[len("data: "):])))
    names = [name for name, _ in events]
    assert names[:2] == ["run.started", "message.started"]
    assert set(names[2:-4]) == {"assistant.delta"}
    assert names[-4:] == ["tool.progress", "assistant.completed", "run.completed", "done"]
    assert [data["seq"] for _, data in events] == list(range(1, len(events) + 1))
    assert len({data["run_id"] for _, data in events}) == 1
    assert events[0][1]["user_message"] == {"role": "user", "content": "Stream it"}
    assert list(events[0][1]) == ["user_message", "session_id", "run_id", "seq", "ts"]
    assert "".join(data["delta"] for name, data in events if name == "assistant.delta") == (
        "Hello from the emulator.")
    completed = dict(events)["run.completed"]
    assert list(completed) == ["session_id", "message_id", "completed", "messages", "usage",
                               "run_id", "seq", "ts"]
    assert completed["messages"] == [{"role": "assistant", "content": "Hello from the emulator.",
                                      "finish_reason": "stop", "reasoning": None}]
    api.get(f"/v1/runs/{completed['run_id']}", headers=AUTH, status=404)  # not a /v1/runs run
    assert [m["content"] for m in messages(api, "st")] == ["Stream it",
                                                           "Hello from the emulator."]


def test_fork_copies_the_transcript_and_names_the_lineage(api):
    create(api, id="src", title="Src")
    api.post_json("/api/sessions/src/chat", {"message": "Hello"}, headers=AUTH)
    advance(api, 1)
    fork = lambda body, status=201, source="src": api.post_json(  # noqa: E731
        f"/api/sessions/{source}/fork", body, headers=AUTH, status=status).json
    first = fork({"id": "a", "title": "Branch"})["session"]
    assert (first["parent_session_id"], first["title"], first["message_count"]) == (
        "src", "Branch", 2)
    assert first["has_model_config"] is False and first["api_call_count"] == 0
    source = get(api, "src").json["session"]
    assert (source["end_reason"], source["ended_at"]) == ("branched", T0_S + 1)
    copied, original = messages(api, "a"), messages(api, "src")
    assert [m["content"] for m in copied] == [m["content"] for m in original]
    assert [m["timestamp"] for m in copied] == [m["timestamp"] for m in original]
    assert min(m["id"] for m in copied) > max(m["id"] for m in original)
    assert fork({"id": "b"})["session"]["title"] == "Src #2"
    assert fork({"session_id": "c"})["session"]["title"] == "Src #3"
    assert fork({"id": "aa"}, source="a")["session"]["title"] == "Branch #2"
    assert fork({"id": "a"}, 409)["error"]["code"] == "session_exists"
    assert fork({"id": "x\ry"}, 400)["error"]["code"] == "invalid_session_id"
    assert fork({"id": "../evil"}, 400)["error"]["code"] == "invalid_session_id"
    assert fork({}, 404, "nope") == error("Session not found: nope", "session_not_found")
    assert fork({"id": "d", "title": "Branch"}, 400) == error(
        "Title 'Branch' is already in use by session a", "invalid_title")
    assert get(api, "d").json["session"]["title"] is None  # the fork was made first
    assert fork({})["session"]["id"].startswith("api_")


def test_chat_completions_with_the_header_fill_that_session(api):
    create(api, id="hdr", title="Made", system_prompt="Own prompt.")
    for text in ("First", "Second"):
        api.post_json("/v1/chat/completions", {"messages": [
            {"role": "user", "content": "Made-up earlier"},
            {"role": "assistant", "content": "Made-up answer"},
            {"role": "user", "content": text}]}, headers={**AUTH, "X-Hermes-Session-Id": "hdr"})
    # only the last user message of each request is stored, and the title stays
    assert [m["content"] for m in messages(api, "hdr")[::2]] == ["First", "Second"]
    session = get(api, "hdr").json["session"]
    assert (session["title"], session["message_count"], session["source"]) == (
        "Made", 4, "api_server")
    # the stored transcript, not the request, is the history the agent sees
    second = api.post_json("/v1/chat/completions", {"messages": [
        {"role": "user", "content": "x " * 50}, {"role": "user", "content": "Third"}]},
        headers={**AUTH, "X-Hermes-Session-Id": "hdr"}).json
    assert second["usage"]["prompt_tokens"] < 50


def test_chat_completions_without_the_header_use_the_derived_session(api):
    body = {"messages": [{"role": "system", "content": "Sys"},
                         {"role": "user", "content": "Hello"}]}
    res = api.post_json("/v1/chat/completions", body, headers=AUTH)
    derived = res.headers["X-Hermes-Session-Id"]
    assert derived.startswith("api-")
    body["messages"] += [{"role": "assistant", "content": "Earlier"},
                         {"role": "user", "content": "Again"}]
    api.post_json("/v1/chat/completions", {**body, "stream": True}, headers=AUTH)
    transcript = messages(api, derived)
    assert [m["content"] for m in transcript[::2]] == ["Hello", "Again"]
    session = get(api, derived).json["session"]
    assert session["title"] is None and session["has_model_config"] is True


def test_idempotent_replays_are_not_stored_twice(api):
    headers = {**AUTH, "Idempotency-Key": "k1", "X-Hermes-Session-Id": "idem"}
    body = {"messages": [{"role": "user", "content": "once"}]}
    api.post_json("/v1/chat/completions", body, headers=headers)
    api.post_json("/v1/chat/completions", body, headers=headers)
    assert len(messages(api, "idem")) == 2


def test_responses_make_a_session_per_conversation(api):
    first = api.post_json("/v1/responses", {"input": "Resp one"},
                          headers={**AUTH, "X-Hermes-Session-Id": "ignored"})
    session_id = first.headers["X-Hermes-Session-Id"]
    get(api, "ignored", status=404)  # /v1/responses ignores the header
    api.post_json("/v1/responses", {"input": "Resp two",
                                    "previous_response_id": first.json["id"]}, headers=AUTH)
    assert [m["content"] for m in messages(api, session_id)[::2]] == ["Resp one", "Resp two"]
    unstored = api.post_json("/v1/responses", {"input": "Unstored", "store": False},
                             headers=AUTH)
    assert len(messages(api, unstored.headers["X-Hermes-Session-Id"])) == 2


def observe(api, run_id, **body):
    api.post_json(f"/__admin/hermes/runs/{run_id}/observe", body, status=200)


def test_a_runs_input_is_in_its_session_when_it_starts_and_its_answer_when_it_ends(api):
    """As 0.19.0 shows it: no session until the agent starts; then the input alone
    (`finish_reason` null, no model call counted); the answer when the run completes."""
    create(api, id="target", title="Run target")
    run = api.post_json("/v1/runs", {"input": "Into target", "session_id": "target"},
                        headers=AUTH, status=202).json["run_id"]
    plain = api.post_json("/v1/runs", {"input": [{"role": "user", "content": "Plain"}]},
                          headers=AUTH, status=202).json["run_id"]
    get(api, plain, status=404)  # queued: the agent has not started
    assert messages(api, "target") == []
    advance(api, 0.5)
    for run_id in (run, plain):
        observe(api, run_id, status="running")
    started = messages(api, plain)
    assert [(m["role"], m["content"], m["finish_reason"], m["timestamp"]) for m in started] \
        == [("user", "Plain", None, T0_S + 0.5)]
    assert list(started[0]) == MESSAGE_KEYS
    row = get(api, plain).json["session"]
    assert (row["message_count"], row["api_call_count"], row["input_tokens"],
            row["estimated_cost_usd"], row["has_system_prompt"], row["has_model_config"]) == (
        1, 0, 0, None, True, True)
    listed = api.get("/api/sessions", headers=AUTH).json["data"]
    assert {r["id"]: r["preview"] for r in listed}[plain] == "Plain"
    advance(api, 2)
    for run_id in (run, plain):
        observe(api, run_id, status="completed", output="Done.",
                usage={"input_tokens": 3, "output_tokens": 1, "total_tokens": 4})
    assert [(m["role"], m["content"], m["finish_reason"]) for m in messages(api, "target")] == [
        ("user", "Into target", None), ("assistant", "Done.", "stop")]
    assert messages(api, plain)[1]["timestamp"] == T0_S + 2.5
    target = get(api, "target").json["session"]
    assert (target["title"], target["message_count"], target["input_tokens"],
            target["api_call_count"], target["estimated_cost_usd"]) == ("Run target", 2, 3, 1, 0.0)
    assert [m["content"] for m in messages(api, plain)] == ["Plain", "Done."]


def test_a_run_stopped_keeps_its_input_and_what_it_had_streamed(api):
    streamed, early, queued = (api.post_json("/v1/runs", {"input": text, "session_id": text},
                                             headers=AUTH, status=202).json["run_id"]
                               for text in ("streamed", "early", "queued"))
    observe(api, streamed, status="running",
            events=[{"event": "message.delta", "delta": "Hel"},
                    {"event": "message.delta", "delta": "lo"}])
    observe(api, early, status="running")
    for run_id in (streamed, early, queued):
        api.post(f"/v1/runs/{run_id}/stop", headers=AUTH, status=200)
        observe(api, run_id, status="cancelled")
    assert [(m["role"], m["content"], m["finish_reason"]) for m in messages(api, "streamed")] \
        == [("user", "streamed", None), ("assistant", "Hello", None)]
    row = get(api, "streamed").json["session"]
    assert (row["message_count"], row["api_call_count"], row["estimated_cost_usd"]) == (2, 0, None)
    assert [m["content"] for m in messages(api, "early")] == ["early"]
    get(api, "queued", status=404)  # stopped before the agent started: nothing recorded


def test_a_run_completed_in_one_observation_records_input_then_answer(api):
    run_id = api.post_json("/v1/runs", {"input": "At once"}, headers=AUTH,
                           status=202).json["run_id"]
    observe(api, run_id, status="completed", output="Done.")
    assert [(m["role"], m["finish_reason"]) for m in messages(api, run_id)] == [
        ("user", None), ("assistant", "stop")]


def test_sessions_are_per_namespace_reset_and_restored_by_checkpoints(api):
    create(api, id="mine")
    other = {**AUTH, "x-mockingbird-namespace": "other"}
    api.get("/api/sessions/mine", headers=other, status=404)
    assert api.get("/api/sessions", headers=other).json["data"] == []
    checkpoint = api.post_json("/__admin/checkpoints", {}, status=201).json["id"]
    api.post_json("/api/sessions/mine/chat", {"message": "after"}, headers=AUTH)
    api.post_json("/__admin/branches/main/checkout", {"checkpoint": checkpoint}, status=200)
    assert messages(api, "mine") == []
    api.post_json("/__admin/reset", {}, status=200)
    get(api, "mine", status=404)


def test_routing_answers_before_auth(api):
    res = api.put("/api/sessions", status=405)
    assert (res.text, res.headers["Allow"]) == ("405: Method Not Allowed", "GET,POST")
    assert api.post("/api/sessions/x", status=405).headers["Allow"] == "DELETE,GET,PATCH"
    assert api.get("/api/sessions/x/fork", status=405).headers["Allow"] == "POST"
    assert api.get("/api/sessions/", headers=AUTH, status=404).text == "404: Not Found"
    assert api.get("/api/sessions", status=401).json["error"]["code"] == "invalid_api_key"
    assert api.post("/api/sessions", b"{nope", headers={"Content-Type": "application/json"},
                    status=401).json["error"]["code"] == "invalid_api_key"


def test_every_route_also_answers_under_a_profile_prefix(api):
    create(api, id="prof")
    assert api.get("/p/work/api/sessions/prof", headers=AUTH).json["session"]["id"] == "prof"
    assert api.get("/p/work/health").json["status"] == "ok"
    assert api.get("/p/work/v1/models", headers=AUTH).json["object"] == "list"
    assert api.get("/p/work/nope", headers=AUTH, status=404).text == "404: Not Found"
    assert api.get("/p/work", headers=AUTH, status=404).text == "404: Not Found"
