"""What a test holds of an emulator: its URLs and Python helpers over its admin plane, one
namespace at a time (the pytest fixtures and the portless mocks hand these out).

Every helper is one admin call. A handle reaches the admin plane through a transport: HTTP for
a served emulator (the standard library's urllib, so no client library is needed and the
portless mode never catches it) or a direct call of the WSGI app in this process.
"""
import hashlib
import json
import time
import urllib.error
import urllib.request
from urllib.parse import quote, urlencode

from .runtime.intercept import Route, call, environ_for
from .runtime.settings import DEFAULT_ADMIN_PREFIX

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, no proxy


class ControlError(Exception):
    """An admin call the emulator refused: `status` and the parsed `body`."""

    def __init__(self, method, path, status, body):
        message = body.get("error", body) if isinstance(body, dict) else body
        if isinstance(message, dict):
            message = message.get("message", message)
        super().__init__(f"{method} {path}: {status} {message}")
        self.status, self.body = status, body


class HttpTransport:
    """Admin calls over HTTP to a served emulator (with its admin key, when it has one)."""

    def __init__(self, admin_key=None, timeout=30):
        self.admin_key, self.timeout = admin_key, timeout

    def __call__(self, method, url, body):
        headers = {"content-type": "application/json"} if body is not None else {}
        if self.admin_key:
            headers["x-mockingbird-admin-key"] = self.admin_key
        request = urllib.request.Request(url, data=body, headers=headers, method=method)
        try:
            with _OPENER.open(request, timeout=self.timeout) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as refused:
            return refused.code, refused.read()


class WsgiTransport:
    """Admin calls straight into an emulator's WSGI app in this process (no port)."""

    def __init__(self, base_url, app):
        self.route = Route(base_url, app)

    def __call__(self, method, url, body):
        headers = [("content-type", "application/json")] if body is not None else []
        environ = environ_for(self.route, method, url, headers, body or b"")
        status, _, _, chunks = call(self.route, environ)
        return status, b"".join(chunks)


class Handle:
    """One namespace of one emulator: `url` (give it to the client under test: it carries the
    namespace), `admin_url`, `ns` (the namespace's name), `service`, and the helpers."""

    def __init__(self, service, base_url, transport, *, ns="default",
                 admin_prefix=DEFAULT_ADMIN_PREFIX, server=None):
        self.service, self.ns, self.server = service, ns, server
        self.base_url = base_url.rstrip("/")
        self.admin_prefix = admin_prefix
        self.admin_url = self.base_url + admin_prefix
        self.url = self.base_url if ns == "default" else f"{self.admin_url}/ns/{quote(ns)}"
        self._transport = transport
        self.views = []  # the namespaces handed out by namespace(), for the fixtures' reset

    def __repr__(self):
        return f"<{self.service} emulator at {self.url} (namespace {self.ns})>"

    # -- any admin route ----------------------------------------------------------------------
    def admin(self, method, path, body=None, **query):
        """Call an admin route of this namespace (`path` under the admin prefix); return its
        parsed JSON, or raise ControlError for a 4xx/5xx answer."""
        query = {"namespace": self.ns, **{k: v for k, v in query.items() if v is not None}}
        url = f"{self.admin_url}{path}?{urlencode(query)}"
        data = None if body is None else json.dumps(body).encode()
        status, raw = self._transport(method, url, data)
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode("utf-8", "replace")
        if status >= 400:
            raise ControlError(method, path, status, parsed)
        return parsed

    # -- what every emulator has --------------------------------------------------------------
    def namespace(self, name):
        """A handle on namespace `name` of the same emulator, with its own `url`."""
        view = type(self)(self.service, self.base_url, self._transport, ns=name,
                          admin_prefix=self.admin_prefix, server=self.server)
        self.views.append(view)
        return view

    def reset(self, *, keep=()):
        """Wipe this namespace (records, timeline, faults, clock, journal, metrics, queued
        webhooks); `keep` spares some of "faults", "clock", "journal", "metrics"."""
        return self.admin("POST", "/reset", keep=",".join(keep) or None)

    def clock(self, **fields):
        """Read this namespace's clock, or change it: `set` (ISO 8601 or epoch ms), `advance`
        ("15m", "2h", ms), `freeze`, `resume`, `reset` (one call, applied atomically)."""
        if not fields:
            return self.admin("GET", "/clock")
        return self.admin("POST", "/clock", fields)

    def fault(self, rule=None, **fields):
        """Arm a fault rule (match `operationId`/`method`/`path`/`pathPrefix`; act with
        `status`+`body`+`headers`, `delayMs`, `drop`, `effect`; limit with `count`, `after`,
        `rate`); return it with its `id`."""
        return self.admin("POST", "/faults", {**(rule or {}), **fields})

    def preset(self, name, **overrides):
        """Apply one of the service's fault presets (`presets()` lists them)."""
        return self.admin("POST", f"/faults/presets/{quote(name)}", overrides)

    def presets(self):
        """The service's fault presets: {name: description}."""
        listed = self.admin("GET", "/faults/presets")["presets"]
        return {preset["name"]: preset["description"] for preset in listed}

    def faults(self):
        """The namespace's fault rules, with what each has matched."""
        return self.admin("GET", "/faults")["faults"]

    def clear_faults(self):
        """Delete every fault rule of the namespace."""
        return self.admin("DELETE", "/faults")

    def journal(self, **query):
        """The calls the namespace received, oldest first (metadata only: method, path,
        operationId, status, faultId...); `operationId`, `status`, `since`, `after`, `limit`
        filter them."""
        return self.admin("GET", "/requests", **query)["requests"]

    def checkpoint(self):
        """Save the namespace now; return the checkpoint's id (for `restore`)."""
        return self.admin("POST", "/checkpoints")["id"]

    def restore(self, checkpoint):
        """Put the namespace back as it was at `checkpoint`."""
        return self.admin("POST", "/branches/main/checkout", {"checkpoint": checkpoint})

    @property
    def webhooks(self):
        """The namespace's webhooks (None for a service that sends none)."""
        return None


