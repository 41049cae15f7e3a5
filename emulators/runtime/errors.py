"""Errors of the emulator runtime and the base class services derive their wire errors from."""
import errno


class EmulatorError(Exception):
    """A domain error with a class-level status and a wire body; services subclass it."""

    status = 500
    type = "mockingbird_internal"
    message = "internal error"
    headers = {}

    def __init_subclass__(cls, **data):
        """Let a leaf declare its wire data in its class line: `class Gone(Base, status=410)`.

        Only attributes the base already has may be set, so a misspelt keyword fails at import.
        """
        super().__init_subclass__()
        for name, value in data.items():
            if not hasattr(cls, name):
                raise TypeError(f"{cls.__name__}: {name!r} is not an attribute of its base")
            setattr(cls, name, value)

    def __init__(self, message=None, *, status=None, headers=None):
        super().__init__(message or self.message)
        self.message = message or self.message
        if status is not None:
            self.status = status
        if headers is not None:
            self.headers = headers

    def body(self):
        """Return the JSON body sent on the wire; services override it with their envelope."""
        return {"error": {"type": self.type, "message": self.message}}


class AdminError(EmulatorError):
    """An admin-plane error: `{"error":{"type":"mockingbird_admin","message":…}}`."""

    status = 400
    type = "mockingbird_admin"


class ConnectionDropped(BaseException):
    """Raised by `instance.drop()`; a BaseException so no handler's `except Exception` eats it."""


class DroppedByFault(BrokenPipeError):
    """What the WSGI callable raises after closing the socket (servers ignore EPIPE quietly).

    In-process callers (webtest) without a socket see this error instead of a response.
    """

    def __init__(self):
        super().__init__(errno.EPIPE, "fetch failed: connection dropped by Mockingbird fault")
        self.code = "MOCKINGBIRD_DROP"
