"""PyGithub, unmodified, against a served emulator: at the root and mounted under /emulators/github.

The client seeds, reads a repository, creates and updates refs, opens 33 PRs, lists them across
pages (following `Link`), edits one, and recovers a PR whose create response was dropped.
"""
import pytest
import requests
from github import Auth, Github, GithubException

from emulators.github import serve
from emulators.github.app import create_service
from emulators.runtime import PathDispatcher, Runtime, Server, Settings

from .conftest import A, B, C, D, graph_body


def _not_here(environ, start_response):
    start_response("404 Not Found", [("content-type", "text/plain")])
    return [b"not here"]


@pytest.fixture(scope="module", params=["root", "mounted"])
def served(request, tmp_path_factory):
    """Yield (base URL for clients, admin URL) of a served emulator."""
    if request.param == "root":
        with serve() as server:
            yield server.url, server.admin_url
        return
    db = tmp_path_factory.mktemp("gh") / "e.sqlite3"
    runtime = Runtime(create_service(), Settings(db=str(db)))
    app = PathDispatcher(_not_here, {"/emulators/github": runtime})
    server = Server(app, runtime)
    try:
        base = server.url + "/emulators/github"
        yield base, base + "/__admin"
    finally:
        server.close()


def client(base):
    # retry=None: a dropped response must surface, not be retried behind the test's back
    # no client-side throttling: PyGithub spaces writes 1 s apart by default
    return Github(base_url=base, auth=Auth.Token("synthetic-token"), retry=None, per_page=30,
                  seconds_between_requests=0, seconds_between_writes=0)


def test_pygithub_full_flow(served):
    base, admin = served
    requests.post(f"{admin}/reset", timeout=5).raise_for_status()
    body = graph_body(name="flow")
    body["branches"] = {"main": A, "side": D}
    assert requests.post(f"{admin}/github/repositories", json=body, timeout=5).status_code == 201

    gh = client(base)
    repo = gh.get_repo("synthetic-org/flow")
    assert (repo.full_name, repo.default_branch, repo.private) == (
        "synthetic-org/flow", "main", False)
    assert repo.owner.login == "synthetic-org"

    ref = repo.create_git_ref("refs/heads/topic", B)
    assert ref.object.sha == B
    ref.edit(C)  # fast-forward b -> c
    assert repo.get_git_ref("heads/topic").object.sha == C
    with pytest.raises(GithubException) as caught:
        ref.edit(D)
    assert caught.value.status == 422
    assert caught.value.data["message"] == "Update is not a fast forward"
    assert [r.ref for r in repo.get_git_matching_refs("heads/")] == [
        "refs/heads/main", "refs/heads/side", "refs/heads/topic"]

    for i in range(33):
        repo.create_git_ref(f"refs/heads/t{i}", B)
        repo.create_pull(base="main", head=f"t{i}", title=f"PR {i}", body="generated")
    pulls = repo.get_pulls(state="open", base="main")
    assert pulls.totalCount == 33
    listed = [p.number for p in pulls]
    assert listed == list(range(33, 0, -1))  # 30 on the first page, 3 after following Link

    pr = repo.get_pull(5)
    pr.edit(title="Edited", body="", state="closed")
    pr = repo.get_pull(5)
    assert (pr.title, pr.body, pr.state) == ("Edited", None, "closed")
    assert pr.head.ref == "t4" and pr.base.ref == "main"
    assert repo.get_pulls(state="closed").totalCount == 1

    with pytest.raises(GithubException) as caught:
        repo.create_pull(base="main", head="t0", title="again")
    assert caught.value.data["errors"][0]["message"] == \
        "A pull request already exists for synthetic-org:t0."

    # A PR whose create answer is lost: the client sees a connection error, then finds it.
    requests.post(f"{admin}/faults", json={"preset": "github_pr_create_accepted_drop"},
                  timeout=5).raise_for_status()
    with pytest.raises(requests.ConnectionError):
        repo.create_pull(base="main", head="topic", title="lost answer")
    found = list(repo.get_pulls(state="open", head="synthetic-org:topic", base="main"))
    assert [p.title for p in found] == ["lost answer"]
    assert found[0].number == 34
