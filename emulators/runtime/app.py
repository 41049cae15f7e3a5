"""The runtime WSGI app: wraps a service's provider app in the request pipeline (spec §2).

carrier → namespace → branch/at → admin plane → operation → validation → storage → faults →
dispatch → automatic checkpoint → journal/metrics → stamp.
"""
import json
import logging
import re
import socket
import time
import uuid
from time import perf_counter

from .admin import Admin
from .bodies import guard
from .clock import Clocks, wall_ms
from .credentials import Credentials
from .db import Database
from .errors import ConnectionDropped, DroppedByFault, EmulatorError
from .faults import Faults
from .instance import MUTATING, Instance
from .journal import Journal
from . import names
from .mount import PREFIX, rewrite_response
from .names import NAME
from .openapi import OperationMatcher
from .requestlog import guarded_sink
from .rng import seed_state
from .settings import Settings
from .timeline import (MAIN, START_ON_MAIN, Timeline, TimelineError, checkpoint_id,
                       storage_key)

log = logging.getLogger("emulators")

JSON = "application/json"


def json_body(value):
    """Encode a JSON response body."""
    return json.dumps(value, separators=(",", ":")).encode()


def error_body(message, type_="mockingbird_admin"):
    """Return the admin error envelope as bytes."""
    return json_body({"error": {"type": type_, "message": message}})


