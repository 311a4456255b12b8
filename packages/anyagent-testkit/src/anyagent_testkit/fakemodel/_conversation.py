"""What a model request says, whatever API it came in: the ``Conversation`` the script decides on.

In: the parsed JSON body of one request and the API (``Dialect``) it was sent to. Out: a
``Conversation`` — the newest user text, whether a tool result is the newest thing, the tools the
agent advertised (name + JSON schema), the system prompt's opening, whether it streams, and a
reason when it looks like a *side call* (title, summary, router, classifier) that must never
trigger a tool.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable
from typing import Any

import attrs

__all__ = ["Conversation", "Dialect", "ToolSpec", "conversation_from"]


class Dialect(enum.Enum):
    """The model API a request used."""

    ANTHROPIC = "anthropic-messages"
    OPENAI_CHAT = "openai-chat"
    OPENAI_RESPONSES = "openai-responses"
    GEMINI = "gemini"


@attrs.frozen
class ToolSpec:
    """One tool the agent offered: its ``name`` and argument ``schema`` (JSON schema, may be empty);
    ``namespace`` names the Responses ``namespace`` tool it was offered in (codex's
    ``multi_agent_v1``), whose calls must say so."""

    name: str
    schema: dict[str, Any] = attrs.field(factory=dict)
    namespace: str | None = None

    @property
    def properties(self) -> dict[str, Any]:
        """The schema's ``properties`` (empty when it has none)."""
        props = self.schema.get("properties")
        return props if isinstance(props, dict) else {}


@attrs.frozen
class Conversation:
    """The parts of a request the fake model acts on."""

    dialect: Dialect
    model: str
    stream: bool
    user_text: str
    tool_result_newest: bool
    tool_output: str
    tools: tuple[ToolSpec, ...]
    system_head: str
    structured_schema: dict[str, Any] | None
    wants_json: bool
    max_tokens: int | None
    include_usage: bool = False

    @property
    def side_call(self) -> str | None:
        """Why this request looks like a side call (never scripted, never a tool), or None."""
        if self.wants_json or self.structured_schema is not None:
            return "structured output requested"
        match = _SIDE_SYSTEM.search(self.system_head)
        if match:
            return f"system prompt mentions {match.group(0)!r}"
        if not self.tools:
            return "no tools offered"
        if self.max_tokens is not None and self.max_tokens <= 32:
            return f"max_tokens {self.max_tokens}"
        return None


_SIDE_SYSTEM = re.compile(r"\btitle\b|summar|classif|suggestion|next speaker|routing|router", re.IGNORECASE)
SYSTEM_HEAD_CHARS = 400
"""How much of the system prompt is searched for side-call wording (main prompts are long)."""

_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_WRAPPED = re.compile(r"^\s*<([A-Za-z_][\w-]*)[^>]*>.*</\1>\s*$", re.DOTALL)


def _prompt_text(text: str) -> str:
    """``text`` without ``<system-reminder>`` spans, or "" if it is one wrapped context block."""
    cleaned = _REMINDER.sub("", text)
    if _WRAPPED.match(cleaned):
        return ""
    return cleaned.strip()


def _texts(content: Any, kinds: Iterable[str] = ("text", "input_text")) -> list[str]:
    if isinstance(content, str):
        return [content]
    wanted = set(kinds)
    out: list[str] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and part.get("type", "text") in wanted and isinstance(part.get("text"), str):
                out.append(part["text"])
    return out


class _Walker:
    """Walks user-side content in order: text makes it the newest prompt, a tool result makes the result newest."""

    def __init__(self) -> None:
        self.user_text = ""
        self.tool_newest = False
        self.tool_output = ""
        self._pending: list[str] = []

    def text(self, text: str) -> None:
        cleaned = _prompt_text(text)
        if cleaned:
            self._pending.append(cleaned)
            self.tool_newest = False

    def tool_result(self, output: str) -> None:
        self._pending = []
        self.tool_newest = True
        self.tool_output = output

    def end_message(self) -> None:
        if self._pending:
            self.user_text = "\n".join(self._pending)
        self._pending = []


