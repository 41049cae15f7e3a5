"""What every test shares: the relay runs open (NEWOS4_RELAY_ACCESS=open, as on a trusted
network) in every process a test starts, so tests that are not about access need not pair.
Tests about access set pairing or allowlist themselves. With a real Hermes, the files that
talk to it take turns on it."""
import hashlib
import os
import tempfile

import pytest
from filelock import FileLock

os.environ["NEWOS4_RELAY_ACCESS"] = "open"


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """`-n N` without `--dist` spreads the tests by file (`loadfile`), as `make test` does:
    some files' tests build on the ones before them (the real-server comparisons replay one
    recorded chain), and a file's turn on a real Hermes assumes it runs on one worker.
    Runs before pytest-xdist turns a bare `-n` into `--dist load`."""
    if getattr(config.option, "numprocesses", None) and config.option.dist == "no":
        config.option.dist = "loadfile"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With a real Hermes (HERMES_ORACLE_URL), the files that talk to it take turns, across
    xdist workers and runs: its approvals and runs in flight are the server's own state (an
    `always` allows for good), and two files at once would meet each other's. A file holds
    the turn from its first such test to its last test, its module teardown included."""
    global _oracle_turn
    url = os.environ.get("HERMES_ORACLE_URL")
    if url and _oracle_turn is None and talks_to_real_hermes(item):
        server = hashlib.sha256(url.encode()).hexdigest()[:12]
        _oracle_turn = FileLock(os.path.join(tempfile.gettempdir(), f"hermes-{server}.lock"))
        _oracle_turn.acquire()
    try:
        return (yield)
    finally:
        if _oracle_turn is not None and (nextitem is None or nextitem.path != item.path):
            _oracle_turn.release()
            _oracle_turn = None


_oracle_turn = None


def talks_to_real_hermes(item):
    """The comparisons with the real server, and the cases run against it ("real")."""
    callspec = getattr(item, "callspec", None)
    return "real_server" in item.path.parts or \
        (callspec is not None and "real" in callspec.params.values())
