"""The emulators as another project's tests use them: the fixtures' handles and helpers, the
portless mocks under PyGithub, httpx, httpx2 and the openai SDK, unmatched requests left alone
or refused. (The same from a project outside the checkout: tests/integration/test_user_project.py.)
"""
import asyncio
import http.server
import threading

import httpx
import httpx2
import openai
import pytest
import requests
from github import Auth, Github
from requests.adapters import HTTPAdapter

import emulators
from emulators.handles import ControlError
from emulators.pytest_plugin import PluginSettings, Servers
from emulators.runtime.intercept import UnmatchedRequest
from testkit.webhook_receiver import Receiver

A, B = "a" * 40, "b" * 40


def pygithub(**options):
    """PyGithub at its default URL; retry=None shows a dropped answer as it happens (its own
    GithubRetry retries a POST, so the lost create would come back as a duplicate's 422)."""
    return Github(auth=Auth.Token("any"), seconds_between_requests=0, seconds_between_writes=0,
                  **options)


# -- served: the fixtures' handles --------------------------------------------------------------
def test_github_helpers_seed_steer_and_read_a_served_emulator(github_emulator):
    repo = github_emulator.seed_repository("octo", "demo", commits=[A, B])
    assert (repo["full_name"], repo["default_branch"]) == ("octo/demo", "main")
    client = pygithub(base_url=github_emulator.url, retry=None).get_repo("octo/demo")
    assert client.get_git_ref("heads/main").object.sha == B

    assert github_emulator.clock(set="2030-01-01T00:00:00Z", freeze=True)["frozen"] is True
    assert github_emulator.clock(advance="15m")["now"] == 1_893_456_900_000
    rule = github_emulator.fault(method="GET", path="/repos/{owner}/{repo}", status=503, count=1)
    assert requests.get(github_emulator.url + "/repos/octo/demo").status_code == 503
    assert github_emulator.journal()[-1]["faultId"] == rule["id"]
    assert "github_pr_create_accepted_drop" in github_emulator.presets()

    saved = github_emulator.checkpoint()
    github_emulator.seed_repository("octo", "later")
    github_emulator.restore(saved)
    assert requests.get(github_emulator.url + "/repos/octo/later").status_code == 404
    with pytest.raises(ControlError) as refused:
        github_emulator.seed_repository("octo", "demo")  # already there
    assert refused.value.status == 409


def test_a_namespace_view_has_its_own_url_and_state(github_emulator):
    github_emulator.seed_repository("octo", "demo")
    w1 = github_emulator.namespace("w1")
    assert w1.url == github_emulator.admin_url + "/ns/w1"
    assert requests.get(w1.url + "/repos/octo/demo").status_code == 404
    w1.seed_repository("octo", "demo")
    assert requests.get(w1.url + "/repos/octo/demo").json()["url"].startswith(w1.url)


def test_webhooks_register_deliver_and_wait_until_idle(github_emulator):
    receiver = Receiver(secret="s3cret")
    github_emulator.seed_repository("octo", "demo", commits=[A, B], branches={"main": A})
    hook = github_emulator.webhooks.register(receiver.url, secret="s3cret",
                                             events=["pull_request"])
    assert hook["secret"] == "(set)"
    github_emulator.webhooks.register(Receiver().url)  # beside the first, not instead of it
    assert len(github_emulator.webhooks.endpoints()) == 2
    repo = pygithub(base_url=github_emulator.url, retry=None).get_repo("octo/demo")
    repo.create_git_ref("refs/heads/topic", B)
    repo.create_pull(base="main", head="topic", title="Add topic")
    settled = github_emulator.webhooks.wait_until_idle()
    assert {d["status"] for d in settled} == {"delivered"}
    assert ("pull_request", "opened") in receiver.events()
    assert github_emulator.webhooks.deliver() == {"status": "ok"}


