"""Fixtures for runtime tests: the counter service in-process with an injected wall clock."""
import signal
import socket
import threading
import time

import pytest

from emulators.pytest_plugin import test_app
from emulators.cli import main
from testkit.counter_service import service
from testkit.servers import unused_port

START = 1_700_000_000_000  # 2023-11-14T22:13:20Z


class Wall:
    """A settable wall clock in epoch ms (the runtime's live time source)."""

    def __init__(self, now=START):
        self.now = now

    def __call__(self):
        return self.now


@pytest.fixture
def wall():
    return Wall()


@pytest.fixture
def db(tmp_path):
    return tmp_path / "emulators.sqlite3"


@pytest.fixture
def app(db, wall):
    return test_app(service, db, wall=wall)


@pytest.fixture
def locked(db, wall):
    return test_app(service, db, wall=wall, admin_key="s3cret-key")


def ns(name):
    """Headers selecting a namespace."""
    return {"x-mockingbird-namespace": name}


def run_main(monkeypatch, argv, loader):
    """Run main() in a thread with the signal handlers captured; yield the base URL."""
    handlers, done = {}, {}
    monkeypatch.setattr(signal, "signal", lambda signum, handler: handlers.setdefault(
        signum, handler))
    port = unused_port()
    thread = threading.Thread(target=lambda: done.setdefault("rc", main(
        ["serve", "hermes", "--port", str(port), *argv], environ={}, loader=loader)))
    thread.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.02)
    return f"http://127.0.0.1:{port}", handlers, thread, done
