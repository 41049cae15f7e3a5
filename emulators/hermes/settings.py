"""Hermes emulator settings; `HermesSettings.from_env` is the only reader of HERMES_* variables."""
from dataclasses import dataclass


@dataclass(frozen=True)
class HermesSettings:
    """Provider auth and the timing of run event streams."""

    api_key: str | None = None       # bearer key of the provider routes; None = auth off
    keepalive_s: float = 30.0        # idle seconds between `: keepalive` comments (upstream 30)
    events_wait_s: float = 1.0       # how long GET events waits for a buffer (upstream ~1 s)
    poll_s: float = 0.05             # how often an open stream looks for new events

    @classmethod
    def from_env(cls, environ):
        """Build settings from HERMES_EMULATOR_API_KEY and HERMES_SSE_* variables."""
        return cls(api_key=environ.get("HERMES_EMULATOR_API_KEY") or None,
                   keepalive_s=float(environ.get("HERMES_SSE_KEEPALIVE_SECONDS") or 30.0),
                   events_wait_s=float(environ.get("HERMES_EVENTS_WAIT_SECONDS") or 1.0),
                   poll_s=float(environ.get("HERMES_SSE_POLL_SECONDS") or 0.05))
