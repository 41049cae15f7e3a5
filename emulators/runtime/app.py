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
from .instance import MUTATING, OPERATION_KEY, Instance
from .mount import BASE_URL_KEY, origin, public_base, rewrite_response
from .names import NAME
from .requestlog import guarded_sink
from .state.clock import wall_ms
from .state.timeline import MAIN, START_ON_MAIN, TimelineError, checkpoint_id, storage_key

log = logging.getLogger("emulators")

JSON = "application/json"
# What a Runtime answers for its Emulator (build_wsgi's handles), read through, never copied.
HANDLES = frozenset(("service", "name", "version", "settings", "admin_prefix", "db", "clocks",
                     "faults", "journal", "timeline", "credentials", "matcher", "webhooks",
                     "touch", "namespaces", "instance", "reset", "close"))


def json_body(value):
    """Encode a JSON response body."""
    return json.dumps(value, separators=(",", ":")).encode()


def error_body(message, type_="mockingbird_admin"):
    """Return the admin error envelope as bytes."""
    return json_body({"error": {"type": type_, "message": message}})


class Call:
    """One provider request on its way through the pipeline: what its steps read, and the
    journal entry they fill in."""

    __slots__ = ("environ", "start_response", "started", "namespace", "path", "method",
                 "operation", "reads", "branch", "at", "entry", "echo", "key", "scratch",
                 "writes")

    def __init__(self, emulator, environ, start_response, started, namespace, path):
        self.environ, self.start_response, self.started = environ, start_response, started
        self.namespace, self.path = namespace, path
        self.method = method = environ.get("REQUEST_METHOD", "GET").upper()
        self.operation, self.reads = emulator.call_operation(method, path, environ)
        operation = self.operation
        self.branch = environ.get("HTTP_X_MOCKINGBIRD_BRANCH") or MAIN
        self.at = environ.get("HTTP_X_MOCKINGBIRD_AT")
        self.entry = {"service": emulator.name, "namespace": namespace, "method": method,
                      "path": path}
        if operation:
            self.entry["operationId"] = operation
        self.entry["unmatched"] = emulator.matcher.has_document and not operation
        self.echo = []  # the timeline headers, echoed on the answer
        if self.branch != MAIN:
            self.echo.append(("x-mockingbird-branch", self.branch))
        if self.at:
            self.echo.append(("x-mockingbird-at", self.at))
        self.key, self.scratch = namespace, None  # the storage it runs on (_place)
        self.writes = False  # a write that may checkpoint (_place)


