"""Chat service vs bare Falcon endpoints, same gunicorn config, one run; prints ratios.

(a) poll.php with nothing new vs a bare small-JSON GET       target >= 0.8x throughput
(b) poll.php on 200 x 4000-char messages vs a 1-message thread target <= 1.2x latency
(c) post.php vs a bare endpoint doing one fsync'd atomic write target >= 0.5x throughput
    (c1) a short conversation (a new token every 10 posts) vs writing one message;
    (c2) onto a full 200-message thread vs writing a file of the same size: fsync cost grows
         with the bytes written, and a thread is one file, so this is the fair floor there.
"""
import atexit
import http.client
import json
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spaces.newos4.service import ChatService, thread_of  # noqa: E402
from spaces.newos4.settings import Settings  # noqa: E402
from testkit.servers import gunicorn  # noqa: E402

ROUNDS = 5
PER_ROUND = 400
SERVER = {"workers": 2, "threads": 4, "extra_args": ("--access-logfile", "/dev/null")}


def timed(url, method, path, body=None, headers=None, count=PER_ROUND):
    """Latencies (s) of `count` sequential requests from one client, on one kept-alive
    connection (both apps run under the same gunicorn.conf.py: both sides pay the same)."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        conn.request(method, path, body=body() if callable(body) else body,
                     headers=headers or {})
        answer = conn.getresponse()
        answer.read()
        samples.append(time.perf_counter() - start)
        assert answer.status < 300, answer.status
    conn.close()
    return samples


def timed_post(url, token_of_request, message, count=100):
    """Latencies of `count` post.php requests, each with the token the callable picks."""
    samples = []
    for _ in range(count):
        token = token_of_request()
        address = ".".join(str(b) for b in bytes.fromhex(token[:8]))  # one address per user
        samples += timed(url, "POST", "/spaces/newos4/api/chat/post.php", body=message,
                         headers={"X-Chat-Token": token, "X-Forwarded-For": address,
                                  "Content-Type": "application/json"}, count=1)
    return samples


def side_by_side(a, b):
    """Interleave rounds of two measurements; return median latencies (a, b)."""
    xs, ys = [], []
    for _ in range(ROUNDS):
        xs += a()
        ys += b()
    return statistics.median(xs), statistics.median(ys)


def main():
    data = Path(tempfile.mkdtemp(prefix="bench-chat-"))
    atexit.register(shutil.rmtree, data, ignore_errors=True)
    # Each simulated user posts from its own forwarded address. The windows are shortened only so
    # (c2) can keep posting to one full thread: 500 posts in a few seconds, the 200 kept
    # messages not held back by a window that still counts them.
    env = {"NEWOS4_DATA_DIR": str(data), "NEWOS4_RATE_THREAD": "200", "NEWOS4_RATE_IP": "1000",
           "NEWOS4_RATE_WINDOW_S": "1",
           "BENCH_BARE_DIR": str(data / "bare")}
    small, big = secrets.token_hex(32), secrets.token_hex(32)
    service = ChatService(Settings(data_dir=data, rate_thread=10**7, rate_ip=10**7))
    service.post(thread_of(small), "hello", "operator", "bench")
    for i in range(200):
        service.post(thread_of(big), f"{i:04d}" + "x" * 3996, "operator", "bench")
    big_cursor = service.poll(thread_of(big))["cursor"]
    small_cursor = service.poll(thread_of(small))["cursor"]
    poll_path = "/spaces/newos4/api/chat/poll.php?since="
    with gunicorn(env=env, **SERVER) as chat, \
            gunicorn("bench.bare:application", env=env, ready_path="/bare", **SERVER) as bare:
        # Age the thread files past the cache's racy window, as in steady-state polling.
        time.sleep(2.1)
        poll_small = lambda: timed(chat, "GET", poll_path + str(small_cursor),  # noqa: E731
                                   headers={"X-Chat-Token": small})
        poll_big = lambda: timed(chat, "GET", poll_path + str(big_cursor),  # noqa: E731
                                 headers={"X-Chat-Token": big})
        bare_get = lambda: timed(bare, "GET", "/bare")  # noqa: E731
        tokens = iter(lambda: secrets.token_hex(32), None)
        conversation = {"token": next(tokens), "left": 10}

        def short_thread_token():
            if conversation["left"] == 0:
                conversation.update(token=next(tokens), left=10)
            conversation["left"] -= 1
            return conversation["token"]

        message = json.dumps({"text": "benchmark message"})
        post_short = lambda: timed_post(chat, short_thread_token, message)  # noqa: E731
        post_full = lambda: timed_post(chat, lambda: big, message)  # noqa: E731
        thread_bytes = (data / "chat" / f"{thread_of(big)}.json").read_bytes()
        bare_short = lambda: timed(bare, "POST", "/bare-write", body=message,  # noqa: E731
                                   count=100)
        bare_full = lambda: timed(bare, "POST", "/bare-write", body=thread_bytes,  # noqa: E731
                                  count=100)

        poll_ms, bare_ms = side_by_side(poll_small, bare_get)
        big_ms, small_ms = side_by_side(poll_big, poll_small)
        post_ms, write_ms = side_by_side(post_short, bare_short)
        full_ms, full_write_ms = side_by_side(post_full, bare_full)
    rows = [
        ("(a) poll.php, nothing new vs bare JSON GET (throughput)", bare_ms / poll_ms, ">= 0.8",
         poll_ms, bare_ms),
        ("(b) poll.php 200x4000 chars vs 1 message (latency)", big_ms / small_ms, "<= 1.2",
         big_ms, small_ms),
        ("(c1) post.php, short thread vs bare fsync'd write of one message (throughput)",
         write_ms / post_ms, ">= 0.5", post_ms, write_ms),
        ("(c2) post.php, 200-message thread vs bare fsync'd write of that size (throughput)",
         full_write_ms / full_ms, ">= 0.5", full_ms, full_write_ms),
    ]
    for name, ratio, target, ours, theirs in rows:
        print(f"{name}: {ratio:.2f}x (target {target}); median {ours * 1000:.3f} ms vs "
              f"{theirs * 1000:.3f} ms")


if __name__ == "__main__":
    main()
