"""Checkpoints, branches, checkout, historical reads and accepted mutations."""
from tests.emulators.runtime.conftest import ns


def names(app, headers=None):
    return [i["name"] for i in app.get("/items", headers=headers or {}).json["items"]]


def test_mutations_get_checkpoint_headers_reads_do_not(app):
    res = app.post_json("/items", {"name": "a"})
    assert res.headers["x-mockingbird-checkpoint"].startswith("cp_")
    assert "x-mockingbird-checkpoint" not in app.get("/items").headers
    assert "x-mockingbird-checkpoint" not in app.get("/items/9", status=404).headers


def test_checkpoint_and_checkout_round_trip_records_sequences_clock_rng(app, wall):
    app.post_json("/__admin/clock", {"set": 10_000, "freeze": True})
    app.post_json("/items", {"name": "a"})
    cp = app.post("/__admin/checkpoints").json
    assert cp["branch"] == "main" and cp["records"] == 1 and cp["at"] == 10_000
    random_before = app.get("/info").json["random"]
    app.post_json("/__admin/clock", {"advance": "1h"})
    app.post_json("/items", {"name": "b"})
    assert names(app) == ["a", "b"]
    res = app.post_json("/__admin/branches/main/checkout", {"checkpoint": cp["id"]})
    assert res.json == {"status": "ok", "branch": "main", "checkpoint": cp["id"]}
    assert names(app) == ["a"]
    assert app.get("/__admin/clock").json["now"] == 10_000
    assert app.get("/info").json["random"] == random_before  # RNG replays
    assert app.post_json("/items", {"name": "c"}).json["id"] == 2  # ids replay too


def test_timeline_lists_branches_and_checkpoints(app):
    app.post_json("/items", {"name": "a"})
    timeline = app.get("/__admin/timeline").json
    ids = [c["id"] for c in timeline["checkpoints"]]
    assert timeline["branches"] == {"main": ids[-1]}
    assert timeline["checkpoints"][-1]["parent"] == ids[-2]


def test_checkpoint_ids_are_never_reused(app):
    app.post_json("/items", {"name": "a"}, headers=ns("w1"))
    stale = app.post("/__admin/checkpoints?namespace=w1").json["id"]
    app.post("/__admin/reset?namespace=w1")
    app.post_json("/items", {"name": "b"}, headers=ns("w1"))
    fresh = app.post("/__admin/checkpoints?namespace=w1").json["id"]
    assert fresh != stale
    res = app.post_json("/__admin/branches/main/checkout?namespace=w1", {"checkpoint": stale},
                        status=409)
    assert res.json["error"]["message"] == f"no checkpoint {stale}"
    assert names(app, ns("w1")) == ["b"]


def test_checkpoint_from_another_namespace_is_409(app):
    foreign = app.post("/__admin/checkpoints?namespace=w1").json["id"]
    app.post_json("/__admin/branches/main/checkout?namespace=w2", {"checkpoint": foreign},
                  status=409)


def test_checkout_input_errors(app):
    app.post_json("/__admin/branches/main/checkout", {}, status=400)
    app.post_json("/__admin/branches/main/checkout", {"checkpoint": "cp_zz"}, status=409)
    app.post_json("/__admin/checkpoints", {"branch": "no spaces"}, status=409)


def test_checkpoint_id_past_64_bits_is_409_not_500(app):
    huge = "cp_" + "z" * 20  # base36 36**20 - 1 does not fit an SQLite INTEGER
    res = app.post_json("/__admin/branches/main/checkout", {"checkpoint": huge}, status=409)
    assert res.json["error"]["message"] == f"no checkpoint {huge}"
    app.post_json("/__admin/branches/side", {"at": huge}, status=409)
    app.get("/items", headers={"x-mockingbird-at": huge}, status=409)


def test_branch_header_isolates_from_main(app):
    app.post_json("/items", {"name": "base"})
    res = app.post_json("/items", {"name": "experiment"},
                        headers={"x-mockingbird-branch": "exp"})
    assert res.headers["x-mockingbird-branch"] == "exp"
    assert names(app, {"x-mockingbird-branch": "exp"}) == ["base", "experiment"]
    assert names(app) == ["base"]
    assert "exp" in app.get("/__admin/timeline").json["branches"]
    app.delete("/__admin/branches/exp")
    app.delete("/__admin/branches/main", status=409)
    app.delete("/__admin/branches/exp", status=404)


def test_branch_route_forks_at_a_checkpoint(app):
    app.post_json("/items", {"name": "a"})
    cp = app.post("/__admin/checkpoints").json["id"]
    app.post_json("/items", {"name": "b"})
    head = app.post_json("/__admin/branches/old", {"at": cp}, status=201).json
    assert head["id"] == cp and head["branch"] == "old"
    assert names(app, {"x-mockingbird-branch": "old"}) == ["a"]
    # An existing branch is not silently re-pointed.
    latest = app.post("/__admin/checkpoints").json["id"]
    app.post_json("/__admin/branches/old", {"at": latest}, status=409)
    app.post_json("/__admin/branches/new", {"at": "cp_99999999"}, status=409)


