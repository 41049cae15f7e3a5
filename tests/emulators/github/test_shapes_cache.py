"""Reads answer from shapes built once per change of the namespace's records, never stale."""
import webtest

from emulators.github.models.pulls import PullRules
from emulators.github.app import create_service
from emulators.runtime.app import Runtime
from emulators.runtime.settings import Settings

from .conftest import B, HOST, GitHubClient

REPO = "/repos/synthetic-org/example"


def test_a_read_is_built_once_until_the_records_change(seeded, monkeypatch):
    seeded.create_ref("refs/heads/topic", B, status=201)
    seeded.open_pull(status=201)
    built = []
    shape = PullRules.json
    monkeypatch.setattr(PullRules, "json",
                        lambda self, *a, **k: built.append(1) or shape(self, *a, **k))
    first = seeded.get(f"{REPO}/pulls", status=200)
    again = seeded.get(f"{REPO}/pulls", status=200)
    assert len(built) == 1 and again.body == first.body
    assert again.headers["content-type"] == "application/json"
    seeded.get(f"{REPO}/pulls/1", status=200)
    seeded.get(f"{REPO}/pulls/1", status=200)
    assert len(built) == 2
    seeded.patch(f"{REPO}/pulls/1", {"title": "renamed"}, 200)  # built for its own answer
    assert [p["title"] for p in seeded.get(f"{REPO}/pulls", status=200).json] == ["renamed"]
    assert seeded.get(f"{REPO}/pulls/1", status=200).json["title"] == "renamed"
    assert len(built) == 5


def test_what_else_an_answer_depends_on_keys_it(seeded):
    seeded.create_ref("refs/heads/topic", B, status=201)
    seeded.open_pull(body="Some *text*", status=201)
    raw = seeded.get(f"{REPO}/pulls/1", status=200).json
    html = seeded.get(f"{REPO}/pulls/1", status=200,
                      headers={"Accept": "application/vnd.github.html+json"}).json
    assert "body" in raw and "body_html" not in raw and "body_html" in html
    other = seeded.get(REPO, status=200, headers={"Host": "example.test:9"}).json
    assert other["url"] == "http://example.test:9/repos/synthetic-org/example"
    assert seeded.get(REPO, status=200).json["url"] == f"http://{HOST}{REPO}"
    page = seeded.get(f"{REPO}/pulls?per_page=1&page=1", status=200)
    assert 'rel="next"' not in page.headers.get("Link", "")
    assert seeded.get(f"{REPO}/pulls?state=closed", status=200).json == []


def test_another_workers_write_and_a_checkout_are_seen(runtime, tmp_path):
    mine = GitHubClient(webtest.TestApp(runtime, extra_environ={"HTTP_HOST": HOST}))
    other_runtime = Runtime(create_service(), Settings(db=str(tmp_path / "emulators.sqlite3")))
    other = GitHubClient(webtest.TestApp(other_runtime, extra_environ={"HTTP_HOST": HOST}))
    mine.seed()
    saved = mine.post("/__admin/checkpoints", {}, 201).json["id"]
    assert mine.get(REPO, status=200).json["open_issues_count"] == 0
    other.create_ref("refs/heads/topic", B, status=201)
    other.open_pull(status=201)
    assert mine.get(REPO, status=200).json["open_issues_count"] == 1
    assert len(mine.get(f"{REPO}/pulls", status=200).json) == 1
    other.post("/__admin/branches/main/checkout", {"checkpoint": saved}, 200)
    assert mine.get(REPO, status=200).json["open_issues_count"] == 0
    assert mine.get(f"{REPO}/pulls", status=200).json == []
