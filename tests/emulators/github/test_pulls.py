"""Pull requests over the wire: create, get, list (filters, sort, paging, Link), update."""
import re

import pytest

from .conftest import A, B, BASE, C, E

REPO = "/repos/synthetic-org/example"
PULLS = f"{REPO}/pulls"
DOC_CREATE = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"
DOC_UPDATE = "https://docs.github.com/rest/pulls/pulls#update-a-pull-request"


@pytest.fixture
def topic(seeded):
    seeded.create_ref("refs/heads/topic", B, status=201)
    return seeded


def field_error(field, doc=DOC_CREATE):
    return {"message": "Validation Failed",
            "errors": [{"resource": "PullRequest", "code": "invalid", "field": field}],
            "documentation_url": doc, "status": "422"}


def custom_error(message, doc=DOC_CREATE):
    return {"message": "Validation Failed",
            "errors": [{"resource": "PullRequest", "code": "custom", "message": message}],
            "documentation_url": doc, "status": "422"}


def test_create_returns_the_full_shape(topic):
    res = topic.open_pull(body="Details", status=201)
    pr = res.json
    assert list(pr)[:19] == [
        "id", "node_id", "number", "url", "html_url", "state", "title", "body", "draft",
        "created_at", "updated_at", "closed_at", "merged", "merged_at", "mergeable",
        "merge_commit_sha", "maintainer_can_modify", "head", "base"]
    assert pr["number"] == 1 and pr["state"] == "open" and pr["body"] == "Details"
    assert pr["node_id"] == "PR_axxPzeIxNvGhn9"
    assert pr["url"] == f"{BASE}{PULLS}/1"
    assert pr["html_url"] == f"{BASE}/synthetic-org/example/pull/1"
    assert pr["created_at"] == pr["updated_at"] == "2023-11-14T22:13:20Z"
    assert (pr["closed_at"], pr["merged"], pr["merged_at"], pr["mergeable"],
            pr["merge_commit_sha"], pr["draft"], pr["maintainer_can_modify"]) == \
        (None, False, None, None, None, False, True)
    assert {k: pr["head"][k] for k in ("label", "ref", "sha")} == \
        {"label": "synthetic-org:topic", "ref": "topic", "sha": B}
    assert pr["base"]["sha"] == A and pr["base"]["repo"]["full_name"] == "synthetic-org/example"
    assert res.headers["x-mockingbird-checkpoint"].startswith("cp_")
    assert res.headers["x-github-api-version-selected"] == "2026-03-10"


def test_create_body_absent_is_null_and_empty_string_is_kept(topic):
    assert topic.open_pull(status=201).json["body"] is None
    topic.create_ref("refs/heads/other", C, status=201)
    pr = topic.open_pull(head="SYNTHETIC-ORG:other", body="", draft=True,
                         maintainer_can_modify=False, status=201).json
    assert pr["body"] == "" and pr["draft"] is True and pr["maintainer_can_modify"] is False
    assert pr["head"]["label"] == "synthetic-org:other"
    assert pr["number"] == 2 and pr["id"] != 1


CREATE_CASES = [
    ({"issue": 1, "title": 5}, 501, "Mockingbird does not model issue conversion"),
    ({"head_repo": "x", "title": 5}, 501, "Mockingbird does not model cross-repository heads"),
    ({"title": "  ", "body": 5}, 422, "title"),
    ({"title": "t", "body": None}, 422, "body"),
    ({"title": "t", "maintainer_can_modify": "yes", "head": ""}, 422, "maintainer_can_modify"),
    ({"head": "topic", "base": "main"}, 422, "title"),
    ({"title": "t", "head": "", "base": "main"}, 422, "head"),
    ({"title": "t", "head": "topic", "base": 3}, 422, "base"),
    ({"title": "t", "head": "topic", "base": "main", "draft": "no"}, 422, "draft"),
    ({"title": "t", "head": "a:b:c", "base": "main"}, 422, "head"),
    ({"title": "t", "head": "someone:topic", "base": "main"}, 501,
     "Mockingbird does not model cross-repository heads"),
    ({"title": "t", "head": "nothing", "base": "main"}, 422, "base/head"),
    ({"title": "t", "head": "topic", "base": "nothing"}, 422, "base/head"),
    ({"title": "t", "head": "main", "base": "topic"}, 422,
     "custom:No commits between topic and main"),
    ({"title": "t", "head": "main", "base": "main"}, 422,
     "custom:No commits between main and main"),
]


