"""Admin plane basics: index, health, openapi, envelope, admin key, namespaces, service routes."""
import warnings

import pytest
import webtest

from emulators.runtime import Runtime, Service, Settings
from tests.emulators.runtime.conftest import ns


def test_index_lists_standard_and_service_routes_sorted(app):
    routes = app.get("/__admin").json["routes"]
    assert routes == sorted(routes)
    assert "POST /counter/seed" in routes and "POST /clock" in routes
    assert app.get("/__admin/").json["service"] == "counter"


def test_health_reports_builtins_that_describe_cannot_shadow(app):
    body = app.get("/__admin/health").json
    assert body["status"] == "ok" and body["service"] == "counter"
    assert body["flavour"] == "counter"  # describe() fields are added ...
    assert body["version"] == "1.2.3"    # ... but never win over built-ins
    assert app.head("/__admin/health").status_int == 200


def test_unknown_admin_route_gets_envelope(app):
    res = app.post("/__admin/nothing", status=404)
    message = "no admin route POST /nothing; GET /__admin lists them"
    assert res.json == {"error": {"type": "mockingbird_admin", "message": message}}
    assert res.headers["x-mockingbird"] == "counter@1.2.3; ns=default"


def test_unexpected_error_in_an_admin_route_is_500_internal_without_traceback(tmp_path):
    def broken(call):
        raise RuntimeError("secret internal detail")
    runtime = Runtime(Service(name="broken", admin_routes=[("POST", "/broken/x", broken)]),
                      Settings(db=str(tmp_path / "e.sqlite3")))
    res = webtest.TestApp(runtime).post("/__admin/broken/x", status=500)
    assert res.json == {"error": {"type": "mockingbird_internal", "message": "internal error"}}
    assert "secret internal detail" not in res.text and "x-mockingbird-checkpoint" not in \
        res.headers


def test_bad_json_body_is_400_but_get_ignores_bodies(app):
    res = app.post("/__admin/clock", "{nope", content_type="application/json", status=400)
    assert res.json["error"]["message"] == "request body is not valid JSON"
    assert app.request("/__admin/clock", method="GET", body=b"{garbage").status_int == 200


def test_invalid_admin_namespace_is_400_not_500(app):
    res = app.get("/__admin/faults?namespace=bad%20name", status=400)
    assert res.json["error"]["type"] == "mockingbird_admin"
    assert res.headers["x-mockingbird"] == "counter@1.2.3"


def test_admin_key_locks_everything_but_health(locked):
    assert locked.get("/__admin/health").status_int == 200
    assert locked.get("/__admin/clock", status=401).json["error"]["message"] == \
        "missing or wrong x-mockingbird-admin-key"
    locked.get("/__admin/no-such-route", status=401)  # checked before route lookup
    locked.get("/__admin/clock", headers={"x-mockingbird-admin-key": "wrong"}, status=401)
    assert locked.get("/__admin/clock",
                      headers={"x-mockingbird-admin-key": "s3cret-key"}).status_int == 200
    assert locked.get("/counter").status_int == 200  # provider routes never need it


def test_admin_open_without_key(app):
    assert app.post_json("/__admin/faults", {"status": 500}).status_int == 201


def test_namespaces_list_only_grows(app):
    app.get("/counter", headers=ns("w1"))
    app.get("/__admin/clock?namespace=w2")
    assert app.get("/__admin/namespaces").json == {"default": "default",
                                                   "namespaces": ["default", "w1", "w2"]}
    app.post("/__admin/reset?all=1")
    assert app.get("/__admin/namespaces").json["namespaces"] == ["default", "w1", "w2"]


