"""The worker's lean path beside gunicorn's parser: for every request it reads, the same environ
and the same request facts gunicorn would give the app; every other request is left to gunicorn."""
import io
import time

import pytest
from gunicorn import http
from gunicorn.config import Config
from gunicorn.http import wsgi
from hypothesis import given, settings
from hypothesis import strategies as st

from spaces.serving.lean import LeanReader, Response, http_date

PEER, SERVER = ("127.0.0.1", 41234), ("127.0.0.1", 8000)
# Set by the worker itself, objects compared apart (the input by what it reads).
OBJECTS = ("wsgi.input", "wsgi.errors", "gunicorn.socket", "wsgi.early_hints")


class Source:
    """The bytes of a request as gunicorn's parser reads them from a socket."""

    def __init__(self, data):
        self.data = data

    def recv(self, size, flags=0):
        chunk, self.data = self.data[:size], self.data[size:]
        return chunk


def config(**settings):
    cfg = Config()
    cfg.set("forwarded_allow_ips", "127.0.0.1,::1")
    for name, value in settings.items():
        cfg.set(name, value)
    return cfg


def gunicorns(data, cfg, peer=PEER):
    req = next(http.get_parser(cfg, Source(data), peer))
    resp, environ = wsgi.create(req, None, peer, SERVER, cfg)
    environ["wsgi.multithread"] = True  # as the worker sets it
    return req, environ


def assert_same(data, cfg=None, peer=PEER):
    cfg = cfg or config()
    lean = LeanReader(cfg).read(data, peer, SERVER, 1)
    assert lean is not None, data
    req, environ = lean
    theirs_req, theirs = gunicorns(data, cfg, peer)
    assert {k: v for k, v in environ.items() if k not in OBJECTS} == \
        {k: v for k, v in theirs.items() if k not in OBJECTS}
    assert environ["wsgi.input"].read() == theirs["wsgi.input"].read()
    for name in ("method", "uri", "path", "query", "fragment", "version", "headers", "scheme"):
        assert getattr(req, name) == getattr(theirs_req, name), name
    assert req.should_close() == theirs_req.should_close()


TOKEN = "ab" * 32
POLL = (f"GET /spaces/newos4/api/chat/poll.php?since=1796213739823 HTTP/1.1\r\nHost: chat\r\n"
        f"X-Forwarded-For: 10.0.0.1, 127.0.0.1\r\nX-Forwarded-Proto: http\r\n"
        f"X-Chat-Token: {TOKEN}\r\n\r\n").encode()
BODY = b'{"text": "hello"}'
POST = (f"POST /spaces/newos4/api/chat/post.php HTTP/1.1\r\nHost: chat\r\nContent-Type: "
        f"application/json\r\nContent-Length: {len(BODY)}\r\nX-Chat-Token: {TOKEN}\r\n\r\n"
        ).encode() + BODY


@pytest.mark.parametrize("data", [
    POLL, POST,
    b"GET / HTTP/1.1\r\n\r\n",
    b"HEAD /a%20b/%2F?x=1&y=%41 HTTP/1.1\r\nHost: h:81\r\n\r\n",
    b"OPTIONS /spaces/newos4/api/chat/post.php HTTP/1.1\r\nHost: h\r\n\r\n",
    b"GET /a?b?c HTTP/1.1\r\nAccept: a\r\nAccept: b\r\nAccept:\t c \t\r\nEmpty:\r\n\r\n",
    b"DELETE /x HTTP/1.1\r\nX-Forwarded-Proto: https\r\nContent-Length: 0\r\n\r\n",
    b"PUT /x HTTP/1.1\r\nX-Forwarded-Ssl: on\r\nContent-Length: 007\r\n\r\nabcdefg",
], ids=range(8))
def test_a_plain_request_gets_the_environ_gunicorn_gives(data):
    assert_same(data)


def test_scheme_headers_count_only_from_a_trusted_peer():
    data = b"GET / HTTP/1.1\r\nX-Forwarded-Proto: https\r\n\r\n"
    assert_same(data)
    assert LeanReader(config()).read(data, PEER, SERVER, 1)[1]["wsgi.url_scheme"] == "https"
    stranger = ("192.0.2.7", 5000)
    assert_same(data, peer=stranger)
    assert LeanReader(config()).read(data, stranger, SERVER, 1)[1]["wsgi.url_scheme"] == "http"


@pytest.mark.parametrize("proxies, peer, scheme", [
    ("10.0.0.0/8", "10.1.2.3", "https"), ("10.0.0.0/8", "192.0.2.7", "http"),
    ("2001:db8::/32, 127.0.0.1", "2001:db8::5", "https"), ("*", "192.0.2.7", "https")])
def test_trusted_peers_are_the_networks_gunicorn_trusts(proxies, peer, scheme):
    data = b"GET / HTTP/1.1\r\nX-Forwarded-Proto: https\r\n\r\n"
    cfg = config(forwarded_allow_ips=proxies)
    assert_same(data, cfg, peer=(peer, 5000))
    assert LeanReader(cfg).read(data, (peer, 5000), SERVER, 1)[1]["wsgi.url_scheme"] == scheme


