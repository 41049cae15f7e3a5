"""`serve()`: run a service on a loopback port in a background thread (threaded, streaming)."""
import dataclasses
import functools
import os
import shutil
import socket
import socketserver
import tempfile
import threading
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from .app import Runtime
from .settings import Settings
from .stopping import STOPPING_KEY


class _Dechunked:
    """A chunked request body, decoded (wsgiref hands it to the app raw; gunicorn decodes it,
    and apps such as git's smart HTTP rely on that)."""

    def __init__(self, raw):
        self._raw = raw
        self._left = 0
        self._done = False

    def _next_chunk(self):
        size = self._raw.readline(1024).split(b";")[0].strip()
        self._left = int(size, 16) if size else 0
        if self._left == 0:
            while self._raw.readline(65537) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            self._done = True

    def read(self, size=-1):
        out = bytearray()
        while not self._done and (size is None or size < 0 or len(out) < size):
            if self._left == 0:
                self._next_chunk()
                continue
            want = self._left if size is None or size < 0 else min(self._left, size - len(out))
            data = self._raw.read(want)
            if not data:
                self._done = True
                break
            out += data
            self._left -= len(data)
            if self._left == 0:
                self._raw.readline(3)  # the CRLF after each chunk
        return bytes(out)

    def close(self):
        self._raw.close()

    def readline(self, size=-1):
        out = bytearray()
        while size is None or size < 0 or len(out) < size:
            byte = self.read(1)
            if not byte:
                break
            out += byte
            if byte == b"\n":
                break
        return bytes(out)


class _Handler(WSGIRequestHandler):
    """Expose the socket so a drop fault can close it; keep the test output quiet."""

    def parse_request(self):
        if not super().parse_request():
            return False
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            self.rfile = _Dechunked(self.rfile)  # one request per connection: safe to swap
        return True

    def get_environ(self):
        environ = super().get_environ()
        if self.headers.get("content-type") is None:
            environ.pop("CONTENT_TYPE", None)  # wsgiref invents text/plain; report the truth
        environ["emulators.socket"] = self.connection
        environ[STOPPING_KEY] = self.server.stopping
        return environ

    def log_message(self, format, *args):
        pass


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    """Keeps its request threads and their open connections, so closing can end a stream that
    would otherwise hold its thread, and then join every request thread. The threads are
    daemons (an owner that never closes does not hang the interpreter's exit), and
    ThreadingMixIn joins no daemon in server_close: this server keeps them itself."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, *args, **kwargs):
        self.connections = set()  # before binding: a refused bind runs server_close
        self.connections_lock = threading.Lock()
        self.request_threads = []
        self.stopping = threading.Event()  # set by close(): streams end (stopping.py)
        super().__init__(*args, **kwargs)

    def process_request(self, request, client_address):
        thread = threading.Thread(target=self.process_request_thread,
                                  args=(request, client_address), daemon=True)
        with self.connections_lock:  # the ended ones go, so the list holds the live ones
            self.request_threads = [t for t in self.request_threads if t.is_alive()]
            self.request_threads.append(thread)
        thread.start()

    def server_close(self):
        super().server_close()
        with self.connections_lock:
            threads, self.request_threads = self.request_threads, []
        for thread in threads:
            thread.join()

    def process_request_thread(self, request, client_address):
        with self.connections_lock:
            self.connections.add(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.connections_lock:
                self.connections.discard(request)

    def end_connections(self):
        """Shut every open connection down: a streaming answer fails at its next write."""
        with self.connections_lock:
            for sock in self.connections:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class Listener:
    """A threaded WSGI listener in a background thread: `host`, `port`, `url`, `close()`."""

    def __init__(self, app, host="127.0.0.1", port=0, *, name="emulator", cleanup=None):
        self._cleanup = cleanup
        self._httpd = make_server(host, port, app, server_class=_Server, handler_class=_Handler)
        self.host = host
        self.port = self._httpd.server_address[1]
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True, name=name)
        self._thread.start()

    def serve_forever(self):
        """Block until close() (CLI use)."""
        self._thread.join()

    def close(self):
        """Stop accepting connections, end the open ones, join every thread the listener
        started (its accept loop, each request's) and release the port.

        A request thread ends when its answer does. A stream that waits through
        `stopping.pauser` ends at once; any other notices its closed connection at its next
        write.
        """
        if self._httpd is not None:
            httpd, self._httpd = self._httpd, None
            httpd.stopping.set()
            httpd.shutdown()
            self._thread.join()
            httpd.end_connections()
            httpd.server_close()  # joins the request threads
            self._closed()

    def _closed(self):
        """After every thread has ended: what the owner still holds goes."""
        if self._cleanup:
            self._cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Server(Listener):
    """A running emulator: `url`, `admin_url`, `runtime`, `reset()`, `close()` (every thread
    it started, the runtime's included, joined before it returns); a context manager."""

    def __init__(self, app, runtime, host="127.0.0.1", port=0, cleanup=None):
        super().__init__(app, host, port, name=f"emulator-{runtime.name}", cleanup=cleanup)
        self.runtime = runtime
        self.admin_url = self.url + runtime.admin_prefix

    def reset(self, namespace=None):
        """Reset one namespace, or every namespace when None."""
        return self.runtime.reset(namespace)

    def _closed(self):
        self.runtime.close()  # its webhook dispatcher and journal drain, joined
        super()._closed()

    def __repr__(self):
        return f"<emulator {self.runtime.name} at {self.url}>"


def serve(service, *, host="127.0.0.1", port=0, db=None, admin_key=None, settings=None,
          wall=None, **options):
    """Start `service` on host:port (0 = ephemeral) in a thread; return the running Server.

    `options` are further Settings fields (`admin_prefix`, `seed`, `on_log`, `journal_size`, …),
    applied over `settings` when it is given. Without `db` (and without `settings`) the state
    lives in a fresh temporary file, removed on close().
    """
    cleanup = None
    if settings is None:
        if db is None:
            folder = tempfile.mkdtemp(prefix=f"emulator-{service.name}-")
            db = os.path.join(folder, "emulators.sqlite3")
            cleanup = functools.partial(shutil.rmtree, folder, ignore_errors=True)
        settings = Settings(db=db, admin_key=admin_key, **options)
    elif options:
        settings = dataclasses.replace(settings, **options)
    kwargs = {"wall": wall} if wall else {}
    try:
        runtime = Runtime(service, settings, **kwargs)
        return Server(runtime, runtime, host=host, port=port, cleanup=cleanup)
    except BaseException:
        if cleanup:
            cleanup()
        raise
