"""A fleet: several services served from one process, each on its own port, and a
control listener that resets, snapshots, restores and moves the clock of a namespace across them.

Every service of a fleet shares one `Database` (one SQLite file), so a fleet operation is one
`BEGIN IMMEDIATE` transaction over every selected service: all of it commits or none of it does,
for every process and gunicorn worker using the file. Nothing is checkpointed beforehand to be
restored by hand on failure (the reference's way, whose rollback could itself fail halfway).
"""
import functools
import json
import logging
import os
import shutil
import tempfile
import threading
import time
import uuid
from urllib.request import ProxyHandler, build_opener

from .. import requestlog
from ..app import Runtime
from ..server import Listener, Server
from ..settings import Settings
from ..state.clock import Clocks, iso, wall_ms
from ..state.db import Database
from ..state.timeline import MAIN
from . import store
from .config import ConfigError, plan as make_plan, read_config
from .control import FleetControl
from .guard import Guard
from .store import FleetSnapshots

log = logging.getLogger("emulators")

FLEET_CLOCK = "!fleet"  # owner of the fleet's own clock rows (never a service name)
HEADER = "x-mockingbird-namespace"
PROBE_TIMEOUT_S = 2
# How long an operation (and wait-until-idle) lets requests already in flight finish once the
# namespace is held: a client may read its whole answer a moment before the server thread is
# done with the request, and its next call should not find the namespace busy because of it.
DRAIN_MS = 250
_PROBE = build_opener(ProxyHandler({}))  # loopback probes never go through a proxy


class FleetError(RuntimeError):
    """The fleet could not start; every listener already started was closed."""


class FleetStartError(FleetError):
    """One service did not start; `cause` says why."""

    def __init__(self, name, cause):
        super().__init__(f"service {name} failed to start; all started listeners were closed")
        self.service = name
        self.cause = cause


class Child:
    """One service of the fleet: its runtime, listener and guard."""

    def __init__(self, name, runtime, server, guard):
        self.name = name
        self.runtime = runtime
        self.server = server
        self.guard = guard
        self.url = server.url
        self.admin_url = server.url + runtime.admin_prefix
        self.health_url = self.admin_url + "/health"

    def ready(self):
        """Probe the service's health route over HTTP: True when it answers 200."""
        return _probe(self.health_url)

    def diagnostics(self, namespace):
        """Return the quiescence counters of a namespace (`<prefix>/fleet/metrics`)."""
        unmatched = self.runtime.journal.metrics(namespace)["unmatched"]
        hub = self.runtime.webhooks
        return {"activeRequests": self.guard.active(namespace), "activeConnections": 0,
                "blockedCommands": 0, "pendingJobs": 0,
                "pendingWebhooks": 0 if hub is None else hub.pending(namespace),
                "unmatchedRequests": sum(entry["count"] for entry in unmatched)}


def _probe(url):
    """GET `url`: True when it answers 200 within PROBE_TIMEOUT_S."""
    try:
        with _PROBE.open(url, timeout=PROBE_TIMEOUT_S) as answer:
            return answer.status == 200
    except OSError:  # refused, closed, timed out, or an HTTP error status
        return False


def _busy(diagnostics):
    return diagnostics["activeRequests"] + diagnostics["blockedCommands"] + \
        diagnostics["pendingJobs"] + diagnostics["pendingWebhooks"] > 0


