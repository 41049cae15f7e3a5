"""A run's event stream closed by the watcher while its reading thread waits on it (a superseded
or finished run) ends quietly: nothing escapes the reading thread onto the watcher's stderr."""
import http.server
import json
import threading

import pytest

from spaces.newos4.relay.hermes_client import HermesClient
from spaces.newos4.relay.run_events import RunEvents


class QuietStream(http.server.BaseHTTPRequestHandler):
    """Hermes' events route: one chunked SSE frame, then silence until the client goes."""
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        frame = b"data: " + json.dumps({"event": "approval.request", "command": "ls"}).encode() \
            + b"\n\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
        self.wfile.flush()
        self.rfile.read(1)  # returns when the client closes its end

    def log_message(self, *args):
        pass


@pytest.fixture
def hermes():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), QuietStream)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield HermesClient(f"http://127.0.0.1:{server.server_address[1]}", timeout_s=5)
    server.shutdown()
    server.server_close()


@pytest.fixture
def escaped(monkeypatch):
    """Exceptions that escaped any thread."""
    caught = []
    monkeypatch.setattr(threading, "excepthook", lambda args: caught.append(args.exc_value))
    return caught


def test_closing_a_stream_its_reader_waits_on_ends_it_quietly(hermes, escaped):
    for attempt in range(30):  # the race with the reader is won or lost in microseconds
        events = RunEvents(hermes, f"run_{attempt}")
        assert events.got_request.wait(5)
        events.close()
        assert events.ended.wait(5)
        events._thread.join(5)
    assert escaped == []
