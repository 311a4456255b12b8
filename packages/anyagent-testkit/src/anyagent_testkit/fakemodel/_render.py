"""Turning a ``Reply`` into each API's wire shape.

In: a ``Reply``, the ``Conversation`` it answers, and an id source. Out: either one JSON body
(``render_json``) or a list of ``SseEvent``s (``render_stream``; each may ask for a pause before it),
or an error body for a failure (``render_error``). Shapes follow the public API references of
Anthropic Messages, OpenAI Chat Completions and Responses, and the Gemini API.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import attrs

from ._conversation import Conversation, Dialect
from ._script import Fail, Reply, Slow, Text, Thinking, ToolCall, resolve_tool

__all__ = ["Block", "Ids", "SseEvent", "plan_blocks", "render_error", "render_json", "render_stream", "total_delay"]

OUTPUT_TOKENS = 10


class Ids:
    """Deterministic, thread-safe ids: ``toolu_fake_1``, ``call_fake_2``, ``msg_fake_3``..."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def next(self, prefix: str) -> str:
        """The next id with ``prefix``."""
        with self._lock:
            return f"{prefix}_fake_{next(self._counter)}"


@attrs.frozen
class SseEvent:
    """One server-sent event: ``data`` (JSON, or a str sent as-is), optional ``event`` name, and a
    ``delay`` in seconds to wait before sending it."""

    data: Any
    event: str | None = None
    delay: float = 0.0


@attrs.frozen
class Block:
    """One resolved piece of an answer: ``kind`` is "text", "thinking" or "tool"; ``pieces`` are
    (text, delay-before) pairs; tool blocks carry ``tool_id``, ``name``, ``arguments`` and the
    ``namespace`` the tool was offered in (Responses only)."""

    kind: str
    pieces: tuple[tuple[str, float], ...] = ()
    tool_id: str = ""
    name: str = ""
    arguments: dict[str, Any] = attrs.field(factory=dict)
    namespace: str | None = None

    @property
    def text(self) -> str:
        return "".join(piece for piece, _ in self.pieces)


def _pieces(text: str) -> tuple[tuple[str, float], ...]:
    return tuple((piece, 0.0) for piece in re.findall(r"\s*\S+\s*", text) or [text])


def _blocks(reply: Reply, conversation: Conversation, ids: Ids, slow_delay: float, tool_prefix: str) -> list[Block]:
    blocks: list[Block] = []
    for step in reply.steps:
        if isinstance(step, Text):
            blocks.append(Block("text", _pieces(step.text)))
        elif isinstance(step, Thinking):
            blocks.append(Block("thinking", _pieces(step.text)))
        elif isinstance(step, Slow):
            delay = slow_delay if step.delay is None else step.delay
            blocks.append(Block("text", tuple((f"slow{index} ", delay) for index in range(step.chunks))))
        elif isinstance(step, ToolCall) and not conversation.side_call:
            name, arguments = resolve_tool(step, conversation.tools)
            namespace = next((tool.namespace for tool in conversation.tools if tool.name == name), None)
            blocks.append(
                Block("tool", tool_id=ids.next(tool_prefix), name=name, arguments=arguments, namespace=namespace)
            )
    return blocks


def plan_blocks(reply: Reply, conversation: Conversation, ids: Ids, slow_delay: float) -> list[Block]:
    """Resolve ``reply``'s steps against the request: tool intents become the advertised tools,
    slow steps become paced text. Side calls never get tool blocks."""
    return _blocks(reply, conversation, ids, slow_delay, _TOOL_PREFIX[conversation.dialect])


def render_json(blocks: list[Block], conversation: Conversation, ids: Ids, input_tokens: int) -> dict[str, Any]:
    """The non-streaming answer body (the caller waits ``total_delay(blocks)`` before sending it)."""
    return _JSON_BUILDERS[conversation.dialect](blocks, conversation, ids, input_tokens)


def total_delay(blocks: list[Block]) -> float:
    """Seconds the slow pieces of ``blocks`` add up to."""
    return sum(delay for block in blocks for _, delay in block.pieces)


def render_stream(blocks: list[Block], conversation: Conversation, ids: Ids, input_tokens: int) -> Iterator[SseEvent]:
    """The streaming answer as SSE events."""
    return _STREAMERS[conversation.dialect](blocks, conversation, ids, input_tokens)


