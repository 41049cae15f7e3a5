"""The `openai` SDK, unmodified but for base_url and api_key, against the served emulator:
standalone (`emulators.hermes.serve()`) and mounted in the monolith (gunicorn wsgi:application)."""
import openai
import pytest
import requests

import emulators.hermes
from emulators.hermes.settings import HermesSettings
from testkit.servers import gunicorn

KEY = "emulator-key-0123456789abcdef"
pytestmark = pytest.mark.timeout(60)


class Served:
    """A running emulator: the SDK base URL and the admin URL beside it."""

    def __init__(self, root):
        self.root = root
        self.base_url = root + "/v1"
        self.admin = root + "/__admin"

    def client(self, api_key=KEY, base_url=None):
        return openai.OpenAI(base_url=base_url or self.base_url, api_key=api_key, max_retries=0,
                             timeout=10)

    def journal(self, **query):
        res = requests.get(self.admin + "/requests", params=query, timeout=5)
        assert res.status_code == 200, res.text
        return res.json()["requests"]

    def script(self, *replies):
        res = requests.post(self.admin + "/hermes/replies", json={"replies": list(replies)},
                            timeout=5)
        assert res.status_code == 200, res.text

    def preset(self, name):
        res = requests.post(self.admin + "/faults", json={"preset": name}, timeout=5)
        assert res.status_code == 201, res.text


@pytest.fixture(scope="module",
                params=["standalone", pytest.param("mounted", marks=pytest.mark.gunicorn)])
def served(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("hermes-sdk")
    if request.param == "standalone":
        with emulators.hermes.serve(HermesSettings(api_key=KEY),
                                    db=str(folder / "e.sqlite3")) as server:
            yield Served(server.url)
    else:
        env = {"EMULATORS_DB": str(folder / "e.sqlite3"), "NEWOS4_DATA_DIR": str(folder / "chat"),
               "HERMES_EMULATOR_API_KEY": KEY}
        with gunicorn("wsgi:application", env=env, workers=2, threads=4,
                      ready_path="/emulators/hermes/health") as root:
            yield Served(root + "/emulators/hermes")


@pytest.fixture(autouse=True)
def fresh(served):
    requests.post(served.admin + "/reset", json={}, timeout=5).raise_for_status()


def test_models_list(served):
    models = served.client().models.list()
    assert [model.id for model in models.data] == ["hermes-agent"]
    assert models.data[0].owned_by == "hermes"


def test_chat_completion_synthetic_reply(served):
    completion = served.client().chat.completions.create(
        model="hermes-agent", messages=[{"role": "user", "content": "Say hello."}])
    assert completion.id.startswith("chatcmpl-") and len(completion.id) == 9 + 29
    assert completion.choices[0].message.content == "Hermes emulator reply to: Say hello."
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage.total_tokens == (completion.usage.prompt_tokens
                                             + completion.usage.completion_tokens)


def test_chat_completion_session_header(served):
    raw = served.client().chat.completions.with_raw_response.create(
        model="hermes-agent", messages=[{"role": "user", "content": "Say hello."}])
    # the id Hermes 0.19.0 derives for this exact first message
    assert raw.headers["X-Hermes-Session-Id"] == "api-a46d5df2789d4c01"
    assert raw.parse().choices[0].message.role == "assistant"


def test_chat_stream_scripted_deltas(served):
    served.script({"deltas": ["Hel", "lo ", "world"]})
    stream = served.client().chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True)
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].delta.content for c in chunks[1:-1]] == ["Hel", "lo ", "world"]
    assert chunks[-1].choices[0].finish_reason == "stop" and chunks[-1].usage is not None
    assert len({c.id for c in chunks}) == 1 and chunks[0].model == "m"


def test_chat_stream_tool_progress_and_failure_as_the_sdk_sees_them(served):
    served.script({"deltas": ["a", {"tool": "terminal", "id": "call_7"}, "b"]},
                  {"deltas": ["par"], "failed": True, "error": "died"})
    chunks = list(served.client().chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True))
    progress = [c for c in chunks if not c.choices]  # the named tool-progress frames
    assert [(c.model_extra["toolCallId"], c.model_extra["status"]) for c in progress] == [
        ("call_7", "running"), ("call_7", "completed")]
    # A failed stream's final chunk carries `error`, which the SDK raises (upstream does this).
    with pytest.raises(openai.APIError, match="died"):
        list(served.client().chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True))


def test_responses_create_get_chain_delete(served):
    client = served.client()
    served.script({"text": "first answer"}, {"text": "second answer"})
    first = client.responses.create(model="hermes-agent", input="one")
    assert first.id.startswith("resp_") and first.output_text == "first answer"
    second = client.responses.create(model="hermes-agent", input="two",
                                     previous_response_id=first.id)
    assert second.output_text == "second answer"
    fetched = client.responses.retrieve(second.id)
    assert fetched.id == second.id and fetched.output_text == "second answer"
    client.responses.delete(first.id)
    with pytest.raises(openai.NotFoundError) as missing:
        client.responses.retrieve(first.id)
    assert missing.value.body["message"] == f"Response not found: {first.id}"


def test_responses_stream_events(served):
    served.script({"deltas": ["a", "b"]})
    events = list(served.client().responses.create(model="hermes-agent", input="x",
                                                   stream=True))
    assert [e.type for e in events] == [
        "response.created", "response.output_item.added", "response.output_text.delta",
        "response.output_text.done", "response.output_item.done", "response.completed"]
    assert [e.sequence_number for e in events] == list(range(6))
    assert events[2].delta == "ab"  # deltas within 50 ms are batched, as upstream does
    assert events[-1].response.output_text == "ab"


