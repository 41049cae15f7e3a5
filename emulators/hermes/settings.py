"""Hermes emulator settings; `HermesSettings.from_env` is the only reader of HERMES_* variables."""
import math
from dataclasses import dataclass


def _seconds(environ, name, default, *, zero_ok=False):
    """A duration in seconds from `environ[name]`; a bad value raises ValueError naming `name`."""
    raw = environ.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
        bound = ">= 0" if zero_ok else "> 0"
        raise ValueError(f"{name}: expected a number of seconds {bound}, got {raw!r}")
    return value


def _origins(value):
    """Split a comma-separated origin list, as upstream parses API_SERVER_CORS_ORIGINS."""
    return tuple(item.strip() for item in (value or "").split(",") if item.strip())


@dataclass(frozen=True)
class HermesSettings:
    """Provider auth, CORS, the advertised model and the timing of event streams."""

    api_key: str | None = None       # bearer key of the provider routes; None = auth off
    keepalive_s: float = 30.0        # idle seconds between `: keepalive` comments (upstream 30)
    events_wait_s: float = 1.0       # how long GET events waits for a buffer (upstream ~1 s)
    poll_s: float = 0.05             # how often an open stream looks for new events
    cors_origins: tuple = ()         # allowed browser origins ("*" = any); empty = none
    model_name: str | None = None    # advertised model; None = "hermes-agent" (upstream default)

    @classmethod
    def from_env(cls, environ):
        """Build settings from HERMES_EMULATOR_* and HERMES_SSE_* variables."""
        return cls(api_key=environ.get("HERMES_EMULATOR_API_KEY") or None,
                   keepalive_s=_seconds(environ, "HERMES_SSE_KEEPALIVE_SECONDS", 30.0),
                   events_wait_s=_seconds(environ, "HERMES_EVENTS_WAIT_SECONDS", 1.0,
                                          zero_ok=True),
                   poll_s=_seconds(environ, "HERMES_SSE_POLL_SECONDS", 0.05),
                   cors_origins=_origins(environ.get("HERMES_EMULATOR_CORS_ORIGINS")),
                   model_name=(environ.get("HERMES_EMULATOR_MODEL_NAME") or "").strip() or None)
