"""Domain errors of the chat service: a status and the contract's message, no HTTP library."""


class ChatError(Exception):
    """Base of every error the chat rules raise; `status` and `message` are the wire answer."""

    status = 500
    message = "internal error"

    def __init_subclass__(cls, **data):
        """Let a leaf declare its answer in its class line: `class Gone(ChatError, status=410)`."""
        super().__init_subclass__()
        for name, value in data.items():
            if not hasattr(cls, name):
                raise TypeError(f"{cls.__name__}: {name!r} is not an attribute of ChatError")
            setattr(cls, name, value)

    def __init__(self, message=None, *, headers=None):
        super().__init__(message or self.message)
        self.message = message or self.message
        self.headers = headers or {}


class TokenRejected(ChatError, status=401, message="missing or malformed X-Chat-Token"):
    ...


class TooLarge(ChatError):
    """Body or text over the limit; the contract gives both the same body."""

    status = 413

    def __init__(self, max_text):
        super().__init__(f"text too long (max {max_text} chars)")


class BadRequest(ChatError, status=400, message="bad request"):
    ...


class RateLimited(ChatError):
    status = 429

    def __init__(self, message, retry_after_s):
        super().__init__(message, headers={"Retry-After": str(retry_after_s)})
        self.retry_after_s = retry_after_s


class ThreadLimitReached(ChatError, status=507, message="thread limit reached"):
    ...


class ThreadNotFound(ChatError, status=404, message="no such thread"):
    """Only the host side can hit this: the browser side creates threads by posting."""


class ThreadCorrupt(ChatError, status=500, message="internal error"):
    """A thread file that is not the JSON we write: never overwrite it blindly."""


class StoreBusy(ChatError, status=503, message="busy, try again"):
    """A thread lock could not be had in time; nothing was written."""


class Unavailable(ChatError, status=503, message="unavailable"):
    """The service cannot do its job (health check): say so without details a stranger could use."""


class Gone(ChatError, status=410, message="gone"):
    ...
