"""Chat service configuration: one frozen object, built from the environment in one place."""
import dataclasses
import functools
import ipaddress
import os
import secrets
import urllib.parse
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT_DATA_DIR = Path(__file__).resolve().parent / "data"
# pairing (the default): the host lets each conversation in; allowlist: only those it named;
# open: every conversation (a trusted network only).
RELAY_ACCESS_MODES = ("pairing", "allowlist", "open")


class SettingsError(ValueError):
    """A configuration variable has a value the service cannot use."""


def _integer(default, minimum=1):
    """An integer setting, read from NEWOS4_<NAME>: its default and the least value taken."""
    return dataclasses.field(default=default, metadata={"minimum": minimum})


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything the chat service, `scripts/chat.py` and `cron/relay.py` need to agree on."""

    data_dir: Path = DEFAULT_DATA_DIR
    trusted_proxies: tuple = ("127.0.0.1", "::1")
    max_text: int = _integer(4000)
    max_body: int = _integer(32768)
    rate_thread: int = _integer(20)
    rate_ip: int = _integer(40)
    rate_window_s: int = _integer(600)
    max_threads: int = _integer(500)
    keep_messages: int = _integer(200)
    keep_days: int = _integer(30)
    poll_limit: int = _integer(50)
    # The relay (cron/relay.py): where Hermes is and how hard to try.
    hermes_api_url: str = ""
    hermes_api_key: str = ""
    relay_budget_s: int = _integer(45)
    relay_max_in_flight: int = _integer(4)
    relay_max_attempts: int = _integer(5)
    relay_history: int = _integer(20, minimum=0)
    relay_run_timeout_s: int = _integer(1800)
    relay_http_timeout_s: int = _integer(10)
    # How long after a lost submission a run's input may take to show in Hermes' session
    # transcript before the relay concludes that no run started and submits again. Measured on
    # Hermes 0.19.0 (loopback, 2 shared cores): 0.4-0.6 s after the 202 one run at a time,
    # 2.6 s for the first run after a start, 3.7 s with six runs submitted at once; 15 s is four
    # times the worst of those.
    relay_transcript_grace_s: int = _integer(15)
    # Who reaches Hermes through the relay (relay/access.py): pairing, allowlist or open.
    relay_access: str = "pairing"
    # The watcher (cron/relay.py --watch): how often it looks at the folders, polls runs.
    relay_watch_tick_ms: int = _integer(100, minimum=10)
    relay_watch_poll_ms: int = _integer(500, minimum=50)
    # Whether the person may answer Hermes' approval requests with `always` (which allows a
    # pattern in Hermes' own configuration, for every conversation): off unless the host says.
    relay_allow_always: bool = False

    @property
    def chat_dir(self):
        return self.data_dir / "chat"

    @functools.cached_property
    def trusted_networks(self):
        """Parsed once: every post asks."""
        return tuple(ipaddress.ip_network(p, strict=False) for p in self.trusted_proxies)

    @classmethod
    def from_env(cls, environ, **overrides):
        """Read the NEWOS4_* variables; raise SettingsError naming a bad one."""
        values = {}
        data_dir = environ.get("NEWOS4_DATA_DIR")
        if data_dir:
            path = Path(data_dir)
            values["data_dir"] = path if path.is_absolute() else REPO_ROOT / path
        if "NEWOS4_TRUSTED_PROXIES" in environ:
            proxies = tuple(p.strip() for p in environ["NEWOS4_TRUSTED_PROXIES"].split(",")
                            if p.strip())
            for proxy in proxies:
                try:
                    ipaddress.ip_network(proxy, strict=False)
                except ValueError:
                    raise SettingsError(
                        f"NEWOS4_TRUSTED_PROXIES: {proxy!r} is not an IP address or network")
            values["trusted_proxies"] = proxies
        if environ.get("HERMES_API_URL"):
            values["hermes_api_url"] = _http_url("HERMES_API_URL", environ["HERMES_API_URL"])
        if environ.get("NEWOS4_RELAY_ACCESS"):
            access = environ["NEWOS4_RELAY_ACCESS"].strip()
            if access not in RELAY_ACCESS_MODES:
                raise SettingsError(f"NEWOS4_RELAY_ACCESS: expected one of "
                                    f"{', '.join(RELAY_ACCESS_MODES)}, got "
                                    f"{environ['NEWOS4_RELAY_ACCESS']!r}")
            values["relay_access"] = access
        if environ.get("HERMES_API_KEY"):
            values["hermes_api_key"] = environ["HERMES_API_KEY"].strip()
        for field in dataclasses.fields(cls):
            if "minimum" not in field.metadata:
                continue
            name, minimum = "NEWOS4_" + field.name.upper(), field.metadata["minimum"]
            raw = environ.get(name)
            if raw is None or raw == "":
                continue
            if not raw.strip().isascii() or not raw.strip().isdigit() or int(raw) < minimum:
                raise SettingsError(f"{name}: expected an integer >= {minimum}, got {raw!r}")
            values[field.name] = int(raw)
        allow_always = environ.get("NEWOS4_RELAY_ALLOW_ALWAYS", "").strip()
        if allow_always not in ("", "0", "1"):
            raise SettingsError(f"NEWOS4_RELAY_ALLOW_ALWAYS: expected 1 or 0, got "
                                f"{environ['NEWOS4_RELAY_ALLOW_ALWAYS']!r}")
        values["relay_allow_always"] = allow_always == "1"
        values.update(overrides)
        return cls(**values)

    def check_data_dir(self, *, writable=True):
        """Prove the data directory usable: there and listed (a reader is told when it is
        missing: a misspelled NEWOS4_DATA_DIR would otherwise look like an empty chat), and when
        `writable` created if missing and a file written and removed in it; its `chat/` a
        folder if it exists. Raise SettingsError naming NEWOS4_DATA_DIR otherwise."""
        path = self.data_dir
        if os.path.lexists(path) and not path.is_dir():
            raise SettingsError(f"NEWOS4_DATA_DIR: {path} is not a directory")
        if not writable and not os.path.lexists(path):
            raise SettingsError(f"NEWOS4_DATA_DIR: {path} {_why_missing(path)}")
        probe = path / f".probe-{os.getpid()}-{secrets.token_hex(4)}"
        steps = [("cannot be created", lambda: path.mkdir(parents=True, exist_ok=True)),
                 ("cannot be read", lambda: os.listdir(path)),
                 ("is not writable", lambda: (probe.write_bytes(b""), probe.unlink()))]
        for what, step in steps if writable else steps[1:2]:
            try:
                step()
            except OSError as exc:
                raise SettingsError(f"NEWOS4_DATA_DIR: {path} {what} ({exc.strerror or exc})")
        if os.path.lexists(self.chat_dir) and not self.chat_dir.is_dir():
            raise SettingsError(f"NEWOS4_DATA_DIR: {self.chat_dir} is not a directory (the "
                                "threads' folder)")


def _why_missing(path):
    """Why `path` is not there: a file in its way, or nothing stored there yet."""
    for parent in path.parents:
        if os.path.lexists(parent):
            if parent.is_dir():
                break
            return f"cannot exist: {parent} is a file"
    return "does not exist (nothing was ever stored there: is the variable right?)"


def _http_url(name, raw):
    """An http(s) URL with a host and, if given, a port in 1-65535, without a trailing slash."""
    url = raw.strip().rstrip("/")
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = 0
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0 \
            or parts.query or parts.fragment:
        raise SettingsError(f"{name}: expected an http(s) URL with a host and a valid port, "
                            f"got {raw!r}")
    return url
