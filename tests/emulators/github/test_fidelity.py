"""What clients read off GitHub's answers, as GitHub gives it: a pull request's line counts
from its real diff, timestamps to the second (`2011-01-26T19:01:12Z`), and `html_url`s of
GitHub's web shape on the emulator's base URL. PyGithub and githubkit, unmodified, against the
served emulators (root and mounted); conftest checks every answer against GitHub's schemas."""
import re
from datetime import datetime, timedelta, timezone

import pytest
import requests
from github import Auth, Github
from githubkit import GitHub
from githubkit.exception import RequestFailed

from .histories import pr_history, seed_body
from .schema_check import GITHUB_TIME
from .test_pygithub import served  # noqa: F401  (the same served emulators)

# a push payload's commit `timestamp` keeps the committer's offset, as GitHub's does
SECOND_WITH_OFFSET = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)\Z")


def times_in(value, path=""):
    """Yield (path, text) of every time a JSON value carries: `*_at`, `date`, `timestamp`."""
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str) and (key.endswith("_at") or key in ("date", "timestamp")):
                yield f"{path}/{key}", key, item
            else:
                yield from times_in(item, f"{path}/{key}")
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from times_in(item, f"{path}/{n}")


def not_githubs_times(value):
    """The times in `value` GitHub would not send: a fraction of a second, or no `Z`."""
    return [(path, text) for path, key, text in times_in(value)
            if not (SECOND_WITH_OFFSET if key == "timestamp" else GITHUB_TIME).match(text)]


def reset_and_seed(admin):
    requests.post(f"{admin}/reset", timeout=5).raise_for_status()
    requests.post(f"{admin}/github/repositories", json=seed_body(),
                  timeout=5).raise_for_status()


def pygithub(base):
    return Github(base_url=base, auth=Auth.Token("tok-ada"), retry=None,
                  seconds_between_requests=0, seconds_between_writes=0)


def test_a_pull_requests_line_counts_are_its_diff_since_the_merge_base(served):  # noqa: F811
    base, admin = served
    reset_and_seed(admin)
    repo = pygithub(base).get_repo("synthetic-org/example")
    pr = repo.create_pull(base="main", head="topic", title="Topic")
    # topic adds feature.txt, a line of docs/guide.md and changes line 3 of shared.txt; main's
    # own change since the fork (line 1 of shared.txt, docs/notes.md) is not the PR's
    got = repo.get_pull(pr.number)
    files = list(got.get_files())
    assert sorted(f.filename for f in files) == ["docs/guide.md", "feature.txt", "shared.txt"]
    assert (got.additions, got.deletions, got.changed_files) == (3, 1, 3)
    assert (got.additions, got.deletions) == (sum(f.additions for f in files),
                                              sum(f.deletions for f in files))

    repo.create_file("big.txt", "Ten lines", "".join(f"{n}\n" for n in range(10)),
                     branch="topic")
    grown = repo.get_pull(pr.number)
    assert (grown.additions, grown.deletions, grown.changed_files) == (13, 1, 4)
    grown.edit(state="closed")
    closed = repo.get_pull(pr.number)
    assert (closed.additions, closed.changed_files) == (13, 4)  # the tips it was closed at

    clash = repo.create_pull(base="topic", head="clash", title="Clash")  # fork point c0
    counted = repo.get_pull(clash.number)
    assert (counted.additions, counted.deletions, counted.changed_files) == (1, 1, 1)


def test_a_synthetic_repositorys_pull_requests_count_nothing(served):  # noqa: F811
    base, admin = served
    requests.post(f"{admin}/reset", timeout=5).raise_for_status()
    a, b = "a" * 40, "b" * 40
    requests.post(f"{admin}/github/repositories", timeout=5, json={
        "owner": "synthetic-org", "name": "shas", "commits": [
            {"sha": a, "parents": []}, {"sha": b, "parents": [a]}],
        "branches": {"main": a, "topic": b}}).raise_for_status()
    repo = pygithub(base).get_repo("synthetic-org/shas")
    pr = repo.get_pull(repo.create_pull(base="main", head="topic", title="T").number)
    assert (pr.commits, pr.additions, pr.deletions, pr.changed_files) == (1, 0, 0, 0)


