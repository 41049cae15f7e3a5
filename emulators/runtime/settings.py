"""Emulator runtime settings; `Settings.from_env` is the only reader of EMULATORS_* variables."""
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from .bodies import MAX_ADMIN_BODY, MAX_BODY
from .mount import PREFIX

# In the working directory, never beside the code: a pip-installed package lives in
# site-packages, which may be read-only and is shared by every project of the environment.
DEFAULT_DB = os.path.join("var", "emulators.sqlite3")
DEFAULT_ADMIN_PREFIX = "/__admin"


def default_db():
    """`var/emulators.sqlite3` under the working directory, as an absolute path."""
    return os.path.abspath(DEFAULT_DB)


@dataclass(frozen=True)
class Settings:
    """What every emulator runtime needs: where state lives and who may steer it.

    `on_log(entry)`, when set, is called with each finished vendor request's journal entry
    (without `at`); an exception it raises is logged and the request goes on.
    """

    db: str = field(default_factory=default_db)
    admin_key: str | None = None
    admin_prefix: str = DEFAULT_ADMIN_PREFIX
    journal_size: int = 1000
    max_checkpoints: int = 1000
    seed: int | str = 0
    on_log: Callable[[dict], None] | None = None
    max_body: int = MAX_BODY  # provider routes, bytes
    max_admin_body: int = MAX_ADMIN_BODY  # the admin plane (seeding), bytes

    @classmethod
    def from_env(cls, environ):
        """Build settings from an environment mapping (EMULATORS_DB, EMULATORS_ADMIN_KEY,
        EMULATORS_ADMIN_PREFIX, EMULATORS_MAX_BODY, EMULATORS_MAX_ADMIN_BODY); a bad value
        raises ValueError naming the variable."""
        prefix = environ.get("EMULATORS_ADMIN_PREFIX") or DEFAULT_ADMIN_PREFIX
        if not PREFIX.match(prefix):
            raise ValueError("EMULATORS_ADMIN_PREFIX must be an absolute path of plain segments"
                             f" without a trailing slash, like /__admin (got {prefix!r})")
        return cls(db=environ.get("EMULATORS_DB") or default_db(),
                   admin_key=environ.get("EMULATORS_ADMIN_KEY") or None,
                   admin_prefix=prefix,
                   max_body=_byte_count(environ, "EMULATORS_MAX_BODY", MAX_BODY),
                   max_admin_body=_byte_count(environ, "EMULATORS_MAX_ADMIN_BODY",
                                              MAX_ADMIN_BODY))


def _byte_count(environ, name, default):
    """A size in bytes: ASCII digits, 1 or more (unset or empty: `default`)."""
    text = environ.get(name) or ""
    if not text:
        return default
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise ValueError(f"{name} must be a number of bytes, 1 or more, like {default} "
                         f"(got {text!r})")
    return int(text)