class Runtime:
    """One service's emulator as a WSGI callable: the request pipeline over an Emulator.

    Built from a service and settings by `create_emulator`. The pipeline keeps no state of
    the emulator's: `db`, `clocks`, `faults`, `journal`, `timeline`, `credentials`,
    `instance()`, `reset()` and the other HANDLES documented for `build_wsgi` are read from
    `emulator`.
    """

    def __init__(self, service, settings=None, *, wall=wall_ms, db=None):
        self.emulator = create_emulator(service, settings, wall=wall, db=db)
        self.admin = Admin(self.emulator)
        self._on_log = guarded_sink(self.emulator.settings.on_log)  # None: nothing per request
        self._checked = set()  # namespaces of provider requests that passed the pattern
        self._stamps = {}
        self._provider = None
        self._own = frozenset(getattr(service, "own_transactions", ()))
        self._request_id = getattr(service, "request_id_header", None)

    def __getattr__(self, name):
        if name in HANDLES:
            return getattr(self.emulator, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def provider(self):
        """The service's falcon app, built once (after fork, on first use)."""
        if self._provider is None:
            self._provider = self.emulator.service.provider_app()
        return self._provider

    def stamp(self, namespace):
        """Return the `x-mockingbird` header value."""
        stamp = self._stamps.get(namespace)  # only valid namespaces are kept
        if stamp is None:
            emulator = self.emulator
            if namespace is None or not NAME.match(namespace):
                return f"{emulator.name}@{emulator.version}"
            if len(self._stamps) >= 4096:
                self._stamps.clear()
            stamp = self._stamps[namespace] = \
                f"{emulator.name}@{emulator.version}; ns={namespace}"
        return stamp

    # -- WSGI -------------------------------------------------------------------------------
    def __call__(self, environ, start_response):
        started = perf_counter()
        webhooks = self.emulator.webhooks
        if webhooks is not None and not webhooks.resumed:
            webhooks.resume()  # this process's first request: send what others left
        plane, namespace, path, carrier = self.emulator.locate(environ)
        environ = self._carried(environ, namespace, path, carrier)
        if plane is PROVIDER:
            return self._provider_call(Call(self.emulator, environ, start_response, started,
                                            namespace, path))
        return self._admin_call(environ, start_response, namespace, path)

    def _carried(self, environ, namespace, path, carrier):
        """The environ as the service sees it: a path carrier moved into SCRIPT_NAME, and a
        namespace named by header written into the URLs the service builds as the path
        carrier, so a client that follows them without the header stays in it."""
        mount = environ.get("SCRIPT_NAME", "")
        prefix = self.emulator.admin_prefix
        if carrier is not None:
            environ = dict(environ)
            environ["SCRIPT_NAME"] = f"{mount}{prefix}/ns/{carrier}"
            environ["PATH_INFO"] = path
        if names.NAMESPACE_ENVIRON in environ:
            environ = dict(environ)
            environ[BASE_URL_KEY] = (f"{origin(environ)}{mount}{prefix}/ns/"
                                     + quote(namespace, safe=""))
        return environ

    def _admin_call(self, environ, start_response, namespace, path):
        admin = dict(environ)
        admin[BASE_URL_KEY] = public_base(admin)  # (the header's, when it named one)
        admin[NAMESPACE_KEY] = namespace
        admin["SCRIPT_NAME"] = admin.get("SCRIPT_NAME", "") + self.emulator.admin_prefix
        admin["PATH_INFO"] = path[len(self.emulator.admin_prefix):] or "/"
        stamp = self.stamp(namespace)  # without `ns=` when the namespace is invalid

        def stamped(status, headers, exc_info=None):
            headers.append(("x-mockingbird", stamp))
            return start_response(status, headers, exc_info)
        return self.admin.app(admin, stamped)

    def _provider_call(self, call):
        """Check the namespace and place the call on its branch, then the fault rules, then
        the provider. A write gets one transaction for all of it (`_write`)."""
        refusal = self._check_namespace(call)
        if refusal is None:
            refusal = self._place(call)
        if refusal is not None:
            return refusal
        if call.writes and call.operation not in self._own:
            return self._write(call)
        version = self.emulator.clocks.version()
        hits = self._faults(call, version)
        answer = self._fault_answer(call, hits)
        if answer is not None:
            return answer
        return self._dispatch(call, self._instance(call, hits, version))

    # -- steps ------------------------------------------------------------------------------
    def _check_namespace(self, call):
        """A 400 for a namespace that breaks the pattern, else None; a valid one is remembered
        (its first request records it)."""
        namespace = call.namespace
        if namespace in self._checked:
            return None
        if not NAME.match(namespace):
            return self._refuse(call, "400 Bad Request", names.NAMESPACE_HEADER)
        self.emulator.touch(namespace)
        if len(self._checked) >= 4096:
            self._checked.clear()
        self._checked.add(namespace)
        return None

    def _place(self, call):
        """Point the call at the storage of its branch (and `at`), making the branch when it is
        new; a 400 for a bad branch name, a 409 for a timeline conflict, else None."""
        if call.branch != MAIN or call.at:
            if not NAME.match(call.branch):
                return self._refuse(call, "400 Bad Request", names.BRANCH_HEADER)
            try:
                call.key = self._storage(call)
            except TimelineError as error:
                return self._refuse(call, "409 Conflict", error.message)
        call.writes = call.method in MUTATING and call.scratch is None and not call.reads
        return None

    def _storage(self, call):
        """The storage key of the call's branch. `at` on main reads a scratch copy of main at
        that checkpoint; `at` on a branch forks a new one there, or must be its head (never
        silently re-pointed, which would lose its commits: TimelineError)."""
        timeline, namespace, branch, at = self.emulator.timeline, call.namespace, call.branch, \
            call.at
        if at and branch == MAIN:
            if call.method in MUTATING:
                raise TimelineError("x-mockingbird-at on a mutating request to main would rewind"
                                    " main; use POST /__admin/branches/main/checkout")
            call.scratch = f"{namespace}@{at}#{uuid.uuid4().hex}"
            timeline.view(namespace, at, call.scratch)
            return call.scratch
        if at:
            timeline.branch(namespace, branch, at)
        elif not timeline.has_branch(namespace, branch):
            timeline.branch(namespace, branch)
        return storage_key(namespace, branch)

    def _write(self, call):
        """One write transaction for the fault check, the provider's writes, the checkpoint
        and the journal: a single commit per write, committed even when the provider raises or
        drops. Only a rule that fires (it may sleep) moves the dispatch to a transaction of its
        own."""
        db = self.emulator.db
        with db.transaction(commit_on_error=True) as conn:
            version, head = self._write_start(conn, call)
            hits = self._faults(call, version)
            if not hits:
                instance = self._instance(call, (), version)
                instance.head = head  # an accept() inside commits on it too
                return self._dispatch(call, instance, head)
        answer = self._fault_answer(call, hits)
        if answer is not None:
            return answer
        with db.transaction(commit_on_error=True):
            return self._dispatch(call, self._instance(call, hits,
                                                       self.emulator.clocks.version()))

    def _write_start(self, conn, call):
        """(control version, head) a write's transaction starts from; the head is (timeline
        moves, transaction restarts, (main's head, next checkpoint number) or None)."""
        emulator = self.emulator
        known = None
        if call.branch == MAIN:  # one read for the control version and main's head
            version, parent, after = conn.execute(
                START_ON_MAIN, (emulator.name, call.namespace)).fetchone()
            if parent is not None:
                known = (parent, after)
        else:
            version = emulator.clocks.version(conn)
        return version, (emulator.timeline.moves, emulator.db.restarts(), known)

    def _faults(self, call, version):
        return self.emulator.faults.evaluate(call.namespace, call.operation, call.method,
                                             call.path, version)

    def _fault_answer(self, call, hits):
        """Sleep the delays of the rules that fired; drop the connection or answer as a
        terminal rule says. None: the provider answers."""
        delay = sum(hit.delay_ms for hit in hits)
        if delay:
            time.sleep(delay / 1000)
        first = next((hit for hit in hits if hit.effect or hit.terminal), None)
        if first is not None:
            call.entry["faultId"] = first.id
        terminal = hits[-1] if hits and hits[-1].terminal else None
        if terminal is None:
            return None
        if terminal.drop:
            call.entry["faultId"] = terminal.id
            return self._drop(call)
        status, headers, body = terminal.response()
        self._cleanup(call.scratch)
        return self._answer(call, falcon.code_to_http_status(status), body, headers,
                            fault=terminal.id)

    def _instance(self, call, hits, version):
        return Instance(self.emulator, call.namespace, call.branch, call.key, call.method,
                        call.environ, hits, version)

    def _refuse(self, call, status, message):
        return self._answer(call, status, error_body(message), [("content-type", JSON)])

    def _answer(self, call, status, body, headers=(), fault=None):
        """Answer without the provider (bad namespace or branch, 409, a fault's response)."""
        entry = call.entry
        entry["status"] = int(status[:3])
        if fault:
            entry["faultId"] = fault
        elif entry["status"] >= 400:
            entry["request"] = _request_meta(call.environ)
        seq = []
        self._log(entry, call.started, numbered=seq.append)
        self._respond(call, status, [*headers, ("content-length", str(len(body))), *call.echo],
                      seq)
        return [] if call.method == "HEAD" else [body]

    def _respond(self, call, status, headers, seq):
        """Start the answer once the request's journal entry is numbered (`seq` holds its
        number then): after the commit of a write's transaction, at once for anything else.
        The service's `request_id_header` carries the number, so a client's log finds the
        entry in the journal."""
        def respond():
            if self._request_id is not None and seq:
                headers.append((self._request_id, str(seq[0])))
            headers.append(("x-mockingbird", self.stamp(call.namespace)))
            call.start_response(status, headers)
        self.emulator.db.after_transaction(respond)

    def _dispatch(self, call, instance, head=None):
        """Call the provider on `instance`; checkpoint, journal and stamp its answer. `head`:
        what the write's transaction started from (`_write_start`)."""
        environ = call.environ
        environ["emulators.instance"] = instance
        # a body past the limit is refused by the provider's first read
        environ[OPERATION_KEY] = call.operation  # what the provider may key its rules by
        guard(environ, self.emulator.body_limit(call.operation))
        captured = []

        def capture(status, headers, exc_info=None):
            captured[:] = status, headers, []
            return captured[2].append

        try:
            result = self.provider(environ, capture)
        except ConnectionDropped:
            self._finish_accepted(instance, call.entry)
            return self._drop(call)
        except Exception:  # the provider app handles errors; this is a last resort
            log.exception("emulator %s: unhandled error", self.emulator.name)
            self._finish_accepted(instance, call.entry)
            self._cleanup(call.scratch)
            return self._answer(call, "500 Internal Server Error",
                                error_body("internal error", "mockingbird_internal"),
                                [("content-type", JSON)])
        status, headers, early = captured
        if environ.get("SCRIPT_NAME"):  # mounted or carried: local URLs move under it
            headers, result = rewrite_response(headers, result, environ)
        seq = self._record(call, instance, int(status[:3]), headers, head)
        self._respond(call, status, [*headers, *call.echo], seq)
        if call.scratch is None and isinstance(result, list):
            return [*early, *result] if early else result
        return self._stream(result, call, early)

    def _record(self, call, instance, code, headers, head):
        """Checkpoint a write that succeeded and journal the request; a checkpoint's id goes
        into the answer's `headers`. Return the list that holds the entry's number once it is
        journaled."""
        entry = call.entry
        entry["status"] = code
        commit = None
        if 200 <= code < 400 and call.writes:
            fresh = instance.fresh_checkpoint()
            if fresh is not None:
                headers.append(("x-mockingbird-checkpoint", fresh))
            elif call.operation not in self._own:  # those commit their own (accept()), or none
                commit = instance.branch
        self._finish_accepted(instance, entry)
        if code >= 400 and "faultId" not in entry:
            entry["request"] = _request_meta(call.environ)
        version, known = self._still_known(instance.version, head)
        seq = []
        checkpoint = self._log(entry, call.started, commit, version, known, numbered=seq.append)
        if checkpoint:
            headers.append(("x-mockingbird-checkpoint", checkpoint))
        return seq

    def _still_known(self, version, head):
        """(control version, main's head) read at the start of the write, as far as they still
        hold: a transaction begun anew (state/db.py) may have moved the clock too, and a
        checkpoint since moved the head."""
        if head is None:
            return version, None
        moves, restarts, known = head
        if restarts != self.emulator.db.restarts():
            return None, None
        if moves != self.emulator.timeline.moves:
            return version, None
        return version, known

    # -- pieces -----------------------------------------------------------------------------
    @staticmethod
    def _finish_accepted(instance, entry):
        instance.in_flight = False
        if instance.ids:
            entry["ids"] = instance.ids
        if instance.accepted:
            entry["accepted"] = True
            entry["checkpoint"] = instance.accepted

    def _log(self, entry, started, commit=None, version=None, head=None, numbered=None):
        """Journal the request; commit a checkpoint of branch `commit` inside the write's
        transaction. Return the checkpoint id or None; `numbered(seq)` gets the entry's number
        once it is journaled.

        The entry goes to the journal segment (state/journal.py) once the transaction has
        committed (at once when none is open), before the answer leaves: a journal entry
        writes no SQLite row. `version` and `head` are the write's (`_still_known`).
        """
        entry["durationMs"] = int((perf_counter() - started) * 100_000 + 0.5) / 100
        namespace = entry["namespace"]
        clock = self._clock(namespace, version)
        now, checkpoint = clock[0], None
        if commit is not None:
            checkpoint, now = self._commit(namespace, commit, clock, head)
        db = self.emulator.db
        if numbered is None:
            db.after_transaction(lambda: self.emulator.journal.record(entry, now))
        else:
            db.after_transaction(lambda: numbered(self.emulator.journal.record(entry, now)))
        if self._on_log is not None:  # after the commit: a slow sink never holds the lock
            db.after_transaction(lambda: self._on_log(entry))
        return checkpoint

    def _clock(self, namespace, version):
        """(now, frozen) of a namespace's clock: the worker's kept copy for the control
        `version` read for the request (state/clock.py), else the clock row; the wall clock
        for an invalid namespace, which has none."""
        clocks = self.emulator.clocks
        if version is not None:
            return clocks.current(namespace, version)
        if NAME.match(namespace):
            state = clocks.state(namespace)
            return state["now"], state["frozen"]
        return wall_ms(), False

    def _commit(self, namespace, branch, clock, head):
        """Commit a checkpoint of `branch` in the write's open transaction: (its id, its
        time)."""
        timeline = self.emulator.timeline
        done = timeline.capture(self.emulator.db.joined(), namespace, branch, clock, head=head)
        if done is None:  # a namespace's first checkpoint, or a new branch's
            committed = timeline.commit(namespace, branch)
            return committed["id"], committed["at"]
        return checkpoint_id(done[0]), clock[0]

    def _cleanup(self, scratch):
        if scratch is not None:
            self.emulator.timeline.drop_storage(scratch)

    def _drop(self, call):
        call.entry["status"] = 0
        self._cleanup(call.scratch)
        self._log(call.entry, call.started)
        # Close only once the write's transaction has committed (now, when none is open): a
        # client that sees the connection close and looks must find the accepted write.
        self.emulator.db.after_transaction(lambda: close_socket(call.environ))
        raise DroppedByFault()

    def _stream(self, result, call, early):
        """Pass a streamed body through chunk by chunk; a drop mid-stream closes the socket."""
        try:
            yield from early
            yield from result
        except ConnectionDropped:
            close_socket(call.environ)
            raise DroppedByFault() from None
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
            self._cleanup(call.scratch)


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
    # (falcon's own handlers for HTTPError and HTTPStatus are more specific: never here)
    log.error("emulator: unhandled error", exc_info=error)
    resp.status = falcon.HTTP_500
    resp.media = {"error": {"type": "mockingbird_internal", "message": "internal error"}}
