"""Requests gathered before a thread answers them: what the bytes received so far make of a
request (whole, partial, to hand over, closed) and the reader, one thread per worker process
with an epoll that collects the requests of slow or silent clients, and waits for the next
request of kept-alive connections, and hands each whole one to the worker's late threads
(spaces/serving/worker.py), so that no request thread waits on a client.
"""
import fcntl
import os
import queue
import re
import select
import socket
import struct
import termios
import threading
import time

# The most of a request (head and body) the reader holds for a client; a bigger one is handed
# to a late thread once its head is in. A chat post (32 KB body at most) fits with room.
REQUEST_BUFFER = 65536
# What decides where a request ends; any other header is gunicorn's parser's business.
FRAMING = re.compile(rb"\r\n(content-length|transfer-encoding|expect)[ \t]*:[ \t]*([^\r\n]*)",
                     re.IGNORECASE)


# What the bytes received so far make of a request.
WHOLE = "whole"  # all of it is in
PARTIAL = "partial"  # more to come: the reader waits for it
HANDOVER = "handover"  # a late thread takes it as it is and reads its body as it arrives
CLOSED = "closed"  # the client closed or reset its connection before its request was in


class Incoming:
    """A client's connection and the bytes of its request received so far. `served`: the
    requests already answered on this connection (kept alive between them)."""

    __slots__ = ("sock", "addr", "server", "data", "deadline", "served", "_scanned", "_body_at",
                 "_end", "_chunk_at", "_expects")

    def __init__(self, sock, addr, server, limit, data=b"", served=0):
        self.sock, self.addr, self.server = sock, addr, server
        self.data = data
        self.served = served
        self.deadline = time.monotonic() + limit if limit else None
        self._scanned = 0  # where the search for the end of the head goes on
        self._body_at = self._end = self._chunk_at = None
        self._expects = False

    def state(self):
        """What the bytes already here make of the request, without receiving more."""
        if not self.data:
            return PARTIAL
        state = self._state()
        if state is PARTIAL and len(self.data) > REQUEST_BUFFER:
            return HANDOVER
        return state

    def fileno(self):
        return self.sock.fileno()

    def receive(self):
        """Take what the client has sent, without waiting; return what the request now is."""
        try:
            chunk = self.sock.recv(REQUEST_BUFFER, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return PARTIAL
        except OSError:
            return CLOSED
        if not chunk:
            return CLOSED
        if not self.data:
            self.data = chunk
        else:
            if not isinstance(self.data, bytearray):
                self.data = bytearray(self.data)
            self.data += chunk
        return self.state()

    def _state(self):
        data = self.data
        if self._body_at is None:
            end = data.find(b"\r\n\r\n", max(0, self._scanned - 3))
            if end < 0:
                self._scanned = len(data)
                return PARTIAL
            self._body_at = end + 4
            if not self._frame(data, end):
                return HANDOVER  # framing the parser refuses (or reads to the end)
        if self._end is None:
            return self._chunks(data)
        if len(data) >= self._end:
            return WHOLE
        if self._expects or self._end > REQUEST_BUFFER:
            return HANDOVER
        return PARTIAL

    def _frame(self, data, head_end):
        """Where the body ends (`_end`, or `_chunk_at` for a chunked one); False when the head
        frames it in a way left to gunicorn's parser."""
        lengths, codings = set(), []
        for match in FRAMING.finditer(data, 0, head_end):
            name, value = match.group(1).lower(), bytes(match.group(2)).strip()
            if name == b"content-length":
                lengths.add(value)
            elif name == b"transfer-encoding":
                codings.append(value.lower())
            else:
                self._expects = value.lower() == b"100-continue"
        if codings:
            if lengths or not b",".join(codings).rstrip().endswith(b"chunked"):
                return False
            self._chunk_at = self._body_at
            return True
        if len(lengths) > 1 or (lengths and not next(iter(lengths)).isdigit()):
            return False
        self._end = self._body_at + (int(lengths.pop()) if lengths else 0)
        return True

    def _chunks(self, data):
        """Follow a chunked body's size lines as far as its bytes are in."""
        while True:
            line_end = data.find(b"\r\n", self._chunk_at)
            if line_end < 0:
                return HANDOVER if self._expects else PARTIAL
            try:
                size = int(bytes(data[self._chunk_at:line_end]).split(b";", 1)[0].strip(), 16)
            except ValueError:
                return HANDOVER
            if size == 0:  # the last chunk, then trailer fields up to an empty line
                return WHOLE if data.find(b"\r\n\r\n", line_end) >= 0 else PARTIAL
            self._chunk_at = line_end + 2 + size + 2
            if self._chunk_at > len(data):
                return HANDOVER if self._expects or self._chunk_at > REQUEST_BUFFER else PARTIAL


class Reader:
    """The process's reader: one thread that waits on an epoll for the requests not yet whole
    and for the next request of connections kept alive, and puts each whole request (or one
    to hand over) on `ready` for the late threads.

    Any thread hands a connection over (`add`, `keep`) by arming it in the epoll itself, once
    (EPOLLONESHOT: one event, then the connection is the reader's to look at); the reader
    needs no wake-up for it. Its deadlines are kept to within WAKE_S: the reader looks at them
    at least that often. A client whose request is not in by its deadline is closed, and so is
    a kept-alive connection idle for `keepalive` seconds (its next request then has `timeout`
    seconds from its first bytes, as a new connection's from its accept). Past `capacity`
    connections held at once, the oldest idle one is closed to make room (that loses nothing:
    a client opens another), else the oldest incomplete request: a client that opens
    connections and idles on them cannot crowd out the requests of others.
    """

    WAKE_S = 0.5

    def __init__(self, capacity, late_threads, log, *, timeout=None, keepalive=None):
        self.ready = queue.SimpleQueue()  # Incoming, then one None per late thread at the end
        # Incoming -> None, oldest (earliest deadline) first: incomplete requests, and
        # connections kept alive between requests (each dict has one limit, so insertion
        # order is deadline order); both under `_guard`, with `_by_fd` (descriptor -> Incoming).
        self._held, self._idle, self._by_fd = {}, {}, {}
        self._guard = threading.Lock()
        self._capacity, self._late_threads, self._log = capacity, late_threads, log
        self._timeout, self._keepalive = timeout, keepalive
        self._running = True
        self._stop_at = None  # set by `stop`
        self._full = False  # the capacity was reached (and not yet half freed)
        self._epoll = select.epoll()
        self._wake_out, self._wake_in = os.pipe()  # for `stop` only
        os.set_blocking(self._wake_in, False)
        os.set_blocking(self._wake_out, False)
        self._epoll.register(self._wake_out, select.EPOLLIN)

    def add(self, incoming):
        """From any thread: collect the rest of this request."""
        self._hold(incoming, self._held)

    def keep(self, sock, addr, server, served):
        """From any thread: wait for the next request on this connection, its answers so far
        sent, for `keepalive` seconds at most."""
        self._hold(Incoming(sock, addr, server, self._keepalive, served=served), self._idle)

    def _hold(self, incoming, where):
        with self._guard:
            held = self._running  # else stopped: nobody would look at it again
            if held:
                if len(self._held) + len(self._idle) >= self._capacity:
                    self._make_room()
                elif len(self._held) < self._capacity // 2:
                    self._full = False
                where[incoming] = None
                fd = incoming.sock.fileno()
                self._by_fd[fd] = incoming
                self._arm(fd)
        if not held:
            close_idle(incoming.sock, drop=where is self._idle)

    def _arm(self, fd):
        try:
            self._epoll.modify(fd, ARMED)
        except FileNotFoundError:  # first time in this epoll (a closed socket left it)
            self._epoll.register(fd, ARMED)

    def stop(self, linger_s=0.0):
        """From any thread: go on for `linger_s` at most, while connections are held (a request
        that arrives on a kept one meanwhile is answered, its answer closes it), then close what
        is held; the late threads answer what is ready."""
        self._stop_at = time.monotonic() + linger_s
        try:
            os.write(self._wake_in, b"x")
        except BlockingIOError:  # the pipe is full: a wake-up is pending already
            pass

    def run(self):
        try:
            while self._stop_at is None or (
                    (self._held or self._idle) and time.monotonic() < self._stop_at):
                for fd, _ in self._epoll.poll(self._wait()):
                    if fd == self._wake_out:
                        os.read(self._wake_out, 4096)
                    else:
                        self._receive(fd)
                self._expire()
        finally:  # the wake-up pipe stays open: a request thread may still write to it
            with self._guard:
                self._running = False
                for incoming in self._held:
                    incoming.sock.close()
                for incoming in self._idle:
                    self._close_idle(incoming)
                self._held, self._idle, self._by_fd = {}, {}, {}
            self._epoll.close()
            for _ in range(self._late_threads):
                self.ready.put(None)

    def _wait(self):
        """Seconds until the earliest deadline, WAKE_S at most: deadlines set by other
        threads are seen that late at worst."""
        wait = self.WAKE_S if self._stop_at is None else self._stop_at - time.monotonic()
        for oldest in (next(iter(self._held), None), next(iter(self._idle), None)):
            if oldest is not None and oldest.deadline is not None:
                wait = min(wait, oldest.deadline - time.monotonic())
        return max(0.0, wait)

    def _receive(self, fd):
        with self._guard:
            incoming = self._by_fd.get(fd)
            if incoming is None:  # closed meanwhile (to make room)
                return
            idle = incoming in self._idle
            state = incoming.receive()
            if state is PARTIAL:
                if idle and incoming.data:  # its next request has begun: `timeout` from now
                    del self._idle[incoming]
                    incoming.deadline = time.monotonic() + self._timeout if self._timeout \
                        else None
                    self._held[incoming] = None
                self._arm(fd)
                return
            self._release(incoming)
        if state is CLOSED:
            incoming.sock.close()
        else:
            self.ready.put(incoming)

    def _make_room(self):
        """Close the oldest idle connection, or else the oldest incomplete request."""
        if self._idle:
            oldest = next(iter(self._idle))
            self._release(oldest)
            self._close_idle(oldest)
            return
        if not self._full:  # said once each time it fills up, not per connection
            self._log.warning("%d incomplete requests held: closing the oldest to make "
                              "room for new ones", len(self._held))
        self._full = True
        oldest = next(iter(self._held))
        self._release(oldest)
        oldest.sock.close()

    def _expire(self):
        now = time.monotonic()
        with self._guard:
            while self._held:
                oldest = next(iter(self._held))
                if oldest.deadline is None or oldest.deadline > now:
                    break
                self._log.debug("Request not complete in time: closing")
                self._release(oldest)
                oldest.sock.close()
            while self._idle:
                oldest = next(iter(self._idle))
                if oldest.deadline is None or oldest.deadline > now:
                    break
                self._release(oldest)
                self._close_idle(oldest)

    def _close_idle(self, incoming):
        """Close a kept-alive connection between requests, or hand over a request that came
        in meanwhile (a stopping worker answers it, with `Connection: close`)."""
        state = incoming.receive()
        if state is WHOLE or state is HANDOVER:
            self.ready.put(incoming)
        else:
            close_idle(incoming.sock, drop=state is PARTIAL and not incoming.data)

    def _release(self, incoming):
        """Forget `incoming` (under `_guard`); its descriptor stays in the epoll, disarmed,
        until it is armed again or closed."""
        if self._held.pop(incoming, self) is self:
            del self._idle[incoming]
        del self._by_fd[incoming.sock.fileno()]


ARMED = select.EPOLLIN | select.EPOLLONESHOT


_ABORT = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() resets the connection


def close_idle(sock, *, drop=True):
    """Close a connection that waits for its next request. Reset (RST) rather than closed
    (FIN) when all we sent is acknowledged and nothing came since (`drop`): a proxy that
    keeps the connection (nginx's upstream `keepalive`) then finds the error on the socket
    before it writes a request into it, and sends that request on another connection; after a
    FIN its write succeeds and the answer it waits for never comes (a 502 for a POST, which
    nginx does not retry)."""
    if drop:
        try:
            unsent = struct.unpack("i", fcntl.ioctl(sock, termios.TIOCOUTQ, b"\0\0\0\0"))[0]
            if not unsent:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _ABORT)
        except OSError:
            pass
    sock.close()