def test_hermes_helpers_script_replies_and_observe_runs(hermes_emulator):
    hermes_emulator.script_reply(text="Scripted.")
    client = openai.OpenAI(base_url=hermes_emulator.url + "/v1", api_key="any")
    reply = client.chat.completions.create(
        model="hermes-agent", messages=[{"role": "user", "content": "Hi"}])
    assert reply.choices[0].message.content == "Scripted."
    run = requests.post(hermes_emulator.url + "/v1/runs", json={"input": "go"}).json()
    hermes_emulator.observe(run["run_id"], status="completed", output="42.")
    assert requests.get(f"{hermes_emulator.url}/v1/runs/{run['run_id']}").json()["status"] == \
        "completed"
    assert hermes_emulator.webhooks is None  # Hermes sends none


@pytest.fixture(scope="module")
def seeded(github_emulator_module):
    """A module-scoped seed: the module's own namespace, seeded once."""
    github_emulator_module.seed_repository("octo", "shared")
    return github_emulator_module


@pytest.mark.parametrize("attempt", [1, 2])
def test_a_module_scoped_seed_serves_every_test_of_the_module(seeded, github_emulator, attempt):
    assert requests.get(seeded.url + "/repos/octo/shared").status_code == 200
    assert requests.get(github_emulator.url + "/repos/octo/shared").status_code == 404


def test_an_external_server_is_used_in_per_test_namespaces(github_namespace):
    """EMULATORS_GITHUB_URL sends every fixture to that server; names never meet across
    workers and runs."""
    settings = PluginSettings.from_env({"EMULATORS_GITHUB_URL": github_namespace.base_url + "/"})
    first, second = Servers(settings, "gw0"), Servers(settings, "gw0")
    ours = first.handle("github", first.fresh_namespace("t"))
    assert ours.base_url == github_namespace.base_url and first.started == {}
    assert ours.ns != second.fresh_namespace("t") and ours.ns != github_namespace.ns
    ours.seed_repository("octo", "mine")
    assert requests.get(github_namespace.url + "/repos/octo/mine").status_code == 404


def test_emulator_app_takes_a_service_name(emulator_app):
    assert emulator_app("github").get("/__admin/health").json["service"] == "github"


# -- portless -----------------------------------------------------------------------------------
def test_mock_github_answers_pygithub_at_githubs_own_url_with_no_port():
    with emulators.mock_github() as github:
        github.seed_repository("octo", "demo", commits=[A, B], branches={"main": A})
        repo = pygithub(retry=None).get_repo("octo/demo")
        assert repo.url == "https://api.github.com/repos/octo/demo"
        repo.create_git_ref("refs/heads/topic", B)
        github.preset("github_pr_create_accepted_drop")
        with pytest.raises(requests.ConnectionError, match="Remote end closed connection"):
            repo.create_pull(base="main", head="topic", title="Lost answer")
        assert [p.title for p in repo.get_pulls(head="octo:topic")] == ["Lost answer"]
        assert [e["status"] for e in github.journal(operationId="pulls/create")] == [0]
    assert HTTPAdapter.send.__module__ == "requests.adapters"  # unpatched once no mock is on


def test_pygithubs_own_retry_resends_a_dropped_create_as_on_the_network(mock_github):
    """GithubRetry allows POST: the drop is retried by the adapter's policy, and the second
    create meets the first."""
    mock_github.seed_repository("octo", "demo", commits=[A, B], branches={"main": A})
    repo = pygithub().get_repo("octo/demo")
    repo.create_git_ref("refs/heads/topic", B)
    mock_github.preset("github_pr_create_accepted_drop")
    with pytest.raises(Exception, match="A pull request already exists"):
        repo.create_pull(base="main", head="topic", title="Twice")
    assert [e["status"] for e in mock_github.journal(operationId="pulls/create")] == [0, 422]


def test_mock_github_answers_httpx_and_httpx2_sync_and_async():
    with emulators.mock_github("https://ghe.example/api/v3") as github:
        github.seed_repository("octo", "demo")
        base = "https://ghe.example/api/v3/repos/octo/demo"
        assert httpx.get(base).json()["url"] == base  # the mount prefix is kept
        assert httpx2.get(base + "/pulls").json() == []

        async def fetch():
            async with httpx.AsyncClient() as client:
                return (await client.get(base)).status_code, \
                    (await client.get(base.replace("demo", "nope"))).status_code
        assert asyncio.run(fetch()) == (200, 404)


