"""A small client of the Hermes Agent runs API (stdlib only, so cron needs nothing more)."""
import http.client
import json
import urllib.parse


class HermesUnreachable(Exception):
    """No HTTP answer: refused, reset, dropped or timed out. The request may have been applied."""


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


class HermesClient:
    """POST /v1/runs, GET /v1/runs/{id}, POST /v1/runs/{id}/stop against `base_url`."""

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
        return self._call("GET", f"/v1/runs/{urllib.parse.quote(run_id, safe='')}")

    def stop_run(self, run_id):
        return self._call("POST", f"/v1/runs/{urllib.parse.quote(run_id, safe='')}/stop", {})

    def _call(self, method, path, body=None, headers=None):
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=self._timeout_s)
        all_headers = {"Accept": "application/json", **(headers or {})}
        if self._api_key:
            all_headers["Authorization"] = f"Bearer {self._api_key}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            all_headers["Content-Type"] = "application/json"
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
