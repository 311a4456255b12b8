"""What a frame *is* on each wire, and how recorded ids become the live client's ids.

Wires recognised (by the frame's own shape, no configuration):

* JSON-RPC 2.0 (codex app-server, every ACP agent): requests ``{"id", "method"}``, notifications
  ``{"method"}``, responses ``{"id", "result" | "error"}``.
* claude stream-json: ``{"type": "control_request", "request_id", "request": {"subtype"}}``,
  ``{"type": "control_response", "response": {"request_id"}}``, ``{"type": "user", "uuid"?}``.
* pi RPC: ``{"id"?, "type": <command>}`` answered by ``{"id", "type": "response", "command"}``.
* agy stream-json: ``{"event": ...}``.

``frame_kind`` gives the comparable kind of a frame; ``IdMap`` learns recorded → live ids from each
matched client frame and rewrites the agent frames that answer them; ``error_reply`` builds what the
real agent answers to a request it does not know.
"""

from __future__ import annotations

import copy
import json
from typing import Any

__all__ = ["IdMap", "describe_kind", "error_reply", "frame_kind"]

Kind = tuple[str, ...]


def frame_kind(frame: Any) -> Kind:
    """The kind of a frame, compared between the recorded and the live client frame.

    JSON-RPC: ``("request", method)``, ``("notification", method)``, ``("response",)``;
    claude: ``("control_request", subtype)``, ``("type", "control_response")``, ``("type", "user")``;
    pi: ``("type", command)``; agy: ``("event", name)``; anything else ``("other", keys...)``.
    """
    if not isinstance(frame, dict):
        return ("value", type(frame).__name__)
    if _is_jsonrpc(frame):
        method = frame.get("method")
        if isinstance(method, str):
            return ("request" if "id" in frame else "notification", method)
        return ("response",)
    kind = frame.get("type")
    if isinstance(kind, str):
        if kind == "control_request":
            request = frame.get("request")
            subtype = request.get("subtype") if isinstance(request, dict) else None
            return ("control_request", str(subtype))
        return ("type", kind)
    event = frame.get("event")
    if isinstance(event, str):
        return ("event", event)
    return ("other", *sorted(frame))


def describe_kind(kind: Kind) -> str:
    """A short readable spelling of a kind, for logs and diffs."""
    return " ".join(kind) if kind else "?"


def _is_jsonrpc(frame: dict[str, Any]) -> bool:
    if "jsonrpc" in frame or isinstance(frame.get("method"), str):
        return True
    return "id" in frame and ("result" in frame or "error" in frame) and "type" not in frame


def _key(value: Any) -> str:
    """A map key that keeps ``1`` and ``"1"`` apart."""
    return json.dumps(value, sort_keys=True)


class IdMap:
    """Recorded ids → the ids the live client used, learned one matched client frame at a time."""

    def __init__(self) -> None:
        self._rpc: dict[str, Any] = {}
        self._control: dict[str, Any] = {}
        self._pi: dict[str, Any] = {}
        self._uuids: dict[str, str] = {}

    def learn(self, recorded: Any, live: Any) -> None:
        """Remember the ids ``live`` used where the recording had ``recorded`` (same kind)."""
        if not isinstance(recorded, dict) or not isinstance(live, dict):
            return
        kind = frame_kind(recorded)
        if kind[0] == "request" and "id" in recorded and "id" in live:
            self._rpc[_key(recorded["id"])] = live["id"]
        elif kind[0] == "control_request" and "request_id" in recorded and "request_id" in live:
            self._control[_key(recorded["request_id"])] = live["request_id"]
        elif kind == ("type", "user"):
            old, new = recorded.get("uuid"), live.get("uuid")
            if isinstance(old, str) and isinstance(new, str) and old and old != new:
                self._uuids[old] = new
        elif kind[0] == "type" and "id" in recorded and "id" in live:
            self._pi[_key(recorded["id"])] = live["id"]

    def touches(self, frame: Any, text: str) -> bool:
        """Whether ``rewrite`` could change ``frame`` (serialized as ``text``): answers, or a frame
        mentioning a remapped uuid. Lets the player skip the copy for the bulk of a stream."""
        if not isinstance(frame, dict):
            return False
        if (_is_jsonrpc(frame) and "method" not in frame and "id" in frame) or frame.get("type") in (
            "control_response",
            "response",
        ):
            return True
        return any(old in text for old in self._uuids)

    def rewrite(self, frame: Any) -> Any:
        """A copy of the agent ``frame`` with answers addressed to the live client's ids."""
        if not isinstance(frame, dict):
            return frame
        out = copy.deepcopy(frame)
        if _is_jsonrpc(out) and "method" not in out and "id" in out:
            out["id"] = self._rpc.get(_key(out["id"]), out["id"])
        elif out.get("type") == "control_response" and isinstance(out.get("response"), dict):
            response = out["response"]
            if "request_id" in response:
                response["request_id"] = self._control.get(_key(response["request_id"]), response["request_id"])
        elif out.get("type") == "response" and "id" in out:
            out["id"] = self._pi.get(_key(out["id"]), out["id"])
        if self._uuids:
            out = _replace_strings(out, self._uuids)
        return out


def _replace_strings(value: Any, table: dict[str, str]) -> Any:
    if isinstance(value, str):
        return table.get(value, value)
    if isinstance(value, list):
        return [_replace_strings(item, table) for item in value]
    if isinstance(value, dict):
        return {key: _replace_strings(item, table) for key, item in value.items()}
    return value


def error_reply(frame: Any, *, jsonrpc_key: bool) -> dict[str, Any] | None:
    """What the real agent answers to a request it does not expect, or None for non-requests.

    JSON-RPC request → ``-32601`` (``"jsonrpc"`` included when the agent's frames carry it);
    claude control request → an error ``control_response``; pi command with an id → an unsuccessful
    ``response``. Notifications, answers to agent requests and prompts get no reply.
    """
    if not isinstance(frame, dict):
        return None
    kind = frame_kind(frame)
    if kind[0] == "request":
        reply: dict[str, Any] = {"jsonrpc": "2.0"} if jsonrpc_key else {}
        reply.update(id=frame["id"], error={"code": -32601, "message": f"Method not found: {kind[1]}"})
        return reply
    if kind[0] == "control_request":
        return {
            "type": "control_response",
            "response": {
                "subtype": "error",
                "request_id": frame.get("request_id"),
                "error": f"Unsupported control request subtype: {kind[1]}",
            },
        }
    if kind[0] == "type" and "id" in frame and kind[1] not in _PI_ANSWERS:
        return {
            "id": frame["id"],
            "type": "response",
            "command": kind[1],
            "success": False,
            "error": f"Unknown command: {kind[1]}",
        }
    return None


_PI_ANSWERS = frozenset({"extension_ui_response", "response", "control_response", "user"})
"""``type`` values that answer the agent or carry a prompt: never answered with an error."""
