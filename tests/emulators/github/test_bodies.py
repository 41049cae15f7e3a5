"""Careless bodies on the GitHub routes: deep nesting and oversize bodies get GitHub's envelope."""
import pytest

from emulators.runtime.bodies import MAX_BODY

from .conftest import A, B

REPO = "/repos/synthetic-org/example"
DEEP = "[" * 5000 + "]" * 5000
DEEP_OBJECT = '{"title":' * 3000 + "1" + "}" * 3000
TROUBLESHOOTING = "https://docs.github.com/rest/using-the-rest-api/troubleshooting-the-rest-api"


@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT])
def test_deeply_nested_pull_body_is_problems_parsing_json(seeded, body):
    seeded.create_ref("refs/heads/topic", B, status=201)
    assert seeded.open_pull().status_int == 201
    for method, path in (("POST", f"{REPO}/pulls"), ("PATCH", f"{REPO}/pulls/1")):
        res = seeded.raw(method, path, body, "application/json")
        assert res.status_int == 400, res.text
        assert res.json["message"] == "Problems parsing JSON"


@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT])
def test_deeply_nested_ref_body_is_an_empty_object(seeded, body):
    # Ref writes read anything but a JSON object as {}, so the sha is missing: 422.
    for method, path in (("POST", f"{REPO}/git/refs"), ("PATCH", f"{REPO}/git/refs/heads/main")):
        res = seeded.raw(method, path, body, "application/json")
        assert res.status_int == 422, res.text
        assert res.json["message"].startswith("Invalid request: sha")


def test_deeply_nested_seed_is_the_admin_400(gh):
    res = gh.raw("POST", "/__admin/github/repositories", DEEP, "application/json")
    assert res.status_int == 400
    assert res.json["error"]["type"] == "mockingbird_admin"


def test_body_past_the_limit_is_413_in_githubs_envelope_and_writes_nothing(seeded):
    body = '{"ref": "refs/heads/big", "sha": "%s", "pad": "%s"}' % (A, "x" * MAX_BODY)
    res = seeded.raw("POST", f"{REPO}/git/refs", body, "application/json")
    assert res.status_int == 413
    assert res.json == {"message": "Payload Too Large", "documentation_url": TROUBLESHOOTING,
                        "status": "413"}
    assert res.headers["x-github-api-version-selected"]
    assert seeded.get(f"{REPO}/git/ref/heads/big").status_int == 404