class Runtime:
    """One service's emulator as a WSGI callable, with all steering state in SQLite."""

    def __init__(self, service, settings=None, *, wall=wall_ms, db=None):
        settings = settings or Settings()
        if not PREFIX.match(settings.admin_prefix):
            raise ValueError("adminPrefix must be an absolute non-root path of literal segments,"
                             " without a trailing slash")
        self.service = service
        self.name = service.name
        self.version = service.version
        self.settings = settings
        self.admin_prefix = settings.admin_prefix
        self._on_log = guarded_sink(settings.on_log)  # None when no sink: nothing per request
        self.db = db or Database(settings.db)
        self.clocks = Clocks(self.db, self.name, wall=wall)
        self.faults = Faults(self.db, self.name, seed=settings.seed)
        self.matcher = OperationMatcher(service.openapi)
        self.journal = Journal(self.db, self.name, size=settings.journal_size,
                               has_document=self.matcher.has_document)
        self.timeline = Timeline(self.db, self.name, self.clocks, seed_state(settings.seed),
                                 settings.max_checkpoints)
        self.credentials = Credentials(self.db, self.name)
        self._credential = getattr(service, "credential", None)  # None: no lookup per request
        self.started = time.monotonic()
        self._known = set()
        self._checked = set()  # namespaces of provider requests that passed the pattern
        self._stamps = {}
        self._provider = None
        self._carrier = re.compile("^" + re.escape(self.admin_prefix) + r"/ns/([^/]*)(/.*)?$")
        self.admin = Admin(self)

    # -- helpers ----------------------------------------------------------------------------
    @property
    def provider(self):
        """The service's falcon app, built once, with the runtime's error handlers added."""
        if self._provider is None:
            app = self.service.provider_app()
            handlers = getattr(app, "_error_handlers", {})
            if EmulatorError not in handlers:
                app.add_error_handler(EmulatorError, _emulator_error)
            if Exception not in handlers or handlers[Exception].__module__.startswith("falcon"):
                app.add_error_handler(Exception, _internal_error)
            self._provider = app
        return self._provider

    def stamp(self, namespace):
        """Return the `x-mockingbird` header value."""
        stamp = self._stamps.get(namespace)  # only valid namespaces are kept
        if stamp is None:
            if namespace is None or not NAME.match(namespace):
                return f"{self.name}@{self.version}"
            if len(self._stamps) >= 4096:
                self._stamps.clear()
            stamp = self._stamps[namespace] = f"{self.name}@{self.version}; ns={namespace}"
        return stamp

    def touch(self, namespace):
        """Remember a namespace (the list only grows)."""
        if namespace not in self._known:
            self.db.execute("INSERT OR IGNORE INTO namespaces (service, namespace) VALUES (?, ?)",
                            (self.name, namespace))
            self._known.add(namespace)

    def namespaces(self):
        """Return every namespace seen, sorted, `default` included."""
        rows = self.db.all("SELECT namespace FROM namespaces WHERE service=?", (self.name,))
        return sorted({"default", *(row[0] for row in rows)})

    def instance(self, namespace="default", branch=MAIN, *, method="GET", base_url="", hits=()):
        """Return an instance over a namespace's branch (for admin routes, tests and tools)."""
        self.touch(namespace)
        return Instance(self, namespace, branch, storage_key(namespace, branch), method=method,
                        base_url=base_url, hits=hits)

    def reset(self, namespace=None, keep=()):
        """Reset one namespace (or every namespace when None); `keep` names parts to spare."""
        targets = self.namespaces() if namespace is None else [namespace]
        with self.db.transaction():
            for table in ("records", "sequences", "rngs"):
                if namespace is None:
                    self.db.execute(f"DELETE FROM {table} WHERE service=? AND key NOT LIKE"
                                    " '!faults:%'", (self.name,))
                else:
                    self.db.execute(f"DELETE FROM {table} WHERE service=? AND namespace=? AND"
                                    " key NOT LIKE '!faults:%'", (self.name, namespace))
            self.timeline.reset(namespace)
            if "faults" not in keep:
                self.faults.reset(namespace)
            if "clock" not in keep:
                self.clocks.reset(namespace)
            if "journal" not in keep:
                self.journal.clear(namespace)
            if "metrics" not in keep:
                self.journal.clear_metrics(namespace)
        for ns in targets:
            self.service.reset(self.instance(ns))
        return targets

    # -- WSGI -------------------------------------------------------------------------------
    def __call__(self, environ, start_response):
        started = perf_counter()
        path = environ.get("PATH_INFO") or "/"
        header_ns = environ.get("HTTP_X_MOCKINGBIRD_NAMESPACE")
        if not path.startswith(self.admin_prefix):  # the common case: a provider request
            if header_ns is None:
                header_ns = "default" if self._credential is None else \
                    self.credentials.resolve(self._credential, environ)
            return self._vendor(environ, start_response, path, header_ns, started)
        carrier_ns = None
        match = self._carrier.match(path)
        if match:
            carrier_ns = match.group(1)
            path = match.group(2) or "/"
            environ = dict(environ)
            environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + \
                f"{self.admin_prefix}/ns/{carrier_ns}"
            environ["PATH_INFO"] = path
        if path == self.admin_prefix or path.startswith(self.admin_prefix + "/"):
            status, headers, body, namespace = self.admin.handle(
                environ, path[len(self.admin_prefix):] or "/",
                header_ns if header_ns is not None else carrier_ns)
            headers.append(("content-length", str(len(body))))
            headers.append(("x-mockingbird", self.stamp(namespace)))
            start_response(status, headers)
            return [] if environ.get("REQUEST_METHOD") == "HEAD" else [body]
        if header_ns is not None:
            namespace = header_ns
        elif carrier_ns:
            namespace = carrier_ns
        elif self._credential is not None:  # spec §3 step 3: the credential map
            namespace = self.credentials.resolve(self._credential, environ)
        else:
            namespace = "default"
        return self._vendor(environ, start_response, path, namespace, started)

    def _vendor(self, environ, start_response, path, namespace, started):
        method = environ.get("REQUEST_METHOD", "GET").upper()
        branch = environ.get("HTTP_X_MOCKINGBIRD_BRANCH") or MAIN
        at = environ.get("HTTP_X_MOCKINGBIRD_AT")
        operation = self.matcher.match(method, path)
        entry = {"service": self.name, "namespace": namespace, "method": method, "path": path}
        if operation:
            entry["operationId"] = operation
        entry["unmatched"] = self.matcher.has_document and not operation
        echo = []
        if branch != MAIN:
            echo.append(("x-mockingbird-branch", branch))
        if at:
            echo.append(("x-mockingbird-at", at))
        call = (environ, start_response, entry, echo, started)
        if namespace not in self._checked:
            if not NAME.match(namespace):
                return self._answer(call, "400 Bad Request", error_body(names.NAMESPACE_HEADER),
                                    [("content-type", JSON)])
            self.touch(namespace)
            if len(self._checked) >= 4096:
                self._checked.clear()
            self._checked.add(namespace)
        key = namespace
        scratch = None
        if echo:
            if not NAME.match(branch):
                return self._answer(call, "400 Bad Request", error_body(names.BRANCH_HEADER),
                                    [("content-type", JSON)])
            try:
                key = storage_key(namespace, branch)
                if at and branch == MAIN:
                    if method in MUTATING:
                        raise TimelineError("x-mockingbird-at on a mutating request to main"
                                            " would rewind main; use POST"
                                            " /__admin/branches/main/checkout")
                    scratch = f"{namespace}@{at}#{uuid.uuid4().hex}"
                    self.timeline.view(namespace, at, scratch)
                    key = scratch
                elif at:
                    # New branch: forked at `at`. Existing branch: 409 unless its head is `at`
                    # (the reference silently re-pointed it, spec §19.13).
                    self.timeline.branch(namespace, branch, at)
                elif not self.timeline.has_branch(namespace, branch):
                    self.timeline.branch(namespace, branch)
            except TimelineError as error:
                return self._answer(call, "409 Conflict", error_body(error.message),
                                    [("content-type", JSON)])

        mutation = method in MUTATING and scratch is None
        if mutation:
            # One write transaction for the fault check, the handler's writes, the checkpoint
            # and the journal: a single commit per mutation, committed even when the handler
            # raises or drops. Only a rule that fires (it may sleep) moves dispatch to a
            # transaction of its own below.
            with self.db.transaction(commit_on_error=True) as conn:
                known = None
                if branch == MAIN:  # one read for the control version and main's head
                    version, parent, after = conn.execute(
                        START_ON_MAIN, (self.name, namespace)).fetchone()
                    if parent is not None:
                        known = (parent, after)
                else:
                    version = self.clocks.version(conn)
                head = (self.timeline.moves, self.db.restarts(), known)
                hits = self.faults.evaluate(namespace, operation, method, path, version)
                if not hits:
                    instance = Instance(self, namespace, branch, key, method, environ, (),
                                        version)
                    return self._dispatch(call, instance, scratch, head)
        else:
            version = self.clocks.version()
            hits = self.faults.evaluate(namespace, operation, method, path, version)
        delay = sum(hit.delay_ms for hit in hits)
        if delay:
            time.sleep(delay / 1000)
        first = next((hit for hit in hits if hit.effect or hit.terminal), None)
        if first is not None:
            entry["faultId"] = first.id
        terminal = hits[-1] if hits and hits[-1].terminal else None
        if terminal is not None and terminal.drop:
            entry["faultId"] = terminal.id
            return self._drop(environ, entry, started, scratch)
        if terminal is not None:
            status, headers, body = terminal.response()
            self._cleanup(scratch)
            return self._answer(call, _status_line(status), body, headers, fault=terminal.id)

        if mutation:
            with self.db.transaction(commit_on_error=True):
                instance = Instance(self, namespace, branch, key, method, environ, hits,
                                    self.clocks.version())
                return self._dispatch(call, instance, scratch)
        instance = Instance(self, namespace, branch, key, method, environ, hits, version)
        return self._dispatch(call, instance, scratch)

    def _answer(self, call, status, body, headers=(), fault=None):
        """Answer without the provider (bad namespace or branch, 409, a fault's response)."""
        environ, start_response, entry, echo, started = call
        entry["status"] = int(status[:3])
        if fault:
            entry["faultId"] = fault
        elif entry["status"] >= 400:
            entry["request"] = _request_meta(environ)
        self._log(entry, started)
        start_response(status, [*headers, ("content-length", str(len(body))), *echo,
                                ("x-mockingbird", self.stamp(entry["namespace"]))])
        return [] if entry["method"] == "HEAD" else [body]

    def _dispatch(self, call, instance, scratch, head=None):
        """Call the provider on `instance`; checkpoint, journal and stamp its answer.

        `head` is (timeline moves, transaction restarts, (main's head, next checkpoint number)
        or None) read at the start of a mutation's transaction: still true at the end unless a
        checkpoint moved it or the transaction was begun anew (db.py) since.
        """
        environ, start_response, entry, echo, started = call
        environ["emulators.instance"] = instance
        guard(environ)  # a body past the limit is refused by the provider's first read
        captured = []

        def capture(status, headers, exc_info=None):
            captured[:] = status, headers, []
            return captured[2].append

        try:
            result = self.provider(environ, capture)
        except ConnectionDropped:
            self._finish_accepted(instance, entry)
            return self._drop(environ, entry, started, scratch)
        except Exception:  # the provider app handles errors; this is a last resort
            log.exception("emulator %s: unhandled error", self.name)
            self._finish_accepted(instance, entry)
            self._cleanup(scratch)
            return self._answer(call, "500 Internal Server Error",
                                error_body("internal error", "mockingbird_internal"),
                                [("content-type", JSON)])
        status, headers, early = captured
        if environ.get("SCRIPT_NAME"):  # mounted or carried: local URLs move under it
            headers, result = rewrite_response(headers, result, environ)
        code = int(status[:3])
        entry["status"] = code
        commit = None
        if 200 <= code < 400 and instance.method in MUTATING and scratch is None:
            fresh = instance.fresh_checkpoint()
            if fresh is not None:
                headers.append(("x-mockingbird-checkpoint", fresh))
            else:
                commit = instance.branch
        self._finish_accepted(instance, entry)
        if code >= 400 and "faultId" not in entry:
            entry["request"] = _request_meta(environ)
        version, known = instance.version, None
        if head is not None:
            moves, restarts, known = head
            if restarts != self.db.restarts():  # begun anew: the clock may have moved too
                version = known = None
            elif moves != self.timeline.moves:
                known = None
        checkpoint = self._log(entry, started, commit, version, known)
        if checkpoint:
            headers.append(("x-mockingbird-checkpoint", checkpoint))
        start_response(status, [*headers, *echo, ("x-mockingbird",
                                                  self.stamp(instance.namespace))])
        if scratch is None and isinstance(result, list):
            return [*early, *result] if early else result
        return self._stream(result, environ, entry, scratch, early)

    # -- pieces -----------------------------------------------------------------------------
    @staticmethod
    def _finish_accepted(instance, entry):
        instance.in_flight = False
        if instance.ids:
            entry["ids"] = instance.ids
        if instance.accepted:
            entry["accepted"] = True
            entry["checkpoint"] = instance.accepted

    def _log(self, entry, started, commit=None, version=None, head=None):
        """Journal the request; commit a checkpoint of branch `commit` in the same transaction
        (one write per request for both). Return the checkpoint id or None.

        `version` is the control version read for this request: the clock comes from the
        worker's kept copy (clock.py). Without it the clock row is read. `head` is the
        branch's (head, next number) when still known (_dispatch).
        """
        entry["durationMs"] = int((perf_counter() - started) * 100_000 + 0.5) / 100
        conn = self.db.joined()  # a mutation's batch; otherwise a transaction of its own
        if conn is not None:
            checkpoint = self._write(conn, entry, commit, version, head)
        else:
            with self.db.transaction() as conn:
                checkpoint = self._write(conn, entry, commit, version, head)
        if self._on_log is not None:  # after the commit: a slow sink never holds the lock
            self.db.after_transaction(lambda: self._on_log(entry))
        return checkpoint

    def _write(self, conn, entry, commit, version, head):
        namespace = entry["namespace"]
        if version is not None:
            clock = self.clocks.current(namespace, version)
        elif NAME.match(namespace):
            state = self.clocks.state(namespace)
            clock = state["now"], state["frozen"]
        else:  # an invalid namespace has no clock
            clock = wall_ms(), False
        now = clock[0]
        checkpoint = None
        if commit is not None:
            done = self.timeline.capture(conn, namespace, commit, clock, head=head)
            if done is None:  # a namespace's first checkpoint, or a new branch's
                committed = self.timeline.commit(namespace, commit)
                checkpoint, now = committed["id"], committed["at"]
            else:
                checkpoint = checkpoint_id(done[0])
        self.journal.record(conn, entry, now)
        return checkpoint

    def _cleanup(self, scratch):
        if scratch is not None:
            self.timeline.drop_storage(scratch)

    def _drop(self, environ, entry, started, scratch):
        entry["status"] = 0
        self._cleanup(scratch)
        self._log(entry, started)
        close_socket(environ)
        raise DroppedByFault()

    def _stream(self, result, environ, entry, scratch, early):
        """Pass a streamed body through chunk by chunk; a drop mid-stream closes the socket."""
        try:
            yield from early
            yield from result
        except ConnectionDropped:
            close_socket(environ)
            raise DroppedByFault() from None
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
            self._cleanup(scratch)


def close_socket(environ):
    """Shut the client socket down (gunicorn or serve()) so the client sees no answer at all."""
    sock = environ.get("gunicorn.socket") or environ.get("emulators.socket")
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _status_line(code):
    from http import HTTPStatus
    try:
        return f"{code} {HTTPStatus(code).phrase}"
    except ValueError:
        return f"{code} Unknown"


def _request_meta(environ):
    length = environ.get("CONTENT_LENGTH")
    return {"contentType": environ.get("CONTENT_TYPE") or None,
            "bodyBytes": int(length) if length and length.isdigit() else None,
            "transferEncoding": environ.get("HTTP_TRANSFER_ENCODING")}


def _emulator_error(req, resp, error, params):
    import falcon
    resp.status = falcon.code_to_http_status(error.status)
    resp.media = error.body()
    for name, value in (error.headers or {}).items():
        resp.set_header(name, value)


def _internal_error(req, resp, error, params):
    import falcon
    if isinstance(error, (falcon.HTTPError, falcon.HTTPStatus)):
        raise error  # let falcon render its own
    log.error("emulator: unhandled error", exc_info=error)
    resp.status = falcon.HTTP_500
    resp.media = {"error": {"type": "mockingbird_internal", "message": "internal error"}}