@pytest.mark.parametrize("body,status,expected", CREATE_CASES)
def test_create_precedence(topic, body, status, expected):
    res = topic.post(PULLS, body)
    assert res.status_int == status
    if status == 501:
        assert res.json == {"code": "mockingbird_unsupported", "message": expected}
    elif expected.startswith("custom:"):
        assert res.json == custom_error(expected[len("custom:"):])
    else:
        assert res.json == field_error(expected)
    assert "x-mockingbird-checkpoint" not in res.headers


@pytest.mark.parametrize("raw,ctype,status", [
    ("{bad", "application/json", 400), ("[1]", "application/json", 422),
    ("null", "text/json", 422), ("title=x", "application/x-www-form-urlencoded", 501),
    ("hello", "text/plain", 501), ("\x00\x01", None, 501)])
def test_create_body_kinds(topic, raw, ctype, status):
    res = topic.raw("POST", PULLS, raw, ctype)
    assert res.status_int == status
    if status == 400:
        assert res.json == {"message": "Problems parsing JSON", "documentation_url": DOC_CREATE,
                            "status": "400"}
    elif status == 422:
        assert res.json == field_error("body")
    else:
        assert res.json["message"] == "Mockingbird does not model non-JSON pull request bodies"


def test_create_empty_body_is_an_empty_object(topic):
    assert topic.raw("POST", PULLS, b"", "application/json").json == field_error("title")


def test_create_missing_repo_comes_first(gh):
    res = gh.post("/repos/x/y/pulls", [1])
    assert res.status_int == 404 and res.json["documentation_url"] == DOC_CREATE


def test_duplicate_open_pair_is_refused_without_idempotency(topic):
    body = {"title": "t", "head": "topic", "base": "main"}
    topic.post(PULLS, body, 201, headers={"Idempotency-Key": "k"})
    res = topic.post(PULLS, body, headers={"Idempotency-Key": "k"})
    assert res.status_int == 422
    assert res.json == custom_error("A pull request already exists for synthetic-org:topic.")


def test_closed_pulls_do_not_block_a_new_one(topic):
    topic.open_pull(status=201)
    topic.patch(f"{PULLS}/1", {"state": "closed"})
    assert topic.open_pull(status=201).json["number"] == 2


def test_numbers_are_per_repository_and_ids_shared(topic):
    topic.seed(name="second")
    topic.create_ref("refs/heads/topic", B, repo="synthetic-org/second", status=201)
    first = topic.open_pull(status=201).json
    second = topic.post("/repos/synthetic-org/second/pulls",
                        {"title": "t", "head": "topic", "base": "main"}).json
    assert first["number"] == second["number"] == 1
    assert first["id"] != second["id"]


def test_get_projects_current_tips_for_open_and_captured_for_closed(topic):
    topic.open_pull(status=201)
    topic.patch(f"{REPO}/git/refs/heads/topic", {"sha": C})
    assert topic.get(f"{PULLS}/1").json["head"]["sha"] == C
    topic.patch(f"{PULLS}/1", {"state": "closed"})
    topic.patch(f"{REPO}/git/refs/heads/topic", {"sha": E})
    closed = topic.get(f"{PULLS}/1").json
    assert closed["head"]["sha"] == C
    assert topic.get(f"{PULLS}?state=closed").json[0]["head"]["sha"] == C


@pytest.mark.parametrize("number", ["abc", "0", "-1", "1.5", "01", "2", "9007199254740993"])
def test_get_unknown_or_invalid_numbers_are_404(topic, number):
    topic.open_pull(status=201)
    res = topic.get(f"{PULLS}/{number}")
    assert res.status_int == 404
    assert res.json["documentation_url"] == \
        "https://docs.github.com/rest/pulls/pulls#get-a-pull-request"


# --- list --------------------------------------------------------------------------------

