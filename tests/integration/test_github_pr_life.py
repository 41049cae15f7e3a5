"""A pull request's whole life under real gunicorn, driven by PyGithub and githubkit unmodified
and by the git command line: push, PR (its line counts from the pushed objects), two check runs (one fails), protection blocks the merge,
the check is re-run and passes, an approving review, the merge (each method), git fetches the
merge commit, and a push to the protected branch is refused; a comment and a label round trip;
every webhook arrives at an app-like receiver that verifies its signature, and validates.

One gunicorn (two workers) for the module; each test resets it.
"""
import os
import subprocess

import pytest
import requests
from github import Auth, Github, GithubException
from githubkit import GitHub
from githubkit.exception import RequestFailed

from testkit.servers import gunicorn
from testkit.webhook_receiver import Receiver
from tests.emulators.github.schema_check import SCHEMAS
from tests.emulators.github.test_fidelity import not_githubs_times
from tests.emulators.github.test_lifecycle_events import problems

pytestmark = pytest.mark.gunicorn
ADA, GRACE, CI = "tok-ada", "tok-grace", "tok-ci"  # the author, the reviewer, the CI app
SECRET = "app-secret"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    db = tmp_path_factory.mktemp("pr-life") / "emulators.sqlite3"
    with gunicorn("wsgi:github", env={"EMULATORS_DB": str(db)}, workers=2, threads=4,
                  ready_path="/__admin/health") as url:
        yield url


class World:
    """A reset emulator with users, an empty repository, a receiver, and git as a user runs
    it (no user config, no prompt)."""

    def __init__(self, base, folder):
        self.base, self.folder = base, folder
        admin = f"{base}/__admin"
        requests.post(f"{admin}/reset?all=1", timeout=5).raise_for_status()
        requests.put(f"{admin}/credentials", timeout=5, json=[
            {"credential": ADA, "user": "ada"}, {"credential": GRACE, "user": "grace"},
            {"credential": CI, "user": "ci-bot"}]).raise_for_status()
        requests.post(f"{admin}/github/repositories", json={"owner": "octo", "name": "demo"},
                      timeout=5).raise_for_status()
        self.receiver = Receiver(secret=SECRET)
        requests.put(f"{admin}/webhook-endpoints", timeout=5, json=[
            {"url": self.receiver.url, "secret": SECRET}]).raise_for_status()
        self.env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1",
                    "GIT_CONFIG_GLOBAL": os.devnull, "HOME": str(folder),
                    "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
                    "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com"}
        self.work = folder / "work"

    def git(self, *args, ok=True):
        done = subprocess.run(["git", *args], cwd=self.work, env=self.env, capture_output=True,
                              text=True, timeout=60)
        assert not ok or done.returncode == 0, done.stderr
        return done

    def commit(self, path, text, message):
        (self.work / path).write_text(text)
        self.git("add", path)
        self.git("commit", "-qm", message)
        return self.git("rev-parse", "HEAD").stdout.strip()

    def push_history(self):
        """main (two commits, the second after topic left it) and topic; return topic's tip."""
        self.work.mkdir()
        self.git("init", "-q", "-b", "main")
        self.git("remote", "add", "origin",
                 self.base.replace("http://", f"http://x-access-token:{ADA}@")
                 + "/octo/demo.git")
        self.commit("shared.txt", "a\nb\nc\n", "Initial commit")
        self.git("push", "-q", "origin", "main")
        self.git("checkout", "-q", "-b", "topic")
        self.commit("feature.txt", "feature\n", "Add the feature")
        head = self.commit("shared.txt", "a\nb\nC\n", "Shout line three")
        self.git("push", "-q", "origin", "topic")
        self.git("checkout", "-q", "main")
        self.commit("shared.txt", "A\nb\nc\n", "Shout line one")
        self.git("push", "-q", "origin", "main")
        return head

    def fetched_main(self):
        """What `git fetch` brings of main: (sha, parent count, shared.txt)."""
        self.git("fetch", "-q", "origin", "main")
        sha = self.git("rev-parse", "origin/main").stdout.strip()
        parents = self.git("rev-list", "--parents", "-n", "1", sha).stdout.split()[1:]
        return sha, len(parents), self.git("show", f"{sha}:shared.txt").stdout

    def refused_push(self):
        """A direct push to the protected main: git's answer."""
        self.git("checkout", "-q", "-B", "main", "origin/main")
        self.commit("direct.txt", "direct\n", "Straight to main")
        return self.git("push", "origin", "main", ok=False)

    def deliveries(self):
        requests.post(f"{self.base}/__admin/webhooks/flush", timeout=30).raise_for_status()
        return self.receiver.received

    def close(self):
        self.receiver.close()


@pytest.fixture
def world(base, tmp_path):
    made = World(base, tmp_path)
    yield made
    made.close()


PROTECTION = {"strict": False, "contexts": ["ci", "lint"], "enforce_admins": True,
              "required_approving_review_count": 1}


def pygithub(base, token):
    return Github(base_url=base, auth=Auth.Token(token), seconds_between_requests=0,
                  seconds_between_writes=0, retry=None).get_repo("octo/demo")


