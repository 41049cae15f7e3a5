"""The shipped gunicorn worker's connection handling, on real loopback sockets (the worker as a
whole runs under gunicorn in tests/integration/test_worker_gunicorn.py)."""
import gc
import socket
import threading
import time

import pytest
from gunicorn.config import Config

from spaces.serving.reader import CLOSED, HANDOVER, PARTIAL, REQUEST_BUFFER, WHOLE, Incoming
from spaces.serving.worker import (AcceptingThreadsWorker, ClientConnection, SettledConfig,
                                    choose_cpu)


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
    conn = ClientConnection(sock)
    conn.sendall(b"HTTP/1.1 200 OK\r\n\r\n")
    assert sock.calls == []
    conn.sendall(b"first")
    conn.sendall(b"second")
    assert sock.calls == [("sendall", b"HTTP/1.1 200 OK\r\n\r\nfirst"), ("sendall", b"second")]


def test_an_answer_without_a_body_is_sent_when_the_connection_closes():
    sock = Recording()
    conn = ClientConnection(sock)
    conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
    conn.close_connection()
    assert sock.calls == [("sendall", b"HTTP/1.1 204 No Content\r\n\r\n"), ("recv",), ("close",)]


def test_any_other_use_of_the_socket_sends_the_head_first():
    sock = Recording()
    conn = ClientConnection(sock)
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
    conn = ClientConnection(server)
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
    conn = ClientConnection(server)
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



class LoadedApp:
    """What a worker asks of gunicorn's application object when it loads the app."""

    def wsgi(self):
        return lambda environ, start_response: [b""]


def test_the_loaded_app_is_out_of_the_collectors_sight():
    worker = AcceptingThreadsWorker.__new__(AcceptingThreadsWorker)
    worker.app, worker.cfg = LoadedApp(), Config()
    gc.unfreeze()
    try:
        worker.load_wsgi()
        assert gc.get_freeze_count() > 0
        assert worker.wsgi not in gc.get_objects()
    finally:
        gc.unfreeze()


def arrivals(*parts):
    """What the reader makes of a request sent in `parts`, after each part."""
    server, client = socket.socketpair()
    with server, client:
        incoming = Incoming(server, None, None, 60)
        states = []
        for part in parts:
            client.sendall(part)
            states.append(incoming.receive())
        return states


@pytest.mark.parametrize("parts, states", [
    ([b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"], [WHOLE]),
    ([b"GET / HTTP/1.1\r\nHo", b"st: x\r", b"\n\r\n"], [PARTIAL, PARTIAL, WHOLE]),
    ([b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", b"cde"], [PARTIAL, WHOLE]),
    ([b"POST / HTTP/1.1\r\ncontent-length:  5 \r\n\r\nabcde"], [WHOLE]),
    ([b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
      b"2;x=y\r\nde\r\n0\r\n", b"Trailer: 1\r\n\r\n"], [PARTIAL, PARTIAL, WHOLE]),
    ([b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"], [WHOLE]),
    # the client waits for `100 Continue` before its body: a late thread reads it
    ([b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"], [HANDOVER]),
    ([b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nabcde"], [WHOLE]),
    # too big to hold: handed over once its head is in
    ([f"POST / HTTP/1.1\r\nContent-Length: {REQUEST_BUFFER}\r\n\r\n".encode()], [HANDOVER]),
    # framing gunicorn refuses is its parser's to answer
    ([b"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"], [HANDOVER]),
    ([b"POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n"], [HANDOVER]),
    ([b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"], [HANDOVER]),
    ([b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"], [HANDOVER]),
])
def test_the_reader_knows_when_a_request_is_whole(parts, states):
    assert arrivals(*parts) == states


def test_a_head_past_the_buffer_is_handed_over():
    head = b"GET / HTTP/1.1\r\nX: " + b"y" * REQUEST_BUFFER
    assert arrivals(head[:1000], head[1000:]) == [PARTIAL, HANDOVER]


def test_a_client_that_closes_before_its_request_is_in_is_closed():
    server, client = socket.socketpair()
    with server:
        incoming = Incoming(server, None, None, 60)
        assert incoming.receive() is PARTIAL  # nothing yet
        client.sendall(b"GET / HT")
        client.close()
        assert incoming.receive() is PARTIAL
        assert incoming.receive() is CLOSED


def test_the_parser_gets_the_bytes_read_ahead_first_and_never_waits_when_they_were_all():
    server, client = socket.socketpair()
    with server, client:
        conn = ClientConnection(server, b"GET / HTTP/1.1\r\n\r\n", more=False)
        assert conn.recv(5) + conn.recv(100) == b"GET / HTTP/1.1\r\n\r\n"
        with pytest.raises(BlockingIOError):
            conn.recv(100)


class Starting:
    """A worker object as gunicorn's arbiter holds it, with the CPU choose_cpu gave it."""

    def __init__(self, cpu=None):
        if cpu is not None:
            self.cpu = cpu


class Arbiter:
    def __init__(self, *cpus):
        self.WORKERS = {pid: Starting(cpu) for pid, cpu in enumerate(cpus, 100)}


def test_a_starting_worker_gets_the_allowed_cpu_fewest_live_workers_have(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {2, 3, 5})
    monkeypatch.setattr("os.getpid", lambda: 300)  # 300 % 3 == 0: ties start at the first
    for live, expected in [((), 2), ((2,), 3), ((2, 3), 5), ((2, 3, 5, 3), 2),
                           ((7, 7, 2), 3), ((None, 2, 5), 3)]:  # 7: not allowed now
        worker = Starting()
        choose_cpu(Arbiter(*live), worker)
        assert worker.cpu == expected, (live, worker.cpu)


def test_ties_start_at_a_cpu_of_the_arbiters_process_id(monkeypatch):
    """Servers of one worker each on one host spread too, rather than all taking the first."""
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3})
    chosen = set()
    for pid in range(1000, 1004):
        monkeypatch.setattr("os.getpid", lambda pid=pid: pid)
        worker = Starting()
        choose_cpu(Arbiter(), worker)
        chosen.add(worker.cpu)
    assert chosen == {0, 1, 2, 3}