def open_many(client, count, *, base="main"):
    """Open `count` PRs from branches t0..t{count-1}, one second apart (without a token: past
    GitHub's 60 requests an hour, so the namespace allows more)."""
    client.rate_limits(core=1000)
    for i in range(count):
        client.create_ref(f"refs/heads/t{i}", B, status=201)
        client.open_pull(head=f"t{i}", base=base, title=f"PR {i}", status=201)
        client.advance(1000)


def numbers(res):
    return [p["number"] for p in res.json]


def test_list_defaults_created_desc_open_30(seeded):
    open_many(seeded, 32)
    res = seeded.get(PULLS)
    assert numbers(res) == list(range(32, 2, -1))
    assert res.headers["Link"] == (
        f'<{BASE}{PULLS}?page=2>; rel="next", <{BASE}{PULLS}?page=2>; rel="last"')
    page2 = seeded.get(f"{PULLS}?page=2")
    assert numbers(page2) == [2, 1]
    assert page2.headers["Link"] == (
        f'<{BASE}{PULLS}?page=1>; rel="first", <{BASE}{PULLS}?page=1>; rel="prev"')
    assert seeded.get(f"{PULLS}?page=3").json == []


def test_list_link_keeps_filters_and_encodes_them(seeded):
    open_many(seeded, 3)
    res = seeded.get(f"{PULLS}?per_page=1&head=SYNTHETIC-ORG:t1&page=1&state=open")
    assert numbers(res) == [2]
    assert "Link" not in res.headers  # a single match: one page
    res = seeded.get(f"{PULLS}?per_page=1&page=2&direction=asc&x=a b")
    assert numbers(res) == [2]
    target = f"{BASE}{PULLS}?per_page=1&page=%s&direction=asc&x=a+b"
    assert res.headers["Link"] == ", ".join([
        f'<{target % 3}>; rel="next"', f'<{target % 3}>; rel="last"',
        f'<{target % 1}>; rel="first"', f'<{target % 1}>; rel="prev"'])


def test_list_head_filter_encoding_in_link(seeded):
    open_many(seeded, 2)
    seeded.patch(f"{PULLS}/1", {"state": "closed"})
    seeded.open_pull(head="t0", base="main", title="again", status=201)
    res = seeded.get(f"{PULLS}?head=SYNTHETIC-ORG:t0&state=all&per_page=1")
    assert numbers(res) == [3]
    assert "head=SYNTHETIC-ORG%3At0&state=all&per_page=1&page=2" in res.headers["Link"]


def test_list_filters(seeded):
    seeded.create_ref("refs/heads/dev", A, status=201)
    open_many(seeded, 2)
    seeded.create_ref("refs/heads/t9", B, status=201)
    seeded.open_pull(head="t9", base="dev", status=201)
    seeded.patch(f"{PULLS}/1", {"state": "closed"})
    assert numbers(seeded.get(PULLS)) == [3, 2]
    assert numbers(seeded.get(f"{PULLS}?state=closed")) == [1]
    assert numbers(seeded.get(f"{PULLS}?state=all")) == [3, 2, 1]
    assert numbers(seeded.get(f"{PULLS}?base=dev")) == [3]
    assert numbers(seeded.get(f"{PULLS}?base=DEV")) == []
    assert numbers(seeded.get(f"{PULLS}?head=synthetic-org:t1")) == [2]
    assert numbers(seeded.get(f"{PULLS}?head=t1")) == []
    assert numbers(seeded.get(f"{PULLS}?head=other:t1")) == []


def test_list_sort_updated_defaults_to_ascending_and_ties_break_by_number(seeded):
    seeded.post("/__admin/clock", {"freeze": True}, 200)
    for i in range(3):
        seeded.create_ref(f"refs/heads/t{i}", B, status=201)
        seeded.open_pull(head=f"t{i}", status=201)  # same created_at: ties
    assert numbers(seeded.get(PULLS)) == [3, 2, 1]
    assert numbers(seeded.get(f"{PULLS}?direction=asc")) == [1, 2, 3]
    seeded.advance()
    seeded.patch(f"{PULLS}/1", {"title": "touched"})
    assert numbers(seeded.get(f"{PULLS}?sort=updated")) == [2, 3, 1]
    assert numbers(seeded.get(f"{PULLS}?sort=updated&direction=desc")) == [1, 3, 2]