class Webhooks:
    """Where a namespace's webhook events go, and what was delivered."""

    def __init__(self, handle):
        self._handle = handle

    def register(self, url, *, secret=None, events=None):
        """Add an endpoint (`events`: the event names it wants, default all); the service
        sends it a `ping` first. Return it with its `id`."""
        body = {"url": url, "secret": secret, "events": events}
        return self._handle.admin("POST", "/webhook-endpoints",
                                  {k: v for k, v in body.items() if v is not None})

    def endpoints(self):
        """The registered endpoints (secrets shown as "(set)")."""
        return self._handle.admin("GET", "/webhook-endpoints")["endpoints"]

    def clear(self):
        """Remove every endpoint of the namespace."""
        return self._handle.admin("DELETE", "/webhook-endpoints")

    def deliveries(self, event=None):
        """Every delivery, oldest first: `id`, `event`, `action`, `status` (pending, sending,
        delivered, failed, dropped), `attempts`, `response_status`, `url`."""
        return self._handle.admin("GET", "/webhooks", type=event)["deliveries"]

    def deliver(self):
        """Send everything queued now, retries included, and return when none is left."""
        return self._handle.admin("POST", "/webhooks/flush")

    def wait_until_idle(self, timeout=10.0):
        """Wait until no delivery is pending or being sent (the dispatcher sends in the
        background); return the deliveries, or raise TimeoutError listing them."""
        deadline = time.monotonic() + timeout
        while True:
            deliveries = self.deliveries()
            if not any(d["status"] in ("pending", "sending") for d in deliveries):
                return deliveries
            if time.monotonic() >= deadline:
                raise TimeoutError(f"webhooks still pending after {timeout} s: {deliveries}")
            time.sleep(0.02)

    def fault(self, mode, count=None):
        """Have the namespace's next `count` (default 1) deliveries `duplicate`d, `reorder`ed
        or `drop`ped."""
        body = {"mode": mode} if count is None else {"mode": mode, "count": count}
        return self._handle.admin("POST", "/webhooks/faults", body)


