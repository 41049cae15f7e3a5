"""Waiting for a lock another process holds: files.Locks tries again every files.POLL_S
(filelock's wait polls), so the interval trades a waiter's delay for its CPU.

The contention the chat meets is a burst: a post holds its address's window and its thread's
lock for its two fsyncs, and the rate limits (per thread, per address) leave no sustained
stream on one lock, only a few posts at once (people behind one NAT address, a double click).
Here two processes with four threads each post at once, two posts per thread: sixteen posts
from one address to one thread, each waiting for the others, for each interval; and, as the
floor, the same sixteen to threads and addresses of their own. BENCH_BURSTS bursts per row
and cycle, BENCH_CYCLES cycles interleaved; per row the medians of the burst's time (until its
last answer), p50 and longest post, and CPU per post. BENCH_DATA: a folder on a real disk.
"""
import multiprocessing
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spaces.newos4 import files  # noqa: E402
from spaces.newos4.service import ChatService, thread_of  # noqa: E402
from spaces.newos4.settings import Settings  # noqa: E402

INTERVALS_MS = (0.2, 0.5, 1, 2, 5, 50)  # 50 ms: filelock's own default
CYCLES = int(os.environ.get("BENCH_CYCLES", "3"))
BURSTS = int(os.environ.get("BENCH_BURSTS", "10"))
THREADS, POSTS = 4, 2  # per process, per thread


def poster(data_dir, interval_s, shared, starts, out):
    """One process: at each start time, THREADS threads post POSTS times each."""
    files.POLL_S = interval_s
    settings = Settings(data_dir=Path(data_dir), rate_thread=10**9, rate_ip=10**9,
                        max_threads=10**9)
    service = ChatService(settings)
    latencies, ends, cpu = [], [], time.process_time()
    for start, token in starts:
        def post(n):
            mine = token if shared else secrets.token_hex(32)
            address = "198.51.100.7" if shared else f"198.51.{os.getpid() % 250}.{n}"
            for _ in range(POSTS):
                began = time.perf_counter()
                service.post(thread_of(mine), "one of a burst", "operator", address)
                latencies.append(time.perf_counter() - began)
            ends.append(time.monotonic())

        threads = [threading.Thread(target=post, args=(n,)) for n in range(THREADS)]
        time.sleep(max(0.0, start - time.monotonic()))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    out.send((latencies, ends, time.process_time() - cpu))


def row(data_dir, interval_s, shared):
    """BURSTS bursts by two processes: burst time, p50 and longest post (ms), CPU per post."""
    first = time.monotonic() + 0.3
    starts = [(first + 0.15 * n, secrets.token_hex(32)) for n in range(BURSTS)]
    pipes, procs = [], []
    for _ in range(2):
        receive, send = multiprocessing.Pipe(duplex=False)
        proc = multiprocessing.Process(target=poster,
                                       args=(data_dir, interval_s, shared, starts, send))
        proc.start()
        pipes.append(receive)
        procs.append(proc)
    results = [pipe.recv() for pipe in pipes]
    for proc in procs:
        proc.join()
    latencies = sorted(t for lat, _, _ in results for t in lat)
    ends = [e for _, ends, _ in results for e in ends]
    bursts = [max(e for e in ends if start <= e < start + 0.15) - start for start, _ in starts
              if any(start <= e < start + 0.15 for e in ends)]
    return {"burst": statistics.median(bursts) * 1000, "late": len(starts) - len(bursts),
            "p50": latencies[len(latencies) // 2] * 1000, "max": latencies[-1] * 1000,
            "cpu_us": sum(cpu for _, _, cpu in results) / len(latencies) * 1e6}


def main():
    multiprocessing.set_start_method("fork")
    root = Path(tempfile.mkdtemp(prefix="bench-locks-", dir=os.environ.get("BENCH_DATA")))
    try:
        rows = {(ms, shared): [] for ms in INTERVALS_MS for shared in (True, False)}
        for cycle in range(CYCLES):
            for (ms, shared), samples in rows.items():
                samples.append(row(root / f"{cycle}-{ms}-{shared}", ms / 1000, shared))
        print(f"bursts of {2 * THREADS * POSTS} posts by two processes, {BURSTS} bursts x "
              f"{CYCLES} cycles per row, medians; data on {root}")
        print(f"{'POLL_S ms':>9} {'posts to':>10} {'burst ms':>9} {'p50 ms':>7} {'max ms':>7} "
              f"{'CPU us':>7} {'over 150 ms':>11}")
        for ms in INTERVALS_MS:
            for shared in (True, False):
                samples = rows[(ms, shared)]
                line = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
                print(f"{ms:9g} {'one thread' if shared else 'their own':>10} "
                      f"{line['burst']:9.1f} {line['p50']:7.2f} {line['max']:7.1f} "
                      f"{line['cpu_us']:7.0f} {sum(s['late'] for s in samples):11d}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
