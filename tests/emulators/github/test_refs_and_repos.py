"""Repositories, refs, seeding over the wire, version rule, generic 404."""
import pytest

from .conftest import A, B, BASE, C, D, E, graph_body

REPO = "/repos/synthetic-org/example"
VERSION = "2026-03-10"


def test_repo_get_is_case_insensitive_and_stamped(seeded):
    res = seeded.get("/repos/SYNTHETIC-ORG/Example")
    assert res.status_int == 200
    assert res.json["full_name"] == "synthetic-org/example"
    assert res.json["url"] == f"{BASE}/repos/synthetic-org/example"
    assert res.json["html_url"] == f"{BASE}/synthetic-org/example"
    assert res.json["created_at"] == res.json["updated_at"] == "2023-11-14T22:13:20Z"
    assert res.headers["x-github-api-version-selected"] == VERSION
    assert res.headers["content-type"].startswith("application/json")
    assert res.headers["x-mockingbird"].endswith("; ns=default")


def test_missing_repo_is_the_basic_404(gh):
    res = gh.get("/repos/nobody/nothing?x=1")
    assert res.status_int == 404
    assert res.json == {"message": "Not Found", "status": "404",
                        "documentation_url": "https://docs.github.com/rest/repos/repos"
                                             "#get-a-repository"}
    assert res.headers["x-github-api-version-selected"] == VERSION


@pytest.mark.parametrize("method,path", [
    ("PUT", REPO),
    ("GET", "/anything"), ("GET", f"{REPO}/"), ("POST", REPO), ("GET", f"{REPO}/pulls/"),
    ("GET", f"{REPO}/pulls/1/extra"), ("GET", f"{REPO}/git/ref/"),
    ("PATCH", f"{REPO}/git/refs/"), ("GET", "/repos/synthetic-org/")])
def test_unknown_routes_and_methods_are_the_generic_404(seeded, method, path):
    res = seeded.app.request(path, method=method, expect_errors=True)
    assert res.status_int == 404
    # GitHub's generic 404 names no operation (never an unrelated one's page)
    assert res.json == {"message": "Not Found", "documentation_url": "https://docs.github.com/rest",
                        "status": "404"}
    assert res.headers["x-github-api-version-selected"] == VERSION


@pytest.mark.parametrize("version", ["", VERSION])
def test_absent_empty_or_modelled_version_is_served(seeded, version):
    res = seeded.get(REPO, headers={"X-GitHub-Api-Version": version})
    assert res.status_int == 200 and res.headers["x-github-api-version-selected"] == VERSION


def test_other_versions_are_refused_everywhere_without_the_selected_header(seeded):
    for path in (REPO, "/nowhere"):
        res = seeded.get(path, headers={"x-github-api-version": "2022-11-28"})
        assert res.status_int == 501
        assert res.json == {"message": "Mockingbird only models GitHub API 2026-03-10",
                            "code": "mockingbird_unsupported"}
        assert "x-github-api-version-selected" not in res.headers


def test_seed_response_and_checkpoint(gh):
    res = gh.seed(private=True)
    assert res.json["simulated"] is True
    assert res.json["repository"]["private"] is True
    assert res.headers["x-mockingbird-checkpoint"].startswith("cp_")
    assert "x-github-api-version-selected" not in res.headers


def test_seed_errors_use_the_seed_envelope(gh):
    gh.seed()
    res = gh.seed(status=409)
    assert res.json == {"message": "Synthetic repository already exists",
                        "code": "mockingbird_seed_invalid"}
    res = gh.post("/__admin/github/repositories", {"owner": "o"}, 400)
    assert res.json["message"] == "Synthetic owner and name must be nonempty path segments"


def test_seed_invalid_json_is_the_shared_admin_error(gh):
    res = gh.app.post("/__admin/github/repositories", "{nope",
                      headers={"Content-Type": "application/json"}, status=400)
    assert res.json["error"]["type"] == "mockingbird_admin"


