"""The frames anyagent writes to Claude Code's stdin (stream-json input + control protocol).

Every function returns one JSON object (a dict) ready to be written as one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "control_error",
    "control_request",
    "control_success",
    "permission_allow",
    "permission_deny",
    "user_message",
]

DENY_MESSAGE = "The user denied this tool use."
CANCEL_MESSAGE = "The user cancelled the turn."
DECLINE_MESSAGE = "The request was closed without an answer."


def control_request(request_id: str, subtype: str, **fields: Any) -> dict[str, Any]:
    """A control request anyagent sends (``initialize``, ``interrupt``, ``set_model``, …)."""
    return {"type": "control_request", "request_id": request_id, "request": {"subtype": subtype, **fields}}


def control_success(request_id: str, response: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A successful answer to a control request the CLI sent."""
    body: dict[str, Any] = {"subtype": "success", "request_id": request_id}
    if response is not None:
        body["response"] = dict(response)
    return {"type": "control_response", "response": body}


def control_error(request_id: str, error: str) -> dict[str, Any]:
    """An error answer to a control request the CLI sent (so it never waits forever)."""
    return {"type": "control_response", "response": {"subtype": "error", "request_id": request_id, "error": error}}


def permission_allow(
    request_id: str, updated_input: Mapping[str, Any], permissions: Sequence[Any] | None = None
) -> dict[str, Any]:
    """Allow a ``can_use_tool`` request with ``updated_input``; ``permissions`` makes it stick."""
    response: dict[str, Any] = {"behavior": "allow", "updatedInput": dict(updated_input)}
    if permissions:
        response["updatedPermissions"] = list(permissions)
    return control_success(request_id, response)


def permission_deny(request_id: str, message: str = DENY_MESSAGE, *, interrupt: bool = False) -> dict[str, Any]:
    """Deny a ``can_use_tool`` request; the model sees ``message``."""
    response: dict[str, Any] = {"behavior": "deny", "message": message}
    if interrupt:
        response["interrupt"] = True
    return control_success(request_id, response)


def user_message(uuid: str, content: str | Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A user prompt. ``uuid`` must be fresh: the CLI silently drops a uuid it has seen."""
    body: Any = content if isinstance(content, str) else [dict(block) for block in content]
    return {
        "type": "user",
        "uuid": uuid,
        "session_id": "",
        "message": {"role": "user", "content": body},
        "parent_tool_use_id": None,
    }
