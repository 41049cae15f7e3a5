"""Fault rules: every field, matchers, counters, scoping, presets, validation, drop and effects."""
import time

import pytest

from emulators.runtime import DroppedByFault
from tests.emulators.runtime.conftest import ns


def add(app, rule, name="default", status=201):
    return app.post_json(f"/__admin/faults?namespace={name}", rule, status=status).json


def test_status_body_and_headers(app):
    add(app, {"operationId": "getCounter", "status": 429, "body": {"error": "slow down"},
              "headers": {"Retry-After": "7"}})
    res = app.get("/counter", status=429)
    assert res.json == {"error": "slow down"}
    assert res.headers["retry-after"] == "7" and res.content_type == "application/json"


def test_default_string_and_null_bodies(app):
    add(app, {"id": "a", "path": "/info", "status": 500, "count": 1})
    assert app.get("/info", status=500).json == {"detail": "Injected by Mockingbird"}
    add(app, {"id": "b", "path": "/info", "status": 502, "body": "plain text", "count": 1,
              "headers": {"content-type": "text/plain"}})
    res = app.get("/info", status=502)
    assert res.body == b"plain text" and res.content_type == "text/plain"
    add(app, {"id": "c", "path": "/info", "status": 204, "body": None, "count": 1})
    assert app.get("/info", status=204).body == b""


def test_count_retires_rule_but_keeps_it_listed(app):
    add(app, {"id": "once", "status": 503, "count": 1})
    app.get("/info", status=503)
    app.get("/info", status=200)
    (rule,) = app.get("/__admin/faults").json["faults"]
    assert (rule["remaining"], rule["hits"], rule["retired"]) == (0, 1, True)


def test_after_skips_the_first_matches(app):
    add(app, {"operationId": "incrementCounter", "status": 500, "after": 2, "count": 1})
    assert [app.post("/counter", expect_errors=True).status_int for _ in range(4)] == \
        [200, 200, 500, 200]
    assert app.get("/__admin/faults").json["faults"][0]["matched"] == 3


def test_rate_zero_never_fires_and_rate_one_always(app):
    add(app, {"id": "never", "status": 500, "rate": 0})
    assert all(app.get("/info").status_int == 200 for _ in range(5))
    add(app, {"id": "never", "status": 500, "rate": 1})  # same id replaces in place
    app.get("/info", status=500)
    assert [f["id"] for f in app.get("/__admin/faults").json["faults"]] == ["never"]


def test_matchers_method_path_template_prefix_operation(app):
    add(app, {"method": "delete", "path": "/items/{item_id}", "status": 410})
    add(app, {"pathPrefix": "/coun", "method": "GET", "status": 418})
    add(app, {"operationId": "getSpecial", "status": 451})
    app.delete("/items/7", status=410)
    assert app.get("/items/7", status=404).json["error"]["type"] == "not_found"
    app.get("/counter", status=418)
    app.post("/counter", status=200)
    app.get("/items/special", status=451)  # static segment beats the template


def test_delay_waits_then_continues(app):
    add(app, {"path": "/info", "delayMs": 120, "count": 1})
    started = time.monotonic()
    assert app.get("/info").status_int == 200
    assert time.monotonic() - started >= 0.12
    entry = app.get("/__admin/requests").json["requests"][-1]
    assert "faultId" not in entry  # delay-only hits leave no trace


def test_drop_closes_without_answer_and_journals_status_zero(app):
    add(app, {"id": "cut", "operationId": "getCounter", "drop": True, "count": 1})
    with pytest.raises(DroppedByFault):
        app.get("/counter")
    entry = app.get("/__admin/requests").json["requests"][-1]
    assert entry["status"] == 0 and entry["faultId"] == "cut"
    assert app.get("/counter").status_int == 200


def test_effect_reaches_handler_and_layers_with_later_rules(app):
    add(app, {"id": "eff", "effect": "double", "params": {"by": 2}})
    assert app.post("/counter").json["effect"] == {"by": 2}
    add(app, {"id": "stop", "operationId": "incrementCounter", "status": 500, "count": 1})
    app.post("/counter", status=500)
    entries = app.get("/__admin/requests").json["requests"]
    assert entries[0]["faultId"] == "eff" and entries[1]["faultId"] == "stop"
    assert app.post("/counter").json["effect"] == {"by": 2}  # "stop" retired, "eff" layers on


