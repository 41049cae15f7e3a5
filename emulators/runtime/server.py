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


class _Handler(WSGIRequestHandler):
    """Expose the socket so a drop fault can close it; keep the test output quiet."""

    def get_environ(self):
        environ = super().get_environ()
        if self.headers.get("content-type") is None:
            environ.pop("CONTENT_TYPE", None)  # wsgiref invents text/plain; report the truth
        environ["emulators.socket"] = self.connection
        return environ

    def log_message(self, format, *args):
        pass


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    """Keeps its request threads (ThreadingMixIn joins them in server_close) and their open
    connections, so closing can end a stream that would otherwise hold its thread."""

    daemon_threads = True
    allow_reuse_address = True
    block_on_close = True

    def server_activate(self):
        super().server_activate()
        self.connections = set()
        self.connections_lock = threading.Lock()

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

        A request thread ends when its answer does; a stream notices its closed connection
        at its next write (a Hermes run stream writes at least a keepalive every 30 s).
        """
        if self._httpd is not None:
            httpd, self._httpd = self._httpd, None
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
