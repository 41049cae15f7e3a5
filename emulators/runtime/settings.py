"""Emulator runtime settings; `Settings.from_env` is the only reader of EMULATORS_* variables."""
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
DEFAULT_DB = str(REPO / "var" / "emulators.sqlite3")


@dataclass(frozen=True)
class Settings:
    """What every emulator runtime needs: where state lives and who may steer it."""

    db: str = DEFAULT_DB
    admin_key: str | None = None
    admin_prefix: str = "/__admin"
    journal_size: int = 1000
    max_checkpoints: int = 1000
    seed: int = 0

    @classmethod
    def from_env(cls, environ):
        """Build settings from an environment mapping (EMULATORS_DB, EMULATORS_ADMIN_KEY)."""
        return cls(db=environ.get("EMULATORS_DB") or DEFAULT_DB,
                   admin_key=environ.get("EMULATORS_ADMIN_KEY") or None)