def _stringify(value: Any) -> str:
    if isinstance(value, str):
        return value
    texts = _texts(value)
    if texts:
        return "\n".join(texts)
    return json.dumps(value) if value is not None else ""


def conversation_from(dialect: Dialect, body: Any, model_hint: str = "") -> Conversation:
    """Read ``body`` (the request JSON) as a ``Conversation`` of ``dialect``."""
    data = body if isinstance(body, dict) else {}
    if dialect is Dialect.ANTHROPIC:
        return _anthropic(data)
    if dialect is Dialect.OPENAI_CHAT:
        return _openai_chat(data)
    if dialect is Dialect.OPENAI_RESPONSES:
        return _responses(data)
    return _gemini(data, model_hint)


def _anthropic(data: dict[str, Any]) -> Conversation:
    walker = _Walker()
    for message in _dicts(data.get("messages")):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                walker.tool_result(_stringify(block.get("content")))
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                walker.text(block["text"])
        walker.end_message()
    tools = tuple(
        ToolSpec(str(tool["name"]), _schema(tool.get("input_schema")))
        for tool in _dicts(data.get("tools"))
        if isinstance(tool.get("name"), str)
    )
    system = data.get("system")
    system_text = "\n".join(_texts(system)) if system is not None else ""
    system_text = "\n".join(
        line for line in system_text.splitlines() if not line.startswith("x-anthropic-billing-header")
    ).strip()
    return Conversation(
        dialect=Dialect.ANTHROPIC,
        model=str(data.get("model") or "claude-fake"),
        stream=bool(data.get("stream")),
        user_text=walker.user_text,
        tool_result_newest=walker.tool_newest,
        tool_output=walker.tool_output,
        tools=tools,
        system_head=system_text[:SYSTEM_HEAD_CHARS],
        structured_schema=_anthropic_schema(data),
        wants_json=False,
        max_tokens=_int(data.get("max_tokens")),
    )


def _anthropic_schema(data: dict[str, Any]) -> dict[str, Any] | None:
    output = data.get("output_format") or (data.get("output_config") or {}).get("format")
    if isinstance(output, dict) and isinstance(output.get("schema"), dict):
        return dict(output["schema"])
    return None


def _openai_chat(data: dict[str, Any]) -> Conversation:
    walker = _Walker()
    system_parts: list[str] = []
    for message in _dicts(data.get("messages")):
        role = message.get("role")
        if role in ("system", "developer"):
            system_parts.extend(_texts(message.get("content")))
        elif role == "user":
            for text in _texts(message.get("content")):
                walker.text(text)
            walker.end_message()
        elif role in ("tool", "function"):
            walker.tool_result(_stringify(message.get("content")))
    tools = tuple(
        ToolSpec(str(fn["name"]), _schema(fn.get("parameters")))
        for tool in _dicts(data.get("tools"))
        if isinstance(fn := tool.get("function"), dict) and isinstance(fn.get("name"), str)
    )
    response_format = data.get("response_format")
    schema = None
    if isinstance(response_format, dict) and isinstance(response_format.get("json_schema"), dict):
        inner = response_format["json_schema"].get("schema")
        schema = dict(inner) if isinstance(inner, dict) else None
    options = data.get("stream_options")
    return Conversation(
        dialect=Dialect.OPENAI_CHAT,
        model=str(data.get("model") or "fake-model"),
        stream=bool(data.get("stream")),
        user_text=walker.user_text,
        tool_result_newest=walker.tool_newest,
        tool_output=walker.tool_output,
        tools=tools,
        system_head="\n".join(system_parts)[:SYSTEM_HEAD_CHARS],
        structured_schema=schema,
        wants_json=isinstance(response_format, dict) and response_format.get("type") in ("json_object", "json_schema"),
        max_tokens=_int(data.get("max_tokens", data.get("max_completion_tokens"))),
        include_usage=isinstance(options, dict) and bool(options.get("include_usage")),
    )


