"""Unmodified clients against the rate limits and conditional requests: PyGithub reads its limit
and waits out a full window (the emulator's clock moved, not an hour slept), githubkit's HTTP
cache revalidates (304s) and then sees another client's write, octokit's throttling plugin meets
a primary and a secondary limit, and the portless mode's handle sets the limits."""
import json
import subprocess
import time

import pytest
from github import Auth, Github, GithubRetry, RateLimitExceededException
from githubkit import GitHub

import emulators

from .conftest import A, B
from .test_octokit import octokit_folder  # noqa: F401  (npm packages in var/octokit/)

HOUR = 3_600_000


def pygithub(handle, token="bot-token", **options):
    return Github(base_url=handle.url, auth=Auth.Token(token), seconds_between_requests=0,
                  seconds_between_writes=0, **options)


def statuses(handle, operation):
    return [entry["status"] for entry in handle.journal(operationId=operation)]


def test_pygithub_reads_its_rate_limit(github_namespace):
    github_namespace.seed_repository("octo", "demo")
    gh = pygithub(github_namespace)
    gh.get_repo("octo/demo")
    overview = gh.get_rate_limit()
    assert (overview.rate.limit, overview.rate.remaining, overview.rate.used) == (5000, 4999, 1)
    resources = overview.resources
    assert (resources.core.remaining, resources.search.limit, resources.graphql.limit) == \
        (4999, 30, 5000)
    assert gh.rate_limiting == (4999, 5000)  # read from the last answer's headers
    assert "repo" in gh.oauth_scopes
    assert github_namespace.rate_limits(core=10)["core"] == 10
    assert gh.get_rate_limit().rate.limit == 10
    assert statuses(github_namespace, "rate-limit/get") == [200, 200]


def test_pygithub_waits_out_a_full_window_on_the_emulators_clock(github_namespace):
    """The window is made to begin an hour (less two seconds) ago by setting the clock back for
    its first requests; back at the present, the third request finds it full, PyGithub waits
    for `X-RateLimit-Reset` (two seconds, not an hour) and its retry is answered."""
    handle = github_namespace
    handle.seed_repository("octo", "demo")
    handle.rate_limits(core=2)
    handle.clock(set=int(time.time() * 1000) - HOUR + 2000, freeze=True)
    gh = pygithub(handle, retry=GithubRetry(total=3))  # PyGithub's own retry policy
    gh.get_repo("octo/demo").get_git_ref("heads/main")
    handle.clock(reset=True)
    started = time.monotonic()
    assert gh.get_repo("octo/demo").full_name == "octo/demo"
    waited = time.monotonic() - started
    assert statuses(handle, "repos/get") == [200, 403, 200]
    assert 1 <= waited < 15, waited
    refused = handle.journal(operationId="repos/get", status=403)
    assert len(refused) == 1


def test_githubkits_cache_revalidates_and_then_sees_another_clients_write(github_namespace):
    handle = github_namespace
    handle.seed_repository("octo", "demo", commits=[A, B], branches={"main": A, "topic": B})
    writer = pygithub(handle, "writer-token").get_repo("octo/demo")
    writer.create_pull(base="main", head="topic", title="First")
    kit = GitHub("kit-token", base_url=handle.url + "/", auto_retry=False)  # its default cache
    assert kit.rest.pulls.get("octo", "demo", 1).parsed_data.title == "First"
    again = kit.rest.pulls.get("octo", "demo", 1)
    assert again.parsed_data.title == "First"
    assert statuses(handle, "pulls/get") == [200, 304]
    # hishel matches a 304 with a weak ETag (GitHub's kind) to what it stored by Last-Modified,
    # which is to the second: a write in the same second as the first version would be mixed
    # up with it (on GitHub too), so the other client writes a second later
    handle.clock(advance="1s")
    writer.get_pull(1).edit(title="Renamed")  # (PyGithub reads the PR first: one more 200)
    for _ in range(3):
        assert kit.rest.pulls.get("octo", "demo", 1).parsed_data.title == "Renamed"
    after = statuses(handle, "pulls/get")[2:]
    # the first read after the write is fresh; hishel may revalidate the old answer once more
    # (it picks the newer of two stored answers by `Date`, to the second) before the 304s
    assert after[:2] == [200, 200] and after[-1] == 304
    core = kit.rest.rate_limit.get().parsed_data.resources.core  # (API 2026-03-10: no `rate`)
    kit_answers = statuses(handle, "pulls/get").count(200) - 1
    assert (core.limit, core.used) == (5000, kit_answers)  # no 304 was counted


def test_octokits_throttling_plugin_meets_a_primary_and_a_secondary_limit(
        github_namespace, octokit_folder):  # noqa: F811
    github_namespace.seed_repository("octo", "demo")
    # the namespace's admin plane is under its path carrier too
    done = subprocess.run(["node", "octokit_throttling.mjs", github_namespace.url,
                           github_namespace.url + "/__admin"],
                          cwd=octokit_folder, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])["seen"]
    assert [(s["kind"], s["method"], s["url"]) for s in seen] == [
        ("secondary", "POST", "/repos/{owner}/{repo}/git/refs"),
        ("primary", "GET", "/repos/{owner}/{repo}")]
    assert seen[0]["retryAfter"] == 60  # the preset's Retry-After


def test_the_portless_mode_handle_sets_the_limits_pygithub_meets():
    with emulators.mock_github() as github:
        github.seed_repository("octo", "demo")
        assert github.rate_limits(core=1) == {"core": 1, "search": None, "graphql": None}
        gh = Github(auth=Auth.Token("bot-token"), retry=None)  # at https://api.github.com
        gh.get_repo("octo/demo")
        with pytest.raises(RateLimitExceededException) as refused:
            gh.get_repo("octo/demo")
        assert refused.value.headers["x-ratelimit-remaining"] == "0"
        assert github.rate_limits() == {"core": 1, "search": None, "graphql": None}
