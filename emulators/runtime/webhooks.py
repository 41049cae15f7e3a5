"""Webhook hub: endpoints per namespace, a delivery queue in SQLite, signed POSTs (its admin
routes are in admin/webhooks.py).

A service emits `(event, payload)` inside its request; the hub queues one delivery per
subscribed endpoint in the same transaction (a rolled-back write sends nothing). A dispatcher
thread in every process sends due deliveries in order, one namespace at a time, signs each body
(`X-Hub-Signature-256: sha256=<HMAC-SHA256 of the raw body>`, and the legacy SHA-1
`X-Hub-Signature`), adds the service's own headers for the event, records the answer's status, and
retries failures with exponential backoff; queued rows survive worker restarts: a process's
first request resumes them (`resume()`), so a restarted worker does not wait for its next
webhook activity to send what a dead one left. Delivery faults
(`duplicate`, `reorder`, `drop`) apply to the next `count` deliveries of a namespace. Scheduling
uses wall time (a frozen emulator clock must not stall retries); `created_ms` is the emulator's.
"""
import functools
import hashlib
import hmac
import json
import logging
import os
import threading
import time
import urllib.error
import urllib.request
import uuid
import weakref

from .errors import AdminError
from .state.clock import wall_ms

log = logging.getLogger(__name__)

MODES = ("duplicate", "reorder", "drop")
MAX_ATTEMPTS = 5
BACKOFF_MS = 1000  # doubled after each failed attempt: 1 s, 2 s, 4 s, 8 s
SEND_TIMEOUT_S = 5
CLAIM_MS = 30_000  # a claimed delivery whose process died is sent again after this
POLL_S = 0.25  # how often a dispatcher looks at the shared queue (others' retries included)
IDLE_ROUNDS = 40  # a dispatcher with nothing queued for this many polls (10 s) stops

_COLUMNS = ("id", "seq", "endpoint", "event", "action", "status", "attempts", "response_status",
            "created_ms", "delivered_ms", "url")


class WebhookError(AdminError):
    """A refused webhook control, in the admin envelope (400, or 404 for an unknown delivery)."""

    def __init__(self, message, status=400):
        super().__init__(message, status=status)


def sign(secret, body, digest=hashlib.sha256):
    """Return GitHub's `X-Hub-Signature-256` value for a raw body (`X-Hub-Signature`'s with
    `digest=hashlib.sha1`)."""
    return f"{digest().name}=" + hmac.new(secret.encode(), body, digest).hexdigest()