def test_seeding_is_per_namespace(app, gh):
    gh.seed()
    other = type(gh)(app, namespace="w1")
    assert other.get(REPO).status_int == 404
    other.seed()  # the same name is free in another namespace
    assert other.get(REPO).json["id"] == 1


def test_get_ref_is_exact_and_case_sensitive(seeded):
    seeded.create_ref("refs/heads/topic/nested", B, status=201)
    assert seeded.get(f"{REPO}/git/ref/heads/topic/nested").json["object"]["sha"] == B
    assert seeded.get(f"{REPO}/git/ref/heads%2Ftopic%2Fnested").status_int == 200
    for tail in ("heads/topic", "heads/MAIN"):
        res = seeded.get(f"{REPO}/git/ref/{tail}")
        assert res.status_int == 404
        assert res.json["documentation_url"].endswith("#get-a-reference")
    res = seeded.get("/repos/x/y/git/ref/heads/main")
    assert res.status_int == 404 and res.json["documentation_url"].endswith("#get-a-reference")


def test_ref_shape_and_url_encoding(seeded):
    ref = seeded.create_ref("refs/heads/feat/a%b", B, status=201).json
    assert list(ref) == ["ref", "node_id", "url", "object"]
    assert ref["url"] == f"{BASE}{REPO}/git/refs/heads/feat/a%25b"
    assert ref["object"] == {"type": "commit", "sha": B, "url": f"{BASE}{REPO}/git/commits/{B}"}
    assert ref["node_id"].startswith("REF_") and len(ref["node_id"]) == 18


def test_matching_refs_prefix_sorting_and_trailing_slash(seeded):
    for name in ("refs/heads/topicTwo", "refs/heads/topic/nested", "refs/heads/Upper",
                 "refs/tags/v1"):
        seeded.create_ref(name, B, status=201)

    def names(tail):
        return [r["ref"] for r in seeded.get(f"{REPO}/git/matching-refs{tail}").json]
    everything = ["refs/heads/Upper", "refs/heads/main", "refs/heads/topic/nested",
                  "refs/heads/topicTwo", "refs/tags/v1"]
    assert names("") == names("/") == everything
    assert names("/heads/topic") == ["refs/heads/topic/nested", "refs/heads/topicTwo"]
    assert names("/heads/topic/") == ["refs/heads/topic/nested"]
    assert names("/nothing") == []
    res = seeded.get("/repos/x/y/git/matching-refs/heads")
    assert res.status_int == 404
    assert res.json["documentation_url"].endswith("#list-matching-references")
    assert "link" not in seeded.get(f"{REPO}/git/matching-refs").headers


CREATE_CASES = [
    ({"ref": "refs/heads/x", "sha": "zz"}, 422,
     "Invalid request: sha must be a 40-character hexadecimal value"),
    ({"ref": "heads/bad", "sha": "nothex"}, 422,
     "Invalid request: sha must be a 40-character hexadecimal value"),
    ({"ref": "heads/bad", "sha": B}, 422, "Reference name is not valid"),
    ({"ref": 5, "sha": B}, 422, "Reference name is not valid"),
    ({"ref": "refs/heads/main", "sha": B}, 422, "Reference already exists"),
    ({"ref": "refs/heads/main/sub", "sha": B}, 422,
     "Reference name conflicts with an existing reference"),
    ({"ref": "refs/heads/new", "sha": "f" * 40}, 422, "Object does not exist"),
]


@pytest.mark.parametrize("body,status,message", CREATE_CASES)
def test_create_ref_precedence(seeded, body, status, message):
    res = seeded.post(f"{REPO}/git/refs", body)
    assert res.status_int == status
    assert res.json == {"message": message, "status": str(status),
                        "documentation_url": "https://docs.github.com/rest/git/refs"
                                             "#create-a-reference"}
    assert "x-mockingbird-checkpoint" not in res.headers


