"""The gunicorn worker the repository ships with (`worker_class` in gunicorn.conf.py): it serves
whichever app gunicorn runs, the chat alone in production or the monolith under `make serve`.

Each worker process runs `threads` request threads. A request thread waits in a blocking
accept(), takes what the client has sent so far without waiting, and when that is the whole
request (as it is from a reverse proxy), answers it, with plain blocking calls: no selector,
no thread pool, no futures queue. A request not yet whole goes to the process's reader
(reader.py): one thread with an epoll that collects requests from slow or silent clients (each
must be in within `timeout` seconds of its accept, else its connection is closed) and hands
each whole one to the process's `threads` late threads. So a request thread never waits on a
client, and a slow client costs a socket and its bytes so far, not a thread. A request bigger
than the reader's buffer, or one whose client waits for `100 Continue`, is handed over as soon
as its head is in, and a late thread reads its body as it arrives. An answer that streams (a
Hermes event stream: an iterator, not a list) is handed to a thread of its own, so streams
never hold request threads and never starve chat requests, however many are open (up to
`worker_connections` per process; past that the thread that answered streams it). A process
whose request threads are all busy accepts nothing: the kernel gives new connections to a
thread waiting elsewhere.

A connection is kept alive after an answer (HTTP/1.1, or a client that asks; `keepalive` not
0): the thread that answered gives it back to the reader, which waits for its next request in
the same epoll (a late thread answers it), so an idle connection holds no thread either. It
is closed after `keepalive` idle seconds, after REQUESTS_PER_CONNECTION answers, when the
reader needs room for others (idle connections go first), and when the worker stops (it still
answers, with `Connection: close`, what arrives on a kept connection for STOP_LINGER_S, then
closes the idle ones; see `run`). A request read ahead behind another (pipelined) is answered
next by the same thread. A request whose body was still arriving closes its connection after
the answer.

Why not gunicorn's `gthread`: behind nginx its selector, pool and queue cost more CPU per idle
poll than the whole chat app, and each of its threads is one more to share the GIL with. A
plain whole request (as a reverse proxy sends it) is read straight into the environ gunicorn's
parser would build (lean.py), for less CPU than that parser; any other goes through gunicorn's
parser. Response framing, error pages, hooks and logs are gunicorn's own. All of a worker's
threads run on one CPU, the workers spread over the CPUs (`choose_cpu`, the shipped config's
`pre_fork`): they hand the GIL to each other at every system call, and a hand-over within one
CPU is far cheaper than across two.
"""
import errno
import gc
import itertools
import logging
import os
import select
import socket
import struct
import sys
import threading
import time
from datetime import datetime

from gunicorn import http, util
from gunicorn.arbiter import Arbiter
from gunicorn.config import PostRequest, PreRequest
from gunicorn.http import wsgi
from gunicorn.workers.base import Worker

from .lean import LeanReader, Response
from .reader import HANDOVER, PARTIAL, WHOLE, Incoming, Reader

# Answers on one kept-alive connection before the worker closes it (nginx's default for the
# connections it keeps, `keepalive_requests`): no connection lives for ever, and a client that
# keeps one busy cannot tie itself to one worker past that.
REQUESTS_PER_CONNECTION = 1000
# How long a stopping worker still answers what arrives on its kept connections, each answer
# closing its connection; those still idle then are closed. Longer than the proxy keeps an idle
# connection (`keepalive_timeout` in deploy/nginx/newos4.conf), so by then the proxy has closed
# every one it did not use: a connection closed by us just as nginx sends a POST on it would be
# a 502 (nginx resends a GET, not a POST). The stop ends sooner once none is held.
STOP_LINGER_S = 3.0

# How often a thread waiting for a connection looks at `alive`: a stopping worker waits this long
# for its idle threads, and an idle thread wakes this often for nothing else.
IDLE_WAKE_S = 0.1
HEARTBEAT_S = 0.5  # the heartbeat at the latest (the arbiter's timeout is seconds)
# accept() errors that concern one connection, or a shortage that passes: never fatal.
RETRY_ACCEPT = {errno.EAGAIN, errno.EWOULDBLOCK, errno.ECONNABORTED, errno.EPROTO, errno.EPERM,
                errno.EINTR}
