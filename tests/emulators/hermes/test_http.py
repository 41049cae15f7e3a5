"""A runs-API consumer over a real loopback socket: lost response + replay, polling, stop,
client deadlines, and run events read with a real streaming client."""
import json
import threading
import time

import pytest
import requests

from emulators.hermes.app import create_service
from emulators.hermes.settings import HermesSettings
from emulators.runtime import serve

KEEPALIVE_S = 0.3

# A stream that never ends would otherwise hang the suite until the global timeout.
pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def server(tmp_path):
    settings = HermesSettings(keepalive_s=KEEPALIVE_S, events_wait_s=0.2, poll_s=0.01)
    with serve(create_service(settings), db=str(tmp_path / "e.sqlite3")) as running:
        yield running


class Consumer:
    """A minimal runs client with a retry-on-lost-response policy, as an application would write."""

    def __init__(self, url):
        self.url = url
        self.http = requests.Session()

    def submit(self, body, key, attempts=3):
        for attempt in range(attempts):
            try:
                res = self.http.post(self.url + "/v1/runs", json=body, timeout=5,
                                     headers={"Idempotency-Key": key})
            except requests.ConnectionError:
                continue  # the answer was lost; the same key makes the retry safe
            return res, attempt
        raise AssertionError("no answer after retries")

    def poll(self, run_id, timeout=5):
        return self.http.get(f"{self.url}/v1/runs/{run_id}", timeout=timeout)


def admin(server, path, body):
    res = requests.post(server.url + "/__admin" + path, json=body, timeout=5)
    assert res.status_code in (200, 201), res.text
    return res.json()


def test_lost_response_then_replay_poll_and_stop(server):
    consumer = Consumer(server.url)
    admin(server, "/faults", {"preset": "hermes_submit_accepted_drop"})
    res, attempt = consumer.submit({"input": "synthetic prompt"}, "delivery-1")
    assert attempt == 1, "the first answer must have been lost"
    assert res.status_code == 202 and res.headers["Idempotency-Replayed"] == "true"
    run_id = res.json()["run_id"]
    assert res.json() == {"run_id": run_id, "status": "queued", "replayed": True}
    assert consumer.poll(run_id).json()["status"] == "queued"
    stop = consumer.http.post(f"{server.url}/v1/runs/{run_id}/stop", timeout=5)
    assert stop.json() == {"run_id": run_id, "status": "stopping"}
    admin(server, f"/hermes/runs/{run_id}/observe", {"status": "cancelled"})
    assert consumer.poll(run_id).json()["status"] == "cancelled"
    assert consumer.submit({"input": "synthetic prompt"}, "delivery-1")[0].json()["status"] == (
        "cancelled")


def test_client_deadline_on_a_slow_poll_then_retry(server):
    consumer = Consumer(server.url)
    run_id = consumer.submit({"input": "x"}, "k")[0].json()["run_id"]
    admin(server, "/faults", {"preset": "hermes_poll_timeout"})
    with pytest.raises(requests.Timeout):
        consumer.poll(run_id, timeout=0.3)
    assert consumer.poll(run_id, timeout=2).status_code == 200


class StreamReader(threading.Thread):
    """Read an SSE response in the background, keeping each frame as it arrives."""

    def __init__(self, url):
        super().__init__(daemon=True)
        self.response = requests.get(url, stream=True, timeout=10)
        self.items = []
        self.done = threading.Event()

    def run(self):
        buffer = ""
        try:
            for chunk in self.response.iter_content(chunk_size=1, decode_unicode=True):
                buffer += chunk
                while "\n\n" in buffer:
                    block, buffer = buffer.split("\n\n", 1)
                    if block.startswith("data: "):
                        self.items.append(json.loads(block[6:])["event"])
                    else:
                        self.items.append(block)
        finally:
            self.done.set()

    def wait_for(self, item, timeout=5):
        deadline = time.monotonic() + timeout
        while item not in self.items:
            assert time.monotonic() < deadline, f"{item!r} never arrived: {self.items}"
            time.sleep(0.01)