def test_openapi_document_has_provider_and_admin_paths(app):
    doc = app.get("/__admin/openapi.json").json
    assert doc["paths"]["/items/{item_id}"]["get"]["operationId"] == "getItem"
    assert "post" in doc["paths"]["/__admin/faults"]
    assert "/__admin/branches/{name}/checkout" in doc["paths"]
    ids = [op["operationId"] for item in doc["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))


def test_service_admin_route_commits_checkpoint(app):
    res = app.post_json("/__admin/counter/seed?namespace=w1", {"value": 41})
    assert res.headers["x-mockingbird-checkpoint"].startswith("cp_")
    assert app.post("/counter", headers=ns("w1")).json["value"] == 42
    assert app.get("/__admin/counter?namespace=w1").json == {"value": 42}


def test_service_admin_error_keeps_the_services_envelope_status_and_headers(app):
    bad = app.post_json("/__admin/counter/seed?namespace=w1", {"value": "x"}, status=422)
    assert bad.json == {"counter_error": {"reason": "value must be an integer"}}
    assert bad.headers["x-counter-error"] == "rejected"
    assert bad.headers["x-mockingbird"] == "counter@1.2.3; ns=w1"
    assert "x-mockingbird-checkpoint" not in bad.headers
    # The runtime's own routes and an unknown route keep the admin envelope.
    assert app.post_json("/__admin/clock", {"set": "never"}, status=400).json["error"][
        "type"] == "mockingbird_admin"
    assert app.post("/__admin/counter/nope", status=404).json["error"][
        "type"] == "mockingbird_admin"


def test_service_control_that_writes_nothing_still_commits_a_checkpoint(app):
    before = app.get("/__admin/timeline").json["branches"]["main"]
    res = app.post("/__admin/counter/ping")
    checkpoint = res.headers["x-mockingbird-checkpoint"]
    assert checkpoint != before
    timeline = app.get("/__admin/timeline").json
    assert timeline["branches"]["main"] == checkpoint
    assert timeline["checkpoints"][-1]["parent"] == before
    again = app.post("/__admin/counter/ping").headers["x-mockingbird-checkpoint"]
    assert again > checkpoint  # one commit per control, never a reused id
    assert "x-mockingbird-checkpoint" not in app.get("/__admin/counter").headers


def test_service_route_may_not_override_a_standard_one(tmp_path):
    svc = Service(name="x", admin_routes=[("POST", "/reset", lambda call: (200, {}))])
    with pytest.raises(ValueError, match="overrides a shared route"):
        Runtime(svc, Settings(db=str(tmp_path / "x.db")))


def test_admin_prefix_is_validated(tmp_path):
    with pytest.raises(ValueError, match="adminPrefix"):
        Runtime(Service(name="x"), Settings(db=str(tmp_path / "x.db"), admin_prefix="/a/"))


def test_admin_checkpoint_quoted_in_body_is_the_header_checkpoint(app):
    res = app.post("/__admin/counter/bump")
    assert res.json["checkpoint"] == res.headers["x-mockingbird-checkpoint"]
    timeline = app.get("/__admin/timeline").json
    assert timeline["branches"]["main"] == res.json["checkpoint"]
    assert app.get("/counter", headers={"x-mockingbird-at": res.json["checkpoint"]}).json == {
        "value": 1}


def test_admin_write_after_its_checkpoint_gets_a_newer_one(app):
    res = app.post_json("/__admin/counter/bump", {"again": True})
    header, quoted = res.headers["x-mockingbird-checkpoint"], res.json["checkpoint"]
    assert header != quoted
    assert app.get("/counter", headers={"x-mockingbird-at": quoted}).json == {"value": 1}
    assert app.get("/counter", headers={"x-mockingbird-at": header}).json == {"value": 2}


STATE_CREDENTIALS_SNAPSHOTS_UI = [
    "GET /state", "GET /state/:collection", "GET /state/:collection/:id",
    "POST /state/:collection", "PUT /state/:collection/:id", "PATCH /state/:collection/:id",
    "DELETE /state/:collection/:id", "GET /credentials", "PUT /credentials",
    "DELETE /credentials", "POST /snapshots", "POST /snapshots/:id/restore",
    "DELETE /snapshots/:id", "GET /ui", "GET /ui/", "GET /ui/manifest"]


def test_index_lists_state_credential_snapshot_and_ui_routes(app):
    routes = app.get("/__admin").json["routes"]
    assert set(STATE_CREDENTIALS_SNAPSHOTS_UI) <= set(routes)


def test_openapi_document_has_the_state_credential_snapshot_and_ui_routes(app):
    paths = app.get("/__admin/openapi.json").json["paths"]
    item = paths["/__admin/state/{collection}/{id}"]
    assert set(item) == {"get", "put", "patch", "delete"}
    assert [p["name"] for p in item["patch"]["parameters"]] == ["collection", "id"]
    assert set(paths["/__admin/state/{collection}"]) == {"get", "post"}
    assert set(paths["/__admin/credentials"]) == {"get", "put", "delete"}
    assert set(paths["/__admin/snapshots/{id}/restore"]) == {"post"}
    assert set(paths["/__admin/snapshots/{id}"]) == {"delete"}
    assert set(paths["/__admin/ui"]) == {"get"} and set(paths["/__admin/ui/manifest"]) == {"get"}


def test_health_names_the_admin_ui(app):
    assert app.get("/__admin/health").json["adminUi"] == "/__admin/ui"


def test_a_service_route_may_not_take_a_state_or_credentials_key(tmp_path):
    for path in ("/state", "/credentials", "/ui/manifest"):
        svc = Service(name="x", admin_routes=[("GET", path, lambda call: (200, {}))])
        with pytest.raises(ValueError, match="overrides a shared route"):
            Runtime(svc, Settings(db=str(tmp_path / "x.db")))


def test_a_fault_named_like_a_literal_route_is_still_deleted_by_its_path(app):
    # DELETE /faults/presets is DELETE /faults/:id (GET /faults/presets is another route).
    app.post_json("/__admin/faults", {"id": "presets", "operationId": "getCounter",
                                      "status": 503}, status=201)
    assert app.delete("/__admin/faults/presets").json == {"status": "ok"}
    assert app.get("/__admin/faults").json["faults"] == []
    assert app.delete("/__admin/faults/presets", status=404).json["error"]["message"] == \
        "no fault presets"


def test_undeclared_and_unknown_methods_are_the_admin_404(app):
    for method in ("PUT", "OPTIONS", "FOO"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # webtest's lint frowns on FOO; servers pass it on
            res = app.request("/__admin/clock", method=method, status=404)
        assert res.json["error"]["message"] == \
            f"no admin route {method} /clock; GET /__admin lists them"