def test_at_header_reads_history_without_touching_main(app):
    app.post_json("/items", {"name": "a"})
    cp = app.post("/__admin/checkpoints").json["id"]
    app.post_json("/items", {"name": "b"})
    res = app.get("/items", headers={"x-mockingbird-at": cp})
    assert [i["name"] for i in res.json["items"]] == ["a"]
    assert res.headers["x-mockingbird-at"] == cp
    assert names(app) == ["a", "b"]
    app.get("/items", headers={"x-mockingbird-at": "cp_00000999"}, status=409)


def test_at_header_on_mutation_to_main_is_refused(app):
    cp = app.post("/__admin/checkpoints").json["id"]
    app.post_json("/items", {"name": "a"})
    res = app.post_json("/items", {"name": "b"}, headers={"x-mockingbird-at": cp}, status=409)
    assert "rewind main" in res.json["error"]["message"]
    assert names(app) == ["a"]


def test_at_views_leave_no_scratch_rows(app, db):
    import sqlite3
    app.post_json("/items", {"name": "a"})
    cp = app.post("/__admin/checkpoints").json["id"]
    for _ in range(3):
        app.get("/items", headers={"x-mockingbird-at": cp})
    keys = {row[0] for row in sqlite3.connect(db).execute("SELECT DISTINCT key FROM records")}
    assert keys == {"default"}


def test_accepted_checkpoint_is_reused_when_nothing_changed(app):
    app.post_json("/__admin/faults", {"operationId": "createItem", "effect": "accepted_drop",
                                      "count": 1})
    try:
        app.post_json("/items", {"name": "a"})
    except BrokenPipeError:
        pass
    accepted = app.get("/__admin/requests").json["requests"][-1]["checkpoint"]
    assert app.get("/__admin/timeline").json["branches"]["main"] == accepted


def test_a_checkpoint_taken_mid_request_is_the_parent_of_the_request_s_own(app):
    before = app.post("/counter").headers["x-mockingbird-checkpoint"]
    res = app.put("/counter")
    mid, own = res.json["mid"], res.headers["x-mockingbird-checkpoint"]
    assert before < mid < own
    listed = {c["id"]: c["parent"] for c in app.get("/__admin/timeline").json["checkpoints"]}
    assert listed[mid] == before and listed[own] == mid
    assert app.get("/counter", headers={"x-mockingbird-at": mid}).json == {"value": 100}
    assert app.get("/counter").json == {"value": 101}
    once = app.put("/counter?once=1")  # nothing written after it: the mid one is the answer's
    assert once.headers["x-mockingbird-checkpoint"] == once.json["mid"]
    assert app.get("/__admin/timeline").json["branches"]["main"] == once.json["mid"]


def test_a_batch_begun_anew_after_a_failed_first_block_reads_the_head_again(app, db):
    from emulators.runtime import Runtime, Settings
    from testkit.counter_service import service
    before = app.post("/counter").headers["x-mockingbird-checkpoint"]
    other = Runtime(service, Settings(db=str(db)))  # another worker
    real = app.runtime.db.conn
    meanwhile = []

    class Interleaved:
        """Another worker commits a checkpoint between the rollback and the new BEGIN."""

        def execute(self, sql, params=()):
            if sql == "ROLLBACK":
                real.execute(sql, params)
                meanwhile.append(other.timeline.commit("default")["id"])
                return None
            return real.execute(sql, params)

        def __getattr__(self, name):
            return getattr(real, name)

    app.runtime.db._local.conn = Interleaved()
    try:
        res = app.patch("/counter")
    finally:
        app.runtime.db._local.conn = real
    own = res.headers["x-mockingbird-checkpoint"]
    assert res.json == {"value": 7} and before < meanwhile[0] < own
    listed = {c["id"]: c["parent"] for c in app.get("/__admin/timeline").json["checkpoints"]}
    assert listed[meanwhile[0]] == before and listed[own] == meanwhile[0]
    assert app.get("/counter", headers={"x-mockingbird-at": own}).json == {"value": 7}


def test_retention_keeps_heads(tmp_path):
    from emulators.pytest_plugin import test_app
    from testkit.counter_service import service
    small = test_app(service, tmp_path / "r.db", max_checkpoints=5)
    for _ in range(40):
        small.post("/counter")
    timeline = small.get("/__admin/timeline").json
    assert len(timeline["checkpoints"]) <= 5 + 1  # a small limit is pruned on every commit
    assert timeline["branches"]["main"] == timeline["checkpoints"][-1]["id"]


def test_namespaces_committing_in_turn_are_all_pruned(tmp_path):
    from emulators.pytest_plugin import test_app
    from testkit.counter_service import service
    small = test_app(service, tmp_path / "r.db", max_checkpoints=32)  # pruned every 2 commits
    for _ in range(60):
        for name in ("a", "b"):
            small.post("/counter", headers={"x-mockingbird-namespace": name})
    for name in ("a", "b"):
        listed = small.get(f"/__admin/timeline?namespace={name}").json["checkpoints"]
        assert 32 <= len(listed) <= 32 + 2