def test_mock_hermes_streams_to_the_openai_sdk_and_drops_as_its_connection_error():
    with emulators.mock_hermes("http://hermes.test:8642") as hermes:
        client = openai.OpenAI(base_url="http://hermes.test:8642/v1", api_key="any",
                               max_retries=0)
        hermes.script_reply(deltas=["Let me ", "look."])
        stream = client.chat.completions.create(
            model="hermes-agent", messages=[{"role": "user", "content": "Hi"}], stream=True)
        assert [c.choices[0].delta.content for c in stream
                if c.choices and c.choices[0].delta.content] == ["Let me ", "look."]

        async def streamed():
            client = openai.AsyncOpenAI(base_url="http://hermes.test:8642/v1", api_key="any")
            hermes.script_reply(text="async reply")
            stream = await client.chat.completions.create(
                model="hermes-agent", messages=[{"role": "user", "content": "Hi"}], stream=True)
            return "".join([c.choices[0].delta.content or "" async for c in stream
                            if c.choices])
        assert asyncio.run(streamed()) == "async reply"

        hermes.fault(operationId="ChatCompletionCreate", drop=True, count=1)
        with pytest.raises(openai.APIConnectionError):
            client.chat.completions.create(
                model="hermes-agent", messages=[{"role": "user", "content": "Hi"}])


def test_a_run_stream_in_process_begins_before_its_first_event(mock_hermes):
    """Headers come first, as from a server: a client may open the events, then act."""
    run = requests.post(mock_hermes.base_url + "/v1/runs", json={"input": "go"}).json()
    with requests.get(f"{mock_hermes.base_url}/v1/runs/{run['run_id']}/events",
                      stream=True) as events:
        assert events.headers["content-type"].startswith("text/event-stream")
        mock_hermes.observe(run["run_id"], status="completed", output="done",
                            events=[{"event": "message.delta", "delta": "done"}])
        lines = [line for line in events.iter_lines() if line.startswith(b"data:")]
    assert [b"message.delta" in lines[0], b"run.completed" in lines[-1]] == [True, True]


@pytest.fixture
def loopback():
    """A plain HTTP server on loopback: the network a mock must leave alone."""
    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("content-length", "5")
            self.end_headers()
            self.wfile.write(b"hello")

        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,))
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()
    thread.join()


def test_unmatched_requests_pass_unless_refused(loopback):
    with emulators.mock_github():
        assert requests.get(loopback).text == "hello"
        assert httpx.get(loopback).text == "hello"
    with emulators.mock_github(refuse_unmatched=True):
        with pytest.raises(UnmatchedRequest, match="matches no emulator"):
            requests.get(loopback)
        with pytest.raises(UnmatchedRequest):
            httpx2.get(loopback)


def test_a_decorated_function_gets_a_fresh_emulator_each_call():
    @emulators.mock_github()
    def create():
        requests.post("https://api.github.com/__admin/github/repositories",
                      json={"owner": "o", "name": "r"}).raise_for_status()
        return requests.get("https://api.github.com/repos/o/r").status_code

    @emulators.mock_hermes()
    async def health():
        async with httpx.AsyncClient() as client:
            return (await client.get("http://127.0.0.1:8642/health")).json()["status"]
    assert (create(), create(), asyncio.run(health())) == (200, 200, "ok")


@emulators.mock_github()
class TestADecoratedClass:
    """Each test method runs in a mock of its own."""

    def test_one(self):
        requests.post("https://api.github.com/__admin/github/repositories",
                      json={"owner": "o", "name": "r"}).raise_for_status()

    def test_two_starts_fresh(self):
        assert requests.get("https://api.github.com/repos/o/r").status_code == 404


def test_a_mock_sends_webhooks_to_a_receiver_on_loopback():
    receiver = Receiver()
    with emulators.mock_github() as github:
        github.webhooks.register(receiver.url)
        github.seed_repository("octo", "demo", commits=[A, B], branches={"main": A})
        pygithub(retry=None).get_repo("octo/demo").create_git_ref("refs/heads/topic", B)
        github.webhooks.wait_until_idle()
    assert [event for event, _ in receiver.events()] == ["ping", "create", "push"]