def assert_webhooks(world, merged_sha):
    received = world.deliveries()
    assert world.receiver.refused == []  # every signature verified
    for headers, payload in received:
        assert problems(headers["X-Github-Event"], payload) == [], headers["X-Github-Event"]
        assert not_githubs_times(payload) == [], headers["X-Github-Event"]
    events = {(h["X-Github-Event"], p.get("action")) for h, p in received}
    assert {("ping", None), ("push", None), ("pull_request", "opened"),
            ("check_run", "created"), ("check_run", "completed"), ("check_run", "rerequested"),
            ("check_suite", "completed"), ("status", None), ("issue_comment", "created"),
            ("label", "created"), ("pull_request", "labeled"),
            ("pull_request", "review_requested"), ("pull_request_review", "submitted"),
            ("pull_request", "closed")} <= events
    closed = [p for h, p in received if p.get("action") == "closed"][-1]
    assert closed["pull_request"]["merged"] is True
    assert closed["pull_request"]["merge_commit_sha"] == merged_sha
    assert closed["sender"]["login"] == "ada"


@pytest.mark.parametrize("method,parents", [("merge", 2), ("squash", 1)])
def test_pygithub_drives_a_pull_request_to_its_merge(world, method, parents):
    head = world.push_history()
    author, reviewer, ci = (pygithub(world.base, t) for t in (ADA, GRACE, CI))
    author.get_branch("main").edit_protection(**PROTECTION)
    assert author.get_branch("main").protected is True
    pr = author.create_pull(base="main", head="topic", title="Add the feature", body="Why")
    assert (pr.user.login, pr.head.sha) == ("ada", head)
    # counted from the pushed objects: feature.txt added, line three of shared.txt changed
    assert (pr.additions, pr.deletions, pr.changed_files) == (2, 1, 2)
    pr.create_review_request(reviewers=["grace"])

    # CI: two check runs, one fails, and a commit status
    failing = ci.create_check_run("ci", head, status="in_progress")
    ci.create_check_run("lint", head, conclusion="success")
    failing.edit(conclusion="failure", output={"title": "ci", "summary": "1 test failed"})
    ci.get_commit(head).create_status("success", context="coverage")
    assert ci.get_commit(head).get_combined_status().state == "success"
    assert author.get_pull(pr.number).mergeable_state == "blocked"
    with pytest.raises(GithubException) as refused:
        pr.merge(merge_method=method)
    assert refused.value.status == 405
    assert refused.value.data["message"] == \
        "At least 1 approving review is required by reviewers with write access."

    # the conversation: a comment and a label round trip
    pr.create_issue_comment("/retest")
    pr.add_to_labels("ready")
    assert [c.body for c in author.get_issue(pr.number).get_comments()] == ["/retest"]
    assert [label.name for label in author.get_pull(pr.number).get_labels()] == ["ready"]

    with pytest.raises(GithubException) as own:
        pr.create_review(event="APPROVE")
    assert own.value.data["errors"] == ["Can not approve your own pull request"]
    reviewer.get_pull(pr.number).create_review(event="APPROVE", body="Looks good")
    with pytest.raises(GithubException) as failing_check:
        pr.merge(merge_method=method)
    assert failing_check.value.data["message"] == 'Required status check "ci" is failing.'

    requests.post(f"{failing.url}/rerequest", timeout=5,
                  headers={"Authorization": f"token {CI}"}).raise_for_status()
    ci.create_check_run("ci", head, conclusion="success")  # the re-run passes
    assert [r.conclusion for r in ci.get_commit(head).get_check_runs()] == ["success"] * 2
    assert author.get_pull(pr.number).mergeable_state == "clean"

    status = pr.merge(merge_method=method, sha=head)
    assert status.merged is True
    merged = author.get_pull(pr.number)
    assert (merged.merged, merged.merged_by.login, merged.merge_commit_sha) == (
        True, "ada", status.sha)
    assert not_githubs_times(merged.raw_data) == []
    assert (merged.additions, merged.deletions, merged.changed_files) == (2, 1, 2)
    sha, count, shared = world.fetched_main()
    assert (sha, count, shared) == (status.sha, parents, "A\nb\nC\n")

    refused_push = world.refused_push()
    assert refused_push.returncode != 0
    assert "protected branch hook declined" in refused_push.stderr
    assert "GH006: Protected branch update failed for refs/heads/main." in refused_push.stderr
    author.get_git_ref("heads/topic").delete()  # the client deletes the head branch
    assert_webhooks(world, status.sha)