def _responses(data: dict[str, Any]) -> Conversation:
    walker = _Walker()
    items = data.get("input")
    system_parts: list[str] = [data["instructions"]] if isinstance(data.get("instructions"), str) else []
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for item in _dicts(items):
        kind = str(item.get("type", "message"))
        if kind == "message" and item.get("role") in ("system", "developer"):
            system_parts.extend(_texts(item.get("content")))
        elif kind == "message" and item.get("role") == "user":
            for text in _texts(item.get("content")):
                walker.text(text)
            walker.end_message()
        elif kind.endswith("_call_output"):
            walker.tool_result(_stringify(item.get("output")))
    tools = _responses_tools(_dicts(data.get("tools")))
    text_format = (data.get("text") or {}).get("format") if isinstance(data.get("text"), dict) else None
    schema = (
        dict(text_format["schema"])
        if isinstance(text_format, dict) and isinstance(text_format.get("schema"), dict)
        else None
    )
    return Conversation(
        dialect=Dialect.OPENAI_RESPONSES,
        model=str(data.get("model") or "fake-model"),
        stream=bool(data.get("stream")),
        user_text=walker.user_text,
        tool_result_newest=walker.tool_newest,
        tool_output=walker.tool_output,
        tools=tools,
        system_head="\n".join(system_parts)[:SYSTEM_HEAD_CHARS],
        structured_schema=schema,
        wants_json=False,
        max_tokens=_int(data.get("max_output_tokens")),
    )


def _responses_tools(offered: Iterable[dict[str, Any]], namespace: str | None = None) -> tuple[ToolSpec, ...]:
    """The function tools offered, those inside a ``namespace`` tool included (with its name)."""
    tools: list[ToolSpec] = []
    for tool in offered:
        name = tool.get("name")
        if not isinstance(name, str):
            continue
        if tool.get("type") in ("function", "custom"):
            tools.append(ToolSpec(name, _schema(tool.get("parameters")), namespace))
        elif tool.get("type") == "namespace" and namespace is None:
            tools.extend(_responses_tools(_dicts(tool.get("tools")), name))
    return tuple(tools)


def _gemini(data: dict[str, Any], model_hint: str) -> Conversation:
    walker = _Walker()
    for content in _dicts(data.get("contents")):
        if content.get("role", "user") not in ("user", "function"):
            continue
        for part in _dicts(content.get("parts")):
            if "functionResponse" in part:
                response = part["functionResponse"]
                walker.tool_result(_stringify(response.get("response") if isinstance(response, dict) else response))
            elif isinstance(part.get("text"), str) and not part.get("thought"):
                walker.text(part["text"])
        walker.end_message()
    tools = tuple(
        ToolSpec(str(decl["name"]), _schema(decl.get("parameters") or decl.get("parametersJsonSchema")))
        for tool in _dicts(data.get("tools"))
        for decl in _dicts(tool.get("functionDeclarations") or tool.get("function_declarations"))
        if isinstance(decl.get("name"), str)
    )
    config = data.get("generationConfig") or data.get("generation_config") or {}
    config = config if isinstance(config, dict) else {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema") or config.get("response_schema")
    system = data.get("systemInstruction") or data.get("system_instruction")
    system_text = "\n".join(_texts(system.get("parts"))) if isinstance(system, dict) else ""
    return Conversation(
        dialect=Dialect.GEMINI,
        model=model_hint or "gemini-fake",
        stream=False,
        user_text=walker.user_text,
        tool_result_newest=walker.tool_newest,
        tool_output=walker.tool_output,
        tools=tools,
        system_head=system_text[:SYSTEM_HEAD_CHARS],
        structured_schema=dict(schema) if isinstance(schema, dict) else None,
        wants_json=str(config.get("responseMimeType", "")).endswith("json"),
        max_tokens=_int(config.get("maxOutputTokens")),
    )


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _schema(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