SHORTAGES = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
GONE = {errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN}  # the client left: nothing to report
# Each request's environ holds, under this key, an Event set when the worker begins to stop:
# a stream that waits on it (the emulators' `stopping.pauser`, whose key this is) ends then,
# instead of holding the stop for up to `graceful_timeout` until its next write.
STOPPING_KEY = "server.stopping"


def choose_cpu(server, worker):
    """gunicorn's `pre_fork` hook (gunicorn.conf.py): the worker about to start gets the CPU,
    of those the arbiter may use, that the fewest live workers have; the worker keeps all its
    threads on it (`init_process`). Its threads pass the GIL to each other at every system call
    (a post makes some twenty): on one CPU a hand-over is a local switch, across CPUs a wake-up
    of the other CPU (on a virtual machine, an exit to the hypervisor). Ties go by the
    arbiter's process id, so several servers on one host do not all start on the first CPU."""
    if not hasattr(os, "sched_getaffinity"):
        return
    allowed = sorted(os.sched_getaffinity(0))
    taken = {cpu: 0 for cpu in allowed}
    for other in server.WORKERS.values():
        if getattr(other, "cpu", None) in taken:
            taken[other.cpu] += 1
    turn = os.getpid() % len(allowed)
    worker.cpu = min(allowed[turn:] + allowed[:turn], key=taken.__getitem__)  # the first least


