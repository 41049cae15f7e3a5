"""Legacy snapshots (`/__admin/snapshots`): `snap_<n>` aliases of pinned main checkpoints.

The timeline owns the state; a snapshot row only names a checkpoint and its namespace. Numbers
come from an AUTOINCREMENT column, so they are unique for the life of the database (a per-process
counter would repeat numbers after a restart). A namespace reset takes its checkpoints with it:
a snapshot left without its checkpoint answers 404, as if deleted, instead of dangling.
"""
import re

from ..errors import AdminError
from ..state.timeline import MAIN, TimelineError

SNAPSHOT = re.compile(r"snap_([1-9][0-9]{0,17})")  # fullmatch; < 2**63, as SQLite binds


class SnapshotRoutes:
    """`POST /snapshots`, `POST /snapshots/:id/restore`, `DELETE /snapshots/:id`."""

    def __init__(self, emulator):
        self.emulator = emulator

    def routes(self):
        """Return (method, path, handler) of every snapshot route."""
        return [("POST", "/snapshots", self.create),
                ("POST", "/snapshots/:id/restore", self.restore),
                ("DELETE", "/snapshots/:id", self.delete)]

    def _find(self, snapshot_id):
        """Return (namespace, checkpoint id) of a snapshot of this service, or raise 404."""
        match = SNAPSHOT.fullmatch(snapshot_id)
        row = match and self.emulator.db.one(
            "SELECT namespace, checkpoint FROM snapshots WHERE n=? AND service=?",
            (int(match.group(1)), self.emulator.name))
        if not row:
            raise AdminError(f"no snapshot {snapshot_id}", status=404)
        return row

    def _forget(self, snapshot_id):
        n = int(SNAPSHOT.fullmatch(snapshot_id).group(1))
        self.emulator.db.execute("DELETE FROM snapshots WHERE n=? AND service=?",
                                 (n, self.emulator.name))

    def create(self, request):
        emulator, namespace = self.emulator, request.namespace
        emulator.touch(namespace)
        timeline = emulator.timeline
        with emulator.db.transaction() as conn:
            checkpoint = timeline.commit(namespace, MAIN)["id"]
            timeline.pin(namespace, checkpoint)
            (number,) = conn.execute(
                "INSERT INTO snapshots (service, namespace, checkpoint) VALUES (?, ?, ?)"
                " RETURNING n", (emulator.name, namespace, checkpoint)).fetchone()
            records = timeline.count(namespace)
        return 201, {"id": f"snap_{number}", "namespace": namespace, "records": records}, \
            [("x-mockingbird-checkpoint", checkpoint)]

    def restore(self, request):
        snapshot_id = request.params["id"]
        owner, checkpoint = self._find(snapshot_id)
        if owner != request.namespace:
            raise AdminError(f"snapshot {snapshot_id} belongs to namespace {owner}", status=409)
        try:
            self.emulator.timeline.checkout(request.namespace, MAIN, checkpoint)
        except TimelineError:  # its checkpoint went with a reset of the namespace
            self._forget(snapshot_id)
            raise AdminError(f"no snapshot {snapshot_id}", status=404) from None
        return 200, {"status": "ok", "id": snapshot_id, "namespace": request.namespace}

    def delete(self, request):
        snapshot_id = request.params["id"]
        owner, checkpoint = self._find(snapshot_id)
        # One parallel worker may not drop another's snapshot (the reference let it).
        if owner != request.namespace:
            raise AdminError(f"snapshot {snapshot_id} belongs to namespace {owner}", status=409)
        with self.emulator.db.transaction():
            self._forget(snapshot_id)
            try:
                self.emulator.timeline.unpin(owner, checkpoint)
            except TimelineError:
                pass  # already gone with a reset: nothing left to release
        return 200, {"status": "ok"}
