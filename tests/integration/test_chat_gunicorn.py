"""The chat service under real gunicorn with several workers: what only processes can show."""
import concurrent.futures
import json
import os
import runpy
import secrets
import subprocess
import sys
import threading

import pytest
import requests

from spaces.newos4.app import POLL_PATH, POST_PATH
from spaces.newos4.service import ChatService, thread_of
from spaces.newos4.settings import Settings
from testkit.servers import REPO, gunicorn

pytestmark = pytest.mark.gunicorn


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("chat-gunicorn")


@pytest.fixture(scope="module")
def server(data_dir):
    env = {"NEWOS4_DATA_DIR": str(data_dir), "NEWOS4_RATE_THREAD": "100000",
           "NEWOS4_RATE_IP": "100000", "NEWOS4_MAX_THREADS": "100000"}
    with gunicorn(env=env, workers=4, threads=4) as url:
        yield url


def post(url, token, text, session=requests, **headers):
    return session.post(url + POST_PATH, json={"text": text},
                        headers={"X-Chat-Token": token, **headers}, timeout=30)


def poll(url, token, since=0, session=requests):
    return session.get(url + POLL_PATH, params={"since": since},
                       headers={"X-Chat-Token": token}, timeout=30)


def full_history(data_dir, token):
    """Every stored message of the token's thread (poll.php shows only the newest 50)."""
    service = ChatService(Settings(data_dir=data_dir))
    return service.history(thread_of(token))


def test_concurrent_writers_on_one_thread_lose_nothing(server, data_dir):
    token = secrets.token_hex(32)
    texts = [f"w{w}-{i}" for w in range(8) for i in range(15)]

    def send(text):
        answer = post(server, token, text)
        assert answer.status_code == 201, answer.text
        return answer.json()["epoch"]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        epochs = list(pool.map(send, texts))
    assert len(set(epochs)) == len(texts)
    history = full_history(data_dir, token)
    assert sorted(m["text"] for m in history) == sorted(texts)
    stored = [m["epoch"] for m in history]
    assert stored == sorted(stored) and len(set(stored)) == len(stored)
    newest = poll(server, token).json()
    assert newest["messages"] == history[-50:] and newest["cursor"] == stored[-1]


def test_concurrent_writers_on_many_threads_lose_nothing(server, data_dir):
    tokens = [secrets.token_hex(32) for _ in range(12)]
    jobs = [(t, f"m{i}") for t in tokens for i in range(6)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda job: post(server, *job).status_code, jobs))
    assert codes == [201] * len(jobs)
    for token in tokens:
        assert sorted(m["text"] for m in full_history(data_dir, token)) == \
            sorted(f"m{i}" for i in range(6))


def test_readers_polling_during_writes_always_get_valid_json(server):
    token = secrets.token_hex(32)
    stop = threading.Event()
    problems, polls = [], [0]

    def reader():
        with requests.Session() as session:
            while not stop.is_set():
                answer = poll(server, token, session=session)
                polls[0] += 1
                try:
                    body = answer.json()
                    assert answer.status_code == 200 and body["success"] is True
                    epochs = [m["epoch"] for m in body["messages"]]
                    assert epochs == sorted(epochs)
                except (ValueError, AssertionError) as exc:
                    problems.append((answer.status_code, answer.text[:200], exc))

    readers = [threading.Thread(target=reader) for _ in range(3)]
    for r in readers:
        r.start()
    with requests.Session() as session:
        for i in range(60):
            assert post(server, token, "x" * 3000 + str(i), session=session).status_code == 201
    stop.set()
    for r in readers:
        r.join()
    assert problems == [] and polls[0] > 10


def test_the_ip_window_holds_across_workers(data_dir):
    env = {"NEWOS4_DATA_DIR": str(data_dir / "ipwin"), "NEWOS4_RATE_IP": "10"}
    with gunicorn(env=env, workers=4, threads=2) as url:
        def attempt(_):
            return post(url, secrets.token_hex(32), "hi",
                        **{"X-Forwarded-For": "198.51.100.99"}).status_code

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            codes = list(pool.map(attempt, range(25)))
        assert codes.count(201) == 10 and codes.count(429) == 15
        other = post(url, secrets.token_hex(32), "hi", **{"X-Forwarded-For": "198.51.100.98"})
        assert other.status_code == 201
        limited = post(url, secrets.token_hex(32), "hi", **{"X-Forwarded-For": "198.51.100.99"})
        assert 1 <= int(limited.headers["Retry-After"]) <= 600


