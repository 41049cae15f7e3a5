"""The runtime under real gunicorn with 3 workers: one state for all of them."""
import threading

import pytest
import requests

from testkit.servers import gunicorn

pytestmark = pytest.mark.gunicorn
APP = "testkit.emulator_apps:counter()"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    db = tmp_path_factory.mktemp("gunicorn") / "emulators.sqlite3"
    with gunicorn(APP, env={"EMULATORS_DB": str(db), "EMULATORS_ADMIN_KEY": ""}, workers=3,
                  ready_path="/__admin/health", ready_status=200) as url:
        yield url


@pytest.fixture
def url(live):
    requests.post(live + "/__admin/reset?all=1").raise_for_status()
    return live


def fan_out(count, call):
    """Run `call(i)` on `count` threads at once (fresh connections spread over the workers)."""
    results = [None] * count
    barrier = threading.Barrier(count)

    def run(i):
        barrier.wait()
        results[i] = call(i)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def across_workers(call, rounds=40, width=12):
    """Call concurrently in rounds until answers came from at least two workers; return all.

    The kernel may hand a burst of connections to one worker, so one round proves nothing.
    """
    answers = []
    for _ in range(rounds):
        answers += fan_out(width, lambda i: call())
        if len({a.headers.get("x-worker-pid") for a in answers} - {None}) >= 2:
            return answers
    raise AssertionError("every answer came from one worker")


def test_state_created_through_one_worker_is_seen_by_all(url):
    requests.post(url + "/items", json={"name": "shared"},
                  headers={"x-mockingbird-namespace": "g1"}).raise_for_status()
    answers = across_workers(lambda: requests.get(url + "/items",
                                                  headers={"x-mockingbird-namespace": "g1"}))
    assert all([i["name"] for i in a.json()["items"]] == ["shared"] for a in answers)


def test_concurrent_increments_are_not_lost(url):
    fan_out(30, lambda i: requests.post(url + "/counter").raise_for_status())
    assert requests.get(url + "/counter").json()["value"] == 30


def test_one_shot_fault_fires_exactly_once_across_workers(url):
    requests.post(url + "/__admin/faults",
                  json={"operationId": "getCounter", "status": 503, "count": 1,
                        "after": 2}).raise_for_status()
    answers = across_workers(lambda: requests.get(url + "/counter"), width=30)
    assert sorted(a.status_code for a in answers) == [200] * (len(answers) - 1) + [503]
    (rule,) = requests.get(url + "/__admin/faults").json()["faults"]
    assert (rule["hits"], rule["matched"], rule["remaining"]) == (1, 3, 0)  # then retired


def test_clock_set_through_one_worker_is_the_clock_of_all(url):
    requests.post(url + "/__admin/clock", json={"set": "2030-01-01T00:00:00Z",
                                                "freeze": True}).raise_for_status()
    answers = across_workers(lambda: requests.get(url + "/info"))
    assert {a.json()["now"] for a in answers} == {1893456000000}


def test_concurrent_checkpoint_commits_never_collide(url):
    def commit(i):
        if i % 2:
            return requests.post(url + "/counter").headers["x-mockingbird-checkpoint"]
        return requests.post(url + "/__admin/checkpoints").json()["id"]
    ids = fan_out(30, commit)
    assert len(set(ids)) == 30
    listed = {c["id"] for c in requests.get(url + "/__admin/timeline").json()["checkpoints"]}
    assert set(ids) <= listed


def test_concurrent_mutations_chain_their_checkpoints_and_count_once(url):
    ids = fan_out(24, lambda i: requests.post(url + "/counter").headers[
        "x-mockingbird-checkpoint"])
    timeline = requests.get(url + "/__admin/timeline").json()
    chain = [c for c in timeline["checkpoints"] if c["id"] in set(ids)]
    # Heads are derived, never written per commit: each commit's parent is the one before it.
    assert [c["id"] for c in chain] == sorted(ids)
    assert all(b["parent"] == a["id"] for a, b in zip(chain, chain[1:]))
    assert timeline["branches"]["main"] == max(ids)
    metrics = requests.get(url + "/__admin/metrics").json()
    assert metrics["byOperation"]["incrementCounter 200"] == 24


def test_drop_and_journal_across_workers(url):
    requests.post(url + "/__admin/faults", json={"path": "/counter", "drop": True, "count": 1})
    with pytest.raises(requests.ConnectionError):
        requests.get(url + "/counter", timeout=5)
    assert requests.get(url + "/counter").status_code == 200
    statuses = [e["status"] for e in requests.get(url + "/__admin/requests").json()["requests"]]
    assert statuses == [0, 200]


def test_stream_is_not_buffered_by_gunicorn(url):
    import time
    started = time.monotonic()
    with requests.get(url + "/stream?n=3&wait=1", stream=True, timeout=10) as res:
        lines = res.iter_lines(chunk_size=1)
        assert next(lines) == b"data: 0"
        assert time.monotonic() - started < 0.3
        assert b"data: 2" in list(lines)


def test_admin_key_under_gunicorn(tmp_path):
    env = {"EMULATORS_DB": str(tmp_path / "k.sqlite3"), "EMULATORS_ADMIN_KEY": "k3y"}
    with gunicorn(APP, env=env, workers=2, ready_path="/__admin/health",
                  ready_status=200) as base:
        assert requests.get(base + "/__admin/clock").status_code == 401
        assert requests.get(base + "/__admin/clock",
                            headers={"x-mockingbird-admin-key": "k3y"}).status_code == 200
        assert requests.get(base + "/counter").status_code == 200


def test_requests_answered_by_workers_killed_right_after_stay_in_the_journal(url):
    import os
    import signal
    import time
    answers = across_workers(lambda: requests.get(url + "/counter"))
    assert all(answer.status_code == 200 for answer in answers)
    for pid in {answer.headers["x-worker-pid"] for answer in answers}:
        os.kill(int(pid), signal.SIGKILL)  # no drain, no flush, no exit handler ran
    deadline = time.monotonic() + 20
    while True:  # the arbiter starts new workers
        try:
            journal = requests.get(url + "/__admin/requests", timeout=2).json()["requests"]
            break
        except requests.RequestException:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    assert len([entry for entry in journal if entry["path"] == "/counter"]) == len(answers)
    seqs = [entry["seq"] for entry in journal]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    metrics = requests.get(url + "/__admin/metrics").json()
    assert metrics["byOperation"]["getCounter 200"] == len(answers)