def test_create_ref_directory_conflict_the_other_way(seeded):
    seeded.create_ref("refs/heads/a/b", B, status=201)
    assert seeded.create_ref("refs/heads/a", B).json["message"] == \
        "Reference name conflicts with an existing reference"


def test_create_ref_missing_repo_comes_first(gh):
    res = gh.post("/repos/x/y/git/refs", {"ref": "bad", "sha": "bad"})
    assert res.status_int == 404 and res.json["documentation_url"].endswith("#create-a-reference")


def test_create_ref_non_object_body_is_an_empty_object(seeded):
    for raw, ctype in (("[1]", "application/json"), ("{bad", "application/json"),
                       ("ref=x", "application/x-www-form-urlencoded")):
        res = seeded.raw("POST", f"{REPO}/git/refs", raw, ctype)
        assert res.status_int == 422
        assert res.json["message"].startswith("Invalid request: sha")


def test_create_ref_pull_refs_are_unsupported(seeded):
    res = seeded.create_ref("refs/pull/1/head", B)
    assert res.status_int == 501
    assert list(res.json.items()) == [
        ("code", "mockingbird_unsupported"),
        ("message", "Mockingbird does not model provider-managed pull refs")]


@pytest.mark.parametrize("method,path,doc", [
    ("POST", "/git/refs", "#create-a-reference"),
    ("GET", "/git/ref/heads/main", "#get-a-reference"),
    ("GET", "/git/matching-refs/heads", "#list-matching-references"),
    ("GET", "/git/matching-refs", "#list-matching-references"),
    ("GET", "/git/refs", "#list-matching-references"),
    ("GET", "/git/refs/heads", "#list-matching-references")])
def test_refs_of_an_empty_repository_are_409(gh, method, path, doc):
    gh.seed({"owner": "o", "name": "empty", "commits": [{"sha": A, "parents": []}]})
    if method == "POST":
        res = gh.create_ref("refs/heads/x", A, repo="o/empty")
    else:
        res = gh.get(f"/repos/o/empty{path}")
    assert res.status_int == 409
    assert res.json["message"] == "Git Repository is empty."
    assert res.json["documentation_url"].endswith(doc) and res.json["status"] == "409"


def test_ref_listing_pages_with_link_and_answers_an_exact_name_alone(seeded):
    for n in range(1, 6):
        seeded.create_ref(f"refs/heads/b{n}", B, status=201)
    seeded.create_ref("refs/tags/v1", B, status=201)

    def names(res):
        return [r["ref"] for r in res.json]
    first = seeded.get(f"{REPO}/git/refs?per_page=4", 200)
    assert names(first) == ["refs/heads/b1", "refs/heads/b2", "refs/heads/b3", "refs/heads/b4"]
    assert first.headers["Link"] == (
        f'<{BASE}{REPO}/git/refs?per_page=4&page=2>; rel="next", '
        f'<{BASE}{REPO}/git/refs?per_page=4&page=2>; rel="last"')
    second = seeded.get(f"{REPO}/git/refs?per_page=4&page=2", 200)
    assert names(second) == ["refs/heads/b5", "refs/heads/main", "refs/tags/v1"]
    assert 'rel="prev"' in second.headers["Link"] and 'rel="next"' not in second.headers["Link"]
    assert names(seeded.get(f"{REPO}/git/refs/tags", 200)) == ["refs/tags/v1"]
    assert len(seeded.get(f"{REPO}/git/refs/heads/b", 200).json) == 5  # a name prefix
    exact = seeded.get(f"{REPO}/git/refs/heads/b2", 200).json
    assert exact == seeded.get(f"{REPO}/git/ref/heads/b2", 200).json
    # unusable paging values fall back to the defaults, as on GitHub
    assert len(seeded.get(f"{REPO}/git/refs?page=x&per_page=0", 200).json) == 7
    res = seeded.get(f"{REPO}/git/refs/heads/nothing", 404)
    assert res.json["message"] == "Not Found"
    assert seeded.get("/repos/x/y/git/refs", 404).json["message"] == "Not Found"


