"""The credential map (`/__admin/credentials`): a vendor credential selects a namespace.

A service that declares `credential(environ)` gets requests without a namespace header or
carrier routed by the credential they carry; the `/credentials` admin routes
(admin/credentials.py) manage the map.
"""
import json
import logging

from .. import names
from ..errors import AdminError
from .db import delete_scoped

log = logging.getLogger("emulators")

SHAPE = 'expected {"credentials": {"<credential>": "<namespace>"}}'
ENTRY = "each entry is a credential string or {credential, namespace}"


def mask(credential):
    """Show a credential without giving it away: `ab…` (8 chars or fewer), else `abcdef…yz`."""
    if len(credential) <= 8:
        return credential[:2] + "\u2026"
    return credential[:6] + "\u2026" + credential[-2:]


def _credential(value):
    """Tell whether a value can be a stored credential: a non-empty UTF-8 encodable string."""
    if not isinstance(value, str) or not value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from JSON
        return False
    return True


def _not_a_string(credential):
    # Masked: admin output never holds a whole credential (the reference echoed it here).
    return f"namespace for {mask(credential)} must be a string"


class Credentials:
    """The credential -> namespace map of one service, shared by every worker."""

    def __init__(self, db, service):
        self._db = db
        self._service = service

    def namespace_of(self, credential):
        """Return the namespace mapped to a credential, or None (one primary-key lookup)."""
        row = self._db.one("SELECT namespace FROM credentials WHERE service=? AND credential=?",
                           (self._service, credential))
        return None if row is None else row[0]

    def resolve(self, hook, environ):
        """Return the namespace of a request by the credential `hook` extracts, or `default`."""
        try:
            credential = hook(environ)
        except Exception:  # a bug in the service's hook must not take the request down
            log.exception("emulator %s: credential hook failed", self._service)
            return "default"
        if not _credential(credential):
            return "default"
        return self.namespace_of(credential) or "default"

    def entries(self):
        """Return `[{credential (masked), namespace}]` sorted by credential."""
        return [{"credential": mask(credential), "namespace": namespace}
                for credential, namespace in self._db.all(
                    "SELECT credential, namespace FROM credentials WHERE service=? ORDER BY"
                    " credential", (self._service,))]

    def set_many(self, pairs):
        """Map every (credential, namespace) pair, all in one transaction."""
        with self._db.transaction() as conn:
            conn.executemany(
                "INSERT INTO credentials (service, credential, namespace) VALUES (?, ?, ?)"
                " ON CONFLICT (service, credential) DO UPDATE SET namespace=excluded.namespace",
                [(self._service, credential, namespace) for credential, namespace in pairs])

    def remove(self, credential=None):
        """Forget one credential, or every one of this service when None."""
        delete_scoped(self._db.execute, "credentials", self._service, credential=credential)


def parse_pairs(body, namespace):
    """Return the (credential, namespace) pairs of a `PUT /credentials` body, all validated.

    The forms: a list of credential strings or `{credential, namespace?}` objects (bare or under
    `credentials`), a `{credential: namespace}` map under `credentials`, or one such object.
    Nothing is stored when any entry is bad (validation comes first), and a non-string
    namespace in a list entry is refused, not defaulted.
    """
    entries = body if isinstance(body, list) else \
        body.get("credentials") if isinstance(body, dict) else None
    pairs = []
    if isinstance(entries, list):
        for entry in entries:
            if isinstance(entry, str):
                pairs.append((entry, namespace))
            elif isinstance(entry, dict) and isinstance(entry.get("credential"), str):
                pairs.append(_object_pair(entry, namespace))
            else:
                raise AdminError(ENTRY)
    elif isinstance(entries, dict):
        for credential, target in entries.items():
            if not isinstance(target, str):
                raise AdminError(_not_a_string(credential))
            pairs.append((credential, target))
    elif isinstance(body, dict) and isinstance(body.get("credential"), str):
        pairs.append(_object_pair(body, namespace))
    else:
        raise AdminError(SHAPE)
    for credential, target in pairs:
        if not _credential(credential):
            raise AdminError("a credential must be a non-empty string")
        if not names.valid(target):
            raise AdminError(f"bad namespace {json.dumps(target, ensure_ascii=False)}")
    return pairs


def _object_pair(entry, namespace):
    """The pair of a `{"credential", "namespace"?}` object (namespace: the query's by default)."""
    target = entry.get("namespace", namespace)
    if not isinstance(target, str):
        raise AdminError(_not_a_string(entry["credential"]))
    return entry["credential"], target