def test_live_subscriber_sees_events_as_they_happen_and_stop_mid_stream(server):
    run_id = Consumer(server.url).submit({"input": "x"}, "k")[0].json()["run_id"]
    reader = StreamReader(f"{server.url}/v1/runs/{run_id}/events")
    assert reader.response.headers["Content-Type"].startswith("text/event-stream")
    reader.start()
    reader.wait_for(": keepalive")  # idle: keepalive comments
    admin(server, f"/hermes/runs/{run_id}/observe", {"status": "running", "events": [
        {"event": "message.delta", "delta": "partial "}]})
    reader.wait_for("message.delta")
    requests.post(f"{server.url}/v1/runs/{run_id}/stop", timeout=5)
    assert not reader.done.is_set()
    admin(server, f"/hermes/runs/{run_id}/observe", {"status": "cancelled"})
    assert reader.done.wait(5)
    assert [i for i in reader.items if i != ": keepalive"] == [
        "message.delta", "run.cancelled", ": stream closed"]
    assert requests.get(f"{server.url}/v1/runs/{run_id}/events", timeout=5).status_code == 404


def test_late_subscriber_over_http(server):
    run_id = Consumer(server.url).submit({"input": "x"}, "k")[0].json()["run_id"]
    admin(server, f"/hermes/runs/{run_id}/observe", {"status": "running", "events": [
        {"event": "message.delta", "delta": "a"}, {"event": "tool.started", "tool": "t"}]})
    admin(server, f"/hermes/runs/{run_id}/observe", {"status": "completed", "output": "a"})
    reader = StreamReader(f"{server.url}/v1/runs/{run_id}/events")
    reader.start()
    assert reader.done.wait(5)
    assert reader.items == ["message.delta", "tool.started", "run.completed", ": stream closed"]


def test_client_going_away_releases_the_stream(server):
    run_id = Consumer(server.url).submit({"input": "x"}, "k")[0].json()["run_id"]
    response = requests.get(f"{server.url}/v1/runs/{run_id}/events", stream=True, timeout=5)
    assert response.status_code == 200
    response.close()  # the client leaves; the next keepalive write fails server-side
    deadline = time.monotonic() + 5
    while requests.get(f"{server.url}/v1/runs/{run_id}/events", stream=True,
                       timeout=5).status_code != 404:
        assert time.monotonic() < deadline, "the abandoned stream was never released"
        time.sleep(KEEPALIVE_S)


def test_stop_without_content_length_as_curl_sends_it(server):
    import socket
    run_id = Consumer(server.url).submit({"input": "x"}, "k")[0].json()["run_id"]
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(f"POST /v1/runs/{run_id}/stop HTTP/1.1\r\nHost: x\r\n"
                     "Connection: close\r\n\r\n".encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200") and json.loads(body) == {
        "run_id": run_id, "status": "stopping"}


def test_python_first_serve_api(tmp_path):
    import emulators.hermes
    with emulators.hermes.serve(db=str(tmp_path / "s.sqlite3")) as hermes:
        res = requests.post(hermes.url + "/v1/runs", json={"input": "x"}, timeout=5)
        assert res.status_code == 202
        health = requests.get(hermes.url + "/__admin/health", timeout=5).json()
        assert health["service"] == "hermes" and health["unsupported"] == []
        from emulators.hermes.openapi import DOCUMENT
        documented = {op["operationId"] for item in DOCUMENT["paths"].values()
                      for op in item.values()}
        assert sorted(health["operations"]) == sorted(documented)  # every route, documented


def test_closing_the_server_ends_open_streams_at_once(tmp_path):
    """With upstream's 30-s keepalives, a run stream that is idle, a scripted slow chat stream
    (10 s between frames) and an orphan's keepalive-only stream all end as soon as close()
    begins, each answered at once (headers before any frame, as upstream): the test's
    teardown takes a moment, not the next keepalive."""
    settings = HermesSettings(events_wait_s=0.2)  # keepalive_s: 30, as upstream
    with serve(create_service(settings), db=str(tmp_path / "e.sqlite3")) as running:
        run_id = Consumer(running.url).submit({"input": "x"}, "k")[0].json()["run_id"]
        streams = [requests.get(f"{running.url}/v1/runs/{run_id}/events", stream=True,
                                timeout=10) for _ in range(2)]  # the second: an orphan's
        admin(running, "/hermes/replies", {"replies": [{"text": "a b c", "delay_ms": 10000}]})
        streams.append(requests.post(f"{running.url}/v1/chat/completions", stream=True,
                                     timeout=10, json={"model": "hermes-agent", "stream": True,
                                                       "messages": [{"role": "user",
                                                                     "content": "hi"}]}))
        assert [stream.status_code for stream in streams] == [200, 200, 200]
        started = time.monotonic()
    assert time.monotonic() - started < 3
    for stream in streams:
        stream.content  # noqa: B018 (read to its end: no error, no timeout)
