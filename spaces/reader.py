"""Requests gathered before a thread answers them: what the bytes received so far make of a
request (whole, partial, to hand over, closed) and the reader, one thread per worker process
with a selector that collects the requests of slow or silent clients and hands each whole one
to the worker's late threads (spaces/worker.py), so that no request thread waits on a client.
"""
import os
import queue
import re
import selectors
import socket
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
    """A client's connection and the bytes of its request received so far."""

    __slots__ = ("sock", "addr", "server", "data", "deadline", "_scanned", "_body_at",
                 "_end", "_chunk_at", "_expects")

    def __init__(self, sock, addr, server, limit):
        self.sock, self.addr, self.server = sock, addr, server
        self.data = b""
        self.deadline = time.monotonic() + limit if limit else None
        self._scanned = 0  # where the search for the end of the head goes on
        self._body_at = self._end = self._chunk_at = None
        self._expects = False

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
        state = self._state()
        if state is PARTIAL and len(self.data) > REQUEST_BUFFER:
            return HANDOVER
        return state

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
    """The process's reader: one thread with a selector that collects the requests not yet
    whole and puts each whole one (or one to hand over) on `ready` for the late threads. A
    client whose request is not in by its deadline is closed; past `capacity` held at once, the
    oldest is closed to make room."""

    def __init__(self, capacity, late_threads, log):
        self.ready = queue.SimpleQueue()  # Incoming, then one None per late thread at the end
        self._incoming = queue.SimpleQueue()
        self._held = {}  # Incoming -> None, oldest (earliest deadline) first
        self._capacity, self._late_threads, self._log = capacity, late_threads, log
        self._running = True
        self._full = False  # the capacity was reached (and not yet half freed)
        self._selector = selectors.DefaultSelector()
        self._wake_out, self._wake_in = os.pipe()
        os.set_blocking(self._wake_in, False)
        os.set_blocking(self._wake_out, False)
        self._selector.register(self._wake_out, selectors.EVENT_READ)

    def add(self, incoming):
        """From any thread: collect this request."""
        self._incoming.put(incoming)
        self._wake()

    def stop(self):
        """From any thread: close what is held; the late threads answer what is ready."""
        self._running = False
        self._wake()

    def _wake(self):
        try:
            os.write(self._wake_in, b"x")
        except BlockingIOError:  # the pipe is full: a wake-up is pending already
            pass

    def run(self):
        try:
            while self._running:
                for key, _ in self._selector.select(self._wait()):
                    if key.data is None:
                        os.read(self._wake_out, 4096)
                    else:
                        self._receive(key.data)
                self._take_new()
                self._expire()
        finally:  # the wake-up pipe stays open: a request thread may still write to it
            for incoming in self._held:
                incoming.sock.close()
            while True:
                try:
                    self._incoming.get_nowait().sock.close()
                except queue.Empty:
                    break
            self._selector.close()
            for _ in range(self._late_threads):
                self.ready.put(None)

    def _wait(self):
        """Seconds until the oldest held request's deadline (None: no deadline to keep)."""
        oldest = next(iter(self._held), None)
        if oldest is None or oldest.deadline is None:
            return None
        return max(0.0, oldest.deadline - time.monotonic())

    def _receive(self, incoming):
        state = incoming.receive()
        if state is PARTIAL:
            return
        self._release(incoming)
        if state is CLOSED:
            incoming.sock.close()
        else:
            self.ready.put(incoming)

    def _take_new(self):
        while True:
            try:
                incoming = self._incoming.get_nowait()
            except queue.Empty:
                return
            if len(self._held) >= self._capacity:
                if not self._full:  # said once each time it fills up, not per connection
                    self._log.warning("%d incomplete requests held: closing the oldest to make "
                                      "room for new ones", len(self._held))
                self._full = True
                oldest = next(iter(self._held))
                self._release(oldest)
                oldest.sock.close()
            elif len(self._held) < self._capacity // 2:
                self._full = False
            self._held[incoming] = None
            self._selector.register(incoming, selectors.EVENT_READ, incoming)

    def _expire(self):
        now = time.monotonic()
        while self._held:
            oldest = next(iter(self._held))
            if oldest.deadline is None or oldest.deadline > now:
                return
            self._log.debug("Request not complete in time: closing")
            self._release(oldest)
            oldest.sock.close()

    def _release(self, incoming):
        del self._held[incoming]
        self._selector.unregister(incoming)
