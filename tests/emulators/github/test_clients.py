"""github3.py and githubkit, unmodified, against the served emulator (root and mounted).

github3.py builds its objects from GitHub's full shapes (it failed on the first call against
cut-down ones) and asks for the `full` media type; githubkit parses every answer into pydantic
models generated from GitHub's OpenAPI description, so a missing or mistyped field fails it.
"""
import github3
import pytest
import requests
from githubkit import GitHub

from emulators.github.actors import synthetic_login

from .conftest import A, B, C, graph_body
from .test_pygithub import served  # noqa: F401  (the same served emulators)

TOPICS = [f"topic-{n:02d}" for n in range(12)]


def seed(admin, name):
    requests.post(f"{admin}/reset", timeout=5).raise_for_status()
    res = requests.post(f"{admin}/github/repositories", json=graph_body(name=name), timeout=5)
    assert res.status_code == 201, res.text


def test_github3_repository_refs_and_pulls(served):  # noqa: F811
    base, admin = served
    seed(admin, "g3")
    gh = github3.GitHub(token="synthetic-token")
    gh.session.base_url = base  # how github3.py is pointed at another API root

    repo = gh.repository("synthetic-org", "g3")
    assert (repo.full_name, repo.default_branch, repo.owner.login) == \
        ("synthetic-org/g3", "main", "synthetic-org")
    assert repo.archive_urlt.expand(archive_format="zipball", ref="main") == \
        f"{base}/repos/synthetic-org/g3/zipball/main"

    for topic in TOPICS:
        assert repo.create_ref(f"refs/heads/{topic}", B).object.sha == B
    ref = repo.ref(f"heads/{TOPICS[0]}")
    ref.update(C)
    assert repo.ref(f"heads/{TOPICS[0]}").object.sha == C
    refs = repo.refs("heads")
    refs.params["per_page"] = 5  # three pages, followed through `Link`
    assert [r.ref for r in refs] == [f"refs/heads/{n}" for n in ["main", *TOPICS]]
    assert refs.last_response.url.endswith("per_page=5&page=3")

    for n, topic in enumerate(TOPICS):
        created = repo.create_pull(f"Add {topic}", "main", topic, body=f"Body *{n}*\n\nMore.")
        assert created.number == n + 1
    pr = repo.pull_request(1)
    # a token nobody named is a synthetic user of its own, the same for every request
    assert (pr.title, pr.body, pr.user.login) == ("Add topic-00", "Body *0*\n\nMore.",
                                                  synthetic_login("synthetic-token"))
    assert pr.body_html == '<p dir="auto">Body *0*</p>\n<p dir="auto">More.</p>'
    assert pr.body_text == "Body *0*\nMore."
    assert (pr.head.ref, pr.head.sha, pr.base.sha, pr.commits_count) == (TOPICS[0], C, A, 2)
    assert pr.update(title="Renamed", body="New body")
    assert repo.pull_request(1).title == "Renamed"
    assert pr.close() and repo.pull_request(1).state == "closed"

    listed = repo.pull_requests(state="all", sort="created", direction="asc")
    listed.params["per_page"] = 5
    assert [p.number for p in listed] == list(range(1, 13))
    assert [p.number for p in repo.pull_requests(head=f"synthetic-org:{TOPICS[3]}")] == [4]
    assert gh.repository("synthetic-org", "g3").open_issues_count == 11


def test_githubkit_parses_every_answer_into_its_models(served):  # noqa: F811
    base, admin = served
    seed(admin, "kit")
    gh = GitHub("synthetic-token", base_url=base + "/", auto_retry=False, http_cache=False)
    rest = gh.rest

    repo = rest.repos.get("synthetic-org", "kit")
    assert repo.headers["x-github-api-version-selected"] == "2026-03-10"
    assert repo.parsed_data.owner.login == "synthetic-org"
    for topic in TOPICS[:7]:
        rest.git.create_ref("synthetic-org", "kit", data={"ref": f"refs/heads/{topic}",
                                                          "sha": B})
    moved = rest.git.update_ref("synthetic-org", "kit", f"heads/{TOPICS[0]}", data={"sha": C})
    assert moved.parsed_data.object_.sha == C
    assert rest.git.get_ref("synthetic-org", "kit", "heads/main").parsed_data.object_.sha == A
    matching = rest.git.list_matching_refs("synthetic-org", "kit", "heads/topic").parsed_data
    assert [r.ref for r in matching] == [f"refs/heads/{t}" for t in TOPICS[:7]]

    for topic in TOPICS[:7]:
        pr = rest.pulls.create("synthetic-org", "kit",
                               data={"title": topic, "head": topic, "base": "main"}).parsed_data
        assert pr.user.login == synthetic_login("synthetic-token") and pr.body is None
    got = rest.pulls.get("synthetic-org", "kit", 1).parsed_data
    assert (got.commits, got.mergeable, got.head.repo.full_name) == (2, True, "synthetic-org/kit")
    numbers = [p.number for p in rest.paginate(rest.pulls.list, owner="synthetic-org",
                                               repo="kit", state="all", per_page=3)]
    assert sorted(numbers) == list(range(1, 8)) and len(numbers) == 7
    closed = rest.pulls.update("synthetic-org", "kit", 2, data={"state": "closed"}).parsed_data
    assert closed.state == "closed" and closed.closed_at is not None


@pytest.mark.parametrize("path", ["/git/ref/heads/main", "/git/matching-refs/heads"])
def test_githubkit_sees_githubs_409_on_an_empty_repository(served, path):  # noqa: F811
    from githubkit.exception import RequestFailed
    base, admin = served
    requests.post(f"{admin}/reset", timeout=5).raise_for_status()
    requests.post(f"{admin}/github/repositories", timeout=5,
                  json={"owner": "o", "name": "empty"}).raise_for_status()
    gh = GitHub("synthetic-token", base_url=base + "/", auto_retry=False, http_cache=False)
    with pytest.raises(RequestFailed) as caught:
        if "matching" in path:
            gh.rest.git.list_matching_refs("o", "empty", "heads")
        else:
            gh.rest.git.get_ref("o", "empty", "heads/main")
    assert caught.value.response.status_code == 409
    assert caught.value.response.json()["message"] == "Git Repository is empty."