class Fleet:
    """A running fleet: `children`, `url` (control), `manifest`, `close()`; a context manager.

    Build it with `start_fleet()`.
    """

    def __init__(self, plan, db, db_path, *, ready_file=None, connections_file=None,
                 cleanup=None):
        self.plan = plan
        self.id = str(uuid.uuid4())
        self.started_at = iso(wall_ms())
        self.db = db
        self.db_path = db_path
        self.children = {}
        self.clocks = Clocks(db, FLEET_CLOCK)
        self.snapshots = FleetSnapshots(db)
        self.manifest = None
        self.url = self.admin_url = self.health_url = None
        self._ready_file = ready_file
        self._connections_file = connections_file
        self._cleanup = cleanup
        self._control = None
        self._stopped = False
        self._mutex = threading.Lock()
        self._operating = set()  # namespaces with a fleet operation in progress

    # -- life cycle ---------------------------------------------------------------------------
    def _start(self, loader):
        plan = self.plan
        on_log = requestlog.sink(plan.log)
        for child in plan.children:
            try:
                service = loader(child.name)
                if service.name != child.name:
                    raise ValueError(f"the loader gave service {service.name!r}")
                settings = Settings(db=self.db_path, admin_key=child.admin_key,
                                    admin_prefix=child.admin_prefix, seed=child.seed,
                                    on_log=on_log)
                runtime = Runtime(service, settings, db=self.db)
                guard = Guard(runtime)
                port = service.default_port if child.port is None else child.port
                try:
                    server = Server(guard, runtime, host=child.host, port=port)
                except OSError as error:
                    raise OSError(f"cannot listen on {child.host}:{port}:"
                                  f" {error.strerror or error}") from None
                self.children[child.name] = Child(child.name, runtime, server, guard)
                if not self.children[child.name].ready():
                    raise RuntimeError(f"its health probe failed ({server.url}"
                                       f"{runtime.admin_prefix}/health)")
            except Exception as error:
                self.close()
                raise FleetStartError(child.name, error) from error
        try:
            self._control = Listener(FleetControl(self), plan.control_host, plan.control_port,
                                     name="emulator-fleet-control")
        except OSError as error:
            self.close()
            raise FleetError(f"cannot listen on {plan.control_host}:{plan.control_port} for the"
                             f" fleet control: {error.strerror or error}; all started listeners"
                             " were closed") from None
        self.url = self._control.url
        self.admin_url = f"{self.url}{plan.admin_prefix}/fleet"
        self.health_url = f"{self.url}{plan.admin_prefix}/health"
        if not _probe(self.health_url):
            self.close()
            raise FleetError(f"the fleet control did not answer {self.health_url} with 200; all"
                             " started listeners were closed")
        self.manifest = self._manifest()
        connections = {"version": 1, "id": self.id, "pid": os.getpid(), "services": {
            name: {"url": child.url} for name, child in self.children.items()}}
        # Readiness is published last, once everything is up: connections, then the manifest.
        for path, value in ((self._connections_file, connections),
                            (self._ready_file, self.manifest)):
            if path:
                try:
                    _publish(path, value)
                except OSError as error:
                    self.close()
                    raise FleetError(f"cannot write {path}: {error.strerror or error}; all"
                                     " started listeners were closed") from None
        return self

    def _manifest(self):
        return {
            "version": 1, "state": "ready", "pid": os.getpid(), "id": self.id,
            "startedAt": self.started_at, "adminBase": self.admin_url,
            "healthUrl": self.health_url,
            "services": {name: {
                "protocol": "http", "url": child.url, "healthUrl": child.health_url,
                "adminUrl": child.admin_url,
                "namespaces": {"header": HEADER,
                               "path": f"{child.runtime.admin_prefix}/ns/{{name}}"},
                "processReady": True, "protocolReady": True}
                for name, child in self.children.items()}}

    def close(self):
        """Close every listener; remove the ready and connections files if still ours."""
        if self._stopped:
            return
        self._stopped = True
        for child in self.children.values():
            child.server.close()
        if self._control is not None:
            self._control.close()
        for path in (self._ready_file, self._connections_file):
            _remove_owned(path, self.id)
        if self._cleanup is not None:
            self._cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<fleet {', '.join(self.children)} control {self.url}>"

    # -- reads --------------------------------------------------------------------------------
    def health(self):
        """Return (ready, body) of `GET <prefix>/health`: every child probed over HTTP."""
        services = {}
        for name, child in self.children.items():
            ready = child.ready()
            services[name] = {"processReady": not self._stopped, "protocolReady": ready,
                              "status": "ready" if ready else "failed", "url": child.url}
        ready = not self._stopped and all(s["protocolReady"] for s in services.values())
        return ready, {"status": "ready" if ready else "failed", "id": self.id,
                       "services": services}

    def metrics(self, namespace, names=None):
        """Return {service: diagnostics} of a namespace."""
        return {name: self.children[name].diagnostics(namespace)
                for name in names or self.children}

    def clock(self, namespace):
        """Return the fleet clock of a namespace and each service's clock there."""
        return {"namespace": namespace, **self.clocks.state(namespace),
                "services": {name: child.runtime.clocks.state(namespace)
                             for name, child in self.children.items()}}

    def wait_until_idle(self, namespace, names, timeout_ms=0):
        """Return (idle, diagnostics), polling up to `timeout_ms` (at least DRAIN_MS) for the
        namespace to idle."""
        deadline = time.monotonic() + max(timeout_ms, DRAIN_MS) / 1000
        while True:
            services = self.metrics(namespace, names)
            idle = not any(_busy(d) for d in services.values())
            if idle or time.monotonic() >= deadline:
                return idle, services
            time.sleep(0.005)

    # -- operations (each one transaction: all selected services or none) ---------------------
    def set_clock(self, namespace, names, *, instant=None, advance=None, freeze=None):
        """Move every selected service's clock and the fleet's own to one instant."""
        current = self.clocks.state(namespace)
        target = current["now"] if instant is None else instant
        if advance is not None:
            target += advance
        frozen = current["frozen"] if freeze is None else freeze
        changes = {"set": target, "freeze": frozen}
        return self._transaction(
            namespace, names, lambda name, child, conn: child.runtime.clocks.apply(
                namespace, changes), finish=lambda conn: self.clocks.apply(namespace, changes))

    def reset(self, namespace, names):
        """Reset the namespace in every selected service (and the fleet clock when all are)."""
        def run(name, child, conn):
            child.runtime.reset(namespace)
        every = set(names) == set(self.children)
        return self._transaction(namespace, names, run, finish=(
            lambda conn: self.clocks.reset(namespace)) if every else None)

    def snapshot(self, namespace, names, label=None):
        """Copy the namespace's state in every selected service under one new id; each copy is
        also a main checkpoint on that service's timeline."""
        snapshot_id = str(uuid.uuid4())
        clock = self.clocks.state(namespace)
        at_ms = wall_ms()

        def run(name, child, conn):
            runtime = child.runtime
            checkpoint = runtime.timeline.commit(namespace, MAIN)["id"]
            state = store.capture(conn, runtime.name, namespace, runtime.clocks.state(namespace))
            self.snapshots.save(conn, snapshot_id, name, namespace, label, at_ms, state, clock)
            return {"checkpoint": f"{snapshot_id}:{name}", "timelineCheckpoint": checkpoint}

        status, body = self._transaction(namespace, names, run)
        if status != 200:
            return status, body
        body["id"] = snapshot_id
        if label is not None:
            body["label"] = label
        return 201, body

    def restore(self, namespace, snapshot_id):
        """Put every service of a snapshot, and the fleet clock, back as they were; each
        restore is a new main checkpoint on that service's timeline."""
        snapshot = self.snapshots.find(snapshot_id)
        if snapshot is None or snapshot.namespace != namespace:
            return 404, {"error": "no snapshot in this namespace"}
        missing = [name for name in snapshot.states if name not in self.children]
        if missing:
            return 409, {"error": "the snapshot covers services this fleet does not serve",
                         "services": missing}

        def run(name, child, conn):
            runtime, state = child.runtime, snapshot.states[name]
            store.restore(conn, runtime.name, namespace, state)
            runtime.clocks.restore(namespace, state["clock"])
            return {"timelineCheckpoint": runtime.timeline.commit(namespace, MAIN)["id"]}
        names = [name for name in self.children if name in snapshot.states]
        return self._transaction(namespace, names, run,
                                 finish=lambda conn: self.clocks.restore(namespace,
                                                                         snapshot.clock))

    def delete_snapshot(self, namespace, snapshot_id):
        """Forget a snapshot of this namespace: (200, ok) or (404, ...)."""
        snapshot = self.snapshots.find(snapshot_id)
        if snapshot is None or snapshot.namespace != namespace:
            return 404, {"error": "no snapshot in this namespace"}
        self.snapshots.forget(snapshot_id)
        return 200, {"status": "ok", "namespace": namespace, "id": snapshot_id}

    def _transaction(self, namespace, names, run, finish=None):
        """Run `run(name, child, conn)` for each selected service, then `finish(conn)`, as one
        SQLite transaction, with the namespace held in each selected service meanwhile.

        Answers (status, body): 409 while another operation holds the namespace or a selected
        service has requests of it in flight; 500 with the failed service when anything raised
        (nothing of it was kept: the transaction rolled back); else 200 with each result.
        """
        with self._mutex:
            if namespace in self._operating:
                return 409, {"error": "another fleet operation is in progress"}
            self._operating.add(namespace)
        held = []
        try:
            for name in names:
                self.children[name].guard.lock(namespace)
                held.append(name)
            idle, services = self.wait_until_idle(namespace, names)
            if not idle:
                return 409, {"error": "namespace is not quiescent",
                             "services": {name: d for name, d in services.items() if _busy(d)}}
            for name in names:  # committed apart: the in-process namespace list stays true
                self.children[name].runtime.touch(namespace)
            results, failed = {}, None
            try:
                with self.db.transaction() as conn:
                    for name in names:
                        failed = name
                        result = run(name, self.children[name], conn)
                        results[name] = {"status": "ok"} if result is None else \
                            {"status": "ok", "result": result}
                    failed = None
                    if finish is not None:
                        finish(conn)
            except Exception:
                log.exception("fleet: %s of namespace %s failed in %s; rolled back",
                              getattr(run, "__qualname__", "operation"), namespace, failed)
                conn = self.db.conn
                if conn.in_transaction:  # a failed COMMIT leaves it open
                    conn.execute("ROLLBACK")
                return 500, {"status": "failed", "namespace": namespace,
                             "failedService": failed, "services": results,
                             "rollback": {name: "restored" for name in names},
                             "rolledBack": True}
            return 200, {"status": "ok", "namespace": namespace, "services": results}
        finally:
            for name in held:
                self.children[name].guard.unlock(namespace)
            with self._mutex:
                self._operating.discard(namespace)