def test_create_ref_stores_uppercase_sha_lowercase_and_tags_work(seeded):
    ref = seeded.create_ref("refs/tags/v1", B.upper(), status=201).json
    assert ref["object"]["sha"] == B
    assert seeded.get(f"{REPO}/git/ref/tags/v1").json == ref


UPDATE_CASES = [
    ("heads/main", {"sha": "x"}, "Invalid request: sha must be a 40-character hexadecimal value"),
    ("heads/main/", {"sha": B}, "Reference name is not valid"),
    ("heads/main", {"sha": B, "force": "true"}, "Invalid request: force must be boolean"),
    ("heads/nothing", {"sha": B}, "Reference does not exist"),
    ("heads/main", {"sha": "f" * 40}, "Object does not exist"),
]


@pytest.mark.parametrize("tail,body,message", UPDATE_CASES)
def test_update_ref_precedence(seeded, tail, body, message):
    res = seeded.patch(f"{REPO}/git/refs/{tail}", body)
    assert res.status_int == 422
    assert res.json == {"message": message, "status": "422",
                        "documentation_url": "https://docs.github.com/rest/git/refs"
                                             "#update-a-reference"}


def test_update_ref_fast_forward_keeps_node_id(seeded):
    before = seeded.get(f"{REPO}/git/ref/heads/main").json
    res = seeded.patch(f"{REPO}/git/refs/heads/main", {"sha": C})
    assert res.status_int == 200
    assert res.json["node_id"] == before["node_id"] and res.json["object"]["sha"] == C
    assert res.headers["x-mockingbird-checkpoint"].startswith("cp_")
    assert seeded.patch(f"{REPO}/git/refs/heads/main", {"sha": C}).status_int == 200  # equal


def test_update_ref_refuses_non_fast_forward_unless_forced(seeded):
    seeded.patch(f"{REPO}/git/refs/heads/main", {"sha": C})
    res = seeded.patch(f"{REPO}/git/refs/heads/main", {"sha": D, "expected_sha": C})
    assert res.status_int == 422
    assert res.json == {"message": "Update is not a fast forward", "status": "422",
                        "documentation_url": "https://docs.github.com/rest/git/refs"
                                             "#update-a-reference"}
    assert seeded.get(f"{REPO}/git/ref/heads/main").json["object"]["sha"] == C
    res = seeded.patch(f"{REPO}/git/refs/heads/main", {"sha": D, "force": True})
    assert res.status_int == 200 and res.json["object"]["sha"] == D


def test_update_ref_pull_refs_and_missing_repo(seeded):
    assert seeded.patch(f"{REPO}/git/refs/pull/1/head", {"sha": B}).status_int == 501
    assert seeded.patch("/repos/x/y/git/refs/heads/main", {"sha": "bad"}).status_int == 404


def test_refs_move_fast_forwards_with_a_checkpoint(seeded):
    res = seeded.post("/__admin/github/refs/move", {"owner": "synthetic-org", "repo": "example",
                                                    "ref": "refs/heads/main", "sha": B}, 200)
    assert res.json["simulated"] is True and res.json["checkpoint"].startswith("cp_")
    assert res.json["reference"]["object"]["sha"] == B
    assert seeded.get(f"{REPO}/git/ref/heads/main").json["object"]["sha"] == B