class GitHubHandle(Handle):
    """The GitHub emulator's namespace: the shared helpers, `seed_repository`, `move_ref`,
    `create_app`, `install_app`, `rate_limits` and `webhooks`."""

    def seed_repository(self, owner, name, *, commits=None, branches=None,
                        default_branch="main", **fields):
        """Create a repository; return it as the API shows it.

        `commits` are `{sha, parents}` objects, or SHAs each the child of the one before;
        by default one commit. `branches` maps names to SHAs; by default the default branch
        points at the last commit.
        """
        if commits is None:
            commits = [hashlib.sha1(f"{owner}/{name}".encode()).hexdigest()]
        graph, parent = [], None
        for commit in commits:
            if isinstance(commit, str):
                commit = {"sha": commit, "parents": [parent] if parent else []}
            graph.append(commit)
            parent = commit["sha"]
        if branches is None:
            branches = {default_branch: parent} if parent else {}
        body = {"owner": owner, "name": name, "commits": graph, "branches": branches,
                "default_branch": default_branch, **fields}
        return self.admin("POST", "/github/repositories", body)["repository"]

    def move_ref(self, owner, repo, ref, sha):
        """Someone else fast-forwards a branch (`ref`: "heads/main" or "main")."""
        return self.admin("POST", "/github/refs/move",
                          {"owner": owner, "repo": repo, "ref": ref, "sha": sha})

    def create_app(self, slug, *, permissions, installations=(), **fields):
        """Register a GitHub App; return `{app, private_key, installations}` (`private_key`:
        the PEM its JWTs are signed with, unless `private_key=` brought one).

        `installations` are account logins (every repository of the account) or `{account,
        repositories?: [names], permissions?}`; `fields` are `name`, `owner`, `description`,
        `events`, `private_key`, `webhook_url`, `webhook_secret`.
        """
        body = {"slug": slug, "permissions": permissions, **fields,
                "installations": [{"account": item} if isinstance(item, str) else item
                                  for item in installations]}
        return self.admin("POST", "/github/apps", body)

    def install_app(self, slug, account, *, repositories="all", permissions=None):
        """Install a registered App on an account (all its repositories, or some by name), or
        widen the installation it has there; return the installation."""
        body = {"account": account, "repositories": repositories}
        if permissions is not None:
            body["permissions"] = permissions
        return self.admin("POST", f"/github/apps/{quote(slug)}/installations",
                          body)["installation"]

    def rate_limits(self, **limits):
        """The namespace's rate limits: `rate_limits(core=100, search=5, graphql=50)` gives
        every caller those requests per window from now on (left out or None: GitHub's
        default, 60 an hour without a token, 5,000 with one); without arguments, read them.
        Returns `{core, search, graphql}`, None where GitHub's default holds."""
        if not limits:
            return self.admin("GET", "/github/rate-limits")
        return self.admin("PUT", "/github/rate-limits", limits)

    @property
    def webhooks(self):
        return Webhooks(self)


class HermesHandle(Handle):
    """The Hermes emulator's namespace: the shared helpers, `script_reply` and `observe`."""

    def script_reply(self, *replies, **reply):
        """Queue the next replies of chat completions and responses, first in first out:
        `script_reply(text="Hi")`, `script_reply(deltas=["Let me ", {"tool": ...}, "look."])`,
        `script_reply(failed=True, error="provider unavailable")`, or several reply dicts."""
        queued = [*replies, *([reply] if reply else [])]
        if not queued:
            raise TypeError("script_reply() needs a reply: text=..., deltas=... or a dict")
        return self.admin("POST", "/hermes/replies", {"replies": queued})["replies"]

    def observe(self, run_id, body=None, **fields):
        """Move a run of the runs API: `observe(run_id, status="completed", output="42.")`
        (also `events`, `usage`, `error`, `approval`...)."""
        return self.admin("POST", f"/hermes/runs/{quote(run_id, safe='')}/observe",
                          {**(body or {}), **fields})


HANDLES = {"github": GitHubHandle, "hermes": HermesHandle}


def handle(service, base_url, transport, **options):
    """The handle class of `service` over `base_url`."""
    return HANDLES.get(service, Handle)(service, base_url, transport, **options)
