"""Route the HTTP calls of `requests` and of `httpx` (and httpx2, which the openai SDK uses),
sync and async, to WSGI apps in this process by URL prefix, with no port: the portless mode.

`requests` is caught in `HTTPAdapter.send` and httpx in `HTTPTransport.handle_request` /
`AsyncHTTPTransport.handle_async_request`, so clients that build their own sessions and
clients (PyGithub, the openai SDK) are caught too. The patches are in place while at least
one route is; anything no route matches goes on to the network unless a route asked to refuse
it. A drop fault is the library's own connection error (requests retries it as its adapter's
`max_retries` says, as urllib3 would); streamed answers are passed on chunk by chunk.
"""
import http.client
import importlib
import io
import sys
import threading
from urllib.parse import unquote_to_bytes, urlsplit

from .errors import DroppedByFault

DEFAULT_PORTS = {"http": 80, "https": 443}
ABORTED = "Remote end closed connection without response"


class UnmatchedRequest(Exception):
    """A request no route matched while a route refuses unmatched requests."""

    def __init__(self, method, url, bases):
        super().__init__(f"{method} {url} matches no emulator ({', '.join(bases)}) and"
                         " unmatched requests are refused (refuse_unmatched=True)")
        self.method, self.url = method, url


class Route:
    """One WSGI app answering every URL under `base_url` (scheme, host, port, path)."""

    def __init__(self, base_url, app, *, refuse_unmatched=False):
        parts = urlsplit(base_url)
        if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
            raise ValueError(f"base_url must be an http:// or https:// URL (got {base_url!r})")
        self.base_url = base_url.rstrip("/")
        self.app = app
        self.refuse_unmatched = refuse_unmatched
        self.origin = _origin(parts)
        self.prefix = parts.path.rstrip("/")

    def matches(self, parts):
        """Tell whether a split URL is under this route (whole path segments)."""
        if _origin(parts) != self.origin:
            return False
        path = parts.path or "/"
        return not self.prefix or path == self.prefix or path.startswith(self.prefix + "/")


def _origin(parts):
    return (parts.scheme, (parts.hostname or "").lower(),
            parts.port or DEFAULT_PORTS.get(parts.scheme))


def _host(parts):
    """The Host header http.client sends for a URL: the port only when not the scheme's."""
    host = parts.netloc.rpartition("@")[2]
    if parts.port == DEFAULT_PORTS[parts.scheme]:
        host = host.rpartition(":")[0]
    return host


class _Routes:
    """The routes in force in this process, and the patches while there is any."""

    def __init__(self):
        self._lock = threading.Lock()
        self._routes = []
        self._patches = []

    def add(self, route):
        with self._lock:
            if not self._routes:
                self._patches = [patch for patch in (_patch_requests(), _patch_httpx("httpx"),
                                                     _patch_httpx("httpx2")) if patch]
            self._routes.append(route)

    def remove(self, route):
        with self._lock:
            self._routes.remove(route)
            if not self._routes:
                for undo in reversed(self._patches):
                    undo()
                self._patches = []

    def find(self, method, url):
        """The newest route for `url`; None to let it pass; UnmatchedRequest to refuse it."""
        parts = urlsplit(str(url))
        routes = list(self._routes)
        for route in reversed(routes):
            if route.matches(parts):
                return route
        if any(route.refuse_unmatched for route in routes):
            raise UnmatchedRequest(method, str(url), [route.base_url for route in routes])
        return None


ROUTES = _Routes()


def environ_for(route, method, url, headers, body):
    """The WSGI environ of a request to `route`: the route's path is SCRIPT_NAME, so a
    mounted emulator's URLs keep it."""
    parts = urlsplit(str(url))
    path = unquote_to_bytes(parts.path or "/").decode("latin-1")
    environ = {
        "REQUEST_METHOD": method.upper(), "SCRIPT_NAME": route.prefix,
        "PATH_INFO": path[len(route.prefix):] or "/", "QUERY_STRING": parts.query,
        "SERVER_NAME": parts.hostname, "SERVER_PORT": str(route.origin[2]),
        "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
        "wsgi.version": (1, 0), "wsgi.url_scheme": parts.scheme,
        "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr,
        "wsgi.multithread": True, "wsgi.multiprocess": False, "wsgi.run_once": False,
    }
    for name, value in headers:
        key = name.upper().replace("-", "_")
        if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            key = "HTTP_" + key
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    environ.setdefault("HTTP_HOST", _host(parts))
    if body and "CONTENT_LENGTH" not in environ:
        environ["CONTENT_LENGTH"] = str(len(body))
    environ.pop("HTTP_TRANSFER_ENCODING", None)  # the body is whole here
    return environ


