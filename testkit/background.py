"""A loop on a thread of its own for as long as a `with` block runs (the benchmarks' cron, the
driver that plays Hermes): started on entering the block, told to stop and joined on leaving."""
import threading


class InBackground:
    """`loop(stop)` on a daemon thread named `name` while the `with` block runs; on leaving it,
    `stop` (the threading.Event the loop watches) is set and the thread joined for up to
    `join_s` seconds."""

    def __init__(self, loop, *, name, join_s):
        self.stop = threading.Event()
        self._thread = threading.Thread(target=loop, args=(self.stop,), name=name, daemon=True)
        self._join_s = join_s

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self._thread.join(self._join_s)
