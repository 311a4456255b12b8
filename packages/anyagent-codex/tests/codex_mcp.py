"""MCP servers for the live tier.

``HttpMcpServer``: a tiny streamable-HTTP MCP server on 127.0.0.1: JSON-RPC over POST with JSON
answers (``initialize``, ``tools/list``, ``tools/call``), 202 for notifications, 405 for the
optional GET stream. It offers one tool, ``lookup``, that answers ``FOUND <query>``, and keeps every
JSON-RPC message it received (``messages``) and every ``Authorization`` header (``authorizations``)
so a test can see what the agent asked and sent.

``FORM_SERVER``: a stdio MCP server (run with ``python -c``) whose tool ``ask`` first asks the
client to fill a form (``elicitation/create``) and answers ``FORM <action>`` with what came back.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from anyagent_testkit._httpserver import LoopbackServer, RequestHandler

__all__ = ["FORM_ANSWER", "FORM_SERVER", "LOOKUP_ANSWER", "HttpMcpServer"]

LOOKUP_ANSWER = "FOUND "
"""The ``lookup`` tool's answer: this prefix and the query."""

FORM_ANSWER = "FORM "
"""The ``ask`` tool's answer: this prefix and the form's ``action`` (``accept``/``decline``/…)."""

FORM_SERVER = r"""
import json, sys
def send(message):
    print(json.dumps(message), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    method, params = message.get("method"), message.get("params") or {}
    if "id" not in message or method is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "form", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "ask", "description": "asks the user a form first",
                             "inputSchema": {"type": "object", "properties": {}}}]}
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": "form-1", "method": "elicitation/create",
              "params": {"mode": "form", "message": "Your favourite colour?",
                         "requestedSchema": {"type": "object",
                                             "properties": {"colour": {"type": "string"}}}}})
        while True:
            reply = json.loads(sys.stdin.readline())
            if reply.get("id") == "form-1":
                break
        action = (reply.get("result") or {}).get("action", "error")
        result = {"content": [{"type": "text", "text": "FORM " + str(action)}], "isError": False}
    else:
        result = {}
    send({"jsonrpc": "2.0", "id": message["id"], "result": result})
"""

_TOOL = {
    "name": "lookup",
    "description": "Looks a word up in the test catalogue",
    "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
}


class HttpMcpServer:
    """``with HttpMcpServer() as mcp:`` serves on ``mcp.url`` (``http://127.0.0.1:<port>/mcp``)."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.authorizations: list[str] = []
        """Every ``Authorization`` header a POST carried, in order."""
        self._lock = threading.Lock()
        self._server = LoopbackServer(_handler(self))

    @property
    def url(self) -> str:
        return self._server.url + "/mcp"

    def methods(self) -> list[str]:
        """The JSON-RPC methods received, in order."""
        with self._lock:
            return [str(message.get("method")) for message in self.messages]

    def __enter__(self) -> HttpMcpServer:
        self._server.start("http-mcp")
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.close()

    def answer(self, message: dict[str, Any]) -> dict[str, Any]:
        """The JSON-RPC result for one request."""
        with self._lock:
            self.messages.append(message)
        method = message.get("method")
        params = message.get("params") or {}
        if method == "initialize":
            return {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "catalogue", "version": "1"},
            }
        if method == "tools/list":
            return {"tools": [_TOOL]}
        if method == "tools/call":
            query = str((params.get("arguments") or {}).get("query", ""))
            return {"content": [{"type": "text", "text": LOOKUP_ANSWER + query}], "isError": False}
        return {}


def _handler(server: HttpMcpServer) -> type[RequestHandler]:
    class Handler(RequestHandler):
        def do_GET(self) -> None:
            self.send_json(405, {"error": "no server-initiated stream"})

        def do_DELETE(self) -> None:
            self.send_json(200, {})

        def do_POST(self) -> None:
            authorization = self.headers.get("Authorization")
            if authorization is not None:
                with server._lock:
                    server.authorizations.append(authorization)
            try:
                message = json.loads(self.read_body() or b"null")
            except (ValueError, OSError):
                self.send_json(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}})
                return
            if not isinstance(message, dict):
                self.send_json(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "one message"}})
                return
            if "id" not in message:  # a notification (or a response): accepted, no body
                with server._lock:
                    server.messages.append(message)
                self.send_bytes(202, b"", None)
                return
            result = server.answer(message)
            self.send_json(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})

    return Handler
