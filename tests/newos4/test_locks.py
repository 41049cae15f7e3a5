"""Orphan lock files are swept, and never a lock someone may hold.

The sweep deletes `<thread>.json.lock` only while holding it itself and only when the thread
has no file. That is safe because the store's locks (`files.Locks`), having won `flock` on an
inode that was unlinked meanwhile, re-open the path instead of believing they hold the lock:
the tests below prove that property, then hammer it with processes.
"""
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from spaces.newos4.files import Locks, LockTimeout, lock
from spaces.newos4.service import STALE_FILE_S

from .conftest import ChatClient

REPO = Path(__file__).resolve().parents[2]
OLD = time.time() - STALE_FILE_S - 60


def age(path, when=OLD):
    os.utime(path, (when, when))


def sweep(data_dir):
    return subprocess.run([sys.executable, "cron/relay.py", "--sweep-only"], cwd=REPO,
                          env={**os.environ, "NEWOS4_DATA_DIR": str(data_dir)},
                          capture_output=True, text=True, timeout=60)


HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)  # any other program's flock
print("held", flush=True)
sys.stdin.read()
"""


def test_the_sweep_removes_old_orphan_locks_only(make_app, settings, clock):
    clock.now = int(time.time() * 1000)  # the sweep runs by the real clock
    testapp, _ = make_app(max_threads=1)
    kept = ChatClient(testapp)
    kept.say("the one thread allowed")
    chat = settings.chat_dir
    crashed = chat / "00000000000000d0.json.lock"     # a writer killed while creating a thread
    deleted = chat / "00000000000000d1.json.lock"     # deleted by hand, or by an older version
    young = chat / "00000000000000d2.json.lock"       # inside the grace period
    held = chat / "00000000000000d3.json.lock"        # old, but a process holds it
    for path in (crashed, deleted, young, held):
        path.touch()
    live = chat / f"{kept.thread}.json.lock"          # its thread exists
    for path in (crashed, deleted, held, live):
        age(path)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(held)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        age(held)
        done = sweep(settings.data_dir)
    finally:
        holder.communicate("")
    assert done.returncode == 0, done.stderr
    assert '"locks_removed": 2' in done.stdout
    assert not crashed.exists() and not deleted.exists()
    assert young.exists() and held.exists() and live.exists()


def test_a_waiter_on_an_unlinked_lock_inode_reopens_the_path(tmp_path):
    """The property the sweep relies on: unlinking a lock while holding it never lets a waiter
    believe it holds the lock on the dead inode while another process locks the new file."""
    path = str(tmp_path / "t.json.lock")
    remover = lock(path, 0)
    remover.__enter__()
    got, done = threading.Event(), threading.Event()

    def wait():
        with Locks(10)(path):
            got.set()
            done.wait(10)

    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(0.3)  # the waiter has opened the old inode and waits in flock on it
    assert not got.is_set()
    os.unlink(path)
    remover.__exit__(None, None, None)
    assert got.wait(10)
    try:
        assert os.path.exists(path)  # it re-created the path: it holds the live inode
        with pytest.raises(LockTimeout):
            with lock(path, 0):
                pass
    finally:
        done.set()
        thread.join()


COUNT = """
import sys
from spaces.newos4.files import Locks
lock_path, counter, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
locks = Locks(30)
for _ in range(n):
    with locks(lock_path):
        with open(counter) as f:
            value = int(f.read())
        with open(counter, "w") as f:
            f.write(str(value + 1))
"""

SWEEP = """
import sys, pathlib
from spaces.newos4.store import ThreadStore
store = ThreadStore(pathlib.Path(sys.argv[1]), create_lock_path=pathlib.Path(sys.argv[1]) / "c")
removed = 0
while not pathlib.Path(sys.argv[2]).exists():
    removed += store.remove_orphan_locks(older_than_s=-1)
print(removed)
"""


def test_removing_orphan_locks_under_contention_never_breaks_mutual_exclusion(tmp_path):
    chat = tmp_path / "chat"
    chat.mkdir()
    lock_path = chat / "00000000000000e1.json.lock"
    counter, stop = tmp_path / "n", tmp_path / "stop"
    counter.write_text("0")
    sweeper = subprocess.Popen([sys.executable, "-c", SWEEP, str(chat), str(stop)], cwd=REPO,
                               stdout=subprocess.PIPE, text=True)
    workers = [subprocess.Popen([sys.executable, "-c", COUNT, str(lock_path), str(counter),
                                 "150"]) for _ in range(3)]
    try:
        assert [w.wait(120) for w in workers] == [0, 0, 0]
    finally:
        stop.touch()
        removed = int(sweeper.communicate(timeout=60)[0])
    assert counter.read_text() == "450"
    assert removed > 0  # the lock really was removed under the workers' feet


def test_threads_of_one_process_take_turns_and_leave_no_entry_behind(tmp_path):
    """Locks keeps one in-process mutex per path while someone holds or waits for it, and none
    after: neither a timeout nor an error inside the block leaves an entry or a held lock."""
    from spaces.newos4.files import LockTimeout
    locks, path = Locks(0.2), str(tmp_path / "t.json.lock")
    inside, order = threading.Event(), []

    def hold():
        with locks(path):
            inside.set()
            time.sleep(0.5)
            order.append("first")

    holder = threading.Thread(target=hold)
    holder.start()
    assert inside.wait(5)
    with pytest.raises(LockTimeout):
        with locks(path):
            order.append("too soon")
    holder.join(5)
    with pytest.raises(ZeroDivisionError):
        with locks(path):
            order.append("second")
            1 / 0
    with locks(path):
        order.append("third")
    assert order == ["first", "second", "third"]
    assert locks._mutexes == {}
