"""What the fake model answers: ``Reply`` values and the keyword script.

In: a ``Conversation``. Out: a ``Reply`` — a list of steps (text, thinking, tool call, slow text) or
an HTTP failure. Tool steps name an *intent* (``write`` / ``run``) or an exact tool; ``resolve_tool``
turns an intent into the tool the agent actually advertised, with arguments shaped after that
tool's own JSON schema (``file_path`` vs ``filePath`` vs ``path``, ``command`` vs ``cmd``...).

Keywords count only at the start of a line of the newest user text:

``WRITE <path> <text>``  the agent's file-write tool (text defaults to "written by the fake model")
``RUN <command>``        the agent's shell tool, asking for approval where the tool has a knob for it
``SLOW [n]``             ``n`` text chunks (default 20), ``slow_delay`` seconds apart
``THINK``                a thinking block, then a text answer
``FAIL <status>``        an HTTP error with that status in the API's error shape
anything else            a deterministic echo: ``Hello from the fake model. You said: <text>``

A tool result as the newest item gets ``The tool finished: <first line of its output>``.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Union

import attrs

from ._conversation import Conversation, ToolSpec

__all__ = [
    "DEFAULT_WRITE_TEXT",
    "ECHO_PREFIX",
    "Fail",
    "Reply",
    "Slow",
    "Step",
    "Text",
    "Thinking",
    "ToolCall",
    "ToolIntent",
    "decide",
    "reply_from_json",
    "resolve_tool",
    "side_reply",
]

ECHO_PREFIX = "Hello from the fake model. You said: "
"""The fake model's default reply starts with this, followed by the user's prompt."""
TOOL_DONE_PREFIX = "The tool finished: "
"""The fake model's reply after a tool result starts with this, followed by the result."""
DEFAULT_WRITE_TEXT = "written by the fake model\n"
"""What the fake model's file-writing tool call writes when its script gives no text."""
DEFAULT_SLOW_CHUNKS = 20


class ToolIntent(enum.Enum):
    """A tool call named by what it does, resolved against the advertised tools."""

    WRITE = "write"
    RUN = "run"


@attrs.frozen
class Text:
    """Plain assistant text."""

    text: str


@attrs.frozen
class Thinking:
    """A reasoning/thinking block."""

    text: str


@attrs.frozen
class Slow:
    """``chunks`` text pieces streamed ``delay`` seconds apart (None: the server's ``slow_delay``)."""

    chunks: int = DEFAULT_SLOW_CHUNKS
    delay: float | None = None


@attrs.frozen
class ToolCall:
    """Call ``name`` with ``arguments``, or resolve ``intent`` (``path``/``content``/``command``) first."""

    name: str | None = None
    arguments: Mapping[str, Any] = attrs.field(factory=dict)
    intent: ToolIntent | None = None


@attrs.frozen
class Fail:
    """Answer with HTTP ``status`` and ``message`` in the API's error shape."""

    status: int
    message: str = "fake model failure"


Step = Union[Text, Thinking, Slow, ToolCall]


@attrs.frozen
class Reply:
    """One scripted model answer: ``steps`` in order, or a ``failure``.

    Build with ``Reply.text("hi")``, ``Reply.write(path, text)``, ``Reply.run("make")``,
    ``Reply.tool("Write", file_path=..., content=...)``, ``Reply.thinking("hmm", "answer")``,
    ``Reply.slow(12)``, ``Reply.fail(500)``; chain with ``.then(other)``.

    ``headers``: extra HTTP response headers (e.g. a provider's rate-limit headers), added with
    ``.with_headers(...)``.
    """

    steps: tuple[Step, ...] = ()
    failure: Fail | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def text(cls, text: str) -> Reply:
        """A text answer."""
        return cls((Text(text),))

    @classmethod
    def thinking(cls, thought: str, answer: str = "Done thinking.") -> Reply:
        """A thinking block, then ``answer``."""
        return cls((Thinking(thought), Text(answer)))

    @classmethod
    def tool(cls, name: str, arguments: Mapping[str, Any] | None = None, **kwargs: Any) -> Reply:
        """A call of the exact tool ``name`` with ``arguments`` (and/or keyword arguments)."""
        return cls((ToolCall(name=name, arguments={**(arguments or {}), **kwargs}),))

    @classmethod
    def write(cls, path: str, content: str = DEFAULT_WRITE_TEXT) -> Reply:
        """A call of the agent's own file-write tool."""
        return cls(
            (Text(f"Writing {path}."), ToolCall(intent=ToolIntent.WRITE, arguments={"path": path, "content": content}))
        )

    @classmethod
    def run(cls, command: str) -> Reply:
        """A call of the agent's shell tool (asking for approval where the tool can)."""
        return cls((Text("Running a command."), ToolCall(intent=ToolIntent.RUN, arguments={"command": command})))

    @classmethod
    def slow(cls, chunks: int = DEFAULT_SLOW_CHUNKS, delay: float | None = None) -> Reply:
        """``chunks`` text pieces, ``delay`` seconds apart."""
        return cls((Slow(chunks, delay),))

    @classmethod
    def fail(cls, status: int, message: str = "fake model failure") -> Reply:
        """An HTTP error answer."""
        return cls(failure=Fail(status, message))

    def then(self, other: Reply) -> Reply:
        """These steps followed by ``other``'s (with the headers of both)."""
        return Reply(self.steps + other.steps, other.failure or self.failure, self.headers + other.headers)

    def with_headers(self, headers: Mapping[str, str]) -> Reply:
        """This reply, answered with ``headers`` added to the HTTP response."""
        return attrs.evolve(self, headers=self.headers + tuple((str(k), str(v)) for k, v in headers.items()))

    @property
    def has_tool_call(self) -> bool:
        """Whether any step calls a tool."""
        return any(isinstance(step, ToolCall) for step in self.steps)


