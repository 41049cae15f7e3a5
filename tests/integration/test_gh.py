"""The real `gh` (Debian's package) against the GitHub emulator served by gunicorn on a unix
socket, unmodified: `GH_HOST`, `GH_ENTERPRISE_TOKEN`, `GH_REPO` and a fresh config (whose
`http_unix_socket` names the socket) and cache per test (testkit/gh.py).

gunicorn binds the socket and a loopback port (for git and the admin plane), as the GraphQL
README shows. Every GraphQL request gh sent and its answer are recorded
(testkit.emulator_apps:github) and, after each test, checked against the vendored schema:
each query validates, and each answer has the shape the schema gives it (graphql_check.py).
"""
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import jwt
import pytest
import requests

from testkit.gh import Gh, gh_path, gh_version
from testkit.servers import gunicorn
from tests.emulators.github.graphql_check import problems

pytestmark = pytest.mark.gunicorn
ADA, GRACE = "tok-ada", "tok-grace"
# `gh pr checks` with a check still running: 1 in gh 2.23 (Debian's), 8 from 2.34 on
PENDING_EXIT = 1 if gh_path() is None or gh_version() < (2, 34, 0) else 8


@pytest.fixture(scope="module")
def server():
    """(base URL, socket path, record file) of one gunicorn for the module."""
    if gh_path() is None:
        if os.environ.get("CI", "").lower() in ("true", "1"):  # `make test` installs it
            pytest.fail("CI must run the gh tests: gh is not installed", pytrace=False)
        pytest.skip("gh is not installed (as root, `make test` installs Debian's package)")
    folder = Path(tempfile.mkdtemp(prefix="gh-"))  # short: a socket path has 107 bytes
    record = folder / "graphql.jsonl"
    env = {"EMULATORS_DB": str(folder / "emulators.sqlite3"),
           "GITHUB_GRAPHQL_RECORD": str(record)}
    try:
        with gunicorn("testkit.emulator_apps:github()", env=env, workers=2, threads=4,
                      ready_path="/__admin/health", unix_socket=folder / "gh.sock") as url:
            yield url, folder / "gh.sock", record
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def world(server, tmp_path):
    """A reset emulator with ada and grace, and octo/demo seeded with files."""
    url, sock, record = server
    admin = f"{url}/__admin"
    requests.post(f"{admin}/reset?all=1", timeout=10).raise_for_status()
    requests.put(f"{admin}/credentials", timeout=10, json=[
        {"credential": ADA, "user": "ada"}, {"credential": GRACE, "user": "grace"}]
    ).raise_for_status()
    requests.post(f"{admin}/github/repositories", timeout=10, json={
        "owner": "octo", "name": "demo", "files": {
            "main": {"README.md": "# demo\n"},
            "topic": {"README.md": "# demo\n", "feature.txt": "new\n"}}}).raise_for_status()
    record.write_text("")
    yield World(url, sock, tmp_path)
    exchanges = [json.loads(line) for line in record.read_text().splitlines()]
    found = [f"{x['request'].get('query', '')[:80]!r}: {p}" for x in exchanges
             for p in problems(x["request"], x["answer"])]
    assert not found, "answers outside GitHub's GraphQL schema:\n" + "\n".join(found[:20])
    invalid = [x for x in exchanges if "data" not in x["answer"]]
    assert not invalid, f"gh sent queries the schema refuses: {invalid[:3]}"


class World:
    def __init__(self, url, sock, folder):
        self.url, self.sock, self.folder = url, sock, folder

    def gh(self, token=ADA):
        return Gh(self.sock, self.folder / token, token, "octo/demo")


def test_gh_api_graphql_and_rest_under_api_v3(world):
    ada = world.gh()
    assert json.loads(ada.run("api", "graphql", "-f", "query={viewer{login}}").stdout) == {
        "data": {"viewer": {"login": "ada"}}}
    repo = json.loads(ada.run("api", "repos/octo/demo").stdout)
    assert repo["full_name"] == "octo/demo"
    assert repo["url"] == "http://github.local/api/v3/repos/octo/demo"
    missing = ada.run("api", "graphql", "-f",
                      'query={repository(owner:"octo",name:"nope"){name}}', ok=False)
    assert missing.returncode == 1
    assert "Could not resolve to a Repository with the name 'octo/nope'." in missing.stderr


