"""Deterministic mulberry32 random numbers whose uint32 state is a row (so checkpoints keep it)."""


def fnv1a(text):
    """Hash a string to uint32 (FNV-1a), for string seeds."""
    h = 0x811C9DC5
    for byte in str(text).encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def seed_state(seed):
    """Return the initial uint32 state for a numeric or string seed."""
    if isinstance(seed, int):
        return seed & 0xFFFFFFFF
    return fnv1a(seed)


def mulberry32(state):
    """Return (value in [0, 1), next state)."""
    state = (state + 0x6D2B79F5) & 0xFFFFFFFF
    t = state
    t = ((t ^ (t >> 15)) * (t | 1)) & 0xFFFFFFFF
    t ^= (t + (((t ^ (t >> 7)) * (t | 61)) & 0xFFFFFFFF)) & 0xFFFFFFFF
    return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296, state


class Rng:
    """The RNG of one storage key; each draw is an atomic read-modify-write of its row."""

    def __init__(self, db, service, namespace, key, seed=0):
        self._db = db
        self._service = service
        self._namespace = namespace
        self._key = key
        self._seed = seed_state(seed)

    def state(self):
        """Return the current uint32 state."""
        row = self._db.one("SELECT state FROM rngs WHERE service=? AND key=?",
                           (self._service, self._key))
        return self._seed if row is None else row[0]

    def set_state(self, state):
        """Replace the state (checkpoint restore)."""
        if not isinstance(state, int) or not 0 <= state <= 0xFFFFFFFF:
            raise ValueError("rng state must be an unsigned 32-bit integer")
        self._db.execute("INSERT INTO rngs (service, namespace, key, state) VALUES (?, ?, ?, ?)"
                         " ON CONFLICT (service, key) DO UPDATE SET state=excluded.state",
                         (self._service, self._namespace, self._key, state))

    def random(self):
        """Return the next float in [0, 1)."""
        with self._db.transaction():
            value, state = mulberry32(self.state())
            self.set_state(state)
        return value

    def randint(self, a, b):
        """Return an integer in [a, b]."""
        return a + int(self.random() * (b - a + 1))

    def choice(self, seq):
        """Return one element of a non-empty sequence."""
        return seq[int(self.random() * len(seq))]
