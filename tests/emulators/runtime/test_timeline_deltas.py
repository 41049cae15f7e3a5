"""Checkpoints recorded with an undo log: exact restores over big namespaces, eviction that keeps
every retained node restorable, bounded storage, and the migration of older databases."""
import random
import sqlite3

from emulators.runtime.state.db import SCHEMA_VERSION, Database
from emulators.pytest_plugin import test_app
from testkit.counter_service import service


def state(app, headers=None):
    """Every record of the key a request sees, as {id: value} (through the provider route)."""
    return {item["id"]: item for item in app.get("/items", headers=headers or {}).json["items"]}


def rows(db, sql, params=()):
    return sqlite3.connect(db).execute(sql, params).fetchall()


def seed(app, count, namespace="default"):
    """Write `count` items in one transaction (fast) and commit a checkpoint."""
    instance = app.runtime.instance(namespace, method="POST")
    with instance.transaction():
        for _ in range(count):
            item_id = instance.records.next_id("items")
            instance.records.put("items", item_id, {"id": item_id, "name": f"i{item_id}",
                                                    "tag": None, "created": 0})
    return app.post(f"/__admin/checkpoints?namespace={namespace}").json["id"]


def mutate(app, rng, live):
    """One random provider mutation (create, delete, or bump the counter's sibling via put)."""
    choice = rng.random()
    if choice < 0.4 or not live:
        res = app.post_json("/items", {"name": f"n{rng.random():.6f}"})
    elif choice < 0.7:
        res = app.delete(f"/items/{rng.choice(sorted(live))}")
    else:
        instance = app.runtime.instance(method="POST")
        victim = rng.choice(sorted(live))
        with instance.transaction():
            instance.records.put("items", victim, {**live[victim], "name": "edited"})
            return instance.checkpoint()
    return res.headers["x-mockingbird-checkpoint"]


def test_many_checkpoints_over_a_large_namespace_restore_exactly(tmp_path):
    app = test_app(service, tmp_path / "e.db")
    first = seed(app, 600)
    history = [(first, state(app))]
    rng = random.Random(7)
    for _ in range(60):
        cp = mutate(app, rng, history[-1][1])
        history.append((cp, state(app)))
    for cp, expected in history:
        assert state(app, {"x-mockingbird-at": cp}) == expected, cp
    for cp, expected in rng.sample(history, 8):
        app.post_json("/__admin/branches/main/checkout", {"checkpoint": cp})
        assert state(app) == expected
    # A commit after a checkout stores what changed since the checked-out node only.
    app.post_json("/items", {"name": "after-checkout"})
    assert state(app, {"x-mockingbird-at": app.get("/__admin/timeline").json["branches"][
        "main"]}) == state(app)


def test_a_commit_copies_no_rows_and_a_write_logs_each_row_once(tmp_path):
    db = tmp_path / "e.db"
    app = test_app(service, db)
    seed(app, 2000)
    before = rows(db, "SELECT count(*) FROM timeline_undo")[0][0]
    app.post("/counter")
    app.post("/__admin/checkpoints")  # nothing written since: a node row, no undo entry
    app.post_json("/items", {"name": "x"})
    app.delete("/items/5")
    assert rows(db, "SELECT count(*) FROM timeline_undo")[0][0] - before == 3
    created = rows(db, "SELECT seq, value FROM timeline_undo WHERE collection='counter'")
    assert created == [(None, None)]  # absent before its first write: a NULL entry
    deleted = rows(db, "SELECT value FROM timeline_undo WHERE collection='items' AND id='5'"
                       " ORDER BY t")
    assert deleted[-1] == ('{"created":0,"id":5,"name":"i5","tag":null}',)


def test_restore_after_many_later_writes_and_deletes_of_the_same_rows(app):
    first = seed(app, 20)
    expected = state(app)
    for round_ in range(30):
        for item_id in range(1, 21, 3):
            app.delete(f"/items/{item_id}", status="*")
        instance = app.runtime.instance(method="POST")
        with instance.transaction():
            for item_id in range(1, 21, 2):
                instance.records.put("items", item_id, {"id": item_id, "name": f"r{round_}",
                                                        "tag": None, "created": 0})
        instance.checkpoint()
    assert state(app, {"x-mockingbird-at": first}) == expected
    app.post_json("/__admin/branches/main/checkout", {"checkpoint": first})
    assert state(app) == expected
    # Ids come back with the node too: the next item is numbered after the restored ones.
    assert app.post_json("/items", {"name": "next"}).json["id"] == 21


