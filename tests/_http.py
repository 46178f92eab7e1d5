"""A local HTTP server on 127.0.0.1 for the download tests, with faults on demand.

Attributes set on the server: ``files`` (path -> bytes), ``requests`` ((path, Range
header) per request), ``truncate_next`` (that many responses promise the whole body,
send half and hang up), ``honour_range`` (answer Range requests with 206) and
``send_length`` (False: no Content-Length, half the body, so the cut goes unnoticed).
"""

import http.server
import threading

from tcca_core.datasets import _network


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output clean
        pass

    def do_GET(self):
        srv = self.server
        srv.requests.append((self.path, self.headers.get("Range")))
        body = srv.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        start = 0
        rng = self.headers.get("Range")
        if rng and srv.honour_range:
            start = int(rng.split("=")[1].split("-")[0])
            self.send_response(206)
            self.send_header(
                "Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}"
            )
        else:
            self.send_response(200)
        payload = body[start:]
        if not srv.send_length:
            self.end_headers()
            self.wfile.write(payload[: len(payload) // 2])
            self.close_connection = True
            return
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if srv.truncate_next > 0:  # promise everything, send half, hang up
            srv.truncate_next -= 1
            self.wfile.write(payload[: len(payload) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(payload)


def serve(monkeypatch):
    """Generator for a pytest fixture: start the server, yield it, stop it."""
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setattr(_network.time, "sleep", lambda s: None)  # no back-off
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.files, srv.requests = {}, []
    srv.truncate_next, srv.honour_range, srv.send_length = 0, True, True
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"
    thread = threading.Thread(
        target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