def start_fleet(config, *, loader, admin_key=None, admin_prefix="/__admin", log="off", db=None,
                ready_file=None, connections_file=None):
    """Start every service of a fleet config (a dict, or the path of a JSON file) and the
    control listener; return the running Fleet once every child answered its health probe.

    `loader(name)` returns the Service of a name (`emulators.start_fleet` passes the registry).

    `admin_key`, `admin_prefix`, `log` and `db` apply where the config does not set them (precedence
    as in config.py). Without any db the state lives in a temporary file removed on close.
    A ready or connections file left by an earlier run is deleted before anything starts.
    Raises ConfigError (nothing started) or FleetError (everything started was closed).
    """
    for path in (ready_file, connections_file):
        if path:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
    if not isinstance(config, dict):
        config = read_config(config)
    plan = make_plan(config, admin_key=admin_key, admin_prefix=admin_prefix, log=log, db=db)
    folder = None if plan.db else tempfile.mkdtemp(prefix="emulator-fleet-")
    path = plan.db or os.path.join(folder, "emulators.sqlite3")
    cleanup = functools.partial(shutil.rmtree, folder, ignore_errors=True) if folder else None
    database = Database(path)
    try:
        database.conn  # open (and create the schema) now: a bad path fails before any listener
    except Exception as error:
        if cleanup:
            cleanup()
        raise FleetError(f"cannot open {path}: {error}") from error
    fleet = Fleet(plan, database, path, ready_file=ready_file, connections_file=connections_file,
                  cleanup=cleanup)
    return fleet._start(loader)


def _publish(path, value):
    """Write JSON to `path` atomically (a temporary file renamed over it), mode 0600."""
    temp = f"{path}.{uuid.uuid4().hex}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600)  # whatever the umask
            handle.write(json.dumps(value, indent=2) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    finally:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass


def _remove_owned(path, fleet_id):
    """Delete a ready or connections file only if it still carries this fleet's id."""
    if not path:
        return
    try:
        with open(path, encoding="utf-8") as handle:
            owner = json.load(handle).get("id")
    except (OSError, ValueError, AttributeError):
        return
    if owner == fleet_id:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


__all__ = ["ConfigError", "Fleet", "FleetError", "FleetStartError", "Guard", "start_fleet"]