def test_evicting_parents_keeps_children_restorable(tmp_path):
    db = tmp_path / "e.db"
    app = test_app(service, db, max_checkpoints=5)
    seed(app, 300)
    early = app.post_json("/items", {"name": "fork-here"}).headers["x-mockingbird-checkpoint"]
    fork_state = state(app)
    app.post_json("/__admin/branches/side", {"at": early}, status=201)
    side = {"x-mockingbird-branch": "side"}
    app.post_json("/items", {"name": "on-side"}, headers=side)
    rng = random.Random(3)
    expected = {}
    for _ in range(80):
        cp = mutate(app, rng, state(app))
        expected[cp] = state(app)
    timeline = app.get("/__admin/timeline").json
    listed = [c["id"] for c in timeline["checkpoints"]]
    assert early not in listed and len(listed) <= 5 + 16 + 1
    app.get("/items", headers={"x-mockingbird-at": early}, status=409)  # evicted: never wrong
    for cp in listed:
        if cp in expected:
            assert state(app, {"x-mockingbird-at": cp}) == expected[cp]
    side_head = timeline["branches"]["side"]
    side_state = state(app, {"x-mockingbird-at": side_head})
    assert side_state == state(app, side)
    assert "on-side" in {v["name"] for v in side_state.values()}
    assert {k: v for k, v in side_state.items() if v["name"] != "on-side"} == fork_state
    # Storage stays bounded: evicted nodes are deleted, and undo entries no node reads go.
    assert rows(db, "SELECT count(*) FROM checkpoints")[0][0] == len(listed)
    # (the side branch's fork copy of 300 rows included: no retained node reads it)
    assert rows(db, "SELECT count(*) FROM timeline_undo")[0][0] <= 2 * len(listed)
    app.delete("/__admin/branches/side")
    for _ in range(40):
        mutate(app, rng, state(app))
    listed = [c["id"] for c in app.get("/__admin/timeline").json["checkpoints"]]
    assert rows(db, "SELECT count(*) FROM timeline_undo WHERE key != 'default'") == [(0,)]
    assert rows(db, "SELECT count(*) FROM timeline_undo WHERE t < ?",
                (int(listed[0][3:], 36),)) == [(0,)]
    head = app.get("/__admin/timeline").json["branches"]["main"]
    assert state(app, {"x-mockingbird-at": head}) == state(app)


def test_writing_one_row_twice_between_commits_is_one_change(app):
    instance = app.runtime.instance(method="POST")
    with instance.transaction():
        instance.records.put("items", 1, {"id": 1, "name": "a"})
        instance.records.put("items", 1, {"id": 1, "name": "b"})
        instance.records.delete("items", 1)
        instance.records.put("items", 1, {"id": 1, "name": "c"})
    cp = instance.checkpoint()
    assert [i["name"] for i in state(app, {"x-mockingbird-at": cp}).values()] == ["c"]


def test_reset_clears_the_undo_log_of_its_namespace_only(tmp_path):
    db = tmp_path / "e.db"
    app = test_app(service, db)
    seed(app, 50, "w1")
    seed(app, 5, "w2")
    side = {"x-mockingbird-namespace": "w1", "x-mockingbird-branch": "b"}
    app.post_json("/items", {"name": "x"}, headers=side)
    app.post_json("/items", {"name": "x"}, headers={"x-mockingbird-namespace": "w1"})
    app.post("/__admin/reset?namespace=w1")
    assert rows(db, "SELECT DISTINCT key FROM timeline_undo") == [("w2",)]
    app.post_json("/items", {"name": "y"}, headers={"x-mockingbird-namespace": "w1"})
    cp = app.post("/__admin/checkpoints?namespace=w1").json
    assert cp["records"] == 1


V1 = """
CREATE TABLE records (service TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL,
    collection TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (service, key, collection, id)) WITHOUT ROWID;
CREATE TABLE timeline_nodes (n INTEGER PRIMARY KEY AUTOINCREMENT, service TEXT NOT NULL,
    namespace TEXT NOT NULL, branch TEXT NOT NULL, parent TEXT, at_ms INTEGER NOT NULL,
    pinned INTEGER NOT NULL DEFAULT 0, sequences TEXT NOT NULL, rng INTEGER,
    clock_now INTEGER NOT NULL, clock_frozen INTEGER NOT NULL);
CREATE TABLE timeline_records (n INTEGER NOT NULL, namespace TEXT NOT NULL,
    collection TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (n, collection, id)) WITHOUT ROWID;
CREATE TABLE sequences (service TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL,
    name TEXT NOT NULL, value INTEGER NOT NULL, PRIMARY KEY (service, key, name)) WITHOUT ROWID;
INSERT INTO sequences VALUES ('counter', 'default', 'default', 'items', 2);
CREATE TABLE branches (service TEXT NOT NULL, namespace TEXT NOT NULL, branch TEXT NOT NULL,
    head TEXT NOT NULL, PRIMARY KEY (service, namespace, branch)) WITHOUT ROWID;
INSERT INTO timeline_nodes VALUES (7, 'counter', 'default', 'main', NULL, 0, 0, '{"items":2}',
    NULL, 0, 0);
INSERT INTO timeline_records VALUES (7, 'default', 'items', '1', 1, '{"id":1,"name":"a"}'),
    (7, 'default', 'items', '2', 2, '{"id":2,"name":"b"}');
INSERT INTO branches VALUES ('counter', 'default', 'main', 'cp_00000007');
INSERT INTO records VALUES ('counter', 'default', 'default', 'items', '1', 1,
    '{"id":1,"name":"a"}');
"""


