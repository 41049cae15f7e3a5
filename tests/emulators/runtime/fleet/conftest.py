"""What the fleet tests share: a fleet of both services, a gated test service, helpers."""
import threading

import pytest
import requests

import emulators
from emulators import start_fleet
from emulators.runtime import Service
from testkit.counter_service import OPENAPI, provider_app

SHA = "1" * 40
W1 = {"x-mockingbird-namespace": "w1"}
BOTH = {"services": {"hermes": {"port": 0}, "github": {"port": 0}}}
QUIET = {"blockedCommands": 0, "pendingJobs": 0, "pendingWebhooks": 0, "activeConnections": 0}


class Gate:
    """A reset hook that can fail, or wait until the test opens it (a fleet operation in
    flight)."""

    def __init__(self):
        self.entered = threading.Event()
        self.opened = threading.Event()
        self.fail = False

    def __call__(self, instance):
        if self.fail:
            raise RuntimeError("reset hook failed")
        if instance.namespace == "held":
            self.entered.set()
            assert self.opened.wait(10)


def loader_with(**extra):
    """`emulators.load`, plus test services by name."""
    return lambda name: extra[name] if name in extra else emulators.load(name)


def gate_service(gate):
    return Service(name="gate", openapi=OPENAPI, provider_app=provider_app, reset=gate)


@pytest.fixture
def fleet(tmp_path):
    with start_fleet(BOTH, db=str(tmp_path / "fleet.db")) as running:
        yield running


@pytest.fixture(scope="module")
def shared_fleet(tmp_path_factory):
    """One fleet for tests that change nothing a later test reads."""
    with start_fleet(BOTH, db=str(tmp_path_factory.mktemp("fleet") / "fleet.db")) as running:
        yield running


def seed_repo(fleet, name="demo", headers=W1):
    github = fleet.children["github"].url
    answer = requests.post(github + "/__admin/github/repositories", headers=headers, json={
        "owner": "octo", "name": name, "commits": [{"sha": SHA, "parents": []}],
        "branches": {"main": SHA}})
    assert answer.status_code == 201, answer.text


def repo_status(fleet, name="demo", headers=W1):
    return requests.get(f"{fleet.children['github'].url}/repos/octo/{name}",
                        headers=headers).status_code


def post(fleet, path, body=None, **kwargs):
    return requests.post(fleet.admin_url + path, json=body, **kwargs)