def test_accepted_mutation_survives_a_drop(app):
    add(app, {"operationId": "createItem", "effect": "accepted_drop", "count": 1})
    with pytest.raises(DroppedByFault):
        app.post_json("/items", {"name": "lost reply"})
    entry = app.get("/__admin/requests").json["requests"][-1]
    assert entry["accepted"] is True and entry["checkpoint"].startswith("cp_")
    assert entry["status"] == 0 and entry["ids"] == {"itemId": 1}
    assert app.get("/items").json["items"][0]["name"] == "lost reply"


def test_the_connection_closes_only_after_the_accepted_write_committed(app):
    """A client reacts to the close at once: another connection must already see the write."""
    import sqlite3
    seen = []

    class Socket:
        def shutdown(self, how):
            with sqlite3.connect(app.runtime.db.path) as other:
                seen.append(other.execute("SELECT count(*) FROM records WHERE"
                                          " collection='items'").fetchone()[0])

    add(app, {"operationId": "createItem", "effect": "accepted_drop", "count": 1})
    with pytest.raises(DroppedByFault):
        app.post_json("/items", {"name": "lost reply"},
                      extra_environ={"emulators.socket": Socket()})
    assert seen == [1]


def test_accept_then_drop_inside_a_transaction_block_keeps_state_ids_and_checkpoint(app):
    add(app, {"operationId": "createItem", "effect": "accepted_drop", "params": {"inside": True},
              "count": 1})
    with pytest.raises(DroppedByFault):
        app.post_json("/items", {"name": "lost reply"})
    entry = app.get("/__admin/requests").json["requests"][-1]
    assert entry["status"] == 0 and entry["ids"] == {"itemId": 1} and entry["accepted"] is True
    assert app.get("/items").json["items"][0]["name"] == "lost reply"
    # The quoted checkpoint exists, holds the item and is main's head (never issued twice).
    timeline = app.get("/__admin/timeline").json
    assert timeline["branches"]["main"] == entry["checkpoint"]
    at = app.get("/items", headers={"x-mockingbird-at": entry["checkpoint"]}).json["items"]
    assert [item["name"] for item in at] == ["lost reply"]
    assert app.post_json("/items", {"name": "next"}).headers[
        "x-mockingbird-checkpoint"] > entry["checkpoint"]


@pytest.mark.parametrize("rule, message", [
    ({"operationId": "x"}, "a fault needs a numeric status"),
    ({"status": "500"}, "status: expected an HTTP status"),
    ({"status": 700}, "status: expected an HTTP status"),
    ({"status": 500, "rate": 2}, "rate: expected a number between 0 and 1"),
    ({"status": 500, "count": 0}, "count: expected a positive integer or null"),
    ({"status": 500, "after": -1}, "after: expected a non-negative integer"),
    ({"status": 500, "method": "FETCH"}, "method: expected one of"),
    ({"status": 500, "colour": "red"}, "unknown fault field(s): colour"),
    ({"delayMs": 10 ** 9}, "delayMs: expected a number of ms"),
    ({"status": 500, "namespace": "a b"}, "namespace: expected"),
    ({"status": 500, "headers": {"x": 1}}, "headers: expected"),
    ("nope", "expected a JSON object"),
    # past SQLite's 64-bit INTEGER (they were 500s before)
    ({"status": 500, "count": 2 ** 63}, "count: expected a positive integer or null"),
    ({"status": 500, "after": 2 ** 63}, "after: expected a non-negative integer"),
    ({"preset": ["counter_flaky"]}, "preset: expected a preset name"),
    ({"preset": {"x": 1}}, "preset: expected a preset name"),
])
def test_rule_validation(app, rule, message):
    res = add(app, rule, status=400)
    assert res["error"]["message"].startswith(message)
    assert app.get("/__admin/faults").json["faults"] == []


def test_default_ids_never_collide_after_deletes(app):
    first = add(app, {"status": 500})["id"]
    second = add(app, {"status": 501})["id"]
    app.delete(f"/__admin/faults?id={first}")
    third = add(app, {"status": 502})["id"]
    assert len({first, second, third}) == 3
    assert [f["id"] for f in app.get("/__admin/faults").json["faults"]] == [second, third]


def test_faults_are_scoped_to_the_callers_namespace(app):
    add(app, {"id": "mine", "status": 500}, name="w1")
    add(app, {"id": "theirs", "status": 500}, name="w2")
    add(app, {"id": "everyone", "status": 500, "namespace": "*", "path": "/nowhere"}, name="w1")
    assert [f["id"] for f in app.get("/__admin/faults?namespace=w1").json["faults"]] == \
        ["mine", "everyone"]
    app.get("/info", headers=ns("w1"), status=500)
    app.get("/info", headers=ns("w3"), status=200)
    app.delete("/__admin/faults?namespace=w1")  # clears w1's own rules only
    assert [f["id"] for f in app.get("/__admin/faults?all=1").json["faults"]] == \
        ["theirs", "everyone"]
    app.delete("/__admin/faults/theirs?namespace=w1", status=404)
    app.delete("/__admin/faults/theirs?namespace=w2")
    app.delete("/__admin/faults?all=1")
    assert app.get("/__admin/faults?all=1").json["faults"] == []