def test_error_mapping(served):
    with pytest.raises(openai.AuthenticationError) as denied:
        served.client(api_key="wrong").models.list()
    assert denied.value.status_code == 401 and denied.value.code == "invalid_api_key"
    with pytest.raises(openai.BadRequestError) as bad:
        served.client().chat.completions.create(model="m", messages=[])
    assert bad.value.body == {"message": "Missing or invalid 'messages' field",
                              "type": "invalid_request_error"}
    with pytest.raises(openai.NotFoundError):
        served.client().responses.create(model="m", input="x", previous_response_id="resp_none")
    served.preset("hermes_chat_throttled")
    with pytest.raises(openai.RateLimitError) as throttled:
        served.client().chat.completions.create(model="m", messages=[{"role": "user",
                                                                      "content": "x"}])
    assert throttled.value.response.headers["Retry-After"] == "1"
    requests.delete(served.admin + "/faults", timeout=5).raise_for_status()
    served.script({"failed": True, "error": "model exploded"})
    with pytest.raises(openai.InternalServerError) as incomplete:
        served.client().chat.completions.create(model="m", messages=[{"role": "user",
                                                                      "content": "x"}])
    assert incomplete.value.status_code == 502 and incomplete.value.code == "agent_incomplete"


def test_state_is_shared_by_every_worker(served):
    """Replies queued, responses stored and results cached through one worker hold in all."""
    served.script(*({"text": f"reply {n}"} for n in range(6)))
    auth = {"Authorization": f"Bearer {KEY}", "Connection": "close"}  # spread over workers
    texts, ids = [], []
    for n in range(6):
        res = requests.post(served.base_url + "/responses", json={"input": f"q{n}"},
                            headers=auth, timeout=5)
        texts.append(res.json()["output"][0]["content"][0]["text"])
        ids.append(res.json()["id"])
    assert texts == [f"reply {n}" for n in range(6)]
    for response_id in ids * 2:
        assert requests.get(f"{served.base_url}/responses/{response_id}", headers=auth,
                            timeout=5).status_code == 200
    served.script({"text": "computed once"}, {"text": "never used"})
    keyed = {**auth, "Idempotency-Key": "once"}
    body = {"messages": [{"role": "user", "content": "x"}]}
    answers = {requests.post(served.base_url + "/chat/completions", json=body, headers=keyed,
                             timeout=5).json()["choices"][0]["message"]["content"]
               for _ in range(4)}
    assert answers == {"computed once"}
    queue = requests.get(served.admin + "/hermes/replies", timeout=5).json()
    assert queue == {"replies": [{"text": "never used"}]}


HELLO = [{"role": "user", "content": "Say hello."}]


def test_a_profile_url_meets_the_fault_rules_of_the_operation_it_mirrors(served):
    rule = requests.post(served.admin + "/faults", json={
        "operationId": "ChatCompletionCreate", "status": 503, "count": 1,
        "body": {"error": {"message": "injected", "type": "server_error"}}}, timeout=5)
    assert rule.status_code == 201, rule.text
    profile = served.client(base_url=served.root + "/p/work/v1")
    with pytest.raises(openai.InternalServerError) as injected:
        profile.chat.completions.create(model="hermes-agent", messages=HELLO)
    assert injected.value.status_code == 503
    assert injected.value.body == {"message": "injected", "type": "server_error"}
    completion = profile.chat.completions.create(model="hermes-agent", messages=HELLO)
    assert completion.choices[0].message.content == "Hermes emulator reply to: Say hello."
    entries = served.journal(operationId="ChatCompletionCreate")
    assert [(entry["path"], entry["status"], entry.get("faultId")) for entry in entries] == [
        ("/p/work/v1/chat/completions", 503, rule.json()["id"]),
        ("/p/work/v1/chat/completions", 200, None)]


def test_a_profile_url_meets_the_presets(served):
    served.preset("hermes_chat_throttled")
    profile = served.client(base_url=served.root + "/p/work/v1")
    with pytest.raises(openai.RateLimitError) as throttled:
        profile.chat.completions.create(model="hermes-agent", messages=HELLO)
    assert throttled.value.response.headers["Retry-After"] == "1"
    with pytest.raises(openai.RateLimitError):
        profile.responses.create(model="hermes-agent", input="x")
    assert [(entry["path"], entry["operationId"], entry["faultId"])
            for entry in served.journal()] == [
        ("/p/work/v1/chat/completions", "ChatCompletionCreate", "hermes_chat_throttled_1"),
        ("/p/work/v1/responses", "ResponseCreate", "hermes_chat_throttled_2")]


def test_the_journal_and_metrics_name_a_mirror_by_its_operation_and_its_path(served):
    assert requests.get(served.root + "/p/x/health", timeout=5).json()["status"] == "ok"
    assert requests.get(served.root + "/p/x/nope", timeout=5).status_code == 404
    assert requests.get(served.root + "/p/x", timeout=5).status_code == 404
    assert [(entry["path"], entry.get("operationId"), entry["unmatched"])
            for entry in served.journal()] == [
        ("/p/x/health", "Health", False), ("/p/x/nope", None, True), ("/p/x", None, True)]
    metrics = requests.get(served.admin + "/metrics", timeout=5).json()
    assert metrics["byOperation"] == {"(unmatched) 404": 2, "Health 200": 1}
    assert [entry["path"] for entry in metrics["unmatched"]] == ["/p/x", "/p/x/nope"]
