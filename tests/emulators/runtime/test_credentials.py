"""The credential map and credential routing of vendor requests."""
import logging

import pytest

from emulators.runtime import Service
from emulators.pytest_plugin import test_app
from testkit import counter_service
from tests.emulators.runtime.conftest import ns

SHAPE = 'expected {"credentials": {"<credential>": "<namespace>"}}'
ENTRY = "each entry is a credential string or {credential, namespace, user}"
USER = "a user must be a non-empty string of at most 100 printable characters"


def error(message):
    return {"error": {"type": "mockingbird_admin", "message": message}}


@pytest.fixture
def keyed(db, wall):
    """The counter service with a Bearer-token credential hook."""
    return test_app(counter_service.keyed_service, db, wall=wall)


def listed(app):
    return app.get("/__admin/credentials").json["credentials"]


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def test_map_form_is_stored_and_listed_masked_sorted_by_credential(app):
    res = app.put_json("/__admin/credentials", {"credentials": {
        "zz-token-0001": "w1", "abcdefgh": "w2", "abcdefghi": "w3", "x": "default"}})
    assert res.json == {"mapped": 4}
    assert listed(app) == [
        {"credential": "ab\u2026", "namespace": "w2"},         # 8 characters: first 2
        {"credential": "abcdef\u2026hi", "namespace": "w3"},   # 9: first 6 and last 2
        {"credential": "x\u2026", "namespace": "default"},
        {"credential": "zz-tok\u202601", "namespace": "w1"}]
    assert "zz-token-0001" not in app.get("/__admin/credentials").text


def test_list_forms_map_plain_strings_to_the_callers_namespace(app):
    res = app.put_json("/__admin/credentials?namespace=w5",
                       ["tok-plain-1", {"credential": "tok-object-1"},
                        {"credential": "tok-object-2", "namespace": "w6"}])
    assert res.json == {"mapped": 3}
    res = app.put_json("/__admin/credentials", {"credentials": ["tok-wrapped"]},
                       headers=ns("w7"))
    assert res.json == {"mapped": 1}
    assert listed(app) == [{"credential": "tok-ob\u2026-1", "namespace": "w5"},
                           {"credential": "tok-ob\u2026-2", "namespace": "w6"},
                           {"credential": "tok-pl\u2026-1", "namespace": "w5"},
                           {"credential": "tok-wr\u2026ed", "namespace": "w7"}]


def test_single_form_and_remapping_a_credential(app):
    assert app.put_json("/__admin/credentials", {"credential": "tok-single"}).json == {
        "mapped": 1}
    assert listed(app) == [{"credential": "tok-si\u2026le", "namespace": "default"}]
    app.put_json("/__admin/credentials", {"credential": "tok-single", "namespace": "w2"})
    assert listed(app) == [{"credential": "tok-si\u2026le", "namespace": "w2"}]


@pytest.mark.parametrize("body,message", [
    (None, SHAPE),
    ({}, SHAPE),
    ("tok", SHAPE),
    ({"credentials": "tok"}, SHAPE),
    ({"credential": 5}, SHAPE),
    ([5], ENTRY),
    ([{"namespace": "w1"}], ENTRY),
    ({"credentials": [["tok"]]}, ENTRY),
    ({"credentials": {"tok-abcdefgh": 5}}, "namespace for tok-ab\u2026gh must be a string"),
    ([{"credential": "tok-abcdefgh", "namespace": None}],
     "namespace for tok-ab\u2026gh must be a string"),
    ({"credential": "tok", "namespace": ["w1"]}, "namespace for to\u2026 must be a string"),
    ({"credentials": {"tok": "bad ns"}}, 'bad namespace "bad ns"'),
    ({"credentials": {"tok": "x" * 65}}, f'bad namespace "{"x" * 65}"'),
    ({"credentials": {"tok": "w1\n"}}, 'bad namespace "w1\\n"'),
    ({"credentials": {"": "w1"}}, "a credential must be a non-empty string"),
    (["ok-token", ""], "a credential must be a non-empty string"),
    ([{"credential": "tok", "user": 5}], USER),
    ([{"credential": "tok", "user": ""}], USER),
    ({"credential": "tok", "user": "a\nb"}, USER),
])
def test_bad_bodies_are_400(app, body, message):
    res = app.put_json("/__admin/credentials", body, status=400) if body is not None else \
        app.put("/__admin/credentials", status=400)
    assert res.json == error(message)


def test_a_bad_entry_stores_nothing_not_even_the_pairs_before_it(app):
    # The reference emulator kept the pairs before the bad one: ours validates first.
    res = app.put_json("/__admin/credentials", {"credentials": {
        "tok-first": "w1", "tok-second": "no good", "tok-third": "w3"}}, status=400)
    assert res.json == error('bad namespace "no good"')
    app.put_json("/__admin/credentials", ["tok-a", "tok-b", 7], status=400)
    assert listed(app) == []


def test_delete_one_then_all(app):
    app.put_json("/__admin/credentials", {"credentials": {"tok-one": "w1", "tok-two": "w2"}})
    assert app.delete("/__admin/credentials?credential=tok-one").json == {"status": "ok"}
    assert listed(app) == [{"credential": "to\u2026", "namespace": "w2"}]
    assert app.delete("/__admin/credentials?credential=unknown").json == {"status": "ok"}
    assert app.delete("/__admin/credentials").json == {"status": "ok"}
    assert listed(app) == []


def test_credential_routes_need_the_admin_key(locked):
    locked.get("/__admin/credentials", status=401)
    locked.put_json("/__admin/credentials", ["tok"], status=401)
    locked.delete("/__admin/credentials", status=401)


