"""A webhook receiver as an app would write one: a small WSGI app on loopback that checks
`X-Hub-Signature-256` with the standard algorithm and keeps what it was sent."""
import hashlib
import hmac
import json
import threading
import time
from wsgiref.simple_server import WSGIRequestHandler, make_server


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


class Receiver:
    """Collect deliveries; answer each with the next of `statuses` (then 204)."""

    def __init__(self, secret=None, statuses=(), port=0):
        self.secret = secret
        self.statuses = list(statuses)
        self.received = []  # (headers, payload) of every correctly signed delivery
        self.refused = []   # deliveries whose signature did not verify
        self._lock = threading.Lock()
        self._server = make_server("127.0.0.1", port, self.app, handler_class=_Quiet)
        self.url = f"http://127.0.0.1:{self._server.server_port}/hook"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        daemon=True)
        self._thread.start()

    def app(self, environ, start_response):
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        headers = {k[5:].replace("_", "-").title(): v for k, v in environ.items()
                   if k.startswith("HTTP_")}
        headers["Content-Type"] = environ.get("CONTENT_TYPE", "")
        with self._lock:
            status = self.statuses.pop(0) if self.statuses else 204
            if self.secret is not None:
                expected = "sha256=" + hmac.new(self.secret.encode(), body,
                                                hashlib.sha256).hexdigest()
                if not hmac.compare_digest(expected, headers.get("X-Hub-Signature-256", "")):
                    self.refused.append(body)
                    status = 401
            if status < 300 and body not in self.refused:
                self.received.append((headers, json.loads(body)))
        start_response(f"{status} X", [("Content-Length", "0")])
        return [b""]

    def events(self):
        """(event, action) of every accepted delivery, in arrival order."""
        with self._lock:
            return [(h["X-Github-Event"], p.get("action")) for h, p in self.received]

    def wait_for(self, count, timeout=10):
        """Wait until `count` deliveries were accepted; return them."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.received) >= count:
                    return list(self.received)
            time.sleep(0.02)
        raise AssertionError(f"{len(self.received)} of {count} deliveries arrived")

    def close(self):
        self._server.shutdown()
        self._server.server_close()