def test_presets_list_apply_and_override(app):
    names = [p["name"] for p in app.get("/__admin/faults/presets").json["presets"]]
    assert names == ["counter_down", "flaky_pair"]
    res = add(app, {"preset": "counter_down", "count": 1}, name="w1")
    assert res["preset"] == "counter_down"
    assert res["rules"][0]["id"] == "counter_down" and res["rules"][0]["namespace"] == "w1"
    app.post("/counter", headers=ns("w1"), status=503)
    app.post("/counter", headers=ns("w1"), status=200)
    pair = app.post_json("/__admin/faults/presets/flaky_pair", {"status": 599}, status=201).json
    assert [r["id"] for r in pair["rules"]] == ["flaky_pair_1", "flaky_pair_2"]
    app.get("/info", status=599)
    assert app.post("/__admin/faults/presets/nope", status=404).json["error"]["message"] == \
        "no fault preset nope; GET /__admin/faults/presets"
    assert add(app, {"preset": "nope"}, status=404)["error"]["message"] == \
        'no fault preset "nope"'


def test_one_shot_fault_fires_once_under_concurrency(app, db):
    """Threads of one process share nothing but the database, like workers."""
    import threading
    add(app, {"operationId": "getCounter", "status": 503, "count": 1})
    statuses = []

    def hit():
        statuses.append(app.get("/counter", expect_errors=True).status_int)
    threads = [threading.Thread(target=hit) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [200] * 7 + [503]


def test_rules_changed_by_another_worker_are_seen_on_the_next_request(db, wall):
    from emulators.pytest_plugin import test_app
    from testkit.counter_service import service
    one, two = test_app(service, db, wall=wall), test_app(service, db, wall=wall)
    assert one.get("/counter").status_int == 200  # `one` now holds the (empty) rule list
    add(two, {"id": "late", "operationId": "getCounter", "status": 503})
    one.get("/counter", status=503)
    add(two, {"id": "late", "operationId": "getCounter", "status": 418})  # replaced in place
    one.get("/counter", status=418)
    two.delete("/__admin/faults/late")
    one.get("/counter", status=200)
    add(two, {"id": "once", "operationId": "getCounter", "status": 500, "count": 1})
    two.get("/counter", status=500)  # used up through the other worker
    one.get("/counter", status=200)
    add(two, {"id": "star", "namespace": "*", "path": "/info", "status": 502})
    one.get("/info", headers=ns("w9"), status=502)
    two.post("/__admin/reset?all=1")
    one.get("/info", headers=ns("w9"), status=200)


def test_a_version_3_database_gains_control_versions_and_keeps_its_rules(db, wall):
    import sqlite3

    from emulators.runtime.state.db import SCHEMA_VERSION, Database
    from emulators.pytest_plugin import test_app
    from testkit.counter_service import service
    Database(db).one("SELECT 1")
    with sqlite3.connect(db) as conn:
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger' AND"
                                    " name LIKE '%_version_%'").fetchall():
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("DROP TABLE control_versions")
        conn.execute("INSERT INTO faults (service, namespace, id, ord, rule, remaining) VALUES"
                     " ('counter', 'default', 'old', 1, '{\"id\":\"old\",\"namespace\":"
                     "\"default\",\"operationId\":\"getCounter\",\"status\":503}', NULL)")
        conn.execute("PRAGMA user_version=3")
    app = test_app(service, db, wall=wall)
    app.get("/counter", status=503)
    app.delete("/__admin/faults/old")
    app.get("/counter", status=200)
    assert Database(db).one("PRAGMA user_version")[0] == SCHEMA_VERSION >= 4


def test_a_rule_namespace_with_a_trailing_newline_is_refused(app):
    # `$` in the old pattern matched before a final newline: "w1\n" was stored as a namespace.
    res = app.post_json("/__admin/faults", {"namespace": "w1\n", "status": 503}, status=400)
    assert res.json["error"]["message"] == \
        'namespace: expected "*" or a name matching ^[A-Za-z0-9_.-]{1,64}$'
    assert app.get("/__admin/faults").json["faults"] == []
    app.post_json("/__admin/faults", {"namespace": "w1", "status": 503}, status=201)
