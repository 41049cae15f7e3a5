"""A small client of the Hermes Agent runs API (stdlib only, so cron needs nothing more)."""
import http.client
import json
import socket
import threading
import urllib.parse


class HermesUnreachable(Exception):
    """No HTTP answer: refused, reset, dropped or timed out.

    `sent` is False only when no connection was made (the request cannot have been applied);
    otherwise the request may have been applied.
    """

    def __init__(self, message, *, sent=True):
        super().__init__(message)
        self.sent = sent


class HermesAnswer:
    """Status, headers and parsed JSON body (None when the body is not JSON)."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def retry_after_s(self, default):
        try:
            return max(0, int(self.headers.get("retry-after", "")))
        except ValueError:
            return default

    def error_text(self):
        error = (self.body or {}).get("error") if isinstance(self.body, dict) else None
        if isinstance(error, dict):
            return f"{error.get('code') or error.get('type')}: {error.get('message')}"
        return f"HTTP {self.status}"


class EventStream:
    """One subscription to a run's event stream: `events()` yields each data frame's JSON
    object; `close()` (from any thread) ends it. A read that waits longer than the idle timeout
    ends it too (Hermes sends a keepalive comment every 30 s while a run is quiet)."""

    def __init__(self, conn, response):
        self._conn = conn
        self._response = response
        self._lock = threading.Lock()
        self._closed = self._reading = False

    def events(self):
        with self._lock:
            if self._closed:
                self._conn.close()
                return
            self._reading = True
        data = []
        try:
            while True:
                line = self._response.readline()
                if not line:
                    return
                line = line.rstrip(b"\r\n")
                if line.startswith(b"data:"):
                    data.append(line[5:].lstrip(b" "))
                elif not line and data:
                    try:
                        event = json.loads(b"\n".join(data))
                    except ValueError:
                        event = None
                    data = []
                    if isinstance(event, dict):
                        yield event
        except (OSError, http.client.HTTPException, ValueError):
            return  # closed, reset or timed out: the stream is over for us
        finally:
            with self._lock:
                self._reading = False
            self._conn.close()

    def close(self):
        """End the stream. While a reader waits in `events()`, only wake it (shut the socket
        down): it closes the connection itself, as closing it here too would pull the
        response out from under http.client in the middle of its read."""
        with self._lock:
            self._closed = True
            reading = self._reading
        sock = self._conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if not reading:
            self._conn.close()


class HermesClient:
    """The runs API calls the relay makes against `base_url`: submit, poll, stop, approve,
    the run's event stream, and the server's capabilities."""

    def __init__(self, base_url, *, api_key="", timeout_s=10.0):
        self.base_url = base_url
        parts = urllib.parse.urlsplit(base_url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._api_key = api_key
        self._timeout_s = timeout_s

    def submit_run(self, body, *, idempotency_key):
        return self._call("POST", "/v1/runs", body, {"Idempotency-Key": idempotency_key})

    def get_run(self, run_id):
        return self._call("GET", _run_path(run_id))

    def stop_run(self, run_id):
        return self._call("POST", _run_path(run_id, "/stop"), {})

    def approve(self, run_id, choice):
        return self._call("POST", _run_path(run_id, "/approval"), {"choice": choice})

    def session_messages(self, session_id):
        return self._call("GET", f"/api/sessions/{urllib.parse.quote(session_id, safe='')}"
                                 "/messages")

    def capabilities(self):
        return self._call("GET", "/v1/capabilities")

    def honours_idempotency_keys(self):
        """True when the server says it replays a run for a repeated Idempotency-Key (newer
        Hermes builds list `idempotency.supported` in their capabilities; 0.19.0 does not, and
        ignores the header: a repeated submission there is a second run)."""
        answer = self.capabilities()
        body = answer.body if answer.status == 200 and isinstance(answer.body, dict) else {}
        block = body.get("idempotency")
        return isinstance(block, dict) and block.get("supported") is True

    def events(self, run_id, *, idle_timeout_s):
        """Subscribe to the run's event stream: an EventStream, or None when Hermes refuses.

        Hermes gives a run's events to its first subscriber only; do not subscribe twice.
        """
        path = _run_path(run_id, "/events")
        conn = self._connection(idle_timeout_s)
        try:
            conn.request("GET", self._prefix + path, headers=self._headers(
                {"Accept": "text/event-stream"}))
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise HermesUnreachable(f"GET {path}: {exc.__class__.__name__}: {exc}") from exc
        if response.status != 200:
            conn.close()
            return None
        return EventStream(conn, response)

    def _connection(self, timeout_s):
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=timeout_s)

    def _headers(self, headers):
        all_headers = {"Accept": "application/json", **headers}
        if self._api_key:
            all_headers["Authorization"] = f"Bearer {self._api_key}"
        return all_headers

    def _call(self, method, path, body=None, headers=None):
        conn = self._connection(self._timeout_s)
        all_headers = self._headers(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            all_headers["Content-Type"] = "application/json"
        try:
            conn.connect()
        except OSError as exc:
            conn.close()
            raise HermesUnreachable(f"{method} {path}: {exc.__class__.__name__}: {exc}",
                                    sent=False) from exc
        try:
            conn.request(method, self._prefix + path, body=data, headers=all_headers)
            answer = conn.getresponse()
            raw = answer.read()
        except (OSError, http.client.HTTPException) as exc:
            raise HermesUnreachable(f"{method} {path}: {exc.__class__.__name__}: {exc}") from exc
        finally:
            conn.close()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return HermesAnswer(answer.status, {k.lower(): v for k, v in answer.getheaders()}, parsed)


def _run_path(run_id, suffix=""):
    """The path of a run (and of one of its routes), its id quoted whole."""
    return f"/v1/runs/{urllib.parse.quote(run_id, safe='')}{suffix}"
