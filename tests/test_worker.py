"""The shipped gunicorn worker's connection handling, on real loopback sockets (the worker as a
whole runs under gunicorn in tests/integration/test_worker_gunicorn.py)."""
import socket
import threading
import time

import pytest
from gunicorn.config import Config

from spaces.worker import HeadWithBody, SettledConfig


class Recording:
    """A socket stand-in that records every call that reaches it, in order."""

    def __init__(self):
        self.calls = []

    def sendall(self, data):
        self.calls.append(("sendall", bytes(data)))

    def sendfile(self, *args):
        self.calls.append(("sendfile",))

    def recv(self, size, flags=0):
        self.calls.append(("recv",))
        raise BlockingIOError()

    def close(self):
        self.calls.append(("close",))


def test_the_head_leaves_with_the_first_body_bytes_in_one_send():
    sock = Recording()
    conn = HeadWithBody(sock)
    conn.sendall(b"HTTP/1.1 200 OK\r\n\r\n")
    assert sock.calls == []
    conn.sendall(b"first")
    conn.sendall(b"second")
    assert sock.calls == [("sendall", b"HTTP/1.1 200 OK\r\n\r\nfirst"), ("sendall", b"second")]


def test_an_answer_without_a_body_is_sent_when_the_connection_closes():
    sock = Recording()
    conn = HeadWithBody(sock)
    conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
    conn.close_connection()
    assert sock.calls == [("sendall", b"HTTP/1.1 204 No Content\r\n\r\n"), ("recv",), ("close",)]


def test_any_other_use_of_the_socket_sends_the_head_first():
    sock = Recording()
    conn = HeadWithBody(sock)
    conn.sendall(b"HEAD")
    conn.sendfile("a file")
    conn.sendall(b"after")
    assert sock.calls == [("sendall", b"HEAD"), ("sendfile",), ("sendall", b"after")]


@pytest.fixture
def connection():
    """(server side, client side) of a real loopback TCP connection."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    yield server, client
    client.close()
    server.close()


def test_a_request_read_to_its_end_is_closed_at_once(connection):
    server, client = connection
    client.sendall(b"GET / HTTP/1.1\r\n\r\n")
    server.recv(1024)
    conn = HeadWithBody(server)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")
    conn.sendall(b"ok")
    started = time.monotonic()
    conn.close_connection()  # gunicorn's graceful close would wait up to 2 s for our peer
    assert time.monotonic() - started < 0.5
    client.settimeout(5)
    assert client.recv(1024).endswith(b"\r\n\r\nok")
    assert client.recv(1024) == b""  # a FIN, not a reset


def test_unread_request_bytes_are_drained_so_the_close_is_a_fin_not_a_reset(connection):
    """Closing with unread bytes sends an RST, which can destroy an answer still in flight."""
    server, client = connection
    client.sendall(b"POST / HTTP/1.1\r\nContent-Length: 20000\r\n\r\n" + b"x" * 20000)
    server.recv(64)  # the app refused the body after its first bytes (a 413)
    answer = b"HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    conn = HeadWithBody(server)
    conn.sendall(answer)
    closing = threading.Thread(target=conn.close_connection)
    closing.start()
    client.settimeout(5)
    got = b""
    while len(got) < len(answer):
        got += client.recv(1024)
    assert got == answer
    assert client.recv(1024) == b""  # ConnectionResetError after an abortive close
    client.close()
    closing.join(5)
    assert not closing.is_alive()


def test_settled_config_answers_as_gunicorns_and_keeps_what_the_worker_started_with():
    cfg = Config()
    cfg.set("threads", 3)
    settled = SettledConfig(cfg)
    for name in cfg.settings:
        assert getattr(settled, name) == getattr(cfg, name), name
    assert settled.forwarded_allow_networks() == cfg.forwarded_allow_networks()
    cfg.set("threads", 5)  # only the arbiter changes settings, and then starts new workers
    assert settled.threads == 3