_KEYWORD = re.compile(r"^(WRITE|RUN|SLOW|THINK|FAIL)\b[ \t]*(.*)$")


def decide(conversation: Conversation) -> Reply:
    """The keyword script's answer to a main (non-side) request."""
    if conversation.tool_result_newest:
        first = conversation.tool_output.strip().splitlines()[0] if conversation.tool_output.strip() else "(no output)"
        return Reply.text(TOOL_DONE_PREFIX + first[:200])
    for raw in conversation.user_text.splitlines():
        match = _KEYWORD.match(raw.strip())
        if match:
            return _keyword(match.group(1), match.group(2).strip())
    return Reply.text(ECHO_PREFIX + " ".join(conversation.user_text.split())[:300])


def _keyword(word: str, rest: str) -> Reply:
    if word == "WRITE":
        path, _, text = rest.partition(" ")
        return Reply.write(path or "fake-output.txt", (text + "\n") if text else DEFAULT_WRITE_TEXT)
    if word == "RUN":
        return Reply.run(rest or "echo fake-run")
    if word == "SLOW":
        count = int(rest.split()[0]) if rest.split() and rest.split()[0].isdigit() else DEFAULT_SLOW_CHUNKS
        return Reply.slow(max(1, count))
    if word == "THINK":
        return Reply.thinking("Let me think about this briefly.", "Thought it through; hello.")
    status = int(rest.split()[0]) if rest.split() and rest.split()[0].isdigit() else 500
    return Reply.fail(status, f"fake model failure {status}")


def side_reply(conversation: Conversation) -> Reply:
    """The answer to a side call: JSON for structured requests, a short title or "OK" otherwise."""
    if conversation.structured_schema is not None:
        return Reply.text(json.dumps(fill_schema(conversation.structured_schema)))
    if conversation.wants_json or "next_speaker" in conversation.system_head + conversation.user_text:
        return Reply.text(json.dumps({"reasoning": "The model finished its turn.", "next_speaker": "user"}))
    if re.search(r"\btitle\b", conversation.system_head, re.IGNORECASE):
        return Reply.text("Fake session title")
    return Reply.text("OK")


def fill_schema(schema: Any, depth: int = 0) -> Any:
    """A small value that satisfies a JSON (or Gemini OpenAPI-style) schema."""
    if not isinstance(schema, dict) or depth > 8:
        return None
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        choices = schema["enum"]
        return "user" if "user" in choices else choices[0]
    for combo in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(combo), list) and schema[combo]:
            return fill_schema(schema[combo][0], depth + 1)
    kind = schema.get("type", "object")
    kind = str(kind[0] if isinstance(kind, list) and kind else kind).lower()
    if kind == "object":
        props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
        return {
            key: ("user" if key == "next_speaker" else fill_schema(value, depth + 1)) for key, value in props.items()
        }
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return 1
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "fake"


# -- resolving intents against the advertised tools -------------------------------------------

WRITE_TOOLS = ("Write", "write_file", "write", "WriteFile", "create_file", "mcp__acp__Write")
SHELL_TOOLS = ("Bash", "run_shell_command", "bash", "shell", "exec_command", "local_shell", "run_command", "terminal")
PATH_KEYS = ("file_path", "filePath", "path", "absolute_path", "filename", "target_file")
CONTENT_KEYS = ("content", "contents", "text", "file_text", "data")


