"""`Emulator`: one service's state and the operations on it (namespaces, instances, reset),
and the one answer to "where does this request go?" (`locate`, then `operation`). No WSGI
here: the pipeline (app.py), the admin plane and the fleet take an Emulator and run requests
over it.
"""
import io
import re
import time
from urllib.parse import parse_qs

from .instance import Instance
from .mount import PREFIX
from .names import NAMESPACE_ENVIRON
from .openapi import OperationMatcher
from .settings import Settings
from .state.clock import Clocks, wall_ms
from .state.credentials import Credentials
from .state.db import Database
from .state.faults import Faults
from .state.journal import Journal
from .state.objects import Objects, delete_namespace
from .state.quotas import Quotas
from .state.rng import seed_state
from .state.shapes import ShapeCache
from .state.timeline import MAIN, Timeline, storage_key
from .webhooks import WebhookHub

PROVIDER, ADMIN = "provider", "admin"


def create_emulator(service, settings=None, *, wall=wall_ms, db=None):
    """Build a service's Emulator over the SQLite file of `settings` (or the Database `db`)."""
    settings = settings or Settings()
    if not PREFIX.match(settings.admin_prefix):
        raise ValueError("adminPrefix must be an absolute non-root path of literal segments,"
                         " without a trailing slash")
    return Emulator(service, settings, db or Database(settings.db), wall)


