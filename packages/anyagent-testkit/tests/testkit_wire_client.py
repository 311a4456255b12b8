"""Test-side client logic: fresh ids for recorded client frames, and the answers expected back.

Written independently of the replayer's own id map, from the wire facts: a client picks its own
request ids (JSON-RPC ``id``, claude ``request_id``, pi ``id``, claude user ``uuid``); the agent's
answers to them must carry those ids; agent-initiated ids are never touched.
"""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

PI_ANSWER_TYPES = {"extension_ui_response", "response", "control_response", "user"}


class FreshIds:
    """Gives recorded client frames new ids and predicts the agent frames that answer them."""

    def __init__(self) -> None:
        self.rpc: dict[str, Any] = {}
        self.control: dict[str, Any] = {}
        self.pi: dict[str, Any] = {}
        self.uuids: dict[str, str] = {}

    def freshen(self, frame: Any) -> Any:
        """A copy of ``frame`` with new ids where the client chooses them."""
        if not isinstance(frame, dict):
            return frame
        out = copy.deepcopy(frame)
        if isinstance(out.get("method"), str) and "id" in out:
            new = out["id"] + 1000 if isinstance(out["id"], int) else f"live-{out['id']}"
            self.rpc[json.dumps(out["id"])] = new
            out["id"] = new
        elif out.get("type") == "control_request" and "request_id" in out:
            new = f"live-{out['request_id']}"
            self.control[json.dumps(out["request_id"])] = new
            out["request_id"] = new
        elif out.get("type") == "user" and isinstance(out.get("uuid"), str):
            new = str(uuid.uuid4())
            self.uuids[out["uuid"]] = new
            out["uuid"] = new
        elif isinstance(out.get("type"), str) and "id" in out and out["type"] not in PI_ANSWER_TYPES:
            new = f"live-{out['id']}"
            self.pi[json.dumps(out["id"])] = new
            out["id"] = new
        return out

    def expected(self, frame: Any) -> Any:
        """The recorded agent ``frame`` as the live client must receive it."""
        if not isinstance(frame, dict):
            return frame
        out = copy.deepcopy(frame)
        is_response = "method" not in out and "type" not in out and ("result" in out or "error" in out)
        if is_response and "id" in out:
            out["id"] = self.rpc.get(json.dumps(out["id"]), out["id"])
        elif out.get("type") == "control_response" and isinstance(out.get("response"), dict):
            rid = out["response"].get("request_id")
            out["response"]["request_id"] = self.control.get(json.dumps(rid), rid)
        elif out.get("type") == "response" and "id" in out:
            out["id"] = self.pi.get(json.dumps(out["id"]), out["id"])
        return _swap(out, self.uuids)


def _swap(value: Any, table: dict[str, str]) -> Any:
    if isinstance(value, str):
        return table.get(value, value)
    if isinstance(value, list):
        return [_swap(item, table) for item in value]
    if isinstance(value, dict):
        return {key: _swap(item, table) for key, item in value.items()}
    return value