class AcceptingThreadsWorker(Worker):
    """Request threads that accept connections and answer whole requests, late threads that
    answer the requests the reader gathers (of slow clients, and of kept connections)."""

    cpu = None  # the one CPU this worker's threads run on (choose_cpu), else any

    def init_process(self):
        if self.cpu is not None:  # before any thread starts: every thread inherits it
            try:
                os.sched_setaffinity(0, {self.cpu})
            except OSError as exc:  # the CPU went offline meanwhile, a sandbox refuses it
                self.log.warning("Worker runs on any CPU: CPU %s refused (%s)", self.cpu, exc)
        self.cfg = SettledConfig(self.cfg)
        if self.cfg.is_ssl:  # the exit code makes the arbiter stop rather than respawn us
            self.log.error("%s serves plain HTTP behind a proxy that ends TLS; with --certfile "
                           "or --keyfile use --worker-class gthread", type(self).__name__)
            sys.exit(Arbiter.WORKER_BOOT_ERROR)
        super().init_process()

    def load_wsgi(self):
        """Load the app, then move every object alive so far (modules, the app, its routes) out
        of the cyclic collector's sight: they live as long as the worker, and each full
        collection would otherwise walk them all again."""
        super().load_wsgi()
        gc.freeze()

    def run(self):
        # Blocking accept() bounded by a receive timeout: the kernel wakes one waiting thread
        # per connection, and an idle thread looks at `alive` every IDLE_WAKE_S. Both flags live on
        # the listening socket that every worker of the arbiter shares and sets alike.
        for listener in self.sockets:
            listener.setblocking(True)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(IDLE_WAKE_S))
            if listener.family in (socket.AF_INET, socket.AF_INET6):
                # accept() only once the client's first bytes are in (after a second, a silent
                # client is accepted all the same, and the reader closes it at its deadline):
                # else most connections are accepted before their request and go to the reader
                # (as on a unix socket, which has no such option: same answers, more CPU)
                listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, 1)
        # A late thread reading a body as it arrives waits up to gunicorn's `timeout` for each
        # of the client's sends (an accepted socket inherits the listener's short one).
        self._client_timeout = _timeval(self.cfg.timeout)
        self._served = itertools.count(1)
        self._stream_slots = threading.BoundedSemaphore(max(1, self.cfg.worker_connections))
        self._stream_threads = set()
        self._stopping = threading.Event()
        self._lost = []
        self._keepalive = self.cfg.keepalive > 0
        self._lean = LeanReader(self.cfg)
        # gunicorn's default hooks: pre_request logs the request at debug level, post_request
        # does nothing. Neither is called then (a debug log keeps its line): a call per request
        # saved.
        debug = self.log.error_log.isEnabledFor(logging.DEBUG)
        self._pre_request_hook = None if self.cfg.pre_request is PreRequest.default and not debug \
            else self.cfg.pre_request
        self._post_request_hook = None if self.cfg.post_request is PostRequest.default \
            else self.cfg.post_request
        self._times_requests = self.log.access_log_enabled  # for the access log's duration
        self._reader = Reader(max(1, self.cfg.worker_connections), self.cfg.threads, self.log,
                              timeout=self.cfg.timeout or None,
                              keepalive=self.cfg.keepalive or None)
        count = max(self.cfg.threads, len(self.sockets))  # listeners shared out, one each at least
        threads = [threading.Thread(target=self._serve, name=f"request-{n}", daemon=True,
                                    args=(self.sockets[n % len(self.sockets)],))
                   for n in range(count)]
        threads += [threading.Thread(target=self._serve_late, name=f"late-{n}", daemon=True)
                    for n in range(self.cfg.threads)]
        threads.append(threading.Thread(target=self._read, name="reader", daemon=True))
        for thread in threads:
            thread.start()
        self._watch()
        self.alive = False
        self._stopping.set()
        # Requests already whole are still answered, and so is the next request on a kept
        # connection for a moment (its answer closes it): a proxy that was sending one on it
        # has it answered, not cut.
        self._reader.stop(min(STOP_LINGER_S, self.cfg.graceful_timeout / 2))
        deadline = time.monotonic() + self.cfg.graceful_timeout
        for thread in threads + list(self._stream_threads):
            thread.join(max(0.0, deadline - time.monotonic()))

    def _watch(self):
        """The main thread: heartbeat for the arbiter, signals, and a thread's death."""
        beat = min(HEARTBEAT_S, self.timeout / 2) if self.timeout else HEARTBEAT_S
        while self.alive:
            self.notify()
            if self.ppid != os.getppid():
                self.log.info("Parent changed, shutting down: %s", self)
                return
            if self._lost:
                self.log.error("Stopping this worker: a request thread died (%s)", self._lost[0])
                return
            try:  # a signal writes to PIPE (set_wakeup_fd): a TERM ends the wait at once
                if select.select([self.PIPE[0]], [], [], beat)[0]:
                    os.read(self.PIPE[0], 4096)
            except InterruptedError:
                pass

    def _serve(self, listener):
        """A request thread: answers a whole request at once, leaves any other to the reader."""
        server = listener.getsockname()
        limit = self.cfg.timeout or None
        try:
            while self.alive:
                try:
                    client, addr = listener.accept()  # blocking, close-on-exec: Python's default
                except OSError as exc:
                    if exc.errno in SHORTAGES:
                        self.log.error("accept() failed: %s; retrying", exc)
                        time.sleep(HEARTBEAT_S)  # until descriptors or memory come back
                    elif exc.errno not in RETRY_ACCEPT:
                        raise
                    continue
                incoming = Incoming(client, addr, server, limit)
                state = incoming.receive()
                if state is WHOLE:
                    self._answer(incoming, more=False)
                elif state is PARTIAL:
                    self._reader.add(incoming)
                elif state is HANDOVER:
                    self._reader.ready.put(incoming)
                else:
                    client.close()
        except BaseException as exc:  # a bug, not a request's error (those are answered)
            self._died(exc)

    def _read(self):
        try:
            self._reader.run()
        except BaseException as exc:
            self._died(exc)

    def _serve_late(self):
        """A late thread: answers the requests the reader hands over, one at a time."""
        try:
            while (incoming := self._reader.ready.get()) is not None:
                more = incoming.state() is not WHOLE
                if more:  # (a whole request is read without waiting: no timeout to set)
                    incoming.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO,
                                             self._client_timeout)
                self._answer(incoming, more)
        except BaseException as exc:
            self._died(exc)

    def _died(self, exc):
        self.log.exception("A request thread died")
        self._lost.append(repr(exc))

    def _answer(self, incoming, more):
        """Answer this request, and the ones its client sent behind it (pipelined)."""
        while incoming is not None:
            incoming = self.handle(incoming, more)
            more = False

    def handle(self, incoming, more):
        """Answer one request, here or, when it streams, in a thread of its own. `more`: the
        client may still be sending (a body read as it arrives); else its request is all in.
        Returns the client's next request when it is already whole here, else None."""
        addr, server = incoming.addr, incoming.server
        lean = None if more else self._lean.read(incoming.data, addr, server, incoming.served + 1)
        conn = ClientConnection(incoming.sock, b"" if lean else incoming.data, more)
        parser = req = resp = None
        try:
            if lean:
                req, environ = lean
            else:
                parser = http.get_parser(self.cfg, conn, addr)
                req = next(parser)
            if self._pre_request_hook is not None:
                self._pre_request_hook(self, req)
            started = datetime.now() if self._times_requests else None
            if lean:
                resp = Response(req, conn, self.cfg)
                environ["gunicorn.socket"] = conn
                environ["wsgi.early_hints"] = wsgi._make_early_hints_callback(req, conn, resp)
            else:
                resp, environ = wsgi.create(req, conn, addr, server, self.cfg)
                environ["wsgi.multithread"] = True  # gunicorn's default: the sync worker's False
            environ[STOPPING_KEY] = self._stopping
            self._count_request()
            # A body still arriving is not drained to keep its connection: the answer closes it.
            if more or not self._keepalive or not self.alive \
                    or incoming.served + 1 >= REQUESTS_PER_CONNECTION:
                resp.force_close()
            body = self.wsgi(environ, resp.start_response)
        except BaseException as exc:
            self._report(req, resp, conn, addr, exc)
            if req is not None and resp is not None:
                self._post_request(req, environ, resp)
            conn.close_connection()
            return None
        if _is_streamed(body, environ):
            conn.hold_no_head()  # its client may wait a while for the first bytes
            if self._stream_slots.acquire(blocking=False):
                resp.force_close()  # a stream ends its connection
                thread = threading.Thread(target=self._stream, name="stream", daemon=True,
                                          args=(req, resp, environ, body, started, conn, addr))
                self._stream_threads.add(thread)
                thread.start()
                return None
        if not self._finish(req, resp, environ, body, started, conn, addr):
            return None
        return self._next_request(incoming, parser, conn)

    def _next_request(self, incoming, parser, conn):
        """After an answer that keeps the connection: the next request if it is whole here
        already, else None (the reader waits for it, or for the rest of it)."""
        try:
            if parser is None:  # a lean request: all the bytes received were its own
                ahead = conn.release()
            elif parser.finish_body():  # (the body is all in: no wait)
                ahead = parser.unreader.buf.getvalue() + conn.release()
            else:
                ahead = None
        except (OSError, http.errors.ParseException):  # the client left; a body gone wrong
            ahead = None
        if ahead is None:
            conn.close_connection()
            return None
        served = incoming.served + 1
        if not ahead:
            self._reader.keep(incoming.sock, incoming.addr, incoming.server, served)
            return None
        following = Incoming(incoming.sock, incoming.addr, incoming.server,
                             self.cfg.timeout or None, data=ahead, served=served)
        state = following.state()
        if state is WHOLE:
            return following
        if state is PARTIAL:
            self._reader.add(following)
        else:  # HANDOVER
            self._reader.ready.put(following)
        return None

    def _stream(self, *answer):
        try:
            self._finish(*answer)  # (force_close: the connection is closed)
        finally:
            self._stream_threads.discard(threading.current_thread())
            self._stream_slots.release()

    def _finish(self, req, resp, environ, body, started, conn, addr):
        """Send the answer's body, log it, close the body; close the connection unless the
        answer keeps it (then True: the caller serves its next request)."""
        kept = False
        try:
            try:
                if isinstance(body, environ["wsgi.file_wrapper"]):
                    resp.write_file(body)
                else:
                    for item in body:
                        resp.write(item)
                resp.close()
            finally:
                if started is not None:
                    self.log.access(resp, req, environ, datetime.now() - started)
                if hasattr(body, "close"):
                    body.close()
            kept = not resp.should_close()
        except BaseException as exc:
            self._report(req, resp, conn, addr, exc)
        finally:
            self._post_request(req, environ, resp)
            if not kept:
                conn.close_connection()
        return kept

    def _report(self, req, resp, conn, addr, exc):
        """What gunicorn's sync worker does with an error: the client's going is not worth a
        line; before the answer's head, an error page; after it, a log line (the head is out)."""
        if isinstance(exc, (http.errors.NoMoreData, StopIteration)):
            self.log.debug("Closing connection: %r", exc)
        elif isinstance(exc, BlockingIOError):  # the client sent no more in time
            self.log.debug("Request not complete in time: closing")
        elif isinstance(exc, OSError) and exc.errno in GONE:
            self.log.debug("Client went away: %s", exc)
        elif isinstance(exc, OSError):
            self.log.exception("Socket error processing request.")
        elif resp is not None and resp.headers_sent:
            self.log.exception("Error handling request")
        else:
            self.handle_error(req, conn, addr, exc)

    def _post_request(self, req, environ, resp):
        if self._post_request_hook is None:
            return
        try:
            self._post_request_hook(self, req, environ, resp)
        except Exception:
            self.log.exception("Exception in post_request hook")

    def _count_request(self):
        self.nr = next(self._served)  # itertools.count is atomic across threads
        if self.nr >= self.max_requests:
            self.log.info("Autorestarting worker after current request.")
            self.alive = False


