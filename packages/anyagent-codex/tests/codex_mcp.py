"""A tiny streamable-HTTP MCP server on 127.0.0.1 for the live tier: JSON-RPC over POST with JSON
answers (``initialize``, ``tools/list``, ``tools/call``), 202 for notifications, 405 for the
optional GET stream. It offers one tool, ``lookup``, that answers ``FOUND <query>``, and keeps every
JSON-RPC message it received (``messages``) so a test can see what the agent asked."""

from __future__ import annotations

import json
import threading
from typing import Any

from anyagent_testkit._httpserver import LoopbackServer, RequestHandler

__all__ = ["HttpMcpServer", "LOOKUP_ANSWER"]

LOOKUP_ANSWER = "FOUND "
"""The ``lookup`` tool's answer: this prefix and the query."""

_TOOL = {
    "name": "lookup",
    "description": "Looks a word up in the test catalogue",
    "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
}


class HttpMcpServer:
    """``with HttpMcpServer() as mcp:`` serves on ``mcp.url`` (``http://127.0.0.1:<port>/mcp``)."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
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
