"""The lowest filelock that setup.cfg declares keeps `files.Locks`' promises: installed from the
package index into a venv of its own, a lock another holder has is refused at once (timeout 0),
after its timeout (a bound), or had once let go (no bound), and the threads of one process take
turns."""
import subprocess

import pytest

from testkit.bounds import bound_venv
from testkit.servers import REPO

pytestmark = pytest.mark.timeout(180)

PROMISES = r"""
import fcntl, os, sys, threading, time
from spaces.newos4.files import Locks, LockTimeout

path = sys.argv[1]
other = os.open(path, os.O_RDWR | os.O_CREAT)  # another open file: as another process holds it
fcntl.flock(other, fcntl.LOCK_EX)
for timeout, least in ((0, 0.0), (0.3, 0.3)):
    started = time.monotonic()
    try:
        with Locks(timeout)(path):
            sys.exit("had a lock another holder has")
    except LockTimeout:
        took = time.monotonic() - started
        assert least <= took < least + 0.2, (timeout, took)
let_go = []


def let_go_now():
    let_go.append(time.monotonic())
    os.close(other)


threading.Timer(0.3, let_go_now).start()
with Locks(None)(path) as fd:
    taken = time.monotonic()
    # had once let go, and soon after: measured from the release itself, not from the start,
    # so a late timer thread on a loaded machine is not the lock's delay
    assert let_go and 0 <= taken - let_go[0] < 0.2, (let_go, taken)
    os.pwrite(fd, b"the holder writes through the lock's descriptor", 0)
inside, overlaps, locks = [], [], Locks(5)

def turn():
    with locks(path):
        inside.append(1)
        overlaps.append(len(inside))
        time.sleep(0.02)
        inside.pop()

threads = [threading.Thread(target=turn) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
assert overlaps == [1, 1, 1, 1], overlaps
print("kept")
"""


def test_the_lowest_declared_filelock_keeps_the_locks_promises(tmp_path_factory, tmp_path):
    python = bound_venv(tmp_path_factory.mktemp("filelock-floor"), "filelock", "lowest")
    done = subprocess.run([python, "-c", PROMISES, str(tmp_path / "t.json.lock")], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "kept\n", done.stderr