def test_a_chunked_body_over_the_limit_is_413(server):
    def chunks():
        yield b'{"text": "'
        for _ in range(40):
            yield b"x" * 1024
        yield b'"}'

    answer = requests.post(server + POST_PATH, data=chunks(), timeout=30,
                           headers={"X-Chat-Token": secrets.token_hex(32)})
    assert answer.status_code == 413
    assert answer.json() == {"success": False, "error": "text too long (max 4000 chars)"}


def test_a_small_chunked_body_is_accepted(server):
    token = secrets.token_hex(32)
    answer = requests.post(server + POST_PATH, data=iter([b'{"text": ', b'"chunked"}']),
                           headers={"X-Chat-Token": token}, timeout=30)
    assert answer.status_code == 201
    assert poll(server, token).json()["messages"][0]["text"] == "chunked"


def test_host_reply_and_sweep_beside_a_live_server_lose_nothing(server, data_dir):
    token = secrets.token_hex(32)
    thread = post(server, token, "seed").json()["thread"]
    env = {**os.environ, "NEWOS4_DATA_DIR": str(data_dir)}

    def host(i):
        reply = subprocess.run([sys.executable, "scripts/chat.py", "reply", thread, f"h{i}"],
                               cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
        assert reply.returncode == 0, reply.stderr
        sweep = subprocess.run([sys.executable, "cron/relay.py", "--sweep-only"], cwd=REPO,
                               env=env, capture_output=True, text=True, timeout=60)
        assert sweep.returncode in (0, 3), sweep.stderr

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        browser = [pool.submit(post, server, token, f"b{i}") for i in range(30)]
        hosts = [pool.submit(host, i) for i in range(6)]
        for future in browser:
            assert future.result().status_code == 201
        for future in hosts:
            future.result()
    texts = [m["text"] for m in full_history(data_dir, token)]
    assert sorted(texts) == sorted(["seed"] + [f"b{i}" for i in range(30)] +
                                   [f"h{i}" for i in range(6)])
    stored = json.loads((data_dir / "chat" / f"{thread}.json").read_text())["messages"]
    assert [m["epoch"] for m in stored] == sorted({m["epoch"] for m in stored})


@pytest.mark.timeout(90)
def test_more_streams_than_request_threads_leave_chat_requests_answered(tmp_path):
    """As shipped (gunicorn.conf.py's threads), two workers holding twice as many Hermes event
    streams as they have request threads: every chat request is still answered at once."""
    streams_wanted = 2 * 2 * runpy.run_path(str(REPO / "gunicorn.conf.py"))["threads"]
    env = {"NEWOS4_DATA_DIR": str(tmp_path / "data"), "EMULATORS_DB": str(tmp_path / "e.db"),
           "HERMES_SSE_KEEPALIVE_SECONDS": "0.5", "HERMES_SSE_POLL_SECONDS": "0.05"}
    hermes = "/emulators/hermes"
    with gunicorn(env=env, workers=2, threads=None, ready_path=POLL_PATH) as url:
        def open_stream(_):
            run = requests.post(f"{url}{hermes}/v1/runs", json={"input": "x"},
                                headers={"Connection": "close"}, timeout=10).json()
            return requests.get(f"{url}{hermes}/v1/runs/{run['run_id']}/events", stream=True,
                                timeout=10)

        streams = []
        try:
            # Opened side by side: a stream's head leaves with its first frame (a keepalive
            # after 0.5 s), and one after another they took 6 s.
            with concurrent.futures.ThreadPoolExecutor(streams_wanted) as pool:
                streams = list(pool.map(open_stream, range(streams_wanted)))
            assert [stream.status_code for stream in streams] == [200] * streams_wanted
            token = secrets.token_hex(32)
            for _ in range(6):
                answer = requests.get(url + POLL_PATH, headers={"X-Chat-Token": token,
                                                                "Connection": "close"},
                                      timeout=5)
                assert answer.status_code == 200
        finally:
            for stream in streams:
                stream.close()
