"""Small hand-written Claude Code stdout frames, shaped like the real CLI's (2.1.241 / 2.1.332)."""

from __future__ import annotations

from typing import Any

SESSION = "5f0c7a52-0000-4000-8000-000000000001"


def init(session_id: str = SESSION, model: str = "claude-sonnet-5", mode: str = "default") -> dict[str, Any]:
    return {"type": "system", "subtype": "init", "session_id": session_id, "model": model, "permissionMode": mode}


def message_start(message_id: str, parent: str | None = None, input_tokens: int = 10) -> dict[str, Any]:
    return {
        "type": "stream_event",
        "event": {
            "type": "message_start",
            "message": {
                "id": message_id,
                "role": "assistant",
                "content": [],
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": 100,
                    "cache_read_input_tokens": 1000,
                    "output_tokens": 1,
                },
            },
        },
        "parent_tool_use_id": parent,
        "session_id": SESSION,
    }


def text_delta(text: str, parent: str | None = None, kind: str = "text_delta") -> dict[str, Any]:
    field = "text" if kind == "text_delta" else "thinking"
    return {
        "type": "stream_event",
        "event": {"type": "content_block_delta", "index": 0, "delta": {"type": kind, field: text}},
        "parent_tool_use_id": parent,
        "session_id": SESSION,
    }


def message_delta(output_tokens: int) -> dict[str, Any]:
    return {
        "type": "stream_event",
        "event": {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": output_tokens},
        },
        "parent_tool_use_id": None,
    }


def message_stop(parent: str | None = None) -> dict[str, Any]:
    return {"type": "stream_event", "event": {"type": "message_stop"}, "parent_tool_use_id": parent}


def assistant(
    message_id: str,
    blocks: list[dict[str, Any]],
    uuid: str = "a-uuid-1",
    parent: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {
            "id": message_id,
            "role": "assistant",
            "model": "claude-sonnet-5",
            "content": blocks,
            "usage": {
                "input_tokens": 10,
                "cache_creation_input_tokens": 100,
                "cache_read_input_tokens": 1000,
                "output_tokens": 1,
            },
        },
        "parent_tool_use_id": parent,
        "session_id": SESSION,
        "uuid": uuid,
        **extra,
    }


def tool_use(tool_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": args}


def tool_result(
    tool_id: str, content: Any, *, is_error: bool = False, use_result: Any = None, parent: str | None = None
) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
    if is_error:
        block["is_error"] = True
    frame: dict[str, Any] = {
        "type": "user",
        "message": {"role": "user", "content": [block]},
        "parent_tool_use_id": parent,
        "session_id": SESSION,
        "uuid": f"u-{tool_id}",
    }
    if use_result is not None:
        frame["tool_use_result"] = use_result
    return frame


def can_use_tool(
    request_id: str, tool_id: str, name: str, args: dict[str, Any], suggestions: list[Any] | None = None
) -> dict[str, Any]:
    request: dict[str, Any] = {
        "subtype": "can_use_tool",
        "tool_name": name,
        "display_name": name,
        "input": args,
        "tool_use_id": tool_id,
        "description": "hello.txt",
    }
    if suggestions is not None:
        request["permission_suggestions"] = suggestions
    return {"type": "control_request", "request_id": request_id, "request": request}


def result(
    *,
    subtype: str = "success",
    is_error: bool = False,
    text: str | None = "done",
    terminal_reason: str = "completed",
    stop_reason: str | None = "end_turn",
    window: int = 200_000,
    cost: float = 0.25,
) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": subtype,
        "is_error": is_error,
        "result": text,
        "terminal_reason": terminal_reason,
        "stop_reason": stop_reason,
        "session_id": SESSION,
        "total_cost_usd": cost,
        "modelUsage": {"claude-haiku": {"contextWindow": 100_000}, "claude-sonnet-5": {"contextWindow": window}},
        "uuid": "r-uuid",
    }
