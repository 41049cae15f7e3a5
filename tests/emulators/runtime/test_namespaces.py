"""Namespaces: isolation, precedence, carrier, validation, stamping and reset scopes."""
from tests.emulators.runtime.conftest import ns


def test_records_are_isolated_per_namespace(app):
    app.post_json("/items", {"name": "one"}, headers=ns("w1"))
    assert [i["name"] for i in app.get("/items", headers=ns("w1")).json["items"]] == ["one"]
    assert app.get("/items", headers=ns("w2")).json["items"] == []
    assert app.get("/items").json["items"] == []
    # Ids are per namespace too.
    assert app.post_json("/items", {"name": "x"}, headers=ns("w2")).json["id"] == 1


def test_path_carrier_selects_namespace_and_header_wins(app):
    app.post_json("/__admin/ns/w1/items", {"name": "carried"})
    assert app.get("/items", headers=ns("w1")).json["items"][0]["name"] == "carried"
    info = app.get("/__admin/ns/w1/info", headers=ns("w2")).json
    assert info["namespace"] == "w2"
    app.get("/__admin/ns/w1", status=404)  # the carrier alone leaves the vendor path "/"


def test_carrier_reaches_admin_plane(app):
    app.post_json("/__admin/ns/w3/__admin/clock", {"set": 5000, "freeze": True})
    assert app.get("/__admin/clock?namespace=w3").json["now"] == 5000
    assert app.get("/__admin/clock").json["now"] != 5000


def test_query_namespace_is_ignored_on_vendor_requests(app):
    assert app.get("/info?namespace=w9").json["namespace"] == "default"


def test_invalid_namespace_and_branch_are_400(app):
    res = app.get("/info", headers=ns("no spaces"), status=400)
    assert res.json["error"]["message"] == \
        "x-mockingbird-namespace must match /^[A-Za-z0-9_.-]{1,64}$/"
    assert res.headers["x-mockingbird"] == "counter@1.2.3"
    res = app.get("/info", headers={"x-mockingbird-branch": "../x"}, status=400)
    assert "x-mockingbird-branch" in res.json["error"]["message"]
    assert app.get("/__admin/requests?all=1").json["requests"][0]["status"] == 400


def test_every_response_is_stamped(app):
    assert app.get("/info", headers=ns("w1")).headers["x-mockingbird"] == "counter@1.2.3; ns=w1"
    assert app.get("/nowhere", status=404).headers["x-mockingbird"] == \
        "counter@1.2.3; ns=default"
    app.post_json("/__admin/faults", {"status": 503})
    assert app.get("/info", status=503).headers["x-mockingbird"] == "counter@1.2.3; ns=default"


def _populate(app, name):
    app.post_json("/items", {"name": name}, headers=ns(name))
    app.post_json(f"/__admin/faults?namespace={name}",
                  {"operationId": "getCounter", "status": 418})
    app.post_json(f"/__admin/clock?namespace={name}", {"advance": "1h"})


def test_reset_one_namespace_clears_only_it(app, wall):
    for name in ("w1", "w2"):
        _populate(app, name)
    assert app.post("/__admin/reset?namespace=w1").json == {"status": "ok", "reset": ["w1"]}
    assert app.get("/items", headers=ns("w1")).json["items"] == []
    assert app.get("/counter", headers=ns("w1")).status_int == 200        # fault gone
    assert app.get("/__admin/clock?namespace=w1").json["offsetMs"] == 0    # clock live again
    journal = app.get("/__admin/requests?namespace=w1").json["requests"]
    assert [e["path"] for e in journal] == ["/items", "/counter"]       # only since the reset
    assert len(app.get("/items", headers=ns("w2")).json["items"]) == 1     # w2 untouched
    assert app.get("/counter", headers=ns("w2"), status=418)
    assert app.get("/__admin/clock?namespace=w2").json["offsetMs"] == 3_600_000
    # ids start again after a reset
    assert app.post_json("/items", {}, headers=ns("w1")).json["id"] == 1


def test_reset_all_and_keep(app):
    for name in ("w1", "w2"):
        _populate(app, name)
    body = app.post("/__admin/reset?all=1&keep=faults").json
    assert body["reset"] == ["default", "w1", "w2"]
    assert app.get("/items", headers=ns("w2")).json["items"] == []
    app.get("/counter", headers=ns("w2"), status=418)  # kept
    assert app.get("/__admin/clock?namespace=w2").json["offsetMs"] == 0
    app.post("/__admin/reset?keep=bogus", status=400)


def test_reset_hook_runs(tmp_path):
    from emulators.runtime import Service
    from emulators.pytest_plugin import test_app
    seen = []
    svc = Service(name="hooked", reset=lambda inst: seen.append(inst.namespace))
    test_app(svc, tmp_path / "h.db").post("/__admin/reset?namespace=zz")
    assert seen == ["zz"]


def test_a_trailing_newline_is_not_a_valid_namespace(app):
    # `$` matched before a final newline: "w1\n" passed and broke the x-mockingbird header.
    res = app.get("/__admin/clock?namespace=w1%0A", status=400)
    assert res.headers["x-mockingbird"] == "counter@1.2.3"
    res = app.get("/__admin/ns/w1%0A/info", status=400)
    assert res.json["error"]["message"] == \
        "x-mockingbird-namespace must match /^[A-Za-z0-9_.-]{1,64}$/"
    assert res.headers["x-mockingbird"] == "counter@1.2.3"
    assert app.get("/__admin/namespaces").json["namespaces"] == ["default"]
