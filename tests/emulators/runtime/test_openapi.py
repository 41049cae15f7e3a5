"""Operation matching: one segment per parameter, several for `x-slash-bearing` ones."""
from emulators.runtime.openapi import OperationMatcher
from tests.emulators.runtime.conftest import ns


def op(operation_id, **extra):
    return {"operationId": operation_id, **extra}


def slash(name, *, on_schema=False):
    if on_schema:
        return {"name": name, "in": "path", "schema": {"type": "string", "x-slash-bearing": True}}
    return {"name": name, "in": "path", "x-slash-bearing": True, "schema": {"type": "string"}}


def test_plain_parameter_takes_exactly_one_segment():
    matcher = OperationMatcher({"paths": {"/refs/{ref}": {"get": op("getRef")}}})
    assert matcher.match("GET", "/refs/main") == "getRef"
    assert matcher.match("GET", "/refs/main/") == "getRef"
    assert matcher.match("GET", "/refs/heads/main") is None
    assert matcher.match("GET", "/refs/") is None


def test_slash_bearing_parameter_spans_segments():
    matcher = OperationMatcher({"paths": {
        "/repos/{owner}/{repo}/git/refs/{ref}": {"patch": op("updateRef",
                                                             parameters=[slash("ref")])},
        "/repos/{owner}/{repo}/git/refs": {"post": op("createRef")},
    }})
    assert matcher.match("PATCH", "/repos/o/r/git/refs/heads/feature/x") == "updateRef"
    assert matcher.match("PATCH", "/repos/o/r/git/refs/heads") == "updateRef"
    assert matcher.match("PATCH", "/repos/o/r/git/refs/") is None  # one char at least
    assert matcher.match("PATCH", "/repos/o/x/y/git/refs/heads/a") is None  # owner: one segment
    assert matcher.match("POST", "/repos/o/r/git/refs") == "createRef"


def test_flag_on_schema_path_item_and_component_reference():
    document = {
        "paths": {
            "/a/{p}": {"parameters": [slash("p")], "get": op("a")},
            "/b/{p}": {"get": op("b", parameters=[slash("p", on_schema=True)])},
            "/c/{p}": {"get": op("c", parameters=[{"$ref": "#/components/parameters/P"}])},
        },
        "components": {"parameters": {"P": slash("p")}},
    }
    matcher = OperationMatcher(document)
    for name in "abc":
        assert matcher.match("GET", f"/{name}/x/y/z") == name


def test_single_segment_template_wins_over_slash_bearing_one():
    matcher = OperationMatcher({"paths": {
        "/files/{path}": {"get": op("file", parameters=[slash("path")])},
        "/files/{folder}/meta": {"get": op("meta")},
        "/files/{name}": {"put": op("put")},
    }})
    assert matcher.match("GET", "/files/docs/meta") == "meta"
    assert matcher.match("GET", "/files/docs/a/meta") == "file"
    assert matcher.match("PUT", "/files/a/b") is None  # flag is per operation


def test_runtime_matches_nested_path_for_journal_and_faults(app):
    res = app.get("/files/a/b/c.txt")
    assert res.json == {"path": "a/b/c.txt"}
    entry = app.get("/__admin/requests").json["requests"][-1]
    assert entry["operationId"] == "getFile" and entry["unmatched"] is False
    app.post_json("/__admin/faults?namespace=w1", {"operationId": "getFile", "status": 503})
    app.get("/files/x/y", headers=ns("w1"), status=503)
    assert app.get("/files/x/y").json == {"path": "x/y"}  # other namespace untouched
