"""The runtime WSGI app: wraps a service's provider app in the request pipeline.

carrier → namespace → branch/at → admin plane → operation → validation → storage → faults →
dispatch → automatic checkpoint → journal/metrics → stamp.
"""
import json
import logging
import socket
import time
import uuid
from time import perf_counter
from urllib.parse import quote

import falcon

from . import names
from .admin.app import NAMESPACE_KEY, Admin
from .bodies import guard
from .emulator import PROVIDER, create_emulator
from .errors import ConnectionDropped, DroppedByFault, EmulatorError
from .instance import MUTATING, Instance
from .mount import BASE_URL_KEY, origin, public_base, rewrite_response
from .names import NAME
from .requestlog import guarded_sink
from .state.clock import wall_ms
from .state.timeline import MAIN, START_ON_MAIN, TimelineError, checkpoint_id, storage_key

log = logging.getLogger("emulators")

JSON = "application/json"


def json_body(value):
    """Encode a JSON response body."""
    return json.dumps(value, separators=(",", ":")).encode()


def error_body(message, type_="mockingbird_admin"):
    """Return the admin error envelope as bytes."""
    return json_body({"error": {"type": type_, "message": message}})


class Runtime:
    """One service's emulator as a WSGI callable: the request pipeline over an Emulator.

    Built from a service and settings by `create_emulator`; `db`, `clocks`, `faults`,
    `journal`, `timeline`, `credentials`, `instance()`, `reset()` and the other handles
    documented for `build_wsgi` are the emulator's own.
    """

    def __init__(self, service, settings=None, *, wall=wall_ms, db=None):
        emulator = self.emulator = create_emulator(service, settings, wall=wall, db=db)
        self.service, self.name, self.version = emulator.service, emulator.name, emulator.version
        self.settings, self.admin_prefix = emulator.settings, emulator.admin_prefix
        self.db, self.clocks, self.faults = emulator.db, emulator.clocks, emulator.faults
        self.journal, self.timeline = emulator.journal, emulator.timeline
        self.credentials, self.matcher = emulator.credentials, emulator.matcher
        self.webhooks = emulator.webhooks
        self.touch, self.namespaces = emulator.touch, emulator.namespaces
        self.instance, self.reset, self.close = emulator.instance, emulator.reset, emulator.close
        self._on_log = guarded_sink(emulator.settings.on_log)  # None: nothing per request
        self._checked = set()  # namespaces of provider requests that passed the pattern
        self._stamps = {}
        self._provider = None
        self._reads = frozenset(getattr(service, "read_operations", ()))
        self._own = frozenset(getattr(service, "own_transactions", ()))
        self._limits = dict(getattr(service, "body_limits", None) or {})
        self.admin = Admin(emulator)
        self._locate = emulator.locate  # once per request: one attribute lookup saved
        self._operation = emulator.operation
        self._named = emulator.named_operation

    # -- helpers ----------------------------------------------------------------------------
    @property
    def provider(self):
        """The service's falcon app, built once (after fork, on first use)."""
        if self._provider is None:
            self._provider = self.service.provider_app()
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

    # -- WSGI -------------------------------------------------------------------------------
    def __call__(self, environ, start_response):
        started = perf_counter()
        if self.webhooks is not None and not self.webhooks.resumed:
            self.webhooks.resume()  # this process's first request: send what others left
        plane, namespace, path, carrier = self._locate(environ)
        mount = environ.get("SCRIPT_NAME", "")
        if carrier is not None:  # the path carrier moves into SCRIPT_NAME
            environ = dict(environ)
            environ["SCRIPT_NAME"] = f"{mount}{self.admin_prefix}/ns/{carrier}"
            environ["PATH_INFO"] = path
        if names.NAMESPACE_ENVIRON in environ:
            # A namespace named by header is written into the URLs a service builds as the
            # path carrier, so a client that follows them without the header stays in it.
            environ = dict(environ)
            environ[BASE_URL_KEY] = (f"{origin(environ)}{mount}{self.admin_prefix}/ns/"
                                     + quote(namespace, safe=""))
        if plane is PROVIDER:
            return self._vendor(environ, start_response, path, namespace, started)
        admin = dict(environ)
        admin[BASE_URL_KEY] = public_base(admin)  # (the header's, when it named one)
        admin[NAMESPACE_KEY] = namespace
        admin["SCRIPT_NAME"] = admin.get("SCRIPT_NAME", "") + self.admin_prefix
        admin["PATH_INFO"] = path[len(self.admin_prefix):] or "/"
        stamp = self.stamp(namespace)  # without `ns=` when the namespace is invalid

        def stamped(status, headers, exc_info=None):
            headers.append(("x-mockingbird", stamp))
            return start_response(status, headers, exc_info)
        return self.admin.app(admin, stamped)

    def _vendor(self, environ, start_response, path, namespace, started):
        method = environ.get("REQUEST_METHOD", "GET").upper()
        branch = environ.get("HTTP_X_MOCKINGBIRD_BRANCH") or MAIN
        at = environ.get("HTTP_X_MOCKINGBIRD_AT")
        operation = self._operation(method, path)
        reads = operation in self._reads
        named = self._named(environ, operation, self._limits.get(
            operation, self.emulator.settings.max_body))
        if named is not None:  # an operation its body names (GraphQL's behind one route)
            operation, reads = named
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
                    # (never silently re-pointed, which would lose its commits).
                    self.timeline.branch(namespace, branch, at)
                elif not self.timeline.has_branch(namespace, branch):
                    self.timeline.branch(namespace, branch)
            except TimelineError as error:
                return self._answer(call, "409 Conflict", error_body(error.message),
                                    [("content-type", JSON)])

        mutation = method in MUTATING and scratch is None and not reads
        if mutation and operation not in self._own:
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
                    instance = Instance(self.emulator, namespace, branch, key, method,
                                        environ, (), version)
                    instance.head = head  # an accept() inside commits on it too
                    return self._dispatch(call, instance, scratch, reads, head)
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
            return self._answer(call, falcon.code_to_http_status(status), body, headers,
                                fault=terminal.id)

        if mutation and operation not in self._own:
            with self.db.transaction(commit_on_error=True):
                instance = Instance(self.emulator, namespace, branch, key, method,
                                    environ, hits, self.clocks.version())
                return self._dispatch(call, instance, scratch, reads)
        instance = Instance(self.emulator, namespace, branch, key, method, environ, hits,
                            version)
        return self._dispatch(call, instance, scratch, reads)

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

    def _dispatch(self, call, instance, scratch, reads, head=None):
        """Call the provider on `instance`; checkpoint, journal and stamp its answer.

        `head` is (timeline moves, transaction restarts, (main's head, next checkpoint number)
        or None) read at the start of a mutation's transaction: still true at the end unless a
        checkpoint moved it or the transaction was begun anew (state/db.py) since.
        """
        environ, start_response, entry, echo, started = call
        environ["emulators.instance"] = instance
        # a body past the limit is refused by the provider's first read
        operation = entry.get("operationId")
        guard(environ, self._limits.get(operation, self.emulator.settings.max_body))
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
        if 200 <= code < 400 and instance.method in MUTATING and scratch is None \
                and not reads:
            fresh = instance.fresh_checkpoint()
            if fresh is not None:
                headers.append(("x-mockingbird-checkpoint", fresh))
            elif operation not in self._own:  # those commit their own (accept()), or none
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
        """Journal the request; commit a checkpoint of branch `commit` inside the mutation's
        transaction. Return the checkpoint id or None.

        The entry goes to the journal segment (state/journal.py) once the transaction has committed
        (at once when none is open), before the answer leaves: a read writes no SQLite row.
        `version` is the control version read for this request: the clock comes from the
        worker's kept copy (state/clock.py). Without it the clock row is read. `head` is the
        branch's (head, next number) when still known (_dispatch).
        """
        entry["durationMs"] = int((perf_counter() - started) * 100_000 + 0.5) / 100
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
        if commit is not None:  # a mutation: its transaction is open (_vendor)
            conn = self.db.joined()
            done = self.timeline.capture(conn, namespace, commit, clock, head=head)
            if done is None:  # a namespace's first checkpoint, or a new branch's
                committed = self.timeline.commit(namespace, commit)
                checkpoint, now = committed["id"], committed["at"]
            else:
                checkpoint = checkpoint_id(done[0])
        db = self.db
        db.after_transaction(lambda: self.journal.record(entry, now))
        if self._on_log is not None:  # after the commit: a slow sink never holds the lock
            db.after_transaction(lambda: self._on_log(entry))
        return checkpoint

    def _cleanup(self, scratch):
        if scratch is not None:
            self.timeline.drop_storage(scratch)

    def _drop(self, environ, entry, started, scratch):
        entry["status"] = 0
        self._cleanup(scratch)
        self._log(entry, started)
        # Close only once the mutation's transaction has committed (now, when none is open):
        # a client that sees the connection close and looks must find the accepted write.
        self.db.after_transaction(lambda: close_socket(environ))
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


def _request_meta(environ):
    length = environ.get("CONTENT_LENGTH")
    return {"contentType": environ.get("CONTENT_TYPE") or None,
            "bodyBytes": int(length) if length and length.isdigit() else None,
            "transferEncoding": environ.get("HTTP_TRANSFER_ENCODING")}


def add_fallback_handlers(app):
    """Give a provider app the runtime's answers: an EmulatorError with its status, body() and
    headers; any other exception logged and a 500 without a traceback. A provider app factory
    calls it first, then registers its own handlers, which win (falcon takes the most
    specific class, and the last registration of one class)."""
    app.add_error_handler(Exception, _internal_error)
    app.add_error_handler(EmulatorError, _emulator_error)
    return app


def _emulator_error(req, resp, error, params):
    resp.status = falcon.code_to_http_status(error.status)
    resp.media = error.body()
    for name, value in (error.headers or {}).items():
        resp.set_header(name, value)


def _internal_error(req, resp, error, params):
    if isinstance(error, (falcon.HTTPError, falcon.HTTPStatus)):
        raise error  # let falcon render its own
    log.error("emulator: unhandled error", exc_info=error)
    resp.status = falcon.HTTP_500
    resp.media = {"error": {"type": "mockingbird_internal", "message": "internal error"}}
