"""The credential map (`/__admin/credentials`): a vendor credential selects a namespace, and
may name the user it acts as.

A service that declares `credential(environ)` gets requests without a namespace header or
carrier routed by the credential they carry, and can ask which user a credential names
(`Instance.user_of`); the `/credentials` admin routes (admin/credentials.py) manage the map.
"""
import json
import logging

from .. import names
from ..errors import AdminError
from .db import delete_scoped

log = logging.getLogger("emulators")

SHAPE = 'expected {"credentials": {"<credential>": "<namespace>"}}'
ENTRY = "each entry is a credential string or {credential, namespace, user}"
USER = "a user must be a non-empty string of at most 100 printable characters"


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

    def user_of(self, credential):
        """Return the user a credential is mapped to act as, or None (one primary-key lookup)."""
        row = self._db.one("SELECT user FROM credentials WHERE service=? AND credential=?",
                           (self._service, credential))
        return None if row is None else row[0]

    def names_user(self, user):
        """Tell whether some credential is mapped to act as `user` (case-insensitive)."""
        return self._db.one("SELECT 1 FROM credentials WHERE service=? AND lower(user)=lower(?)"
                            " LIMIT 1", (self._service, user)) is not None

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
        """Return `[{credential (masked), namespace[, user]}]` sorted by credential."""
        return [{"credential": mask(credential), "namespace": namespace,
                 **({"user": user} if user is not None else {})}
                for credential, namespace, user in self._db.all(
                    "SELECT credential, namespace, user FROM credentials WHERE service=? ORDER"
                    " BY credential", (self._service,))]

    def set_many(self, entries):
        """Map every (credential, namespace, user or None), all in one transaction (mapping a
        credential again replaces its namespace and user)."""
        with self._db.transaction() as conn:
            conn.executemany(
                "INSERT INTO credentials (service, credential, namespace, user) VALUES (?, ?, ?,"
                " ?) ON CONFLICT (service, credential) DO UPDATE SET"
                " namespace=excluded.namespace, user=excluded.user",
                [(self._service, *entry) for entry in entries])

    def remove(self, credential=None):
        """Forget one credential, or every one of this service when None."""
        delete_scoped(self._db.execute, "credentials", self._service, credential=credential)


def parse_pairs(body, namespace):
    """Return the (credential, namespace, user) entries of a `PUT /credentials` body, all
    validated (user None when the entry names none).

    The forms: a list of credential strings or `{credential, namespace?, user?}` objects (bare or
    under `credentials`), a `{credential: namespace}` map under `credentials`, or one such
    object.
    Nothing is stored when any entry is bad (validation comes first), and a non-string
    namespace in a list entry is refused, not defaulted.
    """
    entries = body if isinstance(body, list) else \
        body.get("credentials") if isinstance(body, dict) else None
    pairs = []
    if isinstance(entries, list):
        for entry in entries:
            if isinstance(entry, str):
                pairs.append((entry, namespace, None))
            elif isinstance(entry, dict) and isinstance(entry.get("credential"), str):
                pairs.append(_object_pair(entry, namespace))
            else:
                raise AdminError(ENTRY)
    elif isinstance(entries, dict):
        for credential, target in entries.items():
            if not isinstance(target, str):
                raise AdminError(_not_a_string(credential))
            pairs.append((credential, target, None))
    elif isinstance(body, dict) and isinstance(body.get("credential"), str):
        pairs.append(_object_pair(body, namespace))
    else:
        raise AdminError(SHAPE)
    for credential, target, user in pairs:
        if not _credential(credential):
            raise AdminError("a credential must be a non-empty string")
        if not names.valid(target):
            raise AdminError(f"bad namespace {json.dumps(target, ensure_ascii=False)}")
        if user is not None and not (_credential(user) and len(user) <= 100
                                     and user.isprintable()):
            raise AdminError(USER)
    return pairs


def _object_pair(entry, namespace):
    """The entry of a `{"credential", "namespace"?, "user"?}` object (namespace: the query's by
    default)."""
    target = entry.get("namespace", namespace)
    if not isinstance(target, str):
        raise AdminError(_not_a_string(entry["credential"]))
    user = entry.get("user")
    if user is not None and not isinstance(user, str):
        raise AdminError(USER)
    return entry["credential"], target, user