def call(route, environ):
    """Run the app; return (status, reason, headers, body iterator that closes the app's
    result). DroppedByFault means the answer was lost: no response at all."""
    started = []

    def start_response(status, headers, exc_info=None):
        if exc_info and started:
            raise exc_info[1].with_traceback(exc_info[2])
        started[:] = [status, headers]
        return lambda data: None  # the runtime never uses write()

    result = route.app(environ, start_response)
    chunks = _chunks(result)
    if not started:  # an app may start its answer with the first chunk; a stream has begun
        chunks = _prepend(next(chunks, b""), chunks)  # by now, and is read only when asked
    status, headers = started
    code, _, reason = status.partition(" ")
    headers = [(name, value) for name, value in headers
               if name.lower() != "transfer-encoding"]
    return int(code), reason, headers, chunks


def _chunks(result):
    try:
        for chunk in result:
            if chunk:
                yield chunk
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()


def _prepend(first, chunks):
    try:
        if first:
            yield first
        yield from chunks
    finally:
        chunks.close()


# -- requests ---------------------------------------------------------------------------------
def _patch_requests():
    try:
        from requests.adapters import HTTPAdapter
    except ImportError:
        return None
    original = HTTPAdapter.send

    def send(adapter, request, stream=False, timeout=None, verify=True, cert=None,
             proxies=None):
        route = ROUTES.find(request.method, request.url)
        if route is None:
            return original(adapter, request, stream=stream, timeout=timeout, verify=verify,
                            cert=cert, proxies=proxies)
        return _requests_answer(adapter, request, route)

    HTTPAdapter.send = send
    return lambda: setattr(HTTPAdapter, "send", original)


def _requests_body(body):
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytes, bytearray)):
        return bytes(body)
    if hasattr(body, "read"):
        data = body.read()
        return data.encode("utf-8") if isinstance(data, str) else data
    return b"".join(part.encode("utf-8") if isinstance(part, str) else part for part in body)


def _requests_answer(adapter, request, route):
    """Answer through the adapter's retry policy, as urllib3 applies it on the network."""
    from requests.exceptions import ConnectionError, RetryError
    from urllib3 import HTTPResponse
    from urllib3.exceptions import MaxRetryError, ProtocolError, ResponseError

    body = _requests_body(request.body)
    retries = adapter.max_retries
    while True:
        environ = environ_for(route, request.method, request.url, request.headers.items(), body)
        try:
            code, reason, headers, chunks = call(route, environ)
        except DroppedByFault:
            error = ProtocolError("Connection aborted.", http.client.RemoteDisconnected(ABORTED))
            try:
                retries = retries.increment(request.method, request.url, error=error)
            except (ProtocolError, MaxRetryError) as lost:
                raise ConnectionError(lost, request=request) from None
            retries.sleep()
            continue
        response = HTTPResponse(body=_Reader(chunks), headers=headers, status=code,
                                reason=reason, preload_content=False, decode_content=True,
                                request_method=request.method, request_url=request.url)
        if retries.is_retry(request.method, code, "Retry-After" in response.headers):
            try:
                retries = retries.increment(request.method, request.url, response=response)
            except MaxRetryError as exhausted:
                if retries.raise_on_status:
                    if isinstance(exhausted.reason, ResponseError):
                        raise RetryError(exhausted, request=request) from None
                    raise ConnectionError(exhausted, request=request) from None
            else:
                response.drain_conn()
                retries.sleep(response)
                continue
        return adapter.build_response(request, response)


