"""A scripted stand-in for Google's Antigravity ACP server (``agy_acp_server.par``), written from
the recordings acp-01-handshake, acp-02-pong and acp-03-authenticate.

Like the real one: ``initialize`` answers with its four auth methods; ``session/new`` fails with
-32000 "Authentication required" until ``authenticate`` succeeded or ``auth.type`` is set in
``$HOME/.gemini/antigravity-acp/settings.json``; a prompt is answered "pong". Every method it
receives is appended (one per line) to the file named by ``SCRIPTED_ACP_LOG``.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

AUTH_METHODS = [
    {"id": "oauth-personal", "name": "Log in with Google", "description": "Log in with your Google account"},
    {"id": "gemini-api-key", "name": "Gemini API key", "description": "Use an API key with Gemini Developer API"},
]


def send(frame: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def settings_auth() -> bool:
    path = Path(os.environ.get("HOME", "/nonexistent"), ".gemini", "antigravity-acp", "settings.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool((data.get("auth") or {}).get("type"))


def main() -> None:
    log = os.environ.get("SCRIPTED_ACP_LOG")
    authenticated = settings_auth()
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if log and method:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(method + "\n")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": ident, "result": {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": True, "promptCapabilities": {"image": True},
                                      "sessionCapabilities": {"resume": {}}},
                "authMethods": AUTH_METHODS,
                "agentInfo": {"name": "antigravity-acp", "title": "Google Antigravity", "version": "scripted"},
            }})  # fmt: skip
        elif method == "authenticate":
            authenticated = True
            send({"jsonrpc": "2.0", "id": ident, "result": {}})
        elif method == "session/new":
            if not authenticated:
                error = {"code": -32000, "message": "Authentication required",
                         "data": {"message": "No authentication method selected."}}  # fmt: skip
                send({"jsonrpc": "2.0", "id": ident, "error": error})
            else:
                send({"jsonrpc": "2.0", "id": ident, "result": {"sessionId": str(uuid.uuid4())}})
        elif method == "session/prompt":
            session = message["params"]["sessionId"]
            update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "pong"}}
            send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}})
            send({"jsonrpc": "2.0", "id": ident, "result": {"stopReason": "end_turn"}})
        elif ident is not None and method is not None:
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    main()