@pytest.mark.parametrize("body,status,message", [
    ([], 400, "Expected owner, repo, full branch ref and seeded 40-hex sha"),
    ({"owner": "synthetic-org", "repo": "example", "ref": "refs/tags/v1", "sha": B}, 400,
     "Expected owner, repo, full branch ref and seeded 40-hex sha"),
    ({"owner": "synthetic-org", "repo": "example", "ref": "refs/heads/main", "sha": "b"}, 400,
     "Expected owner, repo, full branch ref and seeded 40-hex sha"),
    ({"owner": "x", "repo": "y", "ref": "refs/heads/main", "sha": B}, 422,
     "Reference does not exist"),
    ({"owner": "synthetic-org", "repo": "example", "ref": "refs/heads/no", "sha": B}, 422,
     "Reference does not exist"),
    ({"owner": "synthetic-org", "repo": "example", "ref": "refs/heads/main", "sha": "f" * 40},
     422, "Object does not exist"),
])
def test_refs_move_errors(seeded, body, status, message):
    res = seeded.post("/__admin/github/refs/move", body, status)
    assert res.json == {"code": "mockingbird_control_invalid", "message": message}


def test_refs_move_cannot_rewind(seeded):
    seeded.patch(f"{REPO}/git/refs/heads/main", {"sha": E})
    res = seeded.post("/__admin/github/refs/move", {"owner": "synthetic-org", "repo": "example",
                                                    "ref": "refs/heads/main", "sha": B}, 422)
    assert res.json["message"] == "Update is not a fast forward"


def test_checkout_rewinds_refs_and_counters(seeded):
    cp = seeded.post("/__admin/checkpoints", {}, 201).json["id"]
    seeded.create_ref("refs/heads/topic", B, status=201)
    seeded.open_pull(status=201)
    seeded.post("/__admin/branches/main/checkout", {"checkpoint": cp}, 200)
    assert seeded.get(f"{REPO}/git/ref/heads/topic").status_int == 404
    seeded.create_ref("refs/heads/topic", B, status=201)
    assert seeded.open_pull(status=201).json["number"] == 1


def test_reset_wipes_the_namespace(seeded):
    seeded.post("/__admin/reset", {}, 200)
    assert seeded.get(REPO).status_int == 404
    seeded.seed()
    assert seeded.get(REPO).json["id"] == 1


def test_state_is_per_namespace_through_the_path_carrier(app, seeded):
    res = app.get(f"/__admin/ns/w2{REPO}", expect_errors=True)
    assert res.status_int == 404
    app.post_json("/__admin/ns/w2/__admin/github/repositories", graph_body(), status=201)
    res = app.get(f"/__admin/ns/w2{REPO}")
    assert res.json["url"] == f"{BASE}/__admin/ns/w2{REPO}"


def test_health_names_the_service_and_api_version(gh):
    health = gh.get("/__admin/health").json
    assert (health["service"], health["apiVersion"]) == ("github", "2026-03-10")


def test_delete_ref_is_204_and_closes_the_open_pulls_on_the_branch(seeded):
    seeded.create_ref("refs/heads/topic", B, status=201)
    seeded.create_ref("refs/tags/v1", B, status=201)
    seeded.open_pull(status=201)
    res = seeded.app.delete(f"{REPO}/git/refs/heads/topic", status=204)
    assert res.body == b"" and res.headers["x-mockingbird-checkpoint"].startswith("cp_")
    assert seeded.get(f"{REPO}/git/ref/heads/topic", 404).json["message"] == "Not Found"
    pr = seeded.get(f"{REPO}/pulls/1", 200).json
    assert (pr["state"], pr["head"]["sha"], pr["closed_at"]) == ("closed", B, pr["updated_at"])
    seeded.app.delete(f"{REPO}/git/refs/tags/v1", status=204)
    res = seeded.app.delete(f"{REPO}/git/refs/heads/topic", status=422)
    assert res.json == {"message": "Reference does not exist", "status": "422",
                        "documentation_url":
                            "https://docs.github.com/rest/git/refs#delete-a-reference"}
    assert seeded.app.delete("/repos/x/y/git/refs/heads/main", status=404).json["message"] == \
        "Not Found"
    assert seeded.app.delete(f"{REPO}/git/refs/pull/1/head", status=501).json["code"] == \
        "mockingbird_unsupported"