class _Reader(io.RawIOBase):
    """A streamed answer as the file urllib3 reads: a drop mid-stream is a broken connection
    (requests raises ChunkedEncodingError, as on the network)."""

    def __init__(self, chunks):
        self._chunks = chunks
        self._left = b""

    def readable(self):
        return True

    def readinto(self, buffer):
        while not self._left:
            try:
                self._left = next(self._chunks)
            except StopIteration:
                return 0
            except DroppedByFault:
                raise http.client.IncompleteRead(b"") from None
        size = min(len(buffer), len(self._left))
        buffer[:size], self._left = self._left[:size], self._left[size:]
        return size

    def close(self):
        self._chunks.close()
        super().close()


# -- httpx and httpx2 -------------------------------------------------------------------------
def _patch_httpx(name):
    if name not in sys.modules:  # installed but not imported yet: a client may import it
        try:                      # inside the block, and its classes must be patched by then
            importlib.import_module(name)
        except ImportError:
            return None
    httpx = sys.modules[name]
    sync, asynchronous = httpx.HTTPTransport, httpx.AsyncHTTPTransport
    original, original_async = sync.handle_request, asynchronous.handle_async_request

    def handle_request(transport, request):
        route = ROUTES.find(request.method, request.url)
        if route is None:
            return original(transport, request)
        request.read()
        answer = _httpx_call(httpx, request, route)
        stream = _streams(httpx)[0](httpx, request, answer[3])
        return _httpx_response(httpx, request, answer, stream)

    async def handle_async_request(transport, request):
        route = ROUTES.find(request.method, request.url)
        if route is None:
            return await original_async(transport, request)
        await request.aread()
        import anyio.to_thread  # httpx runs on anyio: asyncio and trio alike
        # The app blocks (SQLite, a stream's waits): it runs in worker threads, one step
        # at a time, so the event loop goes on.
        run_sync = anyio.to_thread.run_sync
        answer = await run_sync(_httpx_call, httpx, request, route)
        stream = _streams(httpx)[1](httpx, request, answer[3], run_sync)
        return _httpx_response(httpx, request, answer, stream)

    sync.handle_request = handle_request
    asynchronous.handle_async_request = handle_async_request

    def undo():
        sync.handle_request = original
        asynchronous.handle_async_request = original_async
    return undo


def _httpx_call(httpx, request, route):
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
    environ = environ_for(route, request.method, request.url, headers, request.content)
    try:
        return call(route, environ)
    except DroppedByFault:
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.",
                                        request=request) from None


def _httpx_response(httpx, request, answer, stream):
    code, reason, headers, _ = answer
    return httpx.Response(code, headers=headers, stream=stream, request=request,
                          extensions={"http_version": b"HTTP/1.1",
                                      "reason_phrase": reason.encode("latin-1")})


def _broken(httpx, request):
    return httpx.RemoteProtocolError("peer closed connection without sending complete message"
                                     " body", request=request)


class _SyncStream:
    """An answer's body for httpx's sync client."""

    def __init__(self, httpx, request, chunks):
        self._httpx, self._request, self._chunks = httpx, request, chunks

    def __iter__(self):
        try:
            yield from self._chunks
        except DroppedByFault:
            raise _broken(self._httpx, self._request) from None

    def close(self):
        self._chunks.close()


class _AsyncStream:
    """An answer's body for httpx's async client: each chunk is taken in a worker thread."""

    _END = object()

    def __init__(self, httpx, request, chunks, run_sync):
        self._httpx, self._request, self._chunks = httpx, request, chunks
        self._run_sync = run_sync

    async def __aiter__(self):
        while True:
            try:
                chunk = await self._run_sync(next, self._chunks, self._END)
            except DroppedByFault:
                raise _broken(self._httpx, self._request) from None
            if chunk is self._END:
                return
            yield chunk

    async def aclose(self):
        await self._run_sync(self._chunks.close)


_STREAMS = {}


def _streams(httpx):
    """The two stream classes for one httpx module: each module checks its own base classes."""
    classes = _STREAMS.get(httpx.__name__)
    if classes is None:
        classes = _STREAMS[httpx.__name__] = (
            type("SyncStream", (_SyncStream, httpx.SyncByteStream), {}),
            type("AsyncStream", (_AsyncStream, httpx.AsyncByteStream), {}))
    return classes