class Emulator:
    """Everything a test steers for one service, all of it rows in the shared database."""

    def __init__(self, service, settings, db, wall):
        self.service = service
        self.name = service.name
        self.version = service.version
        self.settings = settings
        self.admin_prefix = settings.admin_prefix
        self.db = db
        self.clocks = Clocks(db, self.name, wall=wall)
        self.faults = Faults(db, self.name, seed=settings.seed)
        self.matcher = OperationMatcher(service.openapi)
        self.journal = Journal(db, self.name, size=settings.journal_size,
                               has_document=self.matcher.has_document)
        self.shapes = ShapeCache(db, self.name)
        self.timeline = Timeline(db, self.name, self.clocks, seed_state(settings.seed),
                                 settings.max_checkpoints)
        self.credentials = Credentials(db, self.name)
        self.quotas = Quotas(db, self.name)  # rate-limit windows a service counts
        # the webhook hub (webhooks.py), only for services that emit events
        self.webhooks = WebhookHub(db, self.name, user_agent=service.webhook_user_agent,
                                   headers=service.webhook_headers) if service.webhooks else None
        self.started = time.monotonic()
        self._credential = getattr(service, "credential", None)  # None: no lookup per request
        self._operation_path = getattr(service, "operation_path", None)  # None: the path itself
        self._body_operations = dict(getattr(service, "body_operations", None) or {})
        self._reads = frozenset(getattr(service, "read_operations", ()))
        self._limits = dict(getattr(service, "body_limits", None) or {})
        self._carrier = re.compile("^" + re.escape(self.admin_prefix) + r"/ns/([^/]*)(/.*)?\Z")
        self._known = set()

    def locate(self, environ):
        """Return (plane, namespace, path, carrier) of a request.

        `plane` is PROVIDER or ADMIN; `path` is what follows the `/__admin/ns/<name>` carrier
        (when there is one: `carrier` is its name, else None). The namespace, unchecked: on
        the admin plane `?namespace=`, then the header or the carrier, then `default`; on
        provider routes the header, the carrier, the credential map, then `default`.
        """
        path = environ.get("PATH_INFO") or "/"
        header = environ.get(NAMESPACE_ENVIRON)
        prefix = self.admin_prefix
        carrier = None
        if path.startswith(prefix):
            match = self._carrier.match(path)
            if match:
                carrier, path = match.group(1), match.group(2) or "/"
            if path == prefix or path.startswith(prefix + "/"):
                query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
                given = query.get("namespace", [""])[-1]
                return (ADMIN, given or (header if header is not None else carrier) or "default",
                        path, carrier)
        if header is not None:
            return PROVIDER, header, path, carrier
        if carrier:
            return PROVIDER, carrier, path, carrier
        if self._credential is not None:  # the credential map
            return PROVIDER, self.credentials.resolve(self._credential, environ), path, carrier
        return PROVIDER, "default", path, carrier

    def operation(self, method, path):
        """Return the operationId of a provider request (None when unmatched), matched on the
        path the service's `operation_path` gives (the path itself when it declares none)."""
        if self._operation_path is not None:
            path = self._operation_path(path)
        return self.matcher.match(method, path)

    def body_limit(self, operation):
        """The largest body a request of `operation` may send (`body_limits`, else
        `EMULATORS_MAX_BODY`)."""
        return self._limits.get(operation, self.settings.max_body)

    def call_operation(self, method, path, environ):
        """Return (operationId or None, reads) of a provider request: the operation matched
        (`operation`), or the one its body names for an operation the service names so
        (`body_operations`: GraphQL's queries and mutations share one route); `reads` tells
        whether it runs as a read (`read_operations`, or as the body's name says)."""
        operation = self.operation(method, path)
        name = self._body_operations.get(operation)
        length = environ.get("CONTENT_LENGTH") or ""
        # a body without a Content-Length or past the limit keeps the matched operation (the
        # handler's read refuses it); one that is read is handed on unchanged
        if name is None or not length.isdigit() or int(length) > self.body_limit(operation):
            return operation, operation in self._reads
        body = environ["wsgi.input"].read(int(length))
        environ["wsgi.input"] = io.BytesIO(body)
        return name(body)

    def touch(self, namespace):
        """Remember a namespace (the list only grows)."""
        if namespace not in self._known:
            self.db.execute("INSERT OR IGNORE INTO namespaces (service, namespace) VALUES (?, ?)",
                            (self.name, namespace))
            self._known.add(namespace)

    def namespaces(self):
        """Return every namespace seen, sorted, `default` included."""
        rows = self.db.all("SELECT namespace FROM namespaces WHERE service=?", (self.name,))
        return sorted({"default", *(row[0] for row in rows)})

    def instance(self, namespace="default", branch=MAIN, *, method="GET", base_url="", hits=()):
        """Return an instance over a namespace's branch (for admin routes, tests and tools)."""
        self.touch(namespace)
        return Instance(self, namespace, branch, storage_key(namespace, branch), method=method,
                        base_url=base_url, hits=hits)

    def objects(self, namespace, scope):
        """Return the immutable objects of one scope (a repository) of a namespace."""
        return Objects(self.db, self.name, namespace, scope)

    def close(self):
        """Stop and join every thread this emulator started in this process (the webhook
        dispatcher, a journal drain) and close this thread's connection; the state stays in
        the database."""
        if self.webhooks is not None:
            self.webhooks.close()
        self.journal.close()
        self.db.close()

    def reset(self, namespace=None, keep=()):
        """Reset one namespace (or every namespace when None); `keep` names parts to spare."""
        targets = self.namespaces() if namespace is None else [namespace]
        with self.db.transaction():
            for table in ("records", "sequences", "rngs"):
                if namespace is None:
                    self.db.execute(f"DELETE FROM {table} WHERE service=? AND key NOT LIKE"
                                    " '!faults:%'", (self.name,))
                else:
                    self.db.execute(f"DELETE FROM {table} WHERE service=? AND namespace=? AND"
                                    " key NOT LIKE '!faults:%'", (self.name, namespace))
            self.timeline.reset(namespace)
            delete_namespace(self.db, self.name, namespace)
            self.quotas.reset(namespace)
            if "faults" not in keep:
                self.faults.reset(namespace)
            if "clock" not in keep:
                self.clocks.reset(namespace)
            if "journal" not in keep:
                self.journal.clear(namespace)
            if "metrics" not in keep:
                self.journal.clear_metrics(namespace)
            if self.webhooks is not None:
                self.webhooks.clear(namespace)
        for ns in targets:
            self.service.reset(self.instance(ns))
        return targets