class SettledConfig:
    """gunicorn's settings as this worker runs with them, each looked up once: `Config` answers
    every read through `__getattr__` and a Setting object (a request reads some twenty), and a
    running worker's settings never change (a reload starts new workers)."""

    def __init__(self, cfg):
        self._cfg = cfg

    def __getattr__(self, name):
        value = getattr(self._cfg, name)
        setattr(self, name, value)
        return value


def _timeval(seconds):
    """A `struct timeval` for SO_RCVTIMEO (0: no timeout)."""
    return struct.pack("ll", int(seconds), int(seconds % 1 * 1_000_000))


def _is_streamed(body, environ):
    """True for an answer produced as it is sent (not a list, not a file)."""
    return not isinstance(body, (list, tuple, environ["wsgi.file_wrapper"]))


class ClientConnection:
    """A client socket as gunicorn's parser and response use it: the request's bytes read
    ahead come first (then the socket, without waiting when the request was all in), and an
    answer's head is held until its first body bytes, so both leave in one send (gunicorn
    writes them with two), unless it streams. Any other use of the socket sends the head
    first."""

    __slots__ = ("_sock", "_head", "_holding", "_unread", "_recv_flags")

    def __init__(self, sock, received=b"", more=True):
        self._sock, self._head, self._holding = sock, None, True
        self._unread = received
        self._recv_flags = 0 if more else socket.MSG_DONTWAIT

    def recv(self, size, flags=0):
        if self._unread:
            data, self._unread = self._unread[:size], self._unread[size:]
            return bytes(data)
        return self._sock.recv(size, flags | self._recv_flags)

    def sendall(self, data):
        if self._holding:
            if self._head is None:
                self._head = bytes(data)
                return
            data, self._head, self._holding = self._head + data, None, False
        self._sock.sendall(data)

    def __getattr__(self, name):
        if self._head is not None:
            self._flush()
        return getattr(self._sock, name)

    def _flush(self):
        self._holding = False
        head, self._head = self._head, None
        if head is not None:
            self._sock.sendall(head)

    def hold_no_head(self):
        """Send the answer's head as soon as it is written (a stream's: an empty first chunk
        sends it, as the client of a stream idle until its first event needs)."""
        self._holding = False

    def release(self):
        """Send a head still held, and return the bytes received but not read: the start of
        the client's next request on this kept connection."""
        self._flush()
        unread, self._unread = self._unread, b""
        return bytes(unread)

    def close_connection(self):
        """Send a head still held (an answer without a body), then close. Close at once when
        the request was read to its end, so the close sends a FIN, never an RST; otherwise
        gunicorn's graceful close, which drains what the client still sends until it has read
        our answer."""
        try:
            self._flush()
            unread = self._sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except OSError:  # BlockingIOError: nothing unread; otherwise the client is gone
            unread = b""
        if unread:
            util.close_graceful(self._sock)
        else:
            self._sock.close()