@pytest.mark.parametrize("query,status,field", [
    ("state=merged", 422, "state"), ("state=", 422, "state"), ("sort=comments", 422, "sort"),
    ("sort=popularity&state=bad", 422, "state"), ("sort=popularity", 501, None),
    ("sort=long-running", 501, None), ("direction=up", 422, "direction"),
    ("page=0", 422, "page"), ("page=01", 422, "page"), ("page=x", 422, "page"),
    ("per_page=-1", 422, "per_page"), ("per_page=0", 422, "per_page"),
    ("page=9007199254740992", 422, "page")])
def test_list_query_validation(seeded, query, status, field):
    res = seeded.get(f"{PULLS}?{query}")
    assert res.status_int == status
    doc = "https://docs.github.com/rest/pulls/pulls#list-pull-requests"
    if field:
        assert res.json == field_error(field, doc)
    else:
        assert res.json["code"] == "mockingbird_unsupported"
        assert re.match(r"Mockingbird does not model (popularity|long-running) sorting",
                        res.json["message"])


def test_list_per_page_is_clamped_to_100_and_link_keeps_the_raw_value(seeded):
    open_many(seeded, 101)
    res = seeded.get(f"{PULLS}?per_page=1000")
    assert numbers(res) == list(range(101, 1, -1))
    assert res.headers["Link"] == (f'<{BASE}{PULLS}?per_page=1000&page=2>; rel="next", '
                                   f'<{BASE}{PULLS}?per_page=1000&page=2>; rel="last"')
    assert numbers(seeded.get(f"{PULLS}?per_page=1000&page=2")) == [1]


def test_list_missing_repo_precedes_query_validation(gh):
    res = gh.get("/repos/x/y/pulls?state=bad")
    assert res.status_int == 404 and res.json["documentation_url"].endswith("#list-pull-requests")


def test_list_link_under_a_header_namespace_uses_the_path_carrier(app):
    from .conftest import GitHubClient, graph_body
    w = GitHubClient(app, namespace="w9")
    w.seed(graph_body())
    open_many(w, 2)
    res = w.get(f"{PULLS}?per_page=1")
    assert res.headers["Link"].startswith(f"<{BASE}/__admin/ns/w9{PULLS}?per_page=1&page=2>")
    carried = app.get(f"/__admin/ns/w9{PULLS}?per_page=1")
    assert carried.headers["Link"] == res.headers["Link"]
    assert carried.json[0]["url"] == f"{BASE}/__admin/ns/w9{PULLS}/2"
    assert res.json == carried.json  # the body's URLs carry the header's namespace too


def test_list_link_carrier_follows_a_configured_admin_prefix(tmp_path):
    import webtest

    from emulators.github.app import create_service
    from emulators.runtime import Runtime, Settings

    from .conftest import HOST, GitHubClient, graph_body
    runtime = Runtime(create_service(), Settings(db=str(tmp_path / "e.db"), admin_prefix="/ctl"))
    w = GitHubClient(webtest.TestApp(runtime, extra_environ={"HTTP_HOST": HOST}),
                     namespace="w9")
    w.post("/ctl/github/repositories", graph_body(), 201)
    for i in range(2):
        w.create_ref(f"refs/heads/t{i}", B, status=201)
        w.open_pull(head=f"t{i}", title=f"PR {i}", status=201)
    link = w.get(f"{PULLS}?per_page=1").headers["Link"]
    assert link.startswith(f"<{BASE}/ctl/ns/w9{PULLS}?per_page=1&page=2>")
    carried = webtest.TestApp(runtime, extra_environ={"HTTP_HOST": HOST}).get(
        link[1:link.index(">")].removeprefix(BASE))
    assert [pull["number"] for pull in carried.json] == [1]


# --- update ------------------------------------------------------------------------------

def test_update_fields_and_body_clearing(topic):
    topic.open_pull(body="x", status=201)
    topic.advance()
    res = topic.patch(f"{PULLS}/1", {"title": "New", "body": "", "maintainer_can_modify": False,
                                     "head": "ignored", "draft": True})
    pr = res.json
    assert res.status_int == 200 and res.headers["x-mockingbird-checkpoint"].startswith("cp_")
    assert (pr["title"], pr["body"], pr["maintainer_can_modify"], pr["draft"]) == \
        ("New", None, False, False)
    assert pr["updated_at"] == "2023-11-14T22:13:21Z"
    assert pr["created_at"] == "2023-11-14T22:13:20Z"
    assert topic.patch(f"{PULLS}/1", {}).json["body"] is None