def test_a_version_1_database_starts_with_its_rows_and_a_fresh_timeline(tmp_path):
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(V1)  # item 2 deleted after the checkpoint, not yet committed
    app = test_app(service, db)
    # Older timelines are discarded (db.py): a clean 409, never a wrong state.
    app.get("/items", headers={"x-mockingbird-at": "cp_00000007"}, status=409)
    assert [i["name"] for i in state(app).values()] == ["a"]
    first = app.get("/__admin/timeline").json["checkpoints"]
    assert [c["parent"] for c in first] == [None]
    created = app.post_json("/items", {"name": "c"})
    cp = created.headers["x-mockingbird-checkpoint"]
    assert first[0]["id"] > "cp_00000007" and cp > first[0]["id"]  # ids keep counting up
    assert created.json["id"] == 3  # sequences stay
    assert [i["name"] for i in state(app, {"x-mockingbird-at": first[0]["id"]}).values()] == [
        "a"]
    assert Database(db).one("PRAGMA user_version")[0] == SCHEMA_VERSION
    assert app.get("/__admin/timeline").json["branches"] == {"main": cp}


def test_a_version_4_database_drops_its_deltas_and_branches_on_start(tmp_path):
    db = tmp_path / "v4.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(V1)
        conn.executescript("""
            ALTER TABLE timeline_nodes ADD COLUMN base INTEGER;
            ALTER TABLE timeline_nodes ADD COLUMN delta INTEGER;
            ALTER TABLE timeline_nodes ADD COLUMN evicted INTEGER NOT NULL DEFAULT 0;
            INSERT INTO timeline_nodes (n, service, namespace, branch, parent, at_ms, sequences,
                clock_now, clock_frozen, base) VALUES (40, 'counter', 'default', 'side',
                7, 0, '{"items":2}', 0, 0, 7);
            DELETE FROM timeline_nodes WHERE n=40;
            CREATE TABLE timeline_deltas (delta INTEGER NOT NULL, collection TEXT NOT NULL,
                id TEXT NOT NULL, seq INTEGER, value TEXT, PRIMARY KEY (delta, collection, id))
                WITHOUT ROWID;
            INSERT INTO timeline_deltas SELECT n, collection, id, seq, value FROM timeline_records;
            DROP TABLE timeline_records;
            CREATE TABLE record_changes (service TEXT NOT NULL, namespace TEXT NOT NULL,
                key TEXT NOT NULL, collection TEXT NOT NULL, id TEXT NOT NULL,
                PRIMARY KEY (service, key, collection, id)) WITHOUT ROWID;
            CREATE TRIGGER records_noted_insert AFTER INSERT ON records BEGIN
                INSERT INTO record_changes VALUES (NEW.service, NEW.namespace, NEW.key,
                NEW.collection, NEW.id) ON CONFLICT DO NOTHING; END;
            INSERT INTO records VALUES ('counter', 'default', 'default~side', 'items', '9', 1,
                '{"id":9,"name":"side"}');
            INSERT INTO branches VALUES ('counter', 'default', 'side', 'cp_00000007');
            PRAGMA user_version=4;""")
    app = test_app(service, db)
    timeline = app.get("/__admin/timeline").json
    assert list(timeline["branches"]) == ["main"]
    assert timeline["branches"]["main"] > "cp_00000014"  # above the deleted node 40 too
    side = {"x-mockingbird-branch": "side"}
    assert [i["name"] for i in state(app, side).values()] == ["a"]  # forked anew from main
    assert rows(db, "SELECT name FROM sqlite_master WHERE name IN ('timeline_deltas',"
                    " 'record_changes', 'records_noted_insert')") == []
    cp = app.post_json("/items", {"name": "c"}).headers["x-mockingbird-checkpoint"]
    assert [i["name"] for i in state(app, {"x-mockingbird-at": cp}).values()] == ["a", "c"]


