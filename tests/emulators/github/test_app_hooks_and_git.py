"""An App's installation token with git itself (clone with contents read, a push refused
without contents write as GitHub refuses it, a push as the bot with it, nothing outside its
repositories) and the App's webhooks (signed with its secret, `installation` on each payload,
its own installing), over a served emulator."""
import json
from pathlib import Path

import jsonschema
import pytest
import requests

import emulators.handles
from testkit.webhook_receiver import Receiver

from .test_git_transport import Emu
from .test_webhooks import check_payload

SCHEMAS = json.loads((Path(__file__).resolve().parent / "openapi" / "webhooks.json")
                     .read_text())["webhooks"]


@pytest.fixture
def emu(tmp_path):
    from emulators.github import serve
    with serve() as server:
        yield Emu(server, tmp_path)


def _handle(emu):
    return emulators.handles.handle("github", emu.server.url,
                                    emulators.handles.HttpTransport())


def _token(emu, made, **narrow):
    app_jwt = _jwt(made)
    installation = made["installations"][0]["id"]
    res = requests.post(f"{emu.server.url}/app/installations/{installation}/access_tokens",
                        json=narrow, headers={"Authorization": f"Bearer {app_jwt}"}, timeout=5)
    assert res.status_code == 201, res.text
    return res.json()["token"]


def _jwt(made):
    import time

    import jwt
    now = int(time.time())
    return jwt.encode({"iat": now - 60, "exp": now + 540, "iss": str(made["app"]["id"])},
                      made["private_key"], algorithm="RS256")


def test_git_with_an_installation_token(emu):
    emu.seed("demo", files={"main": {"README.md": "# demo\n"}})
    emu.seed("other", private=True, files={"main": {"README.md": "# other\n"}})
    github = _handle(emu)
    reader = github.create_app("reader", permissions={"contents": "read"}, installations=[
        {"account": "octo", "repositories": ["demo"]}])
    writer = github.create_app("writer", permissions={"contents": "write"},
                               installations=["octo"])
    read_token, write_token = _token(emu, reader), _token(emu, writer)

    clone = emu.folder / "clone"
    emu.git("clone", "-q", emu.url(token=read_token), str(clone))
    emu.commit(clone, "bot.txt", "by the bot\n", "Bot commit")
    refused = emu.git("push", "-q", emu.url(token=read_token), "main", cwd=clone, ok=False)
    assert refused.returncode != 0
    assert "remote: Permission to octo/demo.git denied to reader[bot]." in refused.stderr
    assert "The requested URL returned error: 403" in refused.stderr
    # outside its selection a private repository is not there (git sends the token once
    # asked for credentials; a public one, as on GitHub, any client may clone without)
    missing = emu.git("clone", "-q", emu.url("octo/other", token=read_token),
                      str(emu.folder / "nope"), ok=False)
    assert "Repository not found" in missing.stderr
    # with contents write it goes through, pushed by the bot
    emu.git("push", "-q", emu.url(token=write_token), "main", cwd=clone)
    assert emu.rest("/branches/main").json()["commit"]["sha"] == emu.rev(clone)
    # an expired or unknown token is git's authentication failure
    requests.post(f"{emu.server.admin_url}/clock", json={"advance": "61m"}, timeout=5)
    failed = emu.git("ls-remote", emu.url("octo/other", token=write_token), ok=False)
    assert "remote: Invalid username or token" in failed.stderr
    assert "Authentication failed" in failed.stderr


@pytest.fixture
def receiver():
    server = Receiver(secret="app-secret")
    yield server
    server.close()


def test_the_apps_webhooks_carry_its_installation(emu, receiver):
    emu.seed("demo", commits=[{"sha": "a" * 40, "parents": []}, {"sha": "b" * 40,
                                                                   "parents": ["a" * 40]}],
             branches={"main": "a" * 40, "topic": "b" * 40})
    emu.seed("elsewhere", commits=[{"sha": "c" * 40, "parents": []}], branches={"main": "c" * 40})
    github = _handle(emu)
    made = github.create_app("hooked", permissions={"pull_requests": "write", "issues": "write"},
                             events=["pull_request", "issues"], webhook_url=receiver.url,
                             webhook_secret="app-secret",
                             installations=[{"account": "octo", "repositories": ["demo"]}])
    user = {"Authorization": "token tok-ada"}
    base = f"{emu.server.url}/repos/octo"
    assert requests.post(f"{base}/demo/pulls", headers=user, timeout=5, json={
        "title": "T", "head": "topic", "base": "main"}).status_code == 201
    assert requests.post(f"{base}/demo/labels", headers=user, timeout=5, json={
        "name": "bug"}).status_code == 201  # `label`: the App did not subscribe to it
    assert requests.post(f"{base}/elsewhere/issues", headers=user, timeout=5, json={
        "title": "not installed there"}).status_code == 201
    github.install_app("hooked", "octo", repositories=["elsewhere"])
    deliveries = receiver.wait_for(3)
    assert [(h["X-Github-Event"], p["action"]) for h, p in deliveries] == [
        ("installation", "created"), ("pull_request", "opened"),
        ("installation_repositories", "added")]
    for headers, payload in deliveries:
        assert headers["X-Github-Hook-Installation-Target-Type"] == "integration"
        assert headers["X-Github-Hook-Installation-Target-Id"] == str(made["app"]["id"])
    (_, created), (_, opened), (_, added) = deliveries
    installation = made["installations"][0]
    assert opened["installation"]["id"] == installation["id"]
    assert opened["installation"]["node_id"].startswith("MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u")
    check_payload("pull_request", opened)
    for name, payload in (("installation-created", created),
                          ("installation-repositories-added", added)):
        validator = jsonschema.Draft202012Validator(SCHEMAS[name]["payload"])
        assert [e.message for e in validator.iter_errors(payload)] == []
    assert [r["full_name"] for r in created["repositories"]] == ["octo/demo"]
    assert [r["full_name"] for r in added["repositories_added"]] == ["octo/elsewhere"]
    # the namespace's own log lists them like every delivery
    assert [d["event"] for d in github.webhooks.deliveries()] == [
        "installation", "pull_request", "installation_repositories"]
