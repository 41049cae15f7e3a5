"""The instance a provider handler works on: one storage key of one namespace for one request."""
from .errors import ConnectionDropped
from .mount import public_base
from .state.records import Records
from .state.rng import Rng
from .state.timeline import storage_key

MUTATING = {"POST", "PUT", "PATCH", "DELETE"}
READS = {"GET", "HEAD"}
OPERATION_KEY = "emulators.operation"  # the operationId the runtime matched (None: unmatched)


def operation_of(req):
    """Return the operationId the runtime matched for a falcon request (or WSGI environ), as
    the journal and fault rules name it; None for an unmatched route."""
    env = req if isinstance(req, dict) else req.env
    return env.get(OPERATION_KEY)


def instance_of(req):
    """Return the instance of a falcon request (or WSGI environ) running under the runtime."""
    env = req if isinstance(req, dict) else req.env
    try:
        return env["emulators.instance"]
    except KeyError:
        raise RuntimeError("this request is not served by the emulator runtime") from None


class Instance:
    """State and controls of one storage key (a namespace, or one of its branches)."""

    __slots__ = ("_emulator", "namespace", "branch", "key", "method", "_base_url", "_environ",
                 "_hits", "ids", "writes", "accepted", "_checkpoint", "in_flight", "_records",
                 "_rng", "version", "head", "_state")

    def __init__(self, emulator, namespace, branch, key, method="GET", environ=None, hits=(),
                 version=None, *, base_url=""):
        self._emulator = emulator
        self.namespace = namespace
        self.branch = branch
        self.key = key
        self.method = method
        self._base_url = base_url
        self._environ = environ  # the public base URL is worked out from it on first use
        self._hits = hits
        self.ids = {}
        self.writes = 0
        self.accepted = None
        self._checkpoint = None  # (id, writes when it was committed)
        self.in_flight = True
        self._records = None
        self._rng = None
        # The control version the runtime read for this request: the namespace clock is the
        # worker's kept copy while it holds (state/clock.py). None (admin and tool instances): read.
        self.version = version
        # (timeline moves, transaction restarts, (main's head, next number)) read at the start
        # of a mutation's transaction on main (app.py), or None: checkpoint() reuses it while
        # nothing moved the head or began the transaction anew.
        self.head = None
        self._state = None  # the key's records version, read once by a read request (cached)

    @property
    def records(self):
        """The record store of this key (below)."""
        if self._records is None:
            emulator = self._emulator
            self._records = Records(emulator.db, emulator.name, self.namespace, self.key,
                                    on_write=self._wrote, cached=self._cached_record
                                    if self._cacheable() else None)
        return self._records

    def _cacheable(self):
        return self.method in READS and not self._hits and "@" not in self.key

    def _cached_record(self, token, fetch):
        """A record's text as a read request saw it at the key's version: one version read per
        request, then each record once per change of the key (state/shapes.py). Once the request
        wrote anything, reads go to the database."""
        if self.writes:
            return fetch()
        shapes = self._emulator.shapes
        if self._state is None:
            self._state = shapes.version(self.key)
        return shapes.get(self.key, token, fetch, size=lambda text: len(text or ""),
                          version=self._state)

    def objects(self, scope):
        """The immutable objects of one scope (a repository) of this namespace (every branch of
        the timeline shares them: they never change)."""
        return self._emulator.objects(self.namespace, scope)

    @property
    def rng(self):
        """The deterministic RNG of this key, captured by checkpoints."""
        if self._rng is None:
            emulator = self._emulator
            self._rng = Rng(emulator.db, emulator.name, self.namespace, self.key,
                            seed=emulator.settings.seed)
        return self._rng

    @property
    def base_url(self):
        """The public base URL of the service, mount prefix included."""
        if self._environ is not None:
            self._base_url, self._environ = public_base(self._environ), None
        return self._base_url

    @property
    def admin_prefix(self):
        """The runtime's admin prefix (`/__admin` unless configured), for path carriers."""
        return self._emulator.admin_prefix

    def _wrote(self):
        self.writes += 1

    def now_ms(self):
        """Return the namespace clock in epoch milliseconds."""
        clocks = self._emulator.clocks
        if self.version is None:
            return clocks.now_ms(self.namespace)
        return clocks.current(self.namespace, self.version)[0]

    def cached(self, token, build, size=len):
        """Return `build()` for this key's records as they are now, built once per change of
        them (state/shapes.py) and `token`: everything else the answer depends on (route, path,
        query, base URL, media type). Mutations, fault hits and historical views build anew."""
        if not self._cacheable() or self.writes:
            return build()
        shapes = self._emulator.shapes
        if self._state is None:
            self._state = shapes.version(self.key)
        return shapes.get(self.key, ("answer", *token), build, size, version=self._state)

    @property
    def quotas(self):
        """This namespace's rate-limit windows on its clock (state/quotas.py): `take(who,
        resource, limit, window_ms)`, `peek(who, resource, window_ms)`, `windows(who,
        {resource: window_ms})`."""
        return self._emulator.quotas.of(self.namespace, self.now_ms)

    def transaction(self):
        """Return a context manager running the block as one BEGIN IMMEDIATE transaction."""
        return self._emulator.db.transaction()

    def fault_effect(self, name):
        """Return the params of a fired effect rule named `name` ({} when none), or None."""
        for hit in self._hits:
            if hit.effect == name:
                return dict(hit.params)
        return None

    def checkpoint(self):
        """Commit a checkpoint of this branch now and return its id.

        The runtime's own checkpoint after the request (provider mutation or writing admin
        route) reuses this one when nothing was written since, so a body that quotes the id
        agrees with the `x-mockingbird-checkpoint` header.
        """
        if self.key != storage_key(self.namespace, self.branch):
            raise RuntimeError("a historical (x-mockingbird-at) view cannot commit a checkpoint")
        fresh = self.fresh_checkpoint()
        if fresh is None:
            emulator, clock, known = self._emulator, None, None
            if self.version is not None:
                clock = emulator.clocks.current(self.namespace, self.version)
            if self.head is not None:
                moves, restarts, known = self.head
                if moves != emulator.timeline.moves or restarts != emulator.db.restarts():
                    known = None
            fresh = emulator.timeline.commit(self.namespace, self.branch, clock=clock,
                                             head=known)["id"]
            self._checkpoint = (fresh, self.writes)
        return fresh

    def fresh_checkpoint(self):
        """Return the id of this request's checkpoint if nothing was written since, else None."""
        if self._checkpoint is not None and self._checkpoint[1] == self.writes:
            return self._checkpoint[0]
        return None

    def accept(self):
        """Mark the mutation durably accepted: commit a checkpoint now (once per request)."""
        if self.accepted is None and self.in_flight and self.method in MUTATING:
            self.accepted = self.checkpoint()
        return self.accepted

    def drop(self):
        """Abort: the runtime closes the connection without an answer."""
        raise ConnectionDropped()

    def emit(self, event, payload):
        """Queue a webhook event for the namespace's endpoints (in this request's transaction).

        `payload` may be a callable: it is only built when an endpoint listens for `event`.
        """
        hub = self._emulator.webhooks
        if hub is not None and hub.listening(self.namespace, event):
            hub.emit(self.namespace, event, payload() if callable(payload) else payload,
                     created_ms=self.now_ms())

    def emit_to(self, event, payload, *, url, secret, hook_id, headers=None):
        """Queue a webhook event for one destination of the service's choosing (a GitHub App's
        webhook URL), in this request's transaction; a no-op without a hub."""
        hub = self._emulator.webhooks
        if hub is not None:
            hub.emit_to(self.namespace, event, payload, url=url, secret=secret,
                        hook_id=hook_id, headers=headers, created_ms=self.now_ms())

    def user_of(self, credential):
        """Return the user the credential map names for `credential` (None when it names none)."""
        if not credential:
            return None
        return self._emulator.credentials.user_of(credential)

    def names_user(self, user):
        """Tell whether the credential map names `user` as some credential's user."""
        return self._emulator.credentials.names_user(user)

    def report_ids(self, **ids):
        """Add resource ids to this request's journal entry."""
        self.ids.update({k: v for k, v in ids.items() if v is not None})
