"""The fleet's guard around each child runtime: a namespace a fleet operation holds
answers 409, and the requests in flight are counted per namespace (quiescence)."""
import json
import threading

from ..emulator import ADMIN

JSON = "application/json"


class Guard:
    """Wrap a child runtime: answer 409 in a namespace a fleet operation holds, and count the
    requests in flight per namespace (quiescence). In-process only, like the listeners it guards.

    The namespace is the pipeline's own (Emulator.locate). Health is never held or counted.
    """

    def __init__(self, runtime):
        self.runtime = runtime
        self._locate = runtime.emulator.locate
        prefix = runtime.admin_prefix
        self._health = (prefix + "/health", prefix + "/health/")
        self._mutex = threading.Lock()
        self._locked = set()
        self._active = {}

    def namespace_of(self, environ):
        """Return the namespace a request is served in, or None for a health probe."""
        plane, namespace, path, _ = self._locate(environ)
        if plane is ADMIN and path in self._health and \
                environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
            return None
        return namespace

    def __call__(self, environ, start_response):
        namespace = self.namespace_of(environ)
        if namespace is None:
            return self.runtime(environ, start_response)
        with self._mutex:
            held = namespace in self._locked
            if not held:
                self._active[namespace] = self._active.get(namespace, 0) + 1
        if held:
            body = json.dumps({"error": "fleet control in progress", "namespace": namespace},
                              separators=(",", ":")).encode()
            start_response("409 Conflict", [("content-type", JSON),
                                            ("content-length", str(len(body)))])
            return [body]
        try:
            result = self.runtime(environ, start_response)
        except BaseException:
            self._leave(namespace)
            raise
        return _Tracked(result, lambda: self._leave(namespace))

    def _leave(self, namespace):
        with self._mutex:
            left = self._active.get(namespace, 1) - 1
            if left:
                self._active[namespace] = left
            else:
                self._active.pop(namespace, None)

    def lock(self, namespace):
        """Hold a namespace: its new requests answer 409 until unlock()."""
        with self._mutex:
            self._locked.add(namespace)

    def unlock(self, namespace):
        """Release a namespace held by lock()."""
        with self._mutex:
            self._locked.discard(namespace)

    def active(self, namespace):
        """Return how many requests of a namespace are in flight (streams until they end)."""
        with self._mutex:
            return self._active.get(namespace, 0)


class _Tracked:
    """A response body that calls `done()` once when the server closes it (after the last
    chunk of a stream, or when the client went away)."""

    def __init__(self, result, done):
        self._result = result
        self._done = done

    def __iter__(self):
        return iter(self._result)

    def close(self):
        try:
            close = getattr(self._result, "close", None)
            if close is not None:
                close()
        finally:
            done, self._done = self._done, None
            if done is not None:
                done()
