"""The plain request, read straight into its WSGI environ: what a reverse proxy sends (origin-form
target, HTTP/1.1, visible-ASCII header fields, a Content-Length body all in) is turned into the
very environ gunicorn's parser and `wsgi.create` would build, in one pass over its bytes.
Anything else (another form, framing or version, a field gunicorn drops, folds, refuses or
treats specially, a limit reached) is None here and goes through gunicorn's own parser, which
answers it or refuses it as it always has. tests/test_lean.py holds the two side by side.

Why: behind nginx's kept connections an idle poll spent more CPU in gunicorn's general parser
and environ (its header policy, body readers, per-request allocations) than in the chat app.
"""
import io
import ipaddress
import os
import re
import time
from email.utils import formatdate

from gunicorn import util
from gunicorn.http import wsgi

# The methods the chat and the emulators serve; another one takes gunicorn's path.
REQUEST_LINE = re.compile(rb"(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS) (/(?!/)[\x21-\x22\x24-\x7e]*)"
                          rb" HTTP/1\.1")
# name ":" OWS value OWS, the name an RFC 9110 token without "_" (gunicorn drops or refuses
# those), the value visible ASCII with inner spaces or tabs (obs-text and controls: gunicorn).
FIELD = re.compile(rb"([!#$%&'*+\-.^`|~0-9A-Za-z]+):[ \t]*((?:[\x21-\x7e](?:[\x20-\x7e\t]*"
                   rb"[\x21-\x7e])?)?)[ \t]*")
# Fields whose meaning is more than a value in the environ (framing, connection, expectations,
# singletons repeated): a request that has one of these (or a repeated CONTENT-LENGTH, HOST or
# CONTENT-TYPE) goes through gunicorn's parser.
SPECIAL = frozenset(("TRANSFER-ENCODING", "CONNECTION", "EXPECT", "TE", "UPGRADE", "TRAILER",
                     "HTTP2-SETTINGS"))
SINGLE = frozenset(("HOST", "CONTENT-TYPE", "CONTENT-LENGTH"))


class LeanRequest:
    """What gunicorn's hooks, response and access log read of a request (its `Request`'s
    attributes), for one read here."""

    __slots__ = ("method", "uri", "path", "query", "fragment", "version", "headers", "trailers",
                 "scheme", "body", "must_close", "peer_addr", "remote_addr", "req_number",
                 "proxy_protocol_info")

    def __init__(self, method, uri, path, query, headers, scheme, body, peer, number):
        self.method, self.uri, self.path, self.query = method, uri, path, query
        self.fragment, self.version, self.headers, self.trailers = "", (1, 1), headers, []
        self.scheme, self.body, self.must_close = scheme, body, False
        self.peer_addr = self.remote_addr = peer
        self.req_number, self.proxy_protocol_info = number, None

    def force_close(self):
        self.must_close = True

    def should_close(self):
        return self.must_close  # HTTP/1.1 without a Connection field: kept