def test_update_close_and_reopen(topic):
    topic.open_pull(status=201)
    topic.advance()
    closed = topic.patch(f"{PULLS}/1", {"state": "closed"}).json
    assert closed["closed_at"] == "2023-11-14T22:13:21Z"
    topic.advance()
    again = topic.patch(f"{PULLS}/1", {"title": "still closed"}).json
    assert again["closed_at"] == closed["closed_at"] and again["state"] == "closed"
    reopened = topic.patch(f"{PULLS}/1", {"state": "open"}).json
    assert reopened["state"] == "open" and reopened["closed_at"] is None


def test_reopen_is_refused_when_another_open_pr_has_the_pair(topic):
    topic.open_pull(status=201)
    topic.patch(f"{PULLS}/1", {"state": "closed"})
    topic.open_pull(status=201)
    res = topic.patch(f"{PULLS}/1", {"state": "open"})
    assert res.json == custom_error("A pull request already exists for synthetic-org:topic.",
                                    DOC_UPDATE)
    assert topic.get(f"{PULLS}/1").json["state"] == "closed"


def test_update_base_checks_pair_and_ancestry(topic):
    topic.create_ref("refs/heads/dev", C, status=201)
    topic.open_pull(status=201)
    res = topic.patch(f"{PULLS}/1", {"base": "dev"})
    assert res.json == custom_error("No commits between dev and topic", DOC_UPDATE)
    res = topic.patch(f"{PULLS}/1", {"base": "main"})  # same pair: itself is not a duplicate
    assert res.status_int == 200
    res = topic.patch(f"{PULLS}/1", {"base": "missing"})
    assert res.json == field_error("base/head", DOC_UPDATE)


def test_closing_skips_pair_and_ancestry_checks(topic):
    topic.open_pull(status=201)
    topic.patch(f"{REPO}/git/refs/heads/main", {"sha": B})  # now no commits between
    res = topic.patch(f"{PULLS}/1", {"state": "closed", "title": "done"})
    assert res.status_int == 200 and res.json["head"]["sha"] == B and res.json["base"]["sha"] == B


UPDATE_CASES = [
    ("9", {"title": 5}, 404, None),
    ("x", "{bad", 404, None),
    ("1", {"title": ""}, 422, "title"),
    ("1", {"title": "ok", "body": None}, 422, "body"),
    ("1", {"maintainer_can_modify": 1}, 422, "maintainer_can_modify"),
    ("1", {"state": "merged"}, 422, "state"),
    ("1", {"base": ""}, 422, "base"),
]


@pytest.mark.parametrize("number,body,status,field", UPDATE_CASES)
def test_update_precedence(topic, number, body, status, field):
    topic.open_pull(status=201)
    before = topic.get(f"{PULLS}/1").json
    if isinstance(body, str):
        res = topic.raw("PATCH", f"{PULLS}/{number}", body, "application/json")
    else:
        res = topic.patch(f"{PULLS}/{number}", body)
    assert res.status_int == status
    if field:
        assert res.json == field_error(field, DOC_UPDATE)
    else:
        assert res.json["documentation_url"] == DOC_UPDATE
    assert topic.get(f"{PULLS}/1").json == before


@pytest.mark.parametrize("raw,ctype,status", [
    ("{bad", "application/json", 400), ("[]", "application/json", 422),
    ("a=b", "application/x-www-form-urlencoded", 501)])
def test_update_body_kinds_come_before_pr_lookup(topic, raw, ctype, status):
    res = topic.raw("PATCH", f"{PULLS}/7", raw, ctype)
    assert res.status_int == status


def test_update_recaptures_tips_for_closed_pulls(topic):
    topic.open_pull(status=201)
    topic.patch(f"{PULLS}/1", {"state": "closed"})
    topic.patch(f"{REPO}/git/refs/heads/topic", {"sha": C})
    assert topic.get(f"{PULLS}/1").json["head"]["sha"] == B
    assert topic.patch(f"{PULLS}/1", {}).json["head"]["sha"] == C


