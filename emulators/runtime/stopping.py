"""How a stream learns that its server is stopping, so it ends then instead of holding the
stop until its next write (a Hermes run stream that is idle writes every 30 s).

A server that offers it puts a `threading.Event` in each request's environ under
STOPPING_KEY and sets it when it begins to stop: the runtime's own listener (server.py) and the
monolith's gunicorn worker (spaces/serving/worker.py, which names the key itself: it imports
nothing of the emulators). Under any other server a stream simply waits.
"""
import time

STOPPING_KEY = "server.stopping"


def pauser(environ):
    """`pause(seconds) -> bool` for a stream answering `environ`: waits up to `seconds`, and
    returns True (end the stream now) as soon as the server begins to stop."""
    stopping = environ.get(STOPPING_KEY)
    return _sleep if stopping is None else stopping.wait


def _sleep(seconds):
    time.sleep(seconds)
    return False
