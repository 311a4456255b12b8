"""A fake JSON-RPC 2.0 agent over stdio (responses omit "jsonrpc", like codex app-server).

Methods the client may call:
  echo            result = params
  fail            error {code: -32000, message: "it failed", data: {"why": params}}
  notify_then     three notifications "progress" {n}, then result "done"
  ask             request "client/pick" (string id "srv-1") to the client; result = its answer
  ask_unknown     request "nobody/handles" (int id 0); result = the error object it got back
  stray           a response to id 999, a frame with no method/id, then result "ok"
  str_echo        result "same", with our id echoed back as a string
  garbage         a non-JSON line, then result "after"
  die             exit 3 at once (writes "fatal: died on purpose" to stderr), never answering
  hang            never answer
"""

from __future__ import annotations

import json
import sys
from typing import Any


def send(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def read() -> dict[str, Any] | None:
    line = sys.stdin.readline()
    return json.loads(line) if line else None


def wait_response(rid: object) -> dict[str, Any]:
    """Read until the client answers ``rid`` (record everything else as seen)."""
    while True:
        msg = read()
        if msg is None:
            sys.exit(0)
        if msg.get("id") == rid and "method" not in msg:
            return msg
        SEEN.append(msg)


SEEN: list[dict[str, Any]] = []


def handle(msg: dict[str, Any]) -> None:
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params")
    if rid is None:  # a notification from the client
        send({"method": "seen_notification", "params": {"method": method, "params": params}})
        return
    if method == "echo":
        send({"id": rid, "result": params})
    elif method == "fail":
        send({"id": rid, "error": {"code": -32000, "message": "it failed", "data": {"why": params}}})
    elif method == "notify_then":
        for n in range(3):
            send({"method": "progress", "params": {"n": n}})
        send({"id": rid, "result": "done"})
    elif method == "ask":
        send({"jsonrpc": "2.0", "id": "srv-1", "method": "client/pick", "params": {"options": ["a", "b"]}})
        answer = wait_response("srv-1")
        send({"id": rid, "result": answer.get("result", answer.get("error"))})
    elif method == "ask_unknown":
        send({"id": 0, "method": "nobody/handles", "params": {}})
        answer = wait_response(0)
        send({"id": rid, "result": answer.get("error")})
    elif method == "stray":
        send({"id": 999, "result": "nobody asked"})
        send({"something": "else"})
        send({"id": rid, "result": "ok"})
    elif method == "str_echo":
        send({"id": str(rid), "result": "same"})
    elif method == "garbage":
        sys.stdout.write("oops, not json\n")
        send({"id": rid, "result": "after"})
    elif method == "die":
        sys.stderr.write("fatal: died on purpose\n")
        sys.stderr.flush()
        sys.exit(3)
    elif method == "hang":
        pass
    else:
        send({"id": rid, "error": {"code": -32601, "message": f"no method {method}"}})


def main() -> None:
    while True:
        msg = SEEN.pop(0) if SEEN else read()
        if msg is None:
            return
        handle(msg)


if __name__ == "__main__":
    main()