@pytest.mark.parametrize("data", [
    b"GET / HTTP/1.0\r\n\r\n",                                   # another version
    b"GET http://h/ HTTP/1.1\r\n\r\n",                           # absolute form
    b"GET //h/x HTTP/1.1\r\n\r\n",                               # looks like a netloc
    b"GET /#frag HTTP/1.1\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\n\r\n",
    b"get / HTTP/1.1\r\n\r\n",
    b"PROPFIND / HTTP/1.1\r\n\r\n",
    b"\r\nGET / HTTP/1.1\r\n\r\n",                               # an empty line first
    b"GET / HTTP/1.1\r\nX_Forwarded_For: 1.2.3.4\r\n\r\n",       # "_": gunicorn drops it
    b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",             # a repeated singleton
    b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
    b"POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\nx",
    b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
    b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n",
    b"GET / HTTP/1.1\r\nUpgrade: h2c\r\n\r\n",
    b"GET / HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n",              # obsolete folding
    b"GET / HTTP/1.1\r\nX-A: caf\xc3\xa9\r\n\r\n",                 # obs-text
    b"GET / HTTP/1.1\r\nX-A: a\x00b\r\n\r\n",
    b"GET / HTTP/1.1\nX-A: b\r\n\r\n",                           # a bare LF
    b"GET / HTTP/1.1\r\nX-A : b\r\n\r\n",                        # space before the colon
    b"GET / HTTP/1.1\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Proto: http\r\n\r\n",
    b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab",           # its body still coming
    b"GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n",             # another request behind it
    b"GET / HTTP/1.1\r\nHost: h",                                # its head not in
    b"GET /" + b"a" * 8200 + b" HTTP/1.1\r\n\r\n",               # past the request line limit
    b"GET / HTTP/1.1\r\nX-A: " + b"a" * 8200 + b"\r\n\r\n",      # past the field size limit
], ids=range(27))
def test_any_other_request_is_left_to_gunicorn(data):
    assert LeanReader(config()).read(data, PEER, SERVER, 1) is None


def test_a_unix_socket_or_a_setting_that_changes_parsing_leaves_it_to_gunicorn():
    assert LeanReader(config()).read(POLL, "", "/run/x.sock", 1) is None
    for settings in ({"proxy_protocol": "v1"}, {"strip_header_spaces": True}):
        assert LeanReader(config(**settings)).read(POLL, PEER, SERVER, 1) is None
    assert LeanReader(config(limit_request_fields=2)).read(POLL, PEER, SERVER, 1) is None
    assert LeanReader(config(limit_request_fields=4)).read(POLL, PEER, SERVER, 1) is not None


NAMES = st.text("abcXYZ-019!#$%&'*+.^`|~", min_size=1, max_size=12)
VALUES = st.text("ab Z09-\t/:;=,\"()", max_size=20)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(NAMES, VALUES), max_size=8),
       st.text("abz09-._~%!$&'()*+,;=:@/?", max_size=30))
def test_whatever_plain_fields_and_target_the_environ_is_gunicorns(fields, target):
    head = "".join(f"{name}: {value}\r\n" for name, value in fields)
    data = f"GET /{target} HTTP/1.1\r\n{head}\r\n".encode()
    lean = LeanReader(config()).read(data, PEER, SERVER, 1)
    if lean is None:  # then gunicorn reads it; here: only what the lean path leaves aside
        names = {name.upper() for name, _ in fields}
        assert target.startswith("/") or names & {"HOST", "CONTENT-TYPE", "CONTENT-LENGTH",
                                                  "TRANSFER-ENCODING", "CONNECTION", "EXPECT",
                                                  "TE", "UPGRADE", "TRAILER", "HTTP2-SETTINGS",
                                                  "X-FORWARDED-PROTO", "X-FORWARDED-SSL",
                                                  "X-FORWARDED-PROTOCOL"}
        return
    assert_same(data)


def test_the_answer_head_is_gunicorns_with_the_date_of_this_second():
    cfg = config()
    req, theirs = gunicorns(POLL, cfg)
    ours, gunicorn = (cls(req, io.BytesIO(), cfg) for cls in (Response, wsgi.Response))
    for resp in (ours, gunicorn):
        resp.start_response("200 OK", [("Content-Length", "2")])
    undated = [[line for line in resp.default_headers() if not line.startswith("Date: ")]
               for resp in (ours, gunicorn)]
    assert undated[0] == undated[1]
    assert ours.default_headers()[2] == f"Date: {http_date()}\r\n"
    assert http_date() in (wsgi.util.http_date(), wsgi.util.http_date(time.time() - 1))
    ours.force_close()
    assert ours.default_headers()[3] == "Connection: close\r\n"
