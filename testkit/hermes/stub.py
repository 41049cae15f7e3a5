"""A scripted Hermes runs API on loopback, for cron/relay.py run as a real process.

It answers raw bytes the test chooses (e.g. an output holding a lone surrogate escape), which a
real server or the emulator would never send on purpose.
"""
import contextlib
import http.server
import json
import threading

from ..servers import serving_in_a_thread


class HermesStub:
    """POST /v1/runs -> 202 run_N; GET /v1/runs/<id> -> the run's scripted JSON text."""

    def __init__(self):
        self.submits = []        # (body, idempotency key)
        self.stops = []          # run ids asked to stop
        self.runs = {}           # run id -> raw JSON text of GET /v1/runs/<id>
        self.url = None
        self._lock = threading.Lock()

    def complete(self, run_id, output_json):
        """Make `run_id` completed with `output_json` (a JSON string literal, as raw text)."""
        self.runs[run_id] = ('{"run_id": "%s", "status": "completed", "output": %s}'
                             % (run_id, output_json))

    def run_for(self, text):
        """The run id submitted for input `text`."""
        for index, (body, _) in enumerate(self.submits):
            if body["input"] == text:
                return f"run_{index + 1}"
        raise KeyError(text)

    def _handler(stub):
        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, status, text):
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path.endswith("/stop"):
                    stub.stops.append(self.path.split("/")[-2])
                    return self._answer(200, '{"status": "stopping"}')
                with stub._lock:
                    stub.submits.append((body, self.headers.get("Idempotency-Key")))
                    run_id = f"run_{len(stub.submits)}"
                    stub.runs.setdefault(run_id, '{"run_id": "%s", "status": "running"}' % run_id)
                self._answer(202, json.dumps({"run_id": run_id, "status": "started"}))

            def do_GET(self):
                run_id = self.path.rsplit("/", 1)[-1]
                if run_id not in stub.runs:
                    return self._answer(404, '{"error": {"code": "run_not_found"}}')
                self._answer(200, stub.runs[run_id])
        return Handler

    @contextlib.contextmanager
    def serving(self):
        with serving_in_a_thread(self._handler()) as self.url:
            yield self