class LeanReader:
    """Reads plain requests for one worker process, with that worker's settings."""

    def __init__(self, cfg):
        self._line_limit = cfg.limit_request_line if 0 < cfg.limit_request_line < 8190 else 8190
        self._fields = cfg.limit_request_fields if 0 < cfg.limit_request_fields <= 32768 \
            else 32768
        self._field_size = cfg.limit_request_field_size if cfg.limit_request_field_size > 0 \
            else 8190
        self._script_name = os.environ.get("SCRIPT_NAME", "")
        # Settings that change what gunicorn's parser makes of a request: never read here then.
        self.usable = (cfg.proxy_protocol == "off" and not cfg.strip_header_spaces
                       and not cfg.is_ssl and not self._script_name)
        self._secure = cfg.secure_scheme_headers
        self._trusted = {}  # peer address -> may it set the scheme headers (forwarded_allow_ips)
        self._proxies = None if "*" in cfg.forwarded_allow_ips else \
            [ipaddress.ip_network(proxy) for proxy in cfg.forwarded_allow_ips]
        self._base = wsgi.base_environ(cfg)  # (its wsgi.errors serves every request alike)
        self._base["wsgi.multithread"] = True

    def read(self, data, peer, server, number):
        """(LeanRequest, environ) for `data`, exactly one whole plain request; else None.
        The environ lacks `gunicorn.socket` and `wsgi.early_hints`: the caller's to set."""
        if not self.usable or type(peer) is not tuple or type(server) is not tuple:
            return None
        head_end = data.find(b"\r\n\r\n")
        line_end = data.find(b"\r\n")
        if head_end < 0 or line_end > self._line_limit:
            return None
        line = REQUEST_LINE.fullmatch(data, 0, line_end)
        if line is None:
            return None
        lines = data[line_end + 2:head_end].split(b"\r\n") if head_end > line_end else []
        if len(lines) > self._fields:
            return None
        environ = self._base.copy()
        headers, seen, scheme, length = [], set(), None, 0
        secure, trusted = self._secure, None
        for field in lines:
            match = FIELD.fullmatch(field)
            if match is None or len(field) + 2 > self._field_size:
                return None
            name = match.group(1).decode("ascii").upper()
            value = match.group(2).decode("ascii")
            if name in SPECIAL:
                return None
            if name in SINGLE:
                if name in seen:
                    return None
                seen.add(name)
            if name in secure:
                if trusted is None:
                    trusted = self._is_trusted(peer[0])
                if trusted:
                    if scheme is not None:
                        return None  # repeated: gunicorn compares them
                    scheme = "https" if value == secure[name] else "http"
            headers.append((name, value))
            if name == "CONTENT-LENGTH":
                if not value.isdigit() or not value.isascii():
                    return None
                length = int(value)
                environ["CONTENT_LENGTH"] = value
            elif name == "CONTENT-TYPE":
                environ["CONTENT_TYPE"] = value
            else:
                key = "HTTP_" + name.replace("-", "_")
                if key in environ:
                    environ[key] = environ[key] + "," + value
                else:
                    environ[key] = value
        if len(data) != head_end + 4 + length:
            return None  # a body still to come, or a request behind this one
        method, uri = line.group(1).decode("ascii"), line.group(2).decode("ascii")
        path, _, query = uri.partition("?")
        body = io.BytesIO(data[head_end + 4:])
        scheme = scheme or "http"
        req = LeanRequest(method, uri, path, query, headers, scheme, body, peer, number)
        environ.update({
            "wsgi.input": body, "REQUEST_METHOD": method,
            "QUERY_STRING": query, "RAW_URI": uri, "SERVER_PROTOCOL": "HTTP/1.1"})
        environ["wsgi.url_scheme"] = scheme
        environ["REMOTE_ADDR"], environ["REMOTE_PORT"] = peer[0], str(peer[1])
        environ["SERVER_NAME"], environ["SERVER_PORT"] = server[0], str(server[1])
        environ["PATH_INFO"] = util.unquote_to_wsgi_str(path) if "%" in path else path
        environ["SCRIPT_NAME"] = ""
        return req, environ

    def _is_trusted(self, address):
        trusted = self._trusted.get(address)
        if trusted is None:
            if len(self._trusted) >= 1024:
                self._trusted.clear()
            trusted = self._trusted[address] = self._is_proxy(address)
        return trusted

    def _is_proxy(self, address):
        """Whether `forwarded_allow_ips` names the peer, as gunicorn's parser reads it."""
        if self._proxies is None:  # "*": every peer
            return True
        try:
            peer = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(peer in network for network in self._proxies)


class Response(wsgi.Response):
    """gunicorn's response, its Date field formatted once a second rather than once an answer
    (`default_headers` is gunicorn's own but for that)."""

    def default_headers(self):
        if self.upgrade:
            connection = "upgrade"
        elif self.should_close():
            connection = "close"
        else:
            connection = "keep-alive"
        headers = ["HTTP/%s.%s %s\r\n" % (self.req.version[0], self.req.version[1], self.status),
                   "Server: %s\r\n" % self.version,
                   "Date: %s\r\n" % http_date(),
                   "Connection: %s\r\n" % connection]
        if self.chunked:
            headers.append("Transfer-Encoding: chunked\r\n")
        return headers


_date = (None, "")  # (second, its HTTP date), replaced whole: threads read it at once


def http_date():
    """gunicorn's `util.http_date()`, made once per second."""
    global _date
    now = int(time.time())
    second, text = _date
    if second != now:
        text = formatdate(now, usegmt=True)
        _date = (now, text)
    return text
