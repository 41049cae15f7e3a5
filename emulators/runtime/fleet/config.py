"""The fleet's `--config` file: checked whole before anything starts, then resolved into
a plan with the precedence of admin key, admin prefix, log and database settled."""
import json
import re
from dataclasses import dataclass

from .. import names
from ..mount import PREFIX
from ..requestlog import MODES

NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*\Z")
TOP_FIELDS = ("services", "log", "adminPrefix", "adminKey", "namespace", "control", "db")
SERVICE_FIELDS = ("protocol", "port", "host", "adminPrefix", "adminKey", "seed")
CONTROL_FIELDS = ("host", "port")


class ConfigError(ValueError):
    """The config file cannot be read or names something this fleet cannot serve."""


@dataclass(frozen=True)
class ChildPlan:
    """One service of the fleet: where it listens and how its admin plane is set."""

    name: str
    host: str
    port: int | None  # None: the service's default port
    admin_prefix: str
    admin_key: str | None
    seed: int | str


@dataclass(frozen=True)
class FleetPlan:
    """The whole fleet: its services in config order, the control listener and shared settings."""

    children: tuple
    control_host: str
    control_port: int
    admin_prefix: str
    admin_key: str | None
    namespace: str
    log: str
    db: str | None  # None: a temporary file removed on close (Python API only)


def read_config(path):
    """Return the parsed JSON of a config file, or raise ConfigError saying why not."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as error:
        raise ConfigError(f"cannot read config {path}: {error.strerror or error}") from None
    except ValueError as error:
        raise ConfigError(f"config {path} is not valid JSON: {error}") from None


def plan(config, *, admin_key=None, admin_prefix="/__admin", log="pretty", db=None):
    """Check `config` and resolve it over the caller's settings (command line over environment).

    Precedence: a service's adminKey, then the config's, then `admin_key`; the config's
    adminPrefix, then `admin_prefix`, a service entry overriding it; the config's log, then `log`;
    the config's db, then `db`.
    """
    if not isinstance(config, dict):
        raise ConfigError("config: expected a JSON object")
    _known(config, TOP_FIELDS, "config")
    services = config.get("services")
    if not isinstance(services, dict) or not services:
        raise ConfigError("config must contain at least one service")
    prefix = _prefix(config["adminPrefix"], "adminPrefix") if "adminPrefix" in config else \
        admin_prefix
    key = _key(config["adminKey"], "adminKey") if "adminKey" in config else admin_key
    mode = config.get("log", log)
    if mode not in MODES:
        raise ConfigError(f"config: log must be pretty, json or off (got {json.dumps(mode)})")
    namespace = config.get("namespace", "default")
    if not names.valid(namespace):
        raise ConfigError(f"config: namespace must match /{names.SHOWN}/")
    control = config.get("control", {})
    if not isinstance(control, dict):
        raise ConfigError("config: control must be an object like {\"host\": \"127.0.0.1\","
                          " \"port\": 0}")
    _known(control, CONTROL_FIELDS, "config: control")
    database = config.get("db", db)
    if "db" in config and (not isinstance(database, str) or not database):
        raise ConfigError("config: db must be the path of the SQLite file")
    children = tuple(_child(name, entry, prefix, key) for name, entry in services.items())
    return FleetPlan(children=children, control_host=_host(control.get("host"), "control.host"),
                     control_port=_port(control.get("port", 0), "control.port"),
                     admin_prefix=prefix, admin_key=key, namespace=namespace, log=mode,
                     db=database)


def _child(name, entry, prefix, key):
    if not NAME.match(name):
        raise ConfigError(f"config: invalid service name {json.dumps(name)}: it must match"
                          " /^[a-z0-9]+(?:-[a-z0-9]+)*$/")
    where = f"services.{name}"
    if not isinstance(entry, dict):
        raise ConfigError(f"config: {where} must be an object")
    _known(entry, SERVICE_FIELDS, f"config: {where}")
    protocol = entry.get("protocol", "http")
    if protocol != "http":
        raise ConfigError(f"config: {where}.protocol: only \"http\" services are served here"
                          f" (got {json.dumps(protocol)})")
    seed = entry.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, (int, str)):
        raise ConfigError(f"config: {where}.seed must be an integer or a string")
    return ChildPlan(
        name=name, host=_host(entry.get("host"), f"{where}.host"),
        port=None if entry.get("port") is None else _port(entry["port"], f"{where}.port"),
        admin_prefix=_prefix(entry["adminPrefix"], f"{where}.adminPrefix")
        if "adminPrefix" in entry else prefix,
        admin_key=_key(entry["adminKey"], f"{where}.adminKey") if "adminKey" in entry else key,
        seed=seed)


def _known(fields, allowed, where):
    for field in fields:
        if field not in allowed:
            raise ConfigError(f"{where}: unsupported field {json.dumps(field)} (known:"
                              f" {', '.join(allowed)})")


def _prefix(value, where):
    trimmed = value.rstrip("/") if isinstance(value, str) else value
    if not isinstance(trimmed, str) or not PREFIX.match(trimmed):
        raise ConfigError(f"config: {where} must be an absolute path of plain segments, like"
                          f" /__admin (got {json.dumps(value)})")
    return trimmed


def _key(value, where):
    if not isinstance(value, str) or not value:
        raise ConfigError(f"config: {where} must be a non-empty string")
    return value


def _host(value, where):
    if value is None:
        return "127.0.0.1"
    if not isinstance(value, str) or not value:
        raise ConfigError(f"config: {where} must be a host name or address")
    return value


def _port(value, where):
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
        raise ConfigError(f"config: {where} must be a TCP port from 0 to 65535 (got"
                          f" {json.dumps(value)})")
    return value