def test_gh_api_rate_limit_reads_the_windows_and_meets_a_full_one(world):
    """`gh api rate_limit` (uncounted) shows what ada's requests used, GraphQL apart, as
    GraphQL's `rateLimit` does; a full window is GitHub's 403 in gh's words."""
    ada = world.gh()
    ada.run("api", "repos/octo/demo")
    ada.run("api", "graphql", "-f", "query={viewer{login}}")
    limits = json.loads(ada.run("api", "rate_limit").stdout)
    assert limits["rate"] == limits["resources"]["core"]
    assert {k: limits["resources"]["core"][k] for k in ("limit", "used", "remaining")} == {
        "limit": 5000, "used": 1, "remaining": 4999}
    assert limits["resources"]["graphql"]["used"] == 1
    asked = json.loads(ada.run("api", "graphql", "-f",
                               "query={rateLimit{limit used remaining resetAt}}").stdout)
    reset = limits["resources"]["graphql"]["reset"]  # GraphQL's rateLimit: the same window
    assert asked["data"]["rateLimit"] == {
        "limit": 5000, "used": 2, "remaining": 4998,
        "resetAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(reset))}
    shown = ada.run("api", "--include", "rate_limit").stdout
    assert "X-Ratelimit-Resource: core" in shown and "Cache-Control: no-cache" in shown
    requests.put(f"{world.url}/__admin/github/rate-limits", json={"core": 1},
                 timeout=10).raise_for_status()
    refused = ada.run("api", "repos/octo/demo", ok=False)
    assert refused.returncode == 1
    assert "API rate limit exceeded for user" in refused.stderr and "HTTP 403" in refused.stderr


def test_gh_repo_view(world):
    shown = world.gh().run("repo", "view", "octo/demo").stdout
    assert shown.startswith("name:\tocto/demo\n") and "# demo" in shown


def _rest(world, method, path, body=None, token=ADA):
    answer = requests.request(method, f"{world.url}{path}", json=body, timeout=10,
                              headers={"Authorization": f"token {token}"})
    assert answer.status_code < 300, answer.text
    return answer.json() if answer.content else None


def _open_pull(world):
    out = world.gh().run("pr", "create", "--repo", "github.local/octo/demo", "--head", "topic",
                         "--base", "main", "--title", "Add the feature", "--body", "Why.")
    assert out.stdout.strip() == "http://github.local/octo/demo/pull/1"
    return _rest(world, "GET", "/repos/octo/demo/pulls/1")


def test_gh_pr_create_list_view_is_the_rest_pull_request(world):
    pull = _open_pull(world)
    assert (pull["title"], pull["body"], pull["user"]["login"]) == (
        "Add the feature", "Why.", "ada")
    ada = world.gh()
    listed = ada.run("pr", "list").stdout.split("\t")
    assert listed[:4] == ["1", "Add the feature", "topic", "OPEN"]
    shown = json.loads(ada.run("pr", "view", "1", "--json",
                               "number,title,state,isDraft,author,headRefName,baseRefName,"
                               "headRefOid,mergeable,mergeStateStatus,reviewDecision,"
                               "additions,deletions,changedFiles,commits,labels").stdout)
    assert shown["headRefOid"] == pull["head"]["sha"]
    assert {k: shown[k] for k in ("number", "title", "state", "isDraft", "headRefName",
                                  "baseRefName", "mergeable", "mergeStateStatus",
                                  "additions", "deletions", "changedFiles")} == {
        "number": 1, "title": "Add the feature", "state": "OPEN", "isDraft": False,
        "headRefName": "topic", "baseRefName": "main", "mergeable": "MERGEABLE",
        "mergeStateStatus": "CLEAN", "additions": 1, "deletions": 0, "changedFiles": 1}
    assert shown["author"]["login"] == "ada" and shown["reviewDecision"] == ""
    assert [c["oid"] for c in shown["commits"]] == [pull["head"]["sha"]]
    human = ada.run("pr", "view", "1").stdout
    assert "title:\tAdd the feature\n" in human and "state:\tOPEN\n" in human


def test_gh_pr_checks_pending_failing_passing_with_the_installed_gh_exit_codes(world):
    sha = _open_pull(world)["head"]["sha"]
    ada = world.gh()
    assert ada.run("pr", "checks", "1", ok=False).returncode == 1  # none reported
    run = _rest(world, "POST", "/repos/octo/demo/check-runs",
                {"name": "ci", "head_sha": sha, "status": "in_progress"})
    pending = ada.run("pr", "checks", "1", ok=False)
    assert pending.returncode == PENDING_EXIT, pending.stdout + pending.stderr
    assert "ci\tpending" in pending.stdout
    _rest(world, "PATCH", f"/repos/octo/demo/check-runs/{run['id']}", {"conclusion": "failure"})
    failing = ada.run("pr", "checks", "1", ok=False)
    assert failing.returncode == 1 and "ci\tfail" in failing.stdout
    _rest(world, "POST", "/repos/octo/demo/check-runs",
          {"name": "ci", "head_sha": sha, "conclusion": "success"})
    _rest(world, "POST", f"/repos/octo/demo/statuses/{sha}",
          {"state": "success", "context": "lint"})
    passing = ada.run("pr", "checks", "1")
    assert "ci\tpass" in passing.stdout and "lint\tpass" in passing.stdout


def test_gh_pr_merge_refused_while_protection_blocks_then_merged_and_fetched(world, tmp_path):
    sha = _open_pull(world)["head"]["sha"]
    _rest(world, "PUT", "/repos/octo/demo/branches/main/protection", {
        "required_status_checks": {"strict": False, "contexts": ["ci"]},
        "enforce_admins": True, "restrictions": None,
        "required_pull_request_reviews": {"required_approving_review_count": 1}})
    ada = world.gh()
    refused = ada.run("pr", "merge", "1", "--squash", ok=False)
    assert refused.returncode == 1 and "base branch policy prohibits the merge" in \
        refused.stderr  # gh's own refusal of a BLOCKED pull request
    admin = ada.run("pr", "merge", "1", "--squash", "--admin", ok=False)
    assert admin.returncode == 1  # the server's refusal, REST's words
    assert "At least 1 approving review is required by reviewers with write access." in \
        admin.stderr
    grace = world.gh(GRACE)
    grace.run("pr", "review", "1", "--approve", "--body", "Looks right.")
    _rest(world, "POST", "/repos/octo/demo/check-runs",
          {"name": "ci", "head_sha": sha, "conclusion": "success"})
    state = json.loads(ada.run("pr", "view", "1", "--json",
                               "reviewDecision,mergeStateStatus,reviews").stdout)
    assert (state["reviewDecision"], state["mergeStateStatus"]) == ("APPROVED", "CLEAN")
    assert [(r["author"]["login"], r["state"]) for r in state["reviews"]] == [
        ("grace", "APPROVED")]
    ada.run("pr", "merge", "1", "--squash")
    merged = _rest(world, "GET", "/repos/octo/demo/pulls/1")
    assert merged["merged"] and merged["merged_by"]["login"] == "ada"
    clone = tmp_path / "clone"
    git = ["git", "-c", "protocol.version=2"]
    subprocess.run([*git, "clone", "-q", f"{world.url}/octo/demo.git", str(clone)], check=True,
                   timeout=60, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    log = subprocess.run(["git", "-C", str(clone), "log", "-1", "--format=%H %s"],
                         capture_output=True, text=True, check=True).stdout.split(" ", 1)
    assert log == [merged["merge_commit_sha"], "Add the feature (#1)\n"]


def test_gh_pr_merge_with_a_merge_commit(world):
    _open_pull(world)
    world.gh().run("pr", "merge", "1", "--merge")
    merged = _rest(world, "GET", "/repos/octo/demo/pulls/1")
    commit = _rest(world, "GET", f"/repos/octo/demo/commits/{merged['merge_commit_sha']}")
    assert len(commit["parents"]) == 2
    assert commit["commit"]["message"].startswith("Merge pull request #1 from octo/topic")


def test_gh_pr_comment_and_review_as_another_user(world):
    _open_pull(world)
    assert world.gh().run("pr", "comment", "1", "--body", "A note.").stdout.strip() == \
        "http://github.local/octo/demo/pull/1#issuecomment-1"
    world.gh(GRACE).run("pr", "review", "1", "--approve")
    comments = _rest(world, "GET", "/repos/octo/demo/issues/1/comments")
    assert [(c["user"]["login"], c["body"]) for c in comments] == [("ada", "A note.")]
    reviews = _rest(world, "GET", "/repos/octo/demo/pulls/1/reviews")
    assert [(r["user"]["login"], r["state"]) for r in reviews] == [("grace", "APPROVED")]
    own = world.gh().run("pr", "review", "1", "--approve", ok=False)
    assert own.returncode == 1  # an author cannot approve their own pull request


def test_gh_issue_create_and_list(world):
    ada = world.gh()
    assert ada.run("issue", "create", "--title", "Broken", "--body", "It is.").stdout.strip() \
        == "http://github.local/octo/demo/issues/1"
    _rest(world, "POST", "/repos/octo/demo/issues", {"title": "Also broken"})
    listed = [line.split("\t")[:3] for line in ada.run("issue", "list").stdout.splitlines()]
    assert listed == [["2", "OPEN", "Also broken"], ["1", "OPEN", "Broken"]]
    issue = _rest(world, "GET", "/repos/octo/demo/issues/1")
    assert (issue["user"]["login"], issue["body"]) == ("ada", "It is.")


def _installation_token(world, permissions):
    """An installation token of the App `ci-bot`, installed on octo with `permissions`, as a
    workflow's GITHUB_TOKEN is one (its JWT signed on the wall clock: the server's is real)."""
    made = _rest(world, "POST", "/__admin/github/apps", {
        "slug": "ci-bot", "permissions": permissions, "installations": [{"account": "octo"}]})
    now = int(time.time())
    app_jwt = jwt.encode({"iat": now - 60, "exp": now + 540, "iss": str(made["app"]["id"])},
                         made["private_key"], algorithm="RS256")
    installation = made["installations"][0]["id"]
    answer = requests.post(f"{world.url}/app/installations/{installation}/access_tokens",
                           headers={"Authorization": f"Bearer {app_jwt}"}, timeout=10)
    assert answer.status_code == 201, answer.text
    return answer.json()["token"]


def test_gh_with_an_apps_installation_token_acts_as_its_bot(world):
    """As in a workflow whose GITHUB_TOKEN may write pull requests and issues and read the
    code, so not merge (contents write)."""
    token = _installation_token(world, {"pull_requests": "write", "issues": "write",
                                        "contents": "read"})
    bot = Gh(world.sock, world.folder / "bot", token, "octo/demo")
    out = bot.run("pr", "create", "--repo", "github.local/octo/demo", "--head", "topic",
                  "--base", "main", "--title", "From CI", "--body", "Automated.")
    assert out.stdout.strip() == "http://github.local/octo/demo/pull/1"
    assert _rest(world, "GET", "/repos/octo/demo/pulls/1")["user"]["login"] == "ci-bot[bot]"
    author = json.loads(bot.run("pr", "view", "1", "--json", "author").stdout)["author"]
    assert author["login"] == "app/ci-bot" and author["is_bot"] is True  # gh's own words
    refused = bot.run("pr", "merge", "1", "--merge", ok=False)
    assert refused.returncode == 1
    assert "Resource not accessible by integration" in refused.stderr
    assert _rest(world, "GET", "/repos/octo/demo/pulls/1")["state"] == "open"
