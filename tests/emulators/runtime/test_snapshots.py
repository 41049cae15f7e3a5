"""Legacy snapshots: aliases of pinned main checkpoints."""
import pytest

from emulators.pytest_plugin import test_app
from tests.emulators.runtime.conftest import ns
from testkit.counter_service import service


def error(message):
    return {"error": {"type": "mockingbird_admin", "message": message}}


def names(app, headers=None):
    return [item["name"] for item in app.get("/items", headers=headers or {}).json["items"]]


def checkpoints(app, namespace="default"):
    timeline = app.get(f"/__admin/timeline?namespace={namespace}").json
    return [checkpoint["id"] for checkpoint in timeline["checkpoints"]]


def test_snapshot_then_restore_brings_back_records_ids_and_clock(app):
    app.post_json("/__admin/clock", {"set": 50_000, "freeze": True})
    app.post_json("/items", {"name": "a"})
    res = app.post("/__admin/snapshots", status=201)
    assert res.json == {"id": "snap_1", "namespace": "default", "records": 1}
    checkpoint = res.headers["x-mockingbird-checkpoint"]
    assert app.get("/__admin/timeline").json["branches"]["main"] == checkpoint
    app.post_json("/__admin/clock", {"advance": "1h"})
    app.post_json("/items", {"name": "b"})
    restored = app.post("/__admin/snapshots/snap_1/restore")
    assert restored.json == {"status": "ok", "id": "snap_1", "namespace": "default"}
    assert names(app) == ["a"]
    assert app.get("/__admin/clock").json["now"] == 50_000
    assert app.post_json("/items", {"name": "c"}).json["id"] == 2
    # A snapshot restores as often as asked.
    app.post("/__admin/snapshots/snap_1/restore")
    assert names(app) == ["a"]


def test_snapshot_numbers_count_up_across_namespaces(app):
    assert app.post("/__admin/snapshots?namespace=w1").json == {
        "id": "snap_1", "namespace": "w1", "records": 0}
    assert app.post("/__admin/snapshots", headers=ns("w2")).json["id"] == "snap_2"
    assert "w1" in app.get("/__admin/namespaces").json["namespaces"]


def test_snapshot_numbers_are_never_reused_after_reset_or_by_another_runtime(app, db, wall):
    app.post("/__admin/snapshots")
    app.post("/__admin/reset?all=1")
    assert app.post("/__admin/snapshots").json["id"] == "snap_2"
    other_worker = test_app(service, db, wall=wall)
    assert other_worker.post("/__admin/snapshots").json["id"] == "snap_3"
    assert app.post("/__admin/snapshots/snap_3/restore").status_int == 200


def test_restore_and_delete_in_another_namespace_are_409(app):
    app.post_json("/items", {"name": "w1 item"}, headers=ns("w1"))
    app.post("/__admin/snapshots?namespace=w1")
    message = "snapshot snap_1 belongs to namespace w1"
    assert app.post("/__admin/snapshots/snap_1/restore?namespace=w2", status=409).json == \
        error(message)
    assert app.post("/__admin/snapshots/snap_1/restore", status=409).json == error(message)
    assert app.delete("/__admin/snapshots/snap_1", status=409).json == error(message)
    assert names(app) == [] and names(app, ns("w2")) == []
    assert app.post("/__admin/snapshots/snap_1/restore?namespace=w1").status_int == 200


@pytest.mark.parametrize("snapshot_id", ["snap_9", "snap_x", "snap_01", "snap_", "cp_00000001",
                                         "snap_99999999999999999999999"])
def test_unknown_snapshots_are_404(app, snapshot_id):
    app.post("/__admin/snapshots")
    message = f"no snapshot {snapshot_id}"
    assert app.post(f"/__admin/snapshots/{snapshot_id}/restore", status=404).json == \
        error(message)
    assert app.delete(f"/__admin/snapshots/{snapshot_id}", status=404).json == error(message)


def test_delete_forgets_the_alias(app):
    app.post("/__admin/snapshots")
    assert app.delete("/__admin/snapshots/snap_1").json == {"status": "ok"}
    app.post("/__admin/snapshots/snap_1/restore", status=404)
    app.delete("/__admin/snapshots/snap_1", status=404)


@pytest.fixture
def small(db, wall):
    """Retention of 2 checkpoints per namespace, pruned after every commit."""
    return test_app(service, db, wall=wall, max_checkpoints=2)


def test_a_snapshot_survives_checkpoint_retention_until_deleted(small):
    small.post_json("/items", {"name": "kept"})
    snap = small.post("/__admin/snapshots")
    pinned = snap.headers["x-mockingbird-checkpoint"]
    plain = small.post("/__admin/checkpoints").json["id"]
    for index in range(6):
        small.post_json("/items", {"name": f"later {index}"})
    listed = checkpoints(small)
    assert pinned in listed and plain not in listed  # retention ran, and spared the pin
    small.post("/__admin/snapshots/snap_1/restore")
    assert names(small) == ["kept"]
    small.delete("/__admin/snapshots/snap_1")
    for index in range(3):
        small.post_json("/items", {"name": f"after {index}"})
    assert pinned not in checkpoints(small)


def test_a_reset_leaves_no_dangling_snapshot(app):
    app.post_json("/items", {"name": "a"}, headers=ns("w1"))
    app.post("/__admin/snapshots?namespace=w1")
    app.post("/__admin/snapshots?namespace=w1")
    app.post("/__admin/reset?namespace=w1")
    assert app.post("/__admin/snapshots/snap_1/restore?namespace=w1", status=404).json == \
        error("no snapshot snap_1")
    app.delete("/__admin/snapshots/snap_1?namespace=w1", status=404)
    assert app.delete("/__admin/snapshots/snap_2?namespace=w1").json == {"status": "ok"}
    assert names(app, ns("w1")) == []


def test_snapshot_routes_need_the_admin_key(locked):
    locked.post("/__admin/snapshots", status=401)
    locked.post("/__admin/snapshots/snap_1/restore", status=401)
    locked.delete("/__admin/snapshots/snap_1", status=401)
