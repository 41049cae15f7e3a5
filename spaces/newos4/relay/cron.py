"""The relay as cron runs it each minute (`cron/relay.py`): under the relay lock, the retention
sweep, then one relay pass (passes.py)."""
import json

from ..files import LockTimeout, lock
from .passes import Relay


class RelayBusy(Exception):
    """Another relay invocation holds the lock."""


def cron_tick(service, *, sweep_only, log, client=None):
    """What cron runs each minute, under the relay lock: the retention sweep, then the relay.

    Returns the number of problems; raises RelayBusy when another invocation holds the lock.
    """
    settings = service.settings
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        with lock(settings.data_dir / "relay.lock", 0):
            outcome = service.sweep()
            skipped, trouble = outcome.pop("skipped"), outcome.pop("problems")
            for thread, why in skipped:
                log(f"relay: PROBLEM thread={thread} skipped: {why}", True)
            for why in trouble:
                log(f"relay: PROBLEM sweep {why}", True)
            problems = len(skipped) + len(trouble)
            log("relay: sweep " + json.dumps(outcome, sort_keys=True), False)
            if sweep_only:
                return problems
            if client is None:
                log("relay: HERMES_API_URL is not set: swept only", False)
                return problems
            relay = Relay(service, client, log=log, reported=[t for t, _ in skipped])
            return problems + relay.run()
    except LockTimeout:
        raise RelayBusy()