def render_error(failure: Fail, dialect: Dialect) -> dict[str, Any]:
    """The error body each API sends with an HTTP failure status."""
    if dialect is Dialect.ANTHROPIC:
        return {
            "type": "error",
            "error": {"type": _ANTHROPIC_ERRORS.get(failure.status, "api_error"), "message": failure.message},
        }
    if dialect is Dialect.GEMINI:
        return {
            "error": {
                "code": failure.status,
                "message": failure.message,
                "status": _GEMINI_STATUS.get(failure.status, "INTERNAL"),
            }
        }
    kind = {401: "invalid_request_error", 429: "rate_limit_exceeded"}.get(failure.status, "server_error")
    code = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(failure.status)
    return {"error": {"message": failure.message, "type": kind, "param": None, "code": code}}


_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
}
_TOOL_PREFIX = {
    Dialect.ANTHROPIC: "toolu",
    Dialect.OPENAI_CHAT: "call",
    Dialect.OPENAI_RESPONSES: "call",
    Dialect.GEMINI: "call",
}


# -- Anthropic Messages ------------------------------------------------------------------------


def _anthropic_json(blocks: list[Block], conv: Conversation, ids: Ids, tokens: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for block in blocks:
        if block.kind == "thinking":
            content.append({"type": "thinking", "thinking": block.text, "signature": "fake-signature"})
        elif block.kind == "text":
            content.append({"type": "text", "text": block.text})
        else:
            content.append({"type": "tool_use", "id": block.tool_id, "name": block.name, "input": block.arguments})
    return {
        "id": ids.next("msg"),
        "type": "message",
        "role": "assistant",
        "model": conv.model,
        "content": content,
        "stop_reason": "tool_use" if any(block.kind == "tool" for block in blocks) else "end_turn",
        "stop_sequence": None,
        "usage": _anthropic_usage(tokens, OUTPUT_TOKENS),
    }


def _anthropic_usage(tokens: int, output: int) -> dict[str, int]:
    return {
        "input_tokens": tokens,
        "output_tokens": output,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _anthropic_stream(blocks: list[Block], conv: Conversation, ids: Ids, tokens: int) -> Iterator[SseEvent]:
    def event(data: dict[str, Any], delay: float = 0.0) -> SseEvent:
        return SseEvent(data, str(data["type"]), delay)

    message: dict[str, Any] = {
        "id": ids.next("msg"),
        "type": "message",
        "role": "assistant",
        "model": conv.model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _anthropic_usage(tokens, 1),
    }
    yield event({"type": "message_start", "message": message})
    for index, block in enumerate(blocks):
        yield from _anthropic_block(index, block, event)
    stop = "tool_use" if any(block.kind == "tool" for block in blocks) else "end_turn"
    yield event(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": OUTPUT_TOKENS},
        }
    )
    yield event({"type": "message_stop"})


def _anthropic_block(index: int, block: Block, event: Any) -> Iterator[SseEvent]:
    if block.kind == "thinking":
        yield event(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            }
        )
        for piece, delay in block.pieces:
            yield event(
                {"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": piece}},
                delay,
            )
        yield event(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "signature_delta", "signature": "fake-signature"},
            }
        )
    elif block.kind == "text":
        yield event({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
        for piece, delay in block.pieces:
            yield event(
                {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}, delay
            )
    else:
        start = {"type": "tool_use", "id": block.tool_id, "name": block.name, "input": {}}
        yield event({"type": "content_block_start", "index": index, "content_block": start})
        for part in _halves(json.dumps(block.arguments)):
            yield event(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": part},
                }
            )
    yield event({"type": "content_block_stop", "index": index})


def _halves(text: str) -> list[str]:
    middle = len(text) // 2
    return [part for part in (text[:middle], text[middle:]) if part]


# -- OpenAI Chat Completions -------------------------------------------------------------------


def _chat_json(blocks: list[Block], conv: Conversation, ids: Ids, tokens: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "".join(b.text for b in blocks if b.kind == "text")}
    thinking = "".join(b.text for b in blocks if b.kind == "thinking")
    if thinking:
        message["reasoning_content"] = thinking
    calls = [
        {"id": b.tool_id, "type": "function", "function": {"name": b.name, "arguments": json.dumps(b.arguments)}}
        for b in blocks
        if b.kind == "tool"
    ]
    if calls:
        message["tool_calls"] = calls
    return {
        "id": ids.next("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": conv.model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": _chat_usage(tokens),
    }


def _chat_usage(tokens: int) -> dict[str, int]:
    return {"prompt_tokens": tokens, "completion_tokens": OUTPUT_TOKENS, "total_tokens": tokens + OUTPUT_TOKENS}


def _chat_stream(blocks: list[Block], conv: Conversation, ids: Ids, tokens: int) -> Iterator[SseEvent]:
    chat_id, created = ids.next("chatcmpl"), int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, delay: float = 0.0) -> SseEvent:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        body = {
            "id": chat_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": conv.model,
            "choices": [choice],
        }
        return SseEvent(body, None, delay)

    yield chunk({"role": "assistant", "content": ""})
    tool_index = 0
    for block in blocks:
        if block.kind in ("text", "thinking"):
            key = "content" if block.kind == "text" else "reasoning_content"
            for piece, delay in block.pieces:
                yield chunk({key: piece}, delay=delay)
            continue
        head = {
            "index": tool_index,
            "id": block.tool_id,
            "type": "function",
            "function": {"name": block.name, "arguments": ""},
        }
        yield chunk({"tool_calls": [head]})
        for part in _halves(json.dumps(block.arguments)):
            yield chunk({"tool_calls": [{"index": tool_index, "function": {"arguments": part}}]})
        tool_index += 1
    yield chunk({}, "tool_calls" if tool_index else "stop")
    if conv.include_usage:
        body = {
            "id": chat_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": conv.model,
            "choices": [],
            "usage": _chat_usage(tokens),
        }
        yield SseEvent(body)
    yield SseEvent("[DONE]")


# -- OpenAI Responses --------------------------------------------------------------------------


def _responses_items(blocks: list[Block], ids: Ids) -> list[tuple[Block, dict[str, Any]]]:
    out = []
    for block in blocks:
        if block.kind == "thinking":
            item = {
                "id": ids.next("rs"),
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": block.text}],
            }
        elif block.kind == "text":
            content = [{"type": "output_text", "text": block.text, "annotations": []}]
            item = {
                "id": ids.next("msg"),
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": content,
            }
        else:
            item = {
                "id": ids.next("fc"),
                "type": "function_call",
                "status": "completed",
                "name": block.name,
                "call_id": block.tool_id,
                "arguments": json.dumps(block.arguments),
            }
            if block.namespace:
                item["namespace"] = block.namespace
        out.append((block, item))
    return out


def _responses_usage(tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": OUTPUT_TOKENS,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tokens + OUTPUT_TOKENS,
    }


def _responses_json(blocks: list[Block], conv: Conversation, ids: Ids, tokens: int) -> dict[str, Any]:
    output = [item for _, item in _responses_items(blocks, ids)]
    return {
        "id": ids.next("resp"),
        "object": "response",
        "created_at": int(time.time()),
        "model": conv.model,
        "status": "completed",
        "output": output,
        "usage": _responses_usage(tokens),
    }


def _responses_stream(blocks: list[Block], conv: Conversation, ids: Ids, tokens: int) -> Iterator[SseEvent]:
    sequence = itertools.count()

    def event(data: dict[str, Any], delay: float = 0.0) -> SseEvent:
        data["sequence_number"] = next(sequence)
        return SseEvent(data, str(data["type"]), delay)

    response = {
        "id": ids.next("resp"),
        "object": "response",
        "created_at": int(time.time()),
        "model": conv.model,
        "status": "in_progress",
        "output": [],
    }
    yield event({"type": "response.created", "response": dict(response)})
    yield event({"type": "response.in_progress", "response": dict(response)})
    items = _responses_items(blocks, ids)
    for index, (block, item) in enumerate(items):
        yield from _responses_item_events(index, block, item, event)
    done = dict(response, status="completed", output=[item for _, item in items], usage=_responses_usage(tokens))
    yield event({"type": "response.completed", "response": done})


def _responses_item_events(index: int, block: Block, item: dict[str, Any], event: Any) -> Iterator[SseEvent]:
    item_id = item["id"]
    if block.kind == "thinking":
        yield event({"type": "response.output_item.added", "output_index": index, "item": dict(item, summary=[])})
        for piece, delay in block.pieces:
            delta = {
                "type": "response.reasoning_summary_text.delta",
                "item_id": item_id,
                "output_index": index,
                "summary_index": 0,
                "delta": piece,
            }
            yield event(delta, delay)
        yield event(
            {
                "type": "response.reasoning_summary_text.done",
                "item_id": item_id,
                "output_index": index,
                "summary_index": 0,
                "text": block.text,
            }
        )
    elif block.kind == "text":
        yield event(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": dict(item, status="in_progress", content=[]),
            }
        )
        part = {"type": "output_text", "text": "", "annotations": []}
        yield event(
            {
                "type": "response.content_part.added",
                "item_id": item_id,
                "output_index": index,
                "content_index": 0,
                "part": part,
            }
        )
        for piece, delay in block.pieces:
            delta = {
                "type": "response.output_text.delta",
                "item_id": item_id,
                "output_index": index,
                "content_index": 0,
                "delta": piece,
            }
            yield event(delta, delay)
        yield event(
            {
                "type": "response.output_text.done",
                "item_id": item_id,
                "output_index": index,
                "content_index": 0,
                "text": block.text,
            }
        )
        yield event(
            {
                "type": "response.content_part.done",
                "item_id": item_id,
                "output_index": index,
                "content_index": 0,
                "part": dict(part, text=block.text),
            }
        )
    else:
        yield event(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": dict(item, status="in_progress", arguments=""),
            }
        )
        for part_text in _halves(item["arguments"]):
            yield event(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item_id,
                    "output_index": index,
                    "delta": part_text,
                }
            )
        yield event(
            {
                "type": "response.function_call_arguments.done",
                "item_id": item_id,
                "output_index": index,
                "arguments": item["arguments"],
            }
        )
    yield event({"type": "response.output_item.done", "output_index": index, "item": item})