# Deliveries go straight to the registered URL, never through an *_proxy of the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def post(url, body, headers):
    """Send one delivery; return the answer's status (None when no answer came)."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with _OPENER.open(request, timeout=SEND_TIMEOUT_S) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, ValueError) as exc:
        log.info("webhook delivery to %s failed: %s", url, exc)
        return None


def parse_endpoints(body):
    """Validate a `PUT /webhook-endpoints` body: `[{url, secret?, events?}]`."""
    shape = "expected [{url, secret?, events?}]"
    if not isinstance(body, list):
        raise WebhookError(shape)
    out = []
    for item in body:
        if not (isinstance(item, dict) and isinstance(item.get("url"), str)
                and item["url"].startswith(("http://", "https://"))
                and isinstance(item.get("secret"), (str, type(None)))
                and (item.get("events") is None or (
                    isinstance(item["events"], list)
                    and all(isinstance(e, str) and e for e in item["events"])))
                and set(item) <= {"url", "secret", "events"}):
            raise WebhookError(shape)
        out.append({"url": item["url"], "secret": item.get("secret"),
                    "events": item.get("events") or ["*"]})
    return out


class WebhookHub:
    """One service's endpoints, queue and delivery faults, as rows shared by every worker."""

    def __init__(self, db, service, *, user_agent, headers=None, send=post, wall=wall_ms,
                 dispatch=True):
        self.db = db
        self.headers = headers  # (event, payload) -> the service's extra headers, or None
        self.dispatch = dispatch  # False: only flush()/run_due() send (tests that step it)
        self.service = service
        self.user_agent = user_agent
        self.send = send
        self.wall = wall
        self._wake = threading.Event()
        self._thread = None
        self._lock = threading.Lock()
        self._closed = False  # close(): this process's dispatcher is stopped for good
        self.resumed = False  # set by this process's first resume(); cleared in a forked child
        os.register_at_fork(after_in_child=functools.partial(_forked, weakref.ref(self)))

    # -- endpoints ------------------------------------------------------------------------
    def endpoints(self, namespace):
        rows = self.db.all("SELECT id, url, secret, events FROM webhook_endpoints WHERE"
                           " service=? AND namespace=? ORDER BY id", (self.service, namespace))
        return [{"id": r[0], "url": r[1], "secret": "(set)" if r[2] is not None else None,
                 "events": json.loads(r[3])} for r in rows]

    def put_endpoints(self, namespace, items, *, keep=False):
        """Replace the namespace's endpoints (add them to those there with `keep`); return the
        new ones with their ids."""
        with self.db.transaction():
            if not keep:
                self.db.execute("DELETE FROM webhook_endpoints WHERE service=? AND"
                                " namespace=?", (self.service, namespace))
            added = []
            for item in items:
                cursor = self.db.execute(
                    "INSERT INTO webhook_endpoints (service, namespace, url, secret, events)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (self.service, namespace, item["url"], item["secret"],
                     json.dumps(item["events"])))
                added.append({**item, "id": cursor.lastrowid})
        return added

    def delete_endpoints(self, namespace):
        self.db.execute("DELETE FROM webhook_endpoints WHERE service=? AND namespace=?",
                        (self.service, namespace))

    def listening(self, namespace, event):
        """Tell whether any endpoint of the namespace subscribes to `event`."""
        rows = self.db.all("SELECT events FROM webhook_endpoints WHERE service=? AND"
                           " namespace=?", (self.service, namespace))
        return any("*" in wanted or event in wanted
                   for wanted in (json.loads(row[0]) for row in rows))

    # -- queue ----------------------------------------------------------------------------
    def emit(self, namespace, event, payload, *, created_ms, endpoint=None):
        """Queue `event` for every endpoint subscribed to it (or only `endpoint`, for ping)."""
        body = json.dumps(payload, separators=(",", ":"))
        action = payload.get("action") if isinstance(payload, dict) else None
        now = self.wall()
        with self.db.transaction():
            rows = self.db.all("SELECT id, url, secret, events FROM webhook_endpoints WHERE"
                               " service=? AND namespace=? ORDER BY id",
                               (self.service, namespace))
            for hook_id, url, secret, events in rows:
                wanted = json.loads(events)
                if endpoint is not None and hook_id != endpoint:
                    continue
                if endpoint is None and "*" not in wanted and event not in wanted:
                    continue
                self.db.execute(
                    "INSERT INTO webhook_deliveries (service, namespace, id, endpoint, url,"
                    " secret, event, action, payload, status, attempts, next_ms, created_ms)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?)",
                    (self.service, namespace, str(uuid.uuid4()), hook_id, url, secret, event,
                     action, body, now, created_ms))
        self.db.after_transaction(self.wake)

    def emit_to(self, namespace, event, payload, *, url, secret, hook_id, headers=None,
                created_ms):
        """Queue `event` for one destination that is not a namespace endpoint (a GitHub App's
        webhook URL: the service decides who receives it), with its own secret, hook id and
        delivery `headers` (sent after the service's own, so they win)."""
        body = json.dumps(payload, separators=(",", ":"))
        action = payload.get("action") if isinstance(payload, dict) else None
        self.db.execute(
            "INSERT INTO webhook_deliveries (service, namespace, id, endpoint, url, secret,"
            " event, action, payload, status, attempts, next_ms, created_ms, headers)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)",
            (self.service, namespace, str(uuid.uuid4()), hook_id, url, secret, event, action,
             body, self.wall(), created_ms, json.dumps(headers) if headers else None))
        self.db.after_transaction(self.wake)

    def deliveries(self, namespace, *, every=False, event=None):
        """List deliveries, oldest first (`every`: all namespaces; `event`: one type)."""
        sql = ("SELECT " + ", ".join(_COLUMNS) + ", namespace FROM webhook_deliveries"
               " WHERE service=?")
        params = [self.service]
        if not every:
            sql += " AND namespace=?"
            params.append(namespace)
        if event:
            sql += " AND event=?"
            params.append(event)
        rows = self.db.all(sql + " ORDER BY seq", params)
        return [dict(zip((*_COLUMNS, "namespace"), row)) for row in rows]

    def events(self, namespace):
        """List the namespace's queued events with their decoded payloads, oldest first."""
        rows = self.db.all("SELECT id, event, action, payload, status FROM webhook_deliveries"
                           " WHERE service=? AND namespace=? ORDER BY seq",
                           (self.service, namespace))
        return [{"id": r[0], "event": r[1], "action": r[2], "status": r[4],
                 "payload": json.loads(r[3])} for r in rows]

    def replay(self, namespace, delivery_id):
        """Queue a delivery again, as GitHub's redelivery does (same `X-GitHub-Delivery`)."""
        with self.db.transaction():
            row = self.db.one("SELECT endpoint, url, secret, event, action, payload, created_ms,"
                              " headers FROM webhook_deliveries WHERE service=? AND namespace=?"
                              " AND id=? ORDER BY seq LIMIT 1",
                              (self.service, namespace, delivery_id))
            if row is None:
                raise WebhookError(f"no delivery {delivery_id}", 404)
            self.db.execute(
                "INSERT INTO webhook_deliveries (service, namespace, id, endpoint, url, secret,"
                " event, action, payload, status, attempts, next_ms, created_ms, headers)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)",
                (self.service, namespace, delivery_id, *row[:6], self.wall(), *row[6:]))
        self.wake()

    def set_fault(self, namespace, body):
        """Arm a delivery fault for the namespace's next `count` deliveries (default 1)."""
        if not isinstance(body, dict) or body.get("mode") not in MODES:
            raise WebhookError("mode must be duplicate, reorder or drop")
        count = body.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise WebhookError("count must be a positive integer")
        self.db.execute("INSERT INTO webhook_faults (service, namespace, mode, remaining)"
                        " VALUES (?, ?, ?, ?) ON CONFLICT (service, namespace) DO UPDATE SET"
                        " mode=excluded.mode, remaining=excluded.remaining",
                        (self.service, namespace, body["mode"], count))
        out = {"namespace": namespace, "mode": body["mode"]}
        if "count" in body:
            out["count"] = count
        return out

    def clear(self, namespace=None):
        """Reset: forget one namespace's queue, deliveries and faults (its endpoints stay, as
        configuration), or everything, endpoints included, when `namespace` is None
        (`reset?all=1`)."""
        tables = ["webhook_deliveries", "webhook_faults"]
        if namespace is None:
            tables.append("webhook_endpoints")
        for table in tables:
            if namespace is None:
                self.db.execute(f"DELETE FROM {table} WHERE service=?", (self.service,))
            else:
                self.db.execute(f"DELETE FROM {table} WHERE service=? AND namespace=?",
                                (self.service, namespace))

    def pending(self, namespace=None):
        sql = ("SELECT count(*) FROM webhook_deliveries WHERE service=? AND status IN"
               " ('pending', 'sending')")
        params = [self.service]
        if namespace is not None:
            sql += " AND namespace=?"
            params.append(namespace)
        return self.db.one(sql, params)[0]

    # -- delivery -------------------------------------------------------------------------
    def flush(self, namespace=None):
        """Send everything queued now, retries included, until nothing is left to try."""
        while True:
            self.db.execute("UPDATE webhook_deliveries SET next_ms=? WHERE service=? AND"
                            " status='pending'" + (" AND namespace=?" if namespace else ""),
                            (self.wall(), self.service, *([namespace] if namespace else [])))
            if self.run_due():
                continue
            if not self.pending(namespace):
                return
            time.sleep(0.01)  # another process's dispatcher is sending one: wait for it

    def run_due(self):
        """Send every due delivery, in order per namespace; return how many were attempted."""
        sent = 0
        while not self._closed:
            claimed = self._claim()
            if claimed is None:
                return sent
            self._deliver(*claimed)
            sent += 1
        return sent

    def _claim(self):
        """Take the oldest due delivery of a namespace with nothing in flight (or None).

        Applies the namespace's fault: `reorder` takes the second-oldest first, `drop` marks
        it dropped unsent; `duplicate` is returned as a flag for the sender.
        """
        now = self.wall()
        with self.db.transaction():
            self.db.execute("UPDATE webhook_deliveries SET status='pending' WHERE service=? AND"
                            " status='sending' AND next_ms<?", (self.service, now - CLAIM_MS))
            rows = self.db.all(
                "SELECT d.seq, d.namespace FROM webhook_deliveries d WHERE d.service=? AND"
                " d.status='pending' AND NOT EXISTS (SELECT 1 FROM webhook_deliveries s WHERE"
                " s.service=d.service AND s.namespace=d.namespace AND s.status='sending')"
                " AND d.seq=(SELECT min(seq) FROM webhook_deliveries p WHERE"
                " p.service=d.service AND p.namespace=d.namespace AND p.status='pending')"
                " AND d.next_ms<=? ORDER BY d.seq LIMIT 1", (self.service, now))
            if not rows:
                return None
            seq, namespace = rows[0]
            fault = self.db.one("SELECT mode, remaining FROM webhook_faults WHERE service=? AND"
                                " namespace=?", (self.service, namespace))
            mode = None
            if fault:
                mode = fault[0]
                if fault[1] <= 1:
                    self.db.execute("DELETE FROM webhook_faults WHERE service=? AND namespace=?",
                                    (self.service, namespace))
                else:
                    self.db.execute("UPDATE webhook_faults SET remaining=remaining-1 WHERE"
                                    " service=? AND namespace=?", (self.service, namespace))
            if mode == "reorder":
                later = self.db.one("SELECT seq FROM webhook_deliveries WHERE service=? AND"
                                    " namespace=? AND status='pending' AND seq>? ORDER BY seq"
                                    " LIMIT 1", (self.service, namespace, seq))
                if later:
                    seq = later[0]
            if mode == "drop":
                self.db.execute("UPDATE webhook_deliveries SET status='dropped', attempts=1"
                                " WHERE seq=?", (seq,))
                return None, False  # consumed unsent; the caller's loop goes on
            self.db.execute("UPDATE webhook_deliveries SET status='sending', next_ms=? WHERE"
                            " seq=?", (now, seq))
            row = self.db.one("SELECT seq, id, endpoint, url, secret, event, payload, attempts,"
                              " headers FROM webhook_deliveries WHERE seq=?", (seq,))
        return row, mode == "duplicate"

    def _deliver(self, row, duplicate):
        if row is None:
            return
        seq, delivery_id, hook_id, url, secret, event, payload, attempts, own = row
        body = payload.encode()
        headers = {"Content-Type": "application/json", "User-Agent": self.user_agent,
                   "X-GitHub-Event": event, "X-GitHub-Delivery": delivery_id,
                   "X-GitHub-Hook-Id": str(hook_id)}
        if self.headers is not None:
            headers.update(self.headers(event, json.loads(payload)))
        if own:
            headers.update(json.loads(own))
        if secret is not None:
            headers["X-Hub-Signature"] = sign(secret, body, hashlib.sha1)
            headers["X-Hub-Signature-256"] = sign(secret, body)
        status = self.send(url, body, headers)
        if duplicate and status is not None and 200 <= status < 300:
            status = self.send(url, body, headers)
        attempts += 1
        now = self.wall()
        if status is not None and 200 <= status < 300:
            self.db.execute("UPDATE webhook_deliveries SET status='delivered', attempts=?,"
                            " response_status=?, delivered_ms=? WHERE seq=?",
                            (attempts, status, now, seq))
        elif attempts >= MAX_ATTEMPTS:
            self.db.execute("UPDATE webhook_deliveries SET status='failed', attempts=?,"
                            " response_status=? WHERE seq=?", (attempts, status, seq))
        else:
            self.db.execute("UPDATE webhook_deliveries SET status='pending', attempts=?,"
                            " response_status=?, next_ms=? WHERE seq=?",
                            (attempts, status, now + BACKOFF_MS * 2 ** (attempts - 1), seq))

    # -- the dispatcher thread ------------------------------------------------------------
    def resume(self):
        """Once per process (its first request calls it): start the dispatcher when the shared
        queue holds deliveries of any namespace, such as those a restarted worker left."""
        self.resumed = True
        if self.dispatch and self.pending():
            self.wake()

    def wake(self):
        """Start this process's dispatcher if needed and have it look at the queue now."""
        if not self.dispatch:
            return
        with self._lock:
            if self._closed:
                return
            self._wake.set()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._dispatch, daemon=True,
                                                name=f"webhooks-{self.service}")
                self._thread.start()

    def _dispatch(self):
        """Send due deliveries; stop after IDLE_ROUNDS rounds with nothing queued (the next
        wake() starts a new thread), so idle hubs cost nothing."""
        idle = 0
        while True:
            self._wake.wait(timeout=POLL_S)
            self._wake.clear()
            if self._closed:
                return
            try:
                self.run_due()
                idle = 0 if self.pending() else idle + 1
            except Exception:  # noqa: BLE001 - one bad row must not stop every later delivery
                log.exception("webhook dispatcher: delivery round failed")
            if idle >= IDLE_ROUNDS:
                with self._lock:
                    if not self._wake.is_set():  # a wake() in between keeps this thread on
                        self._thread = None
                        return


    def close(self):
        """Stop this process's dispatcher and wait for it: a delivery in flight ends first
        (within SEND_TIMEOUT_S), the rest stay queued in the database; no later wake() starts
        one. The server closing its emulator calls it, so no thread outlives the server."""
        with self._lock:
            self._closed = True
            thread, self._thread = self._thread, None
            self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join()


def _forked(hub_ref):
    """A forked child has none of its parent's threads: its first request resumes anew."""
    hub = hub_ref()
    if hub is not None:
        hub.resumed = False
        hub._thread = None
        hub._lock = threading.Lock()
        hub._wake = threading.Event()