def test_branch_checkout_after_eviction_and_nodes_of_a_deleted_branch(tmp_path):
    app = test_app(service, tmp_path / "e.db", max_checkpoints=4)
    seed(app, 10)
    side = {"x-mockingbird-branch": "side"}
    on_side = app.post_json("/items", {"name": "s1"}, headers=side).headers[
        "x-mockingbird-checkpoint"]
    side_state = state(app, side)
    app.delete("/items/2", headers=side)
    app.delete("/__admin/branches/side")  # its retained nodes stay readable
    assert state(app, {"x-mockingbird-at": on_side}) == side_state
    evicted = app.post_json("/items", {"name": "m1"}).headers["x-mockingbird-checkpoint"]
    rng = random.Random(5)
    expected = {}
    for _ in range(30):
        cp = mutate(app, rng, state(app))
        expected[cp] = state(app)
    listed = [c["id"] for c in app.get("/__admin/timeline").json["checkpoints"]]
    assert evicted not in listed and on_side not in listed
    app.post_json("/__admin/branches/other/checkout", {"checkpoint": evicted}, status=409)
    app.get("/items", headers={"x-mockingbird-at": on_side}, status=409)
    kept = [cp for cp in listed if cp in expected][0]
    assert app.post_json("/__admin/branches/other/checkout", {"checkpoint": kept}).json[
        "checkpoint"] == kept
    other = {"x-mockingbird-branch": "other"}
    assert state(app, other) == expected[kept]
    app.post_json("/items", {"name": "o1"}, headers=other)
    for _ in range(10):  # main moves on and evicts `kept`; the branch keeps its own rows
        mutate(app, rng, state(app))
    assert [v["name"] for v in state(app, other).values()][-1] == "o1"
    head = app.get("/__admin/timeline").json["branches"]["other"]
    assert state(app, {"x-mockingbird-at": head}) == state(app, other)


V5 = """
CREATE TABLE records (service TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL,
    collection TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (service, key, collection, id)) WITHOUT ROWID;
CREATE TABLE faults (service TEXT NOT NULL, namespace TEXT NOT NULL, id TEXT NOT NULL,
    ord INTEGER NOT NULL, rule TEXT NOT NULL, remaining INTEGER,
    hits INTEGER NOT NULL DEFAULT 0, seen INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (service, namespace, id)) WITHOUT ROWID;
CREATE TABLE fault_versions (service TEXT NOT NULL PRIMARY KEY, version INTEGER NOT NULL)
    WITHOUT ROWID;
CREATE TRIGGER faults_version_insert AFTER INSERT ON faults BEGIN
    INSERT INTO fault_versions (service, version) VALUES (NEW.service, 1)
    ON CONFLICT (service) DO UPDATE SET version=version+1; END;
CREATE TABLE journal (seq INTEGER PRIMARY KEY AUTOINCREMENT, service TEXT NOT NULL,
    namespace TEXT NOT NULL, at_ms INTEGER NOT NULL, operation TEXT, status INTEGER NOT NULL,
    entry TEXT NOT NULL);
CREATE TABLE metrics (service TEXT NOT NULL, namespace TEXT NOT NULL, operation TEXT NOT NULL,
    method TEXT NOT NULL, path TEXT NOT NULL, status INTEGER NOT NULL, count INTEGER NOT NULL,
    faults INTEGER NOT NULL, duration_ms REAL NOT NULL,
    PRIMARY KEY (service, namespace, operation, method, path, status)) WITHOUT ROWID;
CREATE TABLE timeline_nodes (n INTEGER PRIMARY KEY AUTOINCREMENT, service TEXT NOT NULL,
    namespace TEXT NOT NULL, branch TEXT NOT NULL, parent INTEGER, at_ms INTEGER NOT NULL,
    pinned INTEGER NOT NULL DEFAULT 0, sequences TEXT NOT NULL, rng INTEGER,
    clock_now INTEGER NOT NULL, clock_frozen INTEGER NOT NULL);
CREATE INDEX timeline_nodes_listed ON timeline_nodes (service, namespace, n, branch);
CREATE TABLE timeline_undo (service TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL,
    t INTEGER NOT NULL, collection TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER, value TEXT,
    PRIMARY KEY (service, key, t, collection, id)) WITHOUT ROWID;
CREATE TABLE branches (service TEXT NOT NULL, namespace TEXT NOT NULL, branch TEXT NOT NULL,
    head INTEGER NOT NULL, PRIMARY KEY (service, namespace, branch)) WITHOUT ROWID;
INSERT INTO records VALUES
    ('counter', 'default', 'default', 'items', '1', 1, '{"id":1,"name":"a"}'),
    ('counter', 'default', 'default', 'items', '2', 2, '{"id":2,"name":"b"}'),
    ('counter', 'default', 'default~side', 'items', '1', 1, '{"id":1,"name":"a"}'),
    ('counter', 'default', 'default~side', 'items', '9', 2, '{"id":9,"name":"s"}');
INSERT INTO timeline_nodes VALUES
    (3, 'counter', 'default', 'main', NULL, 1000, 0, '{"items":1}', NULL, 1000, 0),
    (5, 'counter', 'default', 'main', 3, 2000, 0, '{"items":1}', NULL, 2000, 0),
    (6, 'counter', 'default', 'side', 3, 3000, 0, '{"items":9}', NULL, 3000, 0);
INSERT INTO timeline_undo VALUES ('counter', 'default', 'default', 5, 'items', '2', NULL, NULL);
INSERT INTO branches VALUES ('counter', 'default', 'main', 5), ('counter', 'default', 'side', 6);
INSERT INTO journal VALUES
    (11, 'counter', 'default', 1500, 'createItem', 201, '{"service":"counter","namespace":
     "default","method":"POST","path":"/items","operationId":"createItem","unmatched":false,
     "status":201,"ids":{"itemId":2},"durationMs":1.5}'),
    (12, 'counter', 'default', 2500, NULL, 404, '{"service":"counter","namespace":"default",
     "method":"GET","path":"/nope","unmatched":true,"status":404,"request":{"contentType":
     null,"bodyBytes":null,"transferEncoding":null},"durationMs":0.25}');
INSERT INTO metrics VALUES ('counter', 'default', 'createItem', 'POST', '', 201, 11, 0, 16.5),
    ('counter', 'default', '', 'GET', '/nope', 404, 1, 0, 0.25);
UPDATE sqlite_sequence SET seq=9 WHERE name='timeline_nodes';
UPDATE sqlite_sequence SET seq=14 WHERE name='journal';
INSERT INTO fault_versions VALUES ('counter', 4);
PRAGMA user_version=5;
"""