def test_every_answer_gives_times_to_the_second_as_github_does(served):  # noqa: F811
    base, admin = served
    reset_and_seed(admin)
    requests.post(f"{admin}/clock", json={"set": 1_700_000_000_750, "freeze": True},
                  timeout=5).raise_for_status()
    head = pr_history()[1]["t2"]
    ada_kit = GitHub("tok-ada", base_url=base + "/", auto_retry=False, http_cache=False)
    grace_kit = GitHub("tok-grace", base_url=base + "/", auto_retry=False, http_cache=False)
    rest, grace = ada_kit.rest, grace_kit.rest  # the namespaces hold their clients weakly
    own = {"owner": "synthetic-org", "repo": "example"}
    # githubkit sends an aware datetime as Python writes it: microseconds and an offset
    started = datetime(2023, 11, 14, 23, 0, 5, 250_000, tzinfo=timezone(timedelta(hours=1)))
    answers = [
        rest.repos.get(**own),
        rest.pulls.create(**own, data={"title": "Topic", "head": "topic", "base": "main"}),
        rest.pulls.get(**own, pull_number=1),
        rest.pulls.list(**own, state="all"),
        rest.checks.create(**own, name="ci", head_sha=head, started_at=started,
                           conclusion="success"),
        rest.repos.create_commit_status(**own, sha=head, state="success", context="lint"),
        rest.repos.get_combined_status_for_ref(**own, ref=head),
        rest.issues.create(**own, title="Bug"),
        rest.issues.create_comment(**own, issue_number=1, body="On it"),
        rest.issues.list_comments(**own, issue_number=1, since="2023-11-14T22:13:20.5Z"),
        grace.pulls.create_review(**own, pull_number=1, event="APPROVE"),
        rest.pulls.merge(**own, pull_number=1, merge_method="merge"),
        rest.pulls.get(**own, pull_number=1),
        rest.repos.get_commit(**own, ref="main"),
        rest.repos.list_commits(**own),
        rest.issues.list_for_repo(**own, state="all"),
    ]
    for answer in answers:
        assert not_githubs_times(answer.json()) == [], answer.url
    run = answers[4].json()
    assert run["started_at"] == "2023-11-14T22:00:05Z"  # the time it was given, in UTC
    assert run["completed_at"] == "2023-11-14T22:13:20Z"  # the clock, its 750 ms dropped
    merged = answers[12].json()
    assert merged["merged_at"] == merged["closed_at"] == "2023-11-14T22:13:20Z"
    # `since` compares to the second, as GitHub keeps comments' times
    assert [c["body"] for c in answers[9].json()] == ["On it"]
    with pytest.raises(RequestFailed) as refused:  # githubkit's models would refuse it first
        ada_kit.request("POST", "/repos/synthetic-org/example/check-runs",
                        json={"name": "ci", "head_sha": head, "started_at": "yesterday"})
    assert refused.value.response.status_code == 422
    assert refused.value.response.json()["errors"][0]["field"] == "started_at"


def test_html_urls_are_githubs_web_urls_on_the_emulators_base(served):  # noqa: F811
    base, admin = served
    reset_and_seed(admin)
    requests.put(f"{admin}/credentials", timeout=5, json=[
        {"credential": "tok-ada", "user": "ada"},
        {"credential": "tok-grace", "user": "grace"}]).raise_for_status()
    repo = pygithub(base).get_repo("synthetic-org/example")
    web = f"{base}/synthetic-org/example"
    assert repo.html_url == web and repo.owner.html_url == f"{base}/synthetic-org"
    assert repo.clone_url == f"{web}.git"
    pr = repo.create_pull(base="main", head="topic", title="Topic")
    assert (pr.html_url, pr.diff_url, pr.patch_url) == (
        f"{web}/pull/1", f"{web}/pull/1.diff", f"{web}/pull/1.patch")
    assert pr.user.html_url == f"{base}/ada"
    issue = repo.create_issue("Bug")
    assert issue.html_url == f"{web}/issues/2"
    assert repo.get_issue(1).html_url == f"{web}/pull/1"  # a PR's issue is its pull page
    comment = pr.create_issue_comment("LGTM")
    assert comment.html_url == f"{web}/pull/1#issuecomment-{comment.id}"
    assert issue.create_comment("Me too").html_url.startswith(f"{web}/issues/2#issuecomment-")
    review = Github(base_url=base, auth=Auth.Token("tok-grace"), seconds_between_requests=0,
                    seconds_between_writes=0).get_repo("synthetic-org/example") \
        .get_pull(1).create_review(event="APPROVE")
    assert review.html_url == f"{web}/pull/1#pullrequestreview-{review.id}"
    run = repo.create_check_run("ci", pr.head.sha, conclusion="success")
    assert run.html_url == f"{web}/runs/{run.id}"
    commit = repo.get_commit(pr.head.sha)
    assert commit.html_url == f"{web}/commit/{pr.head.sha}"
    assert {f.blob_url for f in commit.files} >= {f"{web}/blob/{pr.head.sha}/shared.txt"}
    readme = repo.get_contents("README.md", ref="main")
    assert readme.html_url == f"{web}/blob/main/README.md"
    assert repo.get_contents("docs", ref="main")[0].html_url.startswith(f"{web}/blob/main/docs/")
    assert repo.get_branch("main").raw_data["_links"]["html"] == f"{web}/tree/main"
    compare = repo.compare("main", "topic")
    assert compare.html_url == f"{web}/compare/main...topic"