def test_githubkit_rebases_a_pull_request_past_protection(world):
    head = world.push_history()
    kits = {t: GitHub(t, base_url=world.base + "/", auto_retry=False, http_cache=False)
            for t in (ADA, GRACE, CI)}
    rest = kits[ADA].rest
    rest.repos.update_branch_protection("octo", "demo", "main", data={
        "required_status_checks": {"strict": True, "contexts": ["ci"]},
        "enforce_admins": True, "restrictions": None,
        "required_pull_request_reviews": {"required_approving_review_count": 1}})
    number = rest.pulls.create("octo", "demo", data={
        "title": "Rebase me", "head": "topic", "base": "main"}).parsed_data.number
    rest.pulls.request_reviewers("octo", "demo", number, data={"reviewers": ["grace"]})
    checks = kits[CI].rest.checks
    run = checks.create("octo", "demo", data={"name": "ci", "head_sha": head,
                                              "status": "in_progress"}).parsed_data
    checks.update("octo", "demo", run.id, data={"conclusion": "failure"})
    kits[CI].rest.repos.create_commit_status("octo", "demo", head,
                                             data={"state": "success", "context": "docs"})
    with pytest.raises(RequestFailed) as refused:
        rest.pulls.merge("octo", "demo", number, data={"merge_method": "rebase"})
    assert refused.value.response.status_code == 405
    rest.issues.create_comment("octo", "demo", number, data={"body": "/retest"})
    rest.issues.add_labels("octo", "demo", number, data={"labels": ["ready"]})
    assert [label.name for label in rest.issues.list_labels_on_issue(
        "octo", "demo", number).parsed_data] == ["ready"]
    assert [c.body for c in rest.issues.list_comments("octo", "demo", number).parsed_data] \
        == ["/retest"]
    checks.rerequest_run("octo", "demo", run.id)
    checks.create("octo", "demo", data={"name": "ci", "head_sha": head,
                                        "conclusion": "success"})
    kits[GRACE].rest.pulls.create_review("octo", "demo", number, data={"event": "APPROVE"})
    pull = rest.pulls.get("octo", "demo", number).parsed_data
    assert pull.mergeable_state == "behind"  # strict: main moved on since topic left it
    with pytest.raises(RequestFailed) as behind:
        rest.pulls.merge("octo", "demo", number, data={"merge_method": "rebase"})
    assert behind.value.response.json()["message"] == 'Required status check "ci" is expected.'

    rest.repos.update_branch_protection("octo", "demo", "main", data={
        "required_status_checks": {"strict": False, "contexts": ["ci"]},
        "enforce_admins": True, "restrictions": None,
        "required_pull_request_reviews": {"required_approving_review_count": 1}})
    with pytest.raises(RequestFailed) as stale:
        rest.pulls.merge("octo", "demo", number, data={"sha": "0" * 40})
    assert stale.value.response.status_code == 409
    merged = rest.pulls.merge("octo", "demo", number, data={
        "merge_method": "rebase", "sha": head}).parsed_data
    assert merged.merged is True
    sha, parents, shared = world.fetched_main()
    assert (sha, parents, shared) == (merged.sha, 1, "A\nb\nC\n")
    log = world.git("log", "--format=%s", "-n", "3", sha).stdout.splitlines()
    assert log == ["Shout line three", "Add the feature", "Shout line one"]
    assert_webhooks(world, merged.sha)
    assert_answers_follow_githubs_schemas(world.base, number, head)


def assert_answers_follow_githubs_schemas(base, number, head):
    """The conftest checks in-process answers; these come from the gunicorn workers."""
    repo = "/repos/{owner}/{repo}"
    for template, path in [
            (f"{repo}/pulls/{{pull_number}}", f"/pulls/{number}"),
            (f"{repo}/pulls/{{pull_number}}/reviews", f"/pulls/{number}/reviews"),
            (f"{repo}/pulls/{{pull_number}}/requested_reviewers",
             f"/pulls/{number}/requested_reviewers"),
            (f"{repo}/issues/{{issue_number}}", f"/issues/{number}"),
            (f"{repo}/issues/{{issue_number}}/comments", f"/issues/{number}/comments"),
            (f"{repo}/labels", "/labels"),
            (f"{repo}/commits/{{ref}}/status", f"/commits/{head}/status"),
            (f"{repo}/commits/{{ref}}/check-runs", f"/commits/{head}/check-runs"),
            (f"{repo}/commits/{{ref}}/check-suites", f"/commits/{head}/check-suites"),
            (f"{repo}/branches/{{branch}}", "/branches/main"),
            (f"{repo}/branches/{{branch}}/protection", "/branches/main/protection")]:
        answer = requests.get(f"{base}/repos/octo/demo{path}", timeout=5)
        schema = SCHEMAS.schema_for("GET", template, answer.status_code, answer.json())
        assert schema is not None and SCHEMAS.problems(schema, answer.json()) == [], path


def test_concurrent_merges_of_one_pull_request_merge_it_once(world):
    from concurrent.futures import ThreadPoolExecutor
    world.push_history()
    pr = pygithub(world.base, ADA).create_pull(base="main", head="topic", title="Race")

    def merge(_):
        return requests.put(f"{world.base}/repos/octo/demo/pulls/{pr.number}/merge", timeout=30,
                            json={"merge_method": "squash"},
                            headers={"Authorization": f"token {ADA}"})
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(merge, range(8)))
    assert sorted(a.status_code for a in answers) == [200] + [405] * 7
    assert {a.json()["message"] for a in answers if a.status_code == 405} == {
        "Pull Request is not mergeable"}
    sha, parents, _ = world.fetched_main()
    assert (sha, parents) == (next(a.json()["sha"] for a in answers if a.ok), 1)
