"""Fixtures for runtime tests: the counter service in-process with an injected wall clock."""
import pytest

from emulators.runtime.testing import test_app
from tests.emulators.runtime.counter_service import service

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
