"""Clocks in epoch milliseconds; injected so tests need no monkeypatching."""
import time


class SystemClock:
    """Wall clock (freezegun-aware, since it calls time.time)."""

    def now_ms(self):
        return int(time.time() * 1000)


class FixedClock:
    """A clock that only moves when told to."""

    def __init__(self, now_ms):
        self.now = int(now_ms)

    def now_ms(self):
        return self.now

    def advance(self, ms):
        self.now += int(ms)
