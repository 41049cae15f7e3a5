"""A loopback proxy in front of Hermes that breaks connections the way a restarting Hermes
behind a reverse proxy does, so a test can show what the relay does about a lost answer."""
import http.client
import http.server
import urllib.parse

from testkit.servers import serving_in_a_thread


class FlakyProxy:
    """Forwards every request to Hermes at `target`, except:
    - while `down`: takes each request and closes the connection without an answer (Hermes
      never saw it);
    - with `drop_next_submission`: forwards the next `POST /v1/runs`, then closes the
      connection without its answer (Hermes has the run; the relay never hears of it).
    `cut` and `dropped` count what it did."""

    def __init__(self, target):
        self.target = urllib.parse.urlsplit(target)
        self.down = False
        self.drop_next_submission = False
        self.cut = self.dropped = 0

    def serving(self):
        """`with proxy.serving() as url:` the proxy on an unused loopback port."""
        return serving_in_a_thread(self._handler())

    def _handler(proxy):
        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if proxy.down:
                    proxy.cut += 1
                    self.close_connection = True
                    return
                status, headers, data = proxy._forward(self.command, self.path, body,
                                                       self.headers)
                if self.command == "POST" and self.path == "/v1/runs" \
                        and proxy.drop_next_submission:
                    proxy.drop_next_submission = False
                    proxy.dropped += 1
                    self.close_connection = True
                    return
                self.send_response(status)
                for name, value in headers:
                    if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            do_GET = do_POST = forward
        return Handler

    def _forward(self, method, path, body, headers):
        conn = http.client.HTTPConnection(self.target.hostname, self.target.port, timeout=30)
        try:
            conn.request(method, self.target.path + path, body=body,
                         headers={k: v for k, v in headers.items()
                                  if k.lower() not in ("host", "connection")})
            answer = conn.getresponse()
            return answer.status, answer.getheaders(), answer.read()
        finally:
            conn.close()
