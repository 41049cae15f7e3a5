"""Operation matching: one segment per parameter, several for `x-slash-bearing` ones, and on
the path a service's `operation_path` gives (a mirror of a route is that route's operation), or
the name a request's body gives (`body_operations`)."""
import pytest
import requests

from emulators.runtime import serve
from emulators.runtime.openapi import OperationMatcher
from tests.emulators.runtime.conftest import ns
from testkit.counter_service import mirrored_service, named_service


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


@pytest.fixture
def mirrored(tmp_path):
    with serve(mirrored_service, db=str(tmp_path / "m.sqlite3"), max_body=100) as running:
        yield running


def test_a_mirror_meets_the_rules_and_presets_of_its_operation(mirrored):
    url, admin = mirrored.url, mirrored.admin_url
    rule = {"operationId": "incrementCounter", "status": 503, "count": 1}
    assert requests.post(admin + "/faults", json=rule, timeout=5).status_code == 201
    assert requests.post(url + "/mirror/counter", timeout=5).status_code == 503
    assert requests.post(url + "/mirror/counter", timeout=5).json()["value"] == 1
    assert requests.post(admin + "/faults/presets/flaky_pair", timeout=5).status_code == 201
    assert requests.get(url + "/mirror/info", timeout=5).status_code == 500
    assert requests.get(url + "/mirror/items", timeout=5).status_code == 502
    # a rule by path names the path asked for: the mirror's is another
    by_path = {"path": "/counter", "status": 418}
    assert requests.post(admin + "/faults", json=by_path, timeout=5).status_code == 201
    assert requests.get(url + "/mirror/counter", timeout=5).json() == {"value": 1}


def test_the_journal_and_metrics_show_a_mirror_s_operation_and_the_path_asked_for(mirrored):
    url, admin = mirrored.url, mirrored.admin_url
    assert requests.get(url + "/mirror/items/7", timeout=5).status_code == 404
    assert requests.get(url + "/mirror/nope", timeout=5).status_code == 404
    entries = requests.get(admin + "/requests", timeout=5).json()["requests"]
    assert [(entry["path"], entry.get("operationId"), entry["unmatched"])
            for entry in entries] == [("/mirror/items/7", "getItem", False),
                                      ("/mirror/nope", None, True)]
    metrics = requests.get(admin + "/metrics", timeout=5).json()
    assert metrics["byOperation"] == {"(unmatched) 404": 1, "getItem 404": 1}
    assert metrics["unmatched"] == [{"method": "GET", "path": "/mirror/nope", "count": 1}]


def test_a_mirror_gets_the_body_limit_of_its_operation(mirrored):
    body = {"name": "x" * 200}  # past max_body (100), within createItem's 1,000
    for path in ("/items", "/mirror/items"):
        res = requests.post(mirrored.url + path, json=body, timeout=5)
        assert res.status_code == 201, (path, res.text)
    past = requests.post(mirrored.url + "/mirror/items", json={"name": "x" * 1_000}, timeout=5)
    assert past.status_code == 413


@pytest.fixture
def named(tmp_path):
    with serve(named_service, db=str(tmp_path / "n.sqlite3"), max_body=200) as running:
        yield running


def test_an_operation_its_body_names_is_journaled_and_faulted_by_that_name(named):
    url, admin = named.url, named.admin_url
    rule = {"operationId": "rpc/explode", "status": 503, "count": 1}
    assert requests.post(admin + "/faults", json=rule, timeout=5).status_code == 201
    assert requests.post(url + "/rpc", json={"call": "count"}, timeout=5).json()["calls"] == 0
    assert requests.post(url + "/rpc", json={"call": "explode"}, timeout=5).status_code == 503
    assert requests.post(url + "/rpc", json={"call": "explode"}, timeout=5).status_code == 200
    entries = requests.get(admin + "/requests", timeout=5).json()["requests"]
    assert [(e["operationId"], e["status"]) for e in entries] == [
        ("rpc/count", 200), ("rpc/explode", 503), ("rpc/explode", 200)]


def test_a_body_named_read_commits_nothing_and_a_write_is_a_checkpointed_mutation(named):
    url = named.url
    read = requests.post(url + "/rpc", json={"call": "look"}, timeout=5)
    assert "x-mockingbird-checkpoint" not in read.headers
    write = requests.post(url + "/rpc", json={"call": "store", "write": True}, timeout=5)
    assert write.headers["x-mockingbird-checkpoint"].startswith("cp_")
    assert write.json() == {"call": "store", "calls": 1}  # the handler read the same body


def test_a_body_it_cannot_read_first_keeps_the_matched_operation(named):
    url, admin = named.url, named.admin_url
    chunked = requests.post(url + "/rpc", data=iter([b'{"call": "x", "write": true}']),
                            timeout=5)
    assert chunked.status_code == 200  # (falcon's get_media reads no body without a length)
    too_long = requests.post(url + "/rpc", json={"call": "y" * 300}, timeout=5)
    assert too_long.status_code == 413
    entries = requests.get(admin + "/requests", timeout=5).json()["requests"]
    assert [e["operationId"] for e in entries] == ["rpc", "rpc"]


def test_a_provider_reads_the_operation_the_runtime_matched(tmp_path):
    import falcon

    from emulators.runtime import Service, add_fallback_handlers, operation_of
    from emulators.pytest_plugin import test_app

    class Echo:
        def on_get(self, req, resp, name=None):
            resp.media = {"operation": operation_of(req)}

    def provider():
        app = add_fallback_handlers(falcon.App())
        app.add_route("/items/{name}", Echo())
        app.add_route("/undocumented", Echo())
        return app
    document = {"paths": {"/items/{name}": {"get": op("getItem")}}}
    app = test_app(Service(name="echo", openapi=document, provider_app=provider),
                   tmp_path / "e.sqlite3")
    assert app.get("/items/a").json == {"operation": "getItem"}
    assert app.get("/undocumented").json == {"operation": None}