def test_a_version_5_database_keeps_its_checkpoints_heads_journal_and_counts(tmp_path):
    db = tmp_path / "v5.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(V5)
    app = test_app(service, db)
    timeline = app.get("/__admin/timeline").json
    assert timeline["branches"] == {"main": "cp_00000005", "side": "cp_00000006"}
    assert [(c["id"], c["branch"], c["parent"]) for c in timeline["checkpoints"]] == [
        ("cp_00000003", "main", None), ("cp_00000005", "main", "cp_00000003"),
        ("cp_00000006", "side", "cp_00000003")]
    old = app.get("/__admin/requests").json["requests"]
    assert old == [
        {"service": "counter", "namespace": "default", "method": "POST", "path": "/items",
         "operationId": "createItem", "unmatched": False, "status": 201, "ids": {"itemId": 2},
         "durationMs": 1.5, "seq": 11, "at": "1970-01-01T00:00:01.500Z"},
        {"service": "counter", "namespace": "default", "method": "GET", "path": "/nope",
         "unmatched": True, "status": 404, "request": {"contentType": None, "bodyBytes": None,
                                                       "transferEncoding": None},
         "durationMs": 0.25, "seq": 12, "at": "1970-01-01T00:00:02.500Z"}]
    assert app.get("/__admin/metrics").json["requests"] == 12  # counted once, not again
    assert [i["name"] for i in state(app, {"x-mockingbird-at": "cp_00000005"}).values()] == [
        "a"]
    assert [i["name"] for i in state(app, {"x-mockingbird-branch": "side"}).values()] == [
        "a", "s"]
    created = app.post_json("/items", {"name": "c"})
    cp = created.headers["x-mockingbird-checkpoint"]
    assert cp == "cp_0000000a"  # above every old id, deleted ones included
    assert app.get("/__admin/timeline").json["checkpoints"][-1]["parent"] == "cp_00000005"
    assert app.get("/__admin/requests").json["requests"][-1]["seq"] == 17
    assert app.get("/__admin/metrics").json["requests"] == 15
    app.post_json("/__admin/faults", {"id": "f", "operationId": "getCounter", "status": 503})
    app.get("/counter", status=503)
    assert Database(db).one("PRAGMA user_version")[0] == SCHEMA_VERSION
    assert rows(db, "SELECT name FROM sqlite_master WHERE name IN ('timeline_nodes',"
                    " 'fault_versions', 'journal_v5', 'branches_v5')") == []
