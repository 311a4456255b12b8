"""A raw JSON-lines ACP v1 agent (stdlib only) that ignores a cancel and ends the old turn late.

``late_cancel_agent.py STOP`` — STOP is the stop reason it answers the cancelled prompt with
(``cancelled`` or ``end_turn``). It reads one frame at a time and answers in order: a second
``session/prompt`` sent while it still runs the first waits unread in its stdin.

A ``session/prompt`` saying ``first`` streams one chunk ("working") and waits. On
``session/cancel`` it answers nothing at once: it streams ``LATE_CHUNKS`` (40) chunks ``late<i> ``
``LATE_GAP`` (0.03) s apart, past the engine's cancel deadline, then answers the old prompt itself
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


def chunk(text: str) -> None:
    body = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SESSION, "update": body}})


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
        if method == "initialize":
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
            text = " ".join(b.get("text", "") for b in params.get("prompt") or [] if b.get("type") == "text")
            if text == "first":
                chunk("working")
                waiting = rid
                continue
            chunk(f"echo: {text}")
            send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
        elif method == "session/cancel":
            if waiting is None:
                continue
            for i in range(CHUNKS):  # streams on, reading nothing meanwhile
                time.sleep(GAP)
                chunk(f"late{i} ")
            log("answered the old prompt")
            send({"jsonrpc": "2.0", "id": waiting, "result": {"stopReason": STOP}})
            waiting = None
        elif rid is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
