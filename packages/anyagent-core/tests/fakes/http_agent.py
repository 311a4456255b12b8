"""A fake HTTP agent server: ``http_agent.py PORT``; listens on 127.0.0.1 and logs to stdout.

Routes:
  GET  /health          {"healthy": true}
  POST /echo            the JSON body back, with "method" and "auth" (the Authorization header)
  GET  /text            a plain-text body
  GET  /missing         404 {"error": "not found"}
  GET  /slow            answers after 5 s
  GET  /event           an event stream: a plain event, an enveloped one (opencode's shape), an unknown name,
                        non-JSON data, multi-line data, a comment, then the stream closes
  GET  /event_bad_type  200 with content-type application/json (not an event stream)
  GET  /event_longline  an event stream whose first line never ends (2 MiB, then closes)
"""

from __future__ import annotations

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        sys.stdout.write("request " + (format % args) + "\n")
        sys.stdout.flush()

    def _json(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, chunks: list[bytes], content_type: str = "text/event-stream") -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Connection", "close")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(chunk)
            self.wfile.flush()
        self.close_connection = True

    def do_GET(self) -> None:
        if self.path == "/health":
            self._json(200, {"healthy": True})
        elif self.path == "/text":
            body = b"plain words"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/slow":
            time.sleep(5)
            self._json(200, {})
        elif self.path == "/event":
            self._stream(
                [
                    b'data: {"type": "server.connected"}\n\n',
                    b'event: message\ndata: {"directory": "/w", "payload": {"type": "session.idle", "id": 1}}\n\n',
                    b'event: brand.new\nid: 7\ndata: {"type": "x"}\n\n',
                    b": a comment line\n\n",
                    b"data: not json at all\n\n",
                    b'data: {"type": "multi",\ndata:  "n": 2}\n\n',
                ]
            )
        elif self.path == "/event_bad_type":
            self._stream([b'{"a": 1}'], content_type="application/json")
        elif self.path == "/event_longline":
            self._stream([b"data: " + b"z" * (2 * 1024 * 1024)])
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null")
        if self.path == "/echo":
            self._json(200, {"body": body, "method": "POST", "auth": self.headers.get("Authorization")})
        else:
            self._json(404, {"error": "not found"})


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    sys.stdout.write(f"listening on {server.server_address[1]}\n")
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