def test_a_mapped_bearer_token_selects_the_namespace(keyed):
    keyed.put_json("/__admin/credentials", {"credentials": {"tok-w1": "w1"}})
    created = keyed.post_json("/items", {"name": "via token"}, headers=bearer("tok-w1"))
    assert created.headers["x-mockingbird"] == "counter@1.2.3; ns=w1"
    assert [i["name"] for i in keyed.get("/items", headers=ns("w1")).json["items"]] == [
        "via token"]
    assert keyed.get("/items").json["items"] == []
    assert keyed.get("/__admin/requests?namespace=w1").json["requests"][-1]["namespace"] == "w1"


def test_an_unknown_or_missing_credential_stays_in_default(keyed):
    keyed.put_json("/__admin/credentials", {"credentials": {"tok-w1": "w1"}})
    for headers in (bearer("tok-other"), {}, {"Authorization": "Basic dG9rLXcxOg=="},
                    {"Authorization": "Bearer "}):
        res = keyed.get("/info", headers=headers)
        assert res.json["namespace"] == "default"
        assert res.headers["x-mockingbird"] == "counter@1.2.3; ns=default"


def test_the_namespace_header_and_the_carrier_beat_the_credential(keyed):
    keyed.put_json("/__admin/credentials", {"credentials": {"tok-w1": "w1"}})
    assert keyed.get("/info", headers={**bearer("tok-w1"), **ns("w2")}).json[
        "namespace"] == "w2"
    assert keyed.get("/__admin/ns/w3/info", headers=bearer("tok-w1")).json["namespace"] == "w3"
    # An invalid header is still the header: 400, not a fallback to the credential.
    keyed.get("/info", headers={**bearer("tok-w1"), **ns("bad ns")}, status=400)


def test_admin_requests_are_not_routed_by_credential(keyed):
    keyed.put_json("/__admin/credentials", {"credentials": {"tok-w1": "w1"}})
    assert keyed.get("/__admin/clock", headers=bearer("tok-w1")).headers[
        "x-mockingbird"] == "counter@1.2.3; ns=default"


def test_reset_keeps_the_credential_map(keyed):
    keyed.put_json("/__admin/credentials", {"credentials": {"tok-w1": "w1"}})
    keyed.post("/__admin/reset?all=1")
    keyed.post("/__admin/reset?namespace=w1")
    assert keyed.get("/info", headers=bearer("tok-w1")).json["namespace"] == "w1"


def test_the_map_is_shared_by_runtimes_over_the_same_database(keyed, db, wall):
    other_worker = test_app(counter_service.keyed_service, db, wall=wall)
    other_worker.put_json("/__admin/credentials", {"credentials": {"tok-w4": "w4"}})
    assert keyed.get("/info", headers=bearer("tok-w4")).json["namespace"] == "w4"


def test_a_service_without_the_hook_ignores_the_map(app):
    app.put_json("/__admin/credentials", {"credentials": {"tok-w1": "w1"}})
    assert app.get("/info", headers=bearer("tok-w1")).json["namespace"] == "default"


def test_a_failing_hook_is_logged_and_the_request_stays_in_default(db, wall, caplog):
    def broken(environ):
        raise RuntimeError("hook bug")
    svc = Service(name="counter", version="1.2.3", openapi=counter_service.OPENAPI,
                  provider_app=counter_service.provider_app, credential=broken)
    app = test_app(svc, db, wall=wall)
    with caplog.at_level(logging.ERROR, logger="emulators"):
        assert app.get("/info").json["namespace"] == "default"
    assert "credential hook failed" in caplog.text


def test_a_subclass_may_declare_the_hook_as_a_method(db, wall):
    class Keyed(Service):
        def credential(self, environ):
            return environ.get("HTTP_X_API_KEY")
    svc = Keyed(name="counter", version="1.2.3", openapi=counter_service.OPENAPI,
                provider_app=counter_service.provider_app)
    app = test_app(svc, db, wall=wall)
    app.put_json("/__admin/credentials", {"credentials": {"key-9": "w9"}})
    assert app.get("/info", headers={"x-api-key": "key-9"}).json["namespace"] == "w9"


def test_an_entry_may_name_the_user_the_credential_acts_as(app, keyed, db, wall):
    app.put_json("/__admin/credentials", [{"credential": "tok-alice", "namespace": "w1",
                                          "user": "alice"}, "tok-plain"])
    assert listed(app) == [{"credential": "tok-al\u2026ce", "namespace": "w1", "user": "alice"},
                           {"credential": "tok-pl\u2026in", "namespace": "default"}]
    instance = app.app.emulator.instance("w1")
    assert (instance.user_of("tok-alice"), instance.user_of("tok-plain"),
            instance.user_of("unknown"), instance.user_of(None)) == ("alice", None, None, None)
    assert instance.names_user("Alice") and not instance.names_user("bob")
    # mapping a credential again replaces its user too
    app.put_json("/__admin/credentials", {"credentials": {"tok-alice": "w2"}})
    assert instance.user_of("tok-alice") is None


def test_a_credentials_table_without_the_user_column_gains_it(tmp_path, wall):
    import sqlite3
    path = tmp_path / "old.sqlite3"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE credentials (service TEXT NOT NULL, credential TEXT NOT NULL,"
                " namespace TEXT NOT NULL, PRIMARY KEY (service, credential)) WITHOUT ROWID")
    old.execute("INSERT INTO credentials VALUES ('counter', 'tok-old', 'w1')")
    old.commit()
    old.close()
    app = test_app(counter_service.keyed_service, str(path), wall=wall)
    assert listed(app) == [{"credential": "to\u2026", "namespace": "w1"}]
    assert app.app.emulator.instance("w1").user_of("tok-old") is None
