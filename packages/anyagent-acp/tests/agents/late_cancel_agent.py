"""A raw JSON-lines ACP agent (stdlib only) that ignores a cancel and ends the old turn late.

``late_cancel_agent.py STOP [VERSION]`` — STOP is the stop reason it ends the cancelled prompt with
(``cancelled`` or ``end_turn``); VERSION (1, the default, or 2) the protocol it speaks: in v2 a
prompt is answered ``{}`` at once and its turn ends with an idle ``state_update``. It reads one
frame at a time and answers in order: a second ``session/prompt`` sent while it still runs the
first waits unread in its stdin.

A ``session/prompt`` saying ``first`` streams one chunk ("working") and waits. On
``session/cancel`` it answers nothing at once: it streams ``LATE_CHUNKS`` (40) chunks ``late<i> ``
``LATE_GAP`` (0.03) s apart, past the engine's cancel deadline, then ends the old prompt itself
with STOP (1.2 s after the cancel). Any other prompt is answered ``echo: <text>`` and ``end_turn``.
``LATE_LOG`` names a file where each method the client sent is appended, with the time.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

STOP = sys.argv[1] if len(sys.argv) > 1 else "cancelled"
VERSION = int(sys.argv[2]) if len(sys.argv) > 2 else 1
SESSION = "late-1"
CHUNKS = int(os.environ.get("LATE_CHUNKS", "40"))
GAP = float(os.environ.get("LATE_GAP", "0.03"))


def send(frame: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def log(entry: str) -> None:
    path = os.environ.get("LATE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"{time.monotonic():.3f} {entry}\n")


def update(body: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SESSION, "update": body}})


def chunk(text: str, message_id: str = "a1") -> None:
    body: dict[str, Any] = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    if VERSION == 2:
        body["messageId"] = message_id
    update(body)


def end(rid: Any, stop: str) -> None:
    """The prompt's end: its answer (v1) or an idle ``state_update`` (v2, answered at its start)."""
    if VERSION == 2:
        update({"sessionUpdate": "state_update", "state": "idle", "stopReason": stop})
    else:
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": stop}})


def main() -> None:
    waiting: Any = None  # the id of the prompt that waits for a cancel
    for line in sys.stdin:
        if not line.strip():
            continue
        frame = json.loads(line)
        method = frame.get("method")
        rid = frame.get("id")
        params = frame.get("params") or {}
        if method is not None:
            log(method)
        if method == "initialize" and VERSION == 2:
            result: dict[str, Any] = {
                "protocolVersion": 2,
                "info": {"name": "late-cancel-agent", "version": "2.0.0"},
                "capabilities": {"session": {}},
                "authMethods": [],
            }
            send({"jsonrpc": "2.0", "id": rid, "result": result})
        elif method == "initialize":
            result = {
                "protocolVersion": 1,
                "agentInfo": {"name": "late-cancel-agent", "version": "1.0.0"},
                "agentCapabilities": {"loadSession": False},
                "authMethods": [],
            }
            send({"jsonrpc": "2.0", "id": rid, "result": result})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": SESSION}})
        elif method == "session/prompt":
            prompt = params.get("prompt") or []
            text = " ".join(b.get("text", "") for b in prompt if b.get("type") == "text")
            if VERSION == 2:
                send({"jsonrpc": "2.0", "id": rid, "result": {}})  # acceptance only
                update({"sessionUpdate": "user_message", "messageId": f"u{rid}", "content": prompt})
                update({"sessionUpdate": "state_update", "state": "running"})
            if text == "first":
                chunk("working")
                waiting = rid
                continue
            chunk(f"echo: {text}", f"a{rid}")
            end(rid, "end_turn")
        elif method == "session/cancel":
            if waiting is None:
                continue
            for i in range(CHUNKS):  # streams on, reading nothing meanwhile
                time.sleep(GAP)
                chunk(f"late{i} ")
            log("answered the old prompt")
            end(waiting, STOP)
            waiting = None
        elif rid is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