def resolve_tool(call: ToolCall, tools: tuple[ToolSpec, ...]) -> tuple[str, dict[str, Any]]:
    """The tool name and arguments to emit for ``call`` given the advertised ``tools``."""
    if call.intent is None:
        return call.name or "unknown_tool", dict(call.arguments)
    if call.intent is ToolIntent.WRITE:
        return _write_call(str(call.arguments["path"]), str(call.arguments["content"]), tools)
    return _shell_call(str(call.arguments["command"]), tools)


def _find(candidates: tuple[str, ...], tools: tuple[ToolSpec, ...]) -> ToolSpec | None:
    by_name = {tool.name: tool for tool in tools}
    for name in candidates:
        if name in by_name:
            return by_name[name]
    for name in candidates:
        for tool in tools:
            if tool.name.endswith("__" + name) or tool.name.lower() == name.lower():
                return tool
    return None


def _write_call(path: str, content: str, tools: tuple[ToolSpec, ...]) -> tuple[str, dict[str, Any]]:
    tool = _find(WRITE_TOOLS, tools)
    if tool is not None:
        props = tool.properties
        path_key = next((key for key in PATH_KEYS if key in props), "file_path")
        content_key = next((key for key in CONTENT_KEYS if key in props), "content")
        return tool.name, {path_key: path, content_key: content}
    patch = (
        f"*** Begin Patch\n*** Add File: {path}\n"
        + "".join(f"+{line}\n" for line in content.splitlines())
        + "*** End Patch\n"
    )
    by_name = {tool.name: tool for tool in tools}
    if "apply_patch" in by_name:
        props = by_name["apply_patch"].properties
        return "apply_patch", {next(iter(props), "input"): patch}
    return _shell_call(f"apply_patch <<'EOF'\n{patch}EOF\n", tools, escalate=False)


def _shell_call(command: str, tools: tuple[ToolSpec, ...], escalate: bool = True) -> tuple[str, dict[str, Any]]:
    tool = _find(SHELL_TOOLS, tools)
    if tool is None:
        return "Bash", {"command": command, "description": "Run a command for the fake model"}
    props = tool.properties
    args: dict[str, Any] = {}
    if "cmd" in props:
        args["cmd"] = command
    elif props.get("command", {}).get("type") == "array":
        args["command"] = ["bash", "-lc", command]
    else:
        args["command"] = command
    if "description" in props:
        args["description"] = "Run a command for the fake model"
    if escalate and "sandbox_permissions" in props:
        args["sandbox_permissions"] = "require_escalated"
        if "justification" in props:
            args["justification"] = "The fake model asks to run a command."
    return tool.name, args


def reply_from_json(value: Any) -> Reply:
    """A ``Reply`` from JSON (for ``--script`` files): an object with one of ``text``, ``thinking``
    (+ ``answer``), ``tool`` (+ ``arguments``), ``write`` (+ ``content``), ``run``, ``slow``
    (+ ``delay``), ``fail`` (+ ``message``), or ``steps`` — a list of such objects; optionally
    ``headers`` (an object of extra HTTP response headers)."""
    if not isinstance(value, dict):
        raise ValueError(f"a scripted reply must be an object, got {value!r}")
    if "headers" in value:
        headers = value["headers"]
        if not isinstance(headers, dict):
            raise ValueError(f"a scripted reply's headers must be an object, got {headers!r}")
        return reply_from_json({key: item for key, item in value.items() if key != "headers"}).with_headers(headers)
    if isinstance(value.get("steps"), list):
        reply = Reply()
        for step in value["steps"]:
            reply = reply.then(reply_from_json(step))
        return reply
    builders: dict[str, Callable[[], Reply]] = {
        "text": lambda: Reply.text(str(value["text"])),
        "thinking": lambda: Reply.thinking(str(value["thinking"]), str(value.get("answer", "Done thinking."))),
        "tool": lambda: Reply.tool(str(value["tool"]), dict(value.get("arguments") or {})),
        "write": lambda: Reply.write(str(value["write"]), str(value.get("content", DEFAULT_WRITE_TEXT))),
        "run": lambda: Reply.run(str(value["run"])),
        "slow": lambda: Reply.slow(int(value["slow"]), value.get("delay")),
        "fail": lambda: Reply.fail(int(value["fail"]), str(value.get("message", "fake model failure"))),
    }
    for key, build in builders.items():
        if key in value:
            return build()
    raise ValueError(f"unknown scripted reply {json.dumps(value)[:200]}; expected one of {sorted(builders)} or steps")