# -- Gemini ------------------------------------------------------------------------------------


def _gemini_parts(block: Block) -> list[tuple[dict[str, Any], float]]:
    if block.kind == "tool":
        return [({"functionCall": {"name": block.name, "args": block.arguments}}, 0.0)]
    if block.kind == "thinking":
        return [({"text": piece, "thought": True}, delay) for piece, delay in block.pieces]
    return [({"text": piece}, delay) for piece, delay in block.pieces]


def _gemini_usage(tokens: int) -> dict[str, int]:
    return {
        "promptTokenCount": tokens,
        "candidatesTokenCount": OUTPUT_TOKENS,
        "totalTokenCount": tokens + OUTPUT_TOKENS,
    }


def _gemini_json(blocks: list[Block], conv: Conversation, ids: Ids, tokens: int) -> dict[str, Any]:
    parts = [part for block in blocks for part, _ in _gemini_parts(block)]
    merged = _merge_text_parts(parts)
    candidate = {"content": {"role": "model", "parts": merged}, "finishReason": "STOP", "index": 0}
    return {
        "candidates": [candidate],
        "usageMetadata": _gemini_usage(tokens),
        "modelVersion": conv.model,
        "responseId": ids.next("resp"),
    }


def _merge_text_parts(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Join neighbouring text parts of the same kind (thought or not) into one part."""
    merged: list[dict[str, Any]] = []
    for part in parts:
        last = merged[-1] if merged else None
        if last is not None and "text" in part and set(part) == set(last) and set(part) <= {"text", "thought"}:
            last["text"] += part["text"]
        else:
            merged.append(dict(part))
    return merged


def _gemini_stream(blocks: list[Block], conv: Conversation, ids: Ids, tokens: int) -> Iterator[SseEvent]:
    response_id = ids.next("resp")
    for block in blocks:
        for part, delay in _gemini_parts(block):
            candidate = {"content": {"role": "model", "parts": [part]}, "index": 0}
            yield SseEvent(
                {"candidates": [candidate], "modelVersion": conv.model, "responseId": response_id}, None, delay
            )
    final = {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}
    yield SseEvent(
        {
            "candidates": [final],
            "usageMetadata": _gemini_usage(tokens),
            "modelVersion": conv.model,
            "responseId": response_id,
        }
    )


_JSON_BUILDERS = {
    Dialect.ANTHROPIC: _anthropic_json,
    Dialect.OPENAI_CHAT: _chat_json,
    Dialect.OPENAI_RESPONSES: _responses_json,
    Dialect.GEMINI: _gemini_json,
}
_STREAMERS = {
    Dialect.ANTHROPIC: _anthropic_stream,
    Dialect.OPENAI_CHAT: _chat_stream,
    Dialect.OPENAI_RESPONSES: _responses_stream,
    Dialect.GEMINI: _gemini_stream,
}