BODY = "Fixes <b>it</b> & more.\r\nSecond line.\n\n\nNext paragraph."
BODY_TEXT = "Fixes <b>it</b> & more.\nSecond line.\nNext paragraph."
BODY_HTML = ('<p dir="auto">Fixes &lt;b&gt;it&lt;/b&gt; &amp; more.<br>\nSecond line.</p>\n'
             '<p dir="auto">Next paragraph.</p>')


@pytest.mark.parametrize("accept,fields,served", [
    (None, {"body": BODY}, "github.v3; format=json"),
    ("application/vnd.github+json", {"body": BODY}, "github.v3; format=json"),
    ("application/vnd.github.v3.raw+json", {"body": BODY}, "github.v3; param=raw; format=json"),
    ("application/vnd.github.text+json", {"body_text": BODY_TEXT},
     "github.v3; param=text; format=json"),
    ("application/vnd.github.v3.html+json", {"body_html": BODY_HTML},
     "github.v3; param=html; format=json"),
    ("application/json, application/vnd.github.v3.full+json",
     {"body": BODY, "body_text": BODY_TEXT, "body_html": BODY_HTML},
     "github.v3; param=full; format=json")])
def test_accept_selects_the_body_fields(topic, accept, fields, served):
    headers = {"Accept": accept} if accept else {}
    created = topic.post(PULLS, {"title": "T", "head": "topic", "base": "main", "body": BODY},
                         201, headers=headers)
    got = topic.get(f"{PULLS}/1", 200, headers=headers)
    listed = topic.get(PULLS, 200, headers=headers)
    edited = topic.patch(f"{PULLS}/1", {"title": "T2"}, 200, headers=headers)
    for res in (created, got, edited):
        assert {k: v for k, v in res.json.items() if k.startswith("body")} == fields
        assert list(res.json).index(next(iter(fields))) == list(res.json).index("title") + 1
        assert res.headers["X-GitHub-Media-Type"] == served
    assert {k: v for k, v in listed.json[0].items() if k.startswith("body")} == fields


def test_a_null_body_renders_null_everywhere(topic):
    topic.open_pull(status=201)
    pr = topic.get(f"{PULLS}/1", 200,
                   headers={"Accept": "application/vnd.github.full+json"}).json
    assert (pr["body"], pr["body_text"], pr["body_html"]) == (None, None, None)


def test_unmodelled_media_types_are_refused_before_any_write(topic):
    res = topic.post(PULLS, {"title": "T", "head": "topic", "base": "main"},
                     headers={"Accept": "application/vnd.github.v3.diff"})
    assert res.status_int == 501
    assert res.json["message"] == "Mockingbird does not model the diff media type"
    assert topic.get(PULLS, 200).json == []
    assert topic.get("/repos/nobody/nothing", 404).headers["X-GitHub-Media-Type"] == \
        "github.v3; format=json"


def test_open_issues_count_follows_every_pull_write_and_checkpoints(topic, app, runtime):
    def count():
        return topic.get(REPO).json["open_issues_count"]
    topic.create_ref("refs/heads/other", C, status=201)
    assert count() == 0
    topic.open_pull(status=201)
    saved = topic.open_pull(head="other", status=201).headers["x-mockingbird-checkpoint"]
    assert count() == 2
    assert topic.patch(f"{PULLS}/1", {"title": "renamed"}, 200).json["base"]["repo"][
        "open_issues_count"] == 2
    assert topic.patch(f"{PULLS}/1", {"state": "closed"}, 200).json["base"]["repo"][
        "open_issues_count"] == 1
    topic.app.delete(f"{REPO}/git/refs/heads/other", status=204)  # closes PR 2
    assert count() == 0
    assert topic.patch(f"{PULLS}/1", {"state": "open"}, 200).json["base"]["repo"][
        "open_issues_count"] == 1
    app.post_json("/__admin/branches/main/checkout", {"checkpoint": saved}, status=200)
    assert count() == 2
    # A repository record written without the count (the state API, older state) is counted.
    records = runtime.instance("default", method="POST").records
    record = records.get("repositories", "synthetic-org/example")
    del record["open_pulls"]
    records.put("repositories", "synthetic-org/example", record)
    assert count() == 2
    topic.patch(f"{PULLS}/2", {"state": "closed"}, 200)
    assert count() == 1
