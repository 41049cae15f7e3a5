"""Across 3 gunicorn workers: runs, idempotency and event streams live in the shared SQLite."""
import concurrent.futures
import json
import threading

import pytest
import requests

from testkit.servers import gunicorn

pytestmark = [pytest.mark.gunicorn, pytest.mark.timeout(60)]
APP = "testkit.emulator_apps:hermes()"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    db = tmp_path_factory.mktemp("hermes-gunicorn") / "emulators.sqlite3"
    env = {"EMULATORS_DB": str(db), "HERMES_SSE_KEEPALIVE_SECONDS": "0.5",
           "HERMES_SSE_POLL_SECONDS": "0.02"}
    # Threads as shipped in gunicorn.conf.py (streams take threads of their own).
    with gunicorn(APP, env=env, workers=3, threads=None, ready_path="/__admin/health") as base:
        yield base


def fresh_sessions(n):
    """Sessions without keep-alive, so consecutive requests spread over the workers."""
    sessions = []
    for _ in range(n):
        session = requests.Session()
        session.headers["Connection"] = "close"
        sessions.append(session)
    return sessions


def test_create_on_one_worker_poll_and_stop_on_others(url):
    ns = {"x-mockingbird-namespace": "spread"}
    a, b, c = fresh_sessions(3)
    run_id = a.post(url + "/v1/runs", json={"input": "x"}, headers=ns, timeout=5).json()["run_id"]
    for session in (a, b, c) * 4:
        res = session.get(f"{url}/v1/runs/{run_id}", headers=ns, timeout=5)
        assert res.status_code == 200 and res.json()["status"] == "queued"
    stop = c.post(f"{url}/v1/runs/{run_id}/stop", headers=ns, timeout=5)
    assert stop.json() == {"run_id": run_id, "status": "stopping"}
    assert b.get(f"{url}/v1/runs/{run_id}", headers=ns, timeout=5).json()["status"] == "stopping"


def test_concurrent_identical_keyed_submissions_yield_one_run(url):
    ns = {"x-mockingbird-namespace": "race", "Idempotency-Key": "same-delivery"}
    barrier = threading.Barrier(24)

    def submit(_):
        session = requests.Session()
        barrier.wait()
        res = session.post(url + "/v1/runs", json={"input": "race"}, headers=ns, timeout=20)
        return res.status_code, res.json()

    with concurrent.futures.ThreadPoolExecutor(24) as pool:
        results = list(pool.map(submit, range(24)))
    assert {status for status, _ in results} == {202}
    assert len({body["run_id"] for _, body in results}) == 1
    assert sorted(body["replayed"] for _, body in results) == [False] + [True] * 23


def test_stream_served_by_any_worker_sees_events_scripted_through_others(url):
    ns = {"x-mockingbird-namespace": "stream"}
    run_id = requests.post(url + "/v1/runs", json={"input": "x"}, headers=ns,
                           timeout=5).json()["run_id"]
    stream = requests.get(f"{url}/v1/runs/{run_id}/events", headers=ns, stream=True, timeout=10)
    assert stream.status_code == 200
    items = []

    def read():
        buffer = ""
        for chunk in stream.iter_content(chunk_size=1, decode_unicode=True):
            buffer += chunk
            while "\n\n" in buffer:
                block, buffer = buffer.split("\n\n", 1)
                items.append(json.loads(block[6:])["event"] if block.startswith("data: ")
                             else block)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    for delta in ("a", "b", "c"):
        session = fresh_sessions(1)[0]
        session.post(f"{url}/__admin/hermes/runs/{run_id}/observe", headers=ns, timeout=5,
                     json={"status": "running",
                           "events": [{"event": "message.delta", "delta": delta}]})
    fresh_sessions(1)[0].post(f"{url}/__admin/hermes/runs/{run_id}/observe", headers=ns,
                              timeout=5, json={"status": "completed", "output": "abc"})
    reader.join(10)
    assert [i for i in items if i != ": keepalive"] == [
        "message.delta", "message.delta", "message.delta", "run.completed", ": stream closed"]


def test_more_open_streams_than_workers_do_not_block_other_requests(url):
    ns = {"x-mockingbird-namespace": "many"}
    run_ids = [requests.post(url + "/v1/runs", json={"input": "x"}, headers=ns,
                             timeout=5).json()["run_id"] for _ in range(5)]
    streams = [requests.get(f"{url}/v1/runs/{r}/events", headers=ns, stream=True, timeout=10)
               for r in run_ids]
    try:
        assert all(s.status_code == 200 for s in streams)
        for session in fresh_sessions(6):
            assert session.get(f"{url}/v1/runs/{run_ids[0]}", headers=ns,
                               timeout=5).status_code == 200
    finally:
        for s in streams:
            s.close()


def test_sessions_and_jobs_agree_across_workers(url):
    """Concurrent chat turns into one session, from every worker, all land in its transcript;
    a job created on one worker runs once when the clock passes its tick, whoever asks."""
    ns = {"x-mockingbird-namespace": "sessions"}
    sessions = fresh_sessions(12)
    assert sessions[0].post(url + "/api/sessions", json={"id": "shared"}, headers=ns,
                            timeout=5).status_code == 201

    def turn(n):
        return sessions[n].post(url + "/api/sessions/shared/chat", json={"message": f"m{n}"},
                                headers=ns, timeout=20).status_code

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        assert set(pool.map(turn, range(12))) == {200}
    for session in sessions[:3]:
        got = session.get(url + "/api/sessions/shared", headers=ns, timeout=5).json()["session"]
        assert got["message_count"] == 24 and got["api_call_count"] == 12
    transcript = sessions[1].get(url + "/api/sessions/shared/messages", headers=ns,
                                 timeout=5).json()["data"]
    assert sorted(m["content"] for m in transcript if m["role"] == "user") == sorted(
        f"m{n}" for n in range(12))
    ids = [m["id"] for m in transcript]
    assert ids == sorted(ids) and len(set(ids)) == 24

    clock = requests.post(url + "/__admin/clock", json={"set": 1_796_132_400_000, "freeze": True},
                          headers=ns, timeout=5)
    assert clock.status_code == 200
    job = sessions[2].post(url + "/api/jobs", json={"name": "Tick", "schedule": "every 5m"},
                           headers=ns, timeout=5).json()["job"]
    requests.post(url + "/__admin/clock", json={"advance": 300_000}, headers=ns, timeout=5)

    def look(n):
        return sessions[n].get(f"{url}/api/jobs/{job['id']}", headers=ns,
                               timeout=20).json()["job"]["repeat"]["completed"]

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        assert set(pool.map(look, range(12))) == {1}
    cron = sessions[4].get(url + "/api/sessions?source=cron", headers=ns, timeout=5).json()
    assert len(cron["data"]) == 1
