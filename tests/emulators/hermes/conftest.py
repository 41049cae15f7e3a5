"""Fixtures for the Hermes emulator: the runtime around the service, in-process via webtest."""
import pytest
import webtest

from emulators.hermes.app import create_service
from emulators.hermes.settings import HermesSettings
from emulators.runtime.app import Runtime
from emulators.runtime.settings import Settings

T0 = 1_700_000_000_000  # the reference suite's frozen clock (ms)
T0_S = T0 / 1000
FIRST_RUN = "run_4e685a726271445348426a4a70783364"
SECOND_RUN = "run_57703349705258663741626769756c5a"
DEFAULT_SCOPE = "845264e061c6175ac63594c814e4c557f82d402d80b8e6a01e1568a41c9e6cf0"


class HermesClient:
    """Drive the emulator like a runs-API client, plus its admin controls."""

    def __init__(self, app, namespace=None):
        self.app = app
        self.headers = {"x-mockingbird-namespace": namespace} if namespace else {}

    def _h(self, headers):
        return {**self.headers, **(headers or {})}

    def submit(self, body=None, *, key=None, memory=None, raw=None, headers=None, status="*"):
        extra = dict(headers or {})
        if key is not None:
            extra["Idempotency-Key"] = key
        if memory is not None:
            extra["X-Hermes-Session-Key"] = memory
        data = raw if raw is not None else webtest.app.json.dumps(
            {"input": "synthetic prompt"} if body is None else body).encode()
        headers = {"Content-Type": "application/json", **self._h(extra)}
        return self.app.post("/v1/runs", data, headers=headers, status=status)

    def run(self, run_id, status="*", headers=None):
        return self.app.get(f"/v1/runs/{run_id}", headers=self._h(headers), status=status)

    def stop(self, run_id, status="*", body=b""):
        return self.app.post(f"/v1/runs/{run_id}/stop", body, headers=self._h(None), status=status)

    def approval(self, run_id, body, status="*"):
        data = body if isinstance(body, bytes) else webtest.app.json.dumps(body).encode()
        return self.app.post(f"/v1/runs/{run_id}/approval", data,
                             headers={"Content-Type": "application/json", **self._h(None)},
                             status=status)

    def steer(self, run_id, body, status="*"):
        data = body if isinstance(body, bytes) else webtest.app.json.dumps(body).encode()
        return self.app.post(f"/v1/runs/{run_id}/steer", data,
                             headers={"Content-Type": "application/json", **self._h(None)},
                             status=status)

    def admin(self, path, body=None, status="*"):
        return self.app.post_json(f"/__admin{path}", body if body is not None else {},
                                  headers=self._h(None), status=status)

    def observe(self, run_id, body, status="*"):
        return self.admin(f"/hermes/runs/{run_id}/observe", body, status=status)

    def clock(self, **body):
        return self.app.post_json("/__admin/clock", body, status=200)

    def advance(self, ms):
        return self.clock(advance=ms)

    def preset(self, name):
        return self.app.post_json("/__admin/faults", {"preset": name}, headers=self._h(None),
                                  status=201)


@pytest.fixture
def runtime(tmp_path):
    settings = HermesSettings(events_wait_s=0.0, poll_s=0.01, keepalive_s=0.2)
    return Runtime(create_service(settings), Settings(db=str(tmp_path / "emulators.sqlite3")))


@pytest.fixture
def app(runtime):
    test_app = webtest.TestApp(runtime, extra_environ={"HTTP_HOST": "127.0.0.1:8827"})
    test_app.post_json("/__admin/clock", {"set": T0, "freeze": True}, status=200)
    return test_app


@pytest.fixture
def client(app):
    return HermesClient(app)
