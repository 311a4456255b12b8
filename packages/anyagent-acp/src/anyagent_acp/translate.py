"""Pure ACP → anyagent mapping: values in, values out, no I/O.

What flows in: decoded JSON from the agent (``initialize`` results, ``session/new`` results,
``session/update`` params, permission requests, prompt responses). What flows out: anyagent
values (``ToolUpdate``, ``ConfigOption``, ``StopReason``, ``Capabilities``, …). The driver owns the
state and the wire; everything here can be tested with plain dicts.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import enum
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from anyagent import (
    Authenticated,
    AuthKind,
    BooleanKind,
    Cancelled,
    Capabilities,
    Capability,
    Completed,
    ConfigChoice,
    ConfigOption,
    ConfigValue,
    ContextUsage,
    EnvVarLogin,
    Failed,
    FileDiff,
    LoginMethod,
    McpTool,
    PermissionChoice,
    PlanEntry,
    PlanEntryStatus,
    Question,
    QuestionChoice,
    Refused,
    SelectKind,
    SlashCommand,
    StopReason,
    TerminalLogin,
    ToolInput,
    ToolKind,
    ToolKindValue,
    ToolLocation,
    ToolStatus,
    ToolUpdate,
)
from anyagent import jsonread as j
from anyagent.seam import OUTPUT_CAP

__all__ = [
    "PROTOCOL_VERSION",
    "AcpCode",
    "ToolBook",
    "auth_status",
    "capabilities",
    "commands",
    "config_from_configoptions",
    "config_from_models",
    "config_from_modes",
    "login_methods",
    "mcp_tool",
    "permission_options",
    "permission_question",
    "plan_entries",
    "stop_reason",
    "tool_kind",
    "tool_status",
    "usage",
]

PROTOCOL_VERSION = 1
"""The ACP version this client offers first in ``initialize``; an agent that refuses it with
-32022 listing version 2 is initialized again with version 2 (``V2``), and spoken to in v2."""

V2 = 2
SPOKEN = (PROTOCOL_VERSION, V2)
"""Every ACP version this client speaks."""


class AcpCode(enum.IntEnum):
    """The JSON-RPC error codes ACP adds to the standard ones (``anyagent.wire.JsonRpcCode``)."""

    AUTH_REQUIRED = -32000
    """The agent needs a login before it opens a session or runs a prompt."""
    RESOURCE_NOT_FOUND = -32002
    """``fs/read_text_file`` of a file that does not exist (what we answer; also a session to load)."""
    UNSUPPORTED_VERSION = -32022
    """``initialize`` offered a protocol version the agent does not speak."""


_TOOL_KINDS = {
    "read": ToolKind.READ,
    "edit": ToolKind.EDIT,
    "delete": ToolKind.DELETE,
    "move": ToolKind.MOVE,
    "search": ToolKind.SEARCH,
    "execute": ToolKind.EXECUTE,
    "think": ToolKind.THINK,
    "fetch": ToolKind.FETCH,
}
_TOOL_STATUSES = {
    "pending": ToolStatus.PENDING,
    "in_progress": ToolStatus.RUNNING,
    "completed": ToolStatus.COMPLETED,
    "failed": ToolStatus.FAILED,
}
_TOOL_STATUSES_V2 = {**_TOOL_STATUSES, "cancelled": ToolStatus.CANCELLED}  # v2 added ``cancelled``
_PERMISSION_KINDS = {
    "allow_once": PermissionChoice.ALLOW_ONCE,
    "allow_always": PermissionChoice.ALLOW_ALWAYS,
    "reject_once": PermissionChoice.DENY_ONCE,
    "reject_always": PermissionChoice.DENY_ALWAYS,
}
_PLAN_STATUSES = {
    "pending": PlanEntryStatus.PENDING,
    "in_progress": PlanEntryStatus.IN_PROGRESS,
    "inProgress": PlanEntryStatus.IN_PROGRESS,
    "completed": PlanEntryStatus.COMPLETED,
    "cancelled": PlanEntryStatus.COMPLETED,
}


# ---------------------------------------------------------------------------------------------
# handshake


def capabilities(init: Mapping[str, Any]) -> Capabilities:
    """What an ``initialize`` result proves: permissions, plan and slash commands always (core ACP),
    images / resume / steer when advertised, and the MCP transports (stdio is ACP's baseline)."""
    agent = j.obj(init.get("agentCapabilities"))
    prompt = j.obj(agent.get("promptCapabilities"))
    sessions = j.obj(agent.get("sessionCapabilities"))
    caps = {Capability.PERMISSIONS, Capability.PLAN, Capability.SLASH_COMMANDS}
    if j.flag(prompt.get("image")):
        caps.add(Capability.IMAGES)
    if j.flag(agent.get("loadSession")) or isinstance(sessions.get("resume"), dict):
        caps.add(Capability.RESUME)
    if j.flag(j.path(agent, "_meta", "steering", "supported")):
        caps.add(Capability.STEER)
    mcp = j.obj(agent.get("mcpCapabilities"))
    transports = ["stdio"] + [name for name in ("http", "sse") if j.flag(mcp.get(name))]
    return Capabilities.of(*caps, mcp_transports=transports)


def listed_versions(data: Any) -> tuple[int, ...]:
    """The protocol versions a -32022 error's ``data`` lists: a bare number or list, or an object
    whose values hold them (``supportedVersions``, ``supported``, ``protocolVersion``...)."""
    found: list[int] = []

    def walk(value: Any, depth: int) -> None:
        if isinstance(value, bool) or depth > 3:
            return
        if isinstance(value, int):
            found.append(value)
        elif isinstance(value, list):
            for item in value[:32]:
                walk(item, depth + 1)
        elif isinstance(value, dict):
            for key, item in list(value.items())[:32]:
                if "version" in str(key).lower() or "supported" in str(key).lower():
                    walk(item, depth + 1)

    walk(data, 0)
    return tuple(sorted(set(found)))


def _marker(value: Any) -> bool:
    """A v2 support marker: an object means supported (omitted or null: not)."""
    return isinstance(value, dict)


def init_from_v2(result: Mapping[str, Any]) -> dict[str, Any]:
    """A v2 ``initialize`` result in the v1 shape the rest of the adapter reads: ``info`` ->
    ``agentInfo``; ``capabilities.session.prompt`` / ``.mcp`` (object markers) ->
    ``promptCapabilities`` / ``mcpCapabilities`` (booleans); ``capabilities.session`` present ->
    ``sessionCapabilities`` list/resume/close (v2's baseline); ``authMethods[].methodId`` -> ``id``.
    ``loadSession`` never (v2 loads through ``session/resume`` with ``replayFrom``)."""
    caps = j.obj(result.get("capabilities"))
    session = caps.get("session")
    agent: dict[str, Any] = {}
    if isinstance(session, dict):
        prompt = j.obj(session.get("prompt"))
        mcp = j.obj(session.get("mcp"))
        agent["promptCapabilities"] = {k: _marker(prompt.get(k)) for k in ("image", "audio", "embeddedContext")}
        agent["mcpCapabilities"] = {"http": _marker(mcp.get("http"))}
        agent["sessionCapabilities"] = {"list": {}, "resume": {}, "close": {}}
    if isinstance(caps.get("_meta"), dict):
        agent["_meta"] = caps["_meta"]
    methods = [
        {**j.obj(m), "id": j.obj(m).get("methodId", j.obj(m).get("id"))} for m in j.arr(result.get("authMethods"))
    ]
    return {
        "protocolVersion": V2,
        "agentCapabilities": agent,
        "agentInfo": j.obj(result.get("info")),
        "authMethods": methods,
    }


def _content_list(content: Any) -> list[Any]:
    return [c for c in j.arr(content) if isinstance(c, dict)]


def update_from_v2(update: dict[str, Any]) -> dict[str, Any]:
    """A v2 ``session/update`` in the shape the driver handles: ``plan_update`` -> ``plan`` (its
    ``items`` entries, with its ``planId``; another plan type keeps its kind, which the driver
    reports as unknown); ``tool_call_update`` stays (v2's only tool upsert). The whole-message
    upserts (``agent_message``, ``agent_thought``, ``user_message``) stay too: the driver applies
    them with a ``MessageBook``. Anything else is returned as it is. ``state_update`` is the
    driver's (it ends the turn)."""
    kind = update.get("sessionUpdate")
    if kind == "plan_update":
        plan = j.obj(update.get("plan"))
        if plan.get("type") != "items":
            return update
        return {"sessionUpdate": "plan", "entries": plan.get("entries"), "planId": j.text(plan.get("planId"))}
    return update


def message_text(content: Any) -> str:
    """The text of a v2 whole message's ``content`` array (null or ``[]``: cleared, ""): its text
    blocks and its resource links (``block_text``), in order; blocks with no text are left out
    (``dropped_blocks`` says which)."""
    return "".join(block_text(c) or "" for c in _content_list(content))


def dropped_blocks(content: Any) -> list[dict[str, Any]]:
    """The blocks of a v2 whole message's ``content`` array that no event carries (images, audio,
    embedded resources, unknown types), in order."""
    return [c for c in _content_list(content) if block_text(c) is None]


_LINK_LABEL = re.compile(r"([\\\[\]])")


def block_text(block: Any) -> str | None:
    """The text a message's content block shows, or None for a block no event carries.

    A text block is its text (ACP message text is Markdown). A ``resource_link`` is a Markdown
    link, ``[title](uri)`` (its ``title``, else its ``name``, else the uri as the label; a uri
    holding spaces, parentheses or angle brackets in ``<...>``): ACP defines no event of its own
    for a link, and anyagent's message events carry Markdown text. Images, audio, embedded
    resources and unknown block types have no anyagent event: None (``dropped_description``)."""
    if not isinstance(block, dict):
        return None
    text = block.get("text")
    if isinstance(text, str):  # a text block (whatever else a block with text says it is)
        return text
    if block.get("type") != "resource_link":
        return None
    uri = j.text(block.get("uri"))
    if not uri:
        return None
    label = j.text(block.get("title")) or j.text(block.get("name")) or uri
    label = _LINK_LABEL.sub(r"\\\1", " ".join(label.split()))
    if any(c in uri for c in " ()<>\t\n"):
        uri = "<" + uri.replace("<", "%3C").replace(">", "%3E").replace("\n", "%0A") + ">"
    return f"[{label}]({uri})"


_BLOCK_NAMES = {"image": "an image", "audio": "audio", "resource": "an embedded resource"}


def dropped_description(block: Any) -> str:
    """What a content block ``block_text`` gives no text for is, for the diagnostic that reports
    it dropped: its kind, MIME type, size and uri where it has them (``an image (image/png, 68
    bytes, file:///w/shot.png)``)."""
    item = j.obj(block)
    kind = j.text(item.get("type"))
    resource = j.obj(item.get("resource")) if kind == "resource" else item
    details: list[str] = []
    mime = j.text(resource.get("mimeType"))
    if mime:
        details.append(mime)
    data = resource.get("data") if kind != "resource" else resource.get("blob")
    if isinstance(data, str):
        details.append(f"{len(data.rstrip('=')) * 3 // 4} bytes")
    elif isinstance(resource.get("text"), str):
        details.append(f"{len(resource['text'])} characters of text")
    uri = j.text(resource.get("uri"))
    if uri:
        details.append(uri if len(uri) <= 200 else uri[:200] + "…")
    if kind in _BLOCK_NAMES:
        name = _BLOCK_NAMES[kind]
    elif kind == "resource_link":
        name = "a resource link without a uri"
    elif kind == "text":
        name = "a text block without text"
    else:
        name = f"a content block of type {kind[:60]!r}" if kind else "a content block without a type"
    return f"{name} ({', '.join(details)})" if details else name


def _fingerprint(block: Mapping[str, Any]) -> tuple[Any, ...]:
    resource = j.obj(block.get("resource"))
    return (block.get("type"), block.get("data"), resource.get("uri") or block.get("uri"))


class PromptEcho:
    """v1: the echo of the prompt we just sent, recognised by its content.

    ACP v1 names no message ids, and some agents (hermes) send our own prompt back as a
    ``user_message_chunk`` in the turn it starts. A ``PromptEcho`` holds the prompt's blocks: a
    user chunk whose text continues the prompt's text (``offer``: the next part, or all of it so far
    again as some agents send it, or the rest spaced otherwise), or a non-text block equal to one
    of the prompt's (same type and data or uri), is the echo and is swallowed. The first user chunk
    that does not fit ends the watch for good; if the echo was only partly seen, the text it
    swallowed is handed back to be shown before that chunk, so a user message that merely starts
    like our prompt loses nothing. One echo per prompt, never more than the prompt holds.
    """

    def __init__(self, blocks: Iterable[Any]) -> None:
        items = [b for b in blocks if isinstance(b, dict)]
        self._left = "".join(j.text(b.get("text"), "") for b in items if b.get("type") == "text")
        self._others = [_fingerprint(b) for b in items if b.get("type") != "text"]
        self._held: list[str] = []
        self.watching = True

    def offer(self, block: Any) -> tuple[bool, str]:
        """Whether ``block`` (a user chunk's content) is the echo, and the swallowed text to show
        before it when it is not (the start of a user message that only looked like the echo)."""
        if not self.watching:
            return False, ""
        item = j.obj(block)
        text = item.get("text")
        if isinstance(text, str):
            held = "".join(self._held)
            whole = held + self._left
            if self._left.startswith(text):  # the next part
                self._left = self._left[len(text) :]
                self._held.append(text)
                return True, ""
            if len(text) > len(held) and whole.startswith(text):  # all of it so far, again (cumulative)
                self._left, self._held[:] = whole[len(text) :], [text]
                return True, ""
            if text.strip() and text.strip() == self._left.strip():  # the rest, spaced otherwise
                self._left = ""
                self._held.append(text)
                return True, ""
        elif (print_ := _fingerprint(item)) in self._others:
            self._others.remove(print_)
            return True, ""
        self.watching = False
        held = "".join(self._held) if self._left.strip() else ""  # a partial echo was no echo
        self._held.clear()
        return False, held


REPLACES = "acp/replaces"
"""The extension on the first event of a message that replaces another (its value: the replaced
message's id). See ``MessageBook``."""
MESSAGES_KEPT = 64
"""How many v2 messages a ``MessageBook`` remembers (the oldest is forgotten first)."""


@attrs.define
class _Said:
    emitted: str  # the message id its text streams under in anyagent's events
    parts: list[str]  # the text those events carry, as it came
    ours: bool = False  # our own prompt acknowledged (never shown)
    rewrites: int = 0
    dropped: int = 0  # its content blocks no event carries, already reported


@attrs.frozen
class MessageEdit:
    """What a whole-message upsert changes in the events: ``text`` appended to ``message_id``;
    when ``replaces`` is set, ``message_id`` is a new message that replaces that one (its first
    event carries ``REPLACES``), ``text`` its whole text ("" for a cleared message)."""

    message_id: str
    text: str
    replaces: str | None = None


class MessageBook:
    """v2 messages by ``messageId``, for the whole-message upserts.

    anyagent's message events only append (``TextDelta`` … ``MessageEnded``), while a v2 upsert
    replaces the whole message. The rule: an upsert whose text extends what the events carry for
    that message streams only the new suffix, under the same message id; one that says the same
    changes nothing; one that rewrites it (the text shown is no longer its start) or clears it
    (``content`` null or ``[]``) ends that message and starts a new one, ``<messageId>~<n>``, with
    the whole new text, its first event (the first delta, or for a cleared message a
    ``MessageEnded`` with no delta before it) carrying ``extensions[REPLACES]`` = the id it
    replaces. A UI that reads the extension swaps the old message for the new; one that does not
    shows both, so no text is lost and none is doubled. Chunks append to the message's current id.
    ``content`` omitted changes nothing (the upsert updates other fields only).
    """

    def __init__(self) -> None:
        self._said: dict[tuple[str, str], _Said] = {}

    def _entry(self, kind: str, wire_id: str) -> _Said:
        said = self._said.get((kind, wire_id))
        if said is None:
            said = self._said[(kind, wire_id)] = _Said(wire_id, [])
            if len(self._said) > MESSAGES_KEPT:
                del self._said[next(iter(self._said))]
        return said

    def known(self, kind: str, wire_id: str) -> bool:
        return (kind, wire_id) in self._said

    def mark_ours(self, kind: str, wire_id: str) -> None:
        """``wire_id`` acknowledges our own prompt: its chunks and upserts are never shown."""
        self._entry(kind, wire_id).ours = True

    def ours(self, kind: str, wire_id: str) -> bool:
        said = self._said.get((kind, wire_id))
        return said is not None and said.ours

    def dropped(self, kind: str, wire_id: str, count: int) -> int:
        """How many of the ``count`` blocks no event carries in an upsert of ``wire_id`` were not
        reported yet (the last ones: an upsert repeats the whole message)."""
        said = self._entry(kind, wire_id)
        new = max(0, count - said.dropped)
        said.dropped = max(count, said.dropped)
        return new

    def chunk(self, kind: str, wire_id: str) -> tuple[str, list[str]]:
        """Where a chunk of ``wire_id`` goes: its current message id and the text list it
        appends to (the caller appends)."""
        said = self._entry(kind, wire_id)
        return said.emitted, said.parts

    def upsert(self, kind: str, wire_id: str, text: str) -> MessageEdit | None:
        """Apply a whole-message upsert with ``text``; None when the events already say it."""
        said = self._entry(kind, wire_id)
        shown = "".join(said.parts)
        if len(said.parts) > 1:
            said.parts[:] = [shown]
        if text == shown:
            return None
        if text.startswith(shown):
            said.parts.append(text[len(shown) :])
            return MessageEdit(said.emitted, text[len(shown) :])
        replaced = said.emitted
        said.rewrites += 1
        said.emitted = f"{wire_id}~{said.rewrites}"
        said.parts[:] = [text] if text else []
        return MessageEdit(said.emitted, text, replaced)


DISPLAY_LIMIT = 1024 * 1024
"""Bytes of one v2 display terminal's output kept (and streamed); past it the rest is dropped."""


class DisplayTerminals:
    """v2's agent-owned display terminals: ``terminal_update`` (a full ``output`` snapshot replaces
    what is kept) and ``terminal_output_chunk`` (base64 bytes appended), each terminal's bytes
    kept up to ``DISPLAY_LIMIT`` and decoded as UTF-8 across chunk boundaries."""

    def __init__(self) -> None:
        self._kept: dict[str, bytearray] = {}
        self._decoders: dict[str, codecs.BufferedIncrementalDecoder] = {}

    def update(self, fields: Mapping[str, Any]) -> str | None:
        """Apply a ``terminal_update``; its terminal id (None without one)."""
        terminal_id = j.text(fields.get("terminalId"))
        if not terminal_id:
            return None
        output = fields.get("output")
        if isinstance(output, dict) or (output is None and "output" in fields):  # null clears
            self._kept[terminal_id] = bytearray(_b64(j.obj(output).get("data"))[:DISPLAY_LIMIT])
            self._decoders[terminal_id] = codecs.getincrementaldecoder("utf-8")("replace")
        self._kept.setdefault(terminal_id, bytearray())
        return terminal_id

    def chunk(self, fields: Mapping[str, Any]) -> tuple[str, str] | None:
        """Apply a ``terminal_output_chunk``: ``(terminal id, the text it adds)``, or None."""
        terminal_id = j.text(fields.get("terminalId"))
        if not terminal_id:
            return None
        kept = self._kept.setdefault(terminal_id, bytearray())
        data = _b64(fields.get("data"))[: max(0, DISPLAY_LIMIT - len(kept))]
        kept += data
        decoder = self._decoders.setdefault(terminal_id, codecs.getincrementaldecoder("utf-8")("replace"))
        return terminal_id, decoder.decode(data)

    def text(self, terminal_id: str) -> str | None:
        """What ``terminal_id`` holds, as text (None for a terminal never seen)."""
        kept = self._kept.get(terminal_id)
        return kept.decode("utf-8", "replace") if kept is not None else None

    def clear(self) -> None:
        """Forget every terminal."""
        self._kept.clear()
        self._decoders.clear()


def _b64(value: Any) -> bytes:
    if not isinstance(value, str):
        return b""
    try:
        return base64.b64decode(value, validate=False)
    except (binascii.Error, ValueError):
        return b""


def permission_subject_v2(
    params: Mapping[str, Any], known: Callable[[str], bool] = lambda _tool_id: False
) -> dict[str, Any]:
    """The tool a v2 ``session/request_permission`` is about: ``subject.toolCall`` (a tool-call
    subject), or a tool made from a ``command`` subject (its ``toolCallId``, else one named by the
    request, embedding the subject's ``terminalId``); a subject naming a tool already ``known``
    changes nothing of it. The request's ``title`` is the prompt's copy, not the tool's (v2): it
    titles only a tool that has no title and is not ``known`` yet, so a UI still has a name to
    show."""
    subject = j.obj(params.get("subject"))
    title = j.text(params.get("title"))
    if subject.get("type") == "tool_call":
        tool = dict(j.obj(subject.get("toolCall")))
    elif subject.get("type") == "command":
        command = j.text(subject.get("command"), "")
        tool_id = j.text(subject.get("toolCallId")) or f"permission-{abs(hash((command, title))) % 10**8}"
        if known(tool_id):  # it names a tool already shown: the subject changes none of it
            return {"toolCallId": tool_id}
        tool = {"toolCallId": tool_id, "kind": "execute", "rawInput": {"command": command, "cwd": subject.get("cwd")}}
        terminal_id = j.text(subject.get("terminalId"))
        if terminal_id:  # the display terminal the command's output goes to streams into the tool
            tool["content"] = [{"type": "terminal", "terminalId": terminal_id}]
    else:
        tool = {"toolCallId": f"permission-{abs(hash(title)) % 10**8}"}
    if title and not tool.get("title") and not known(j.text(tool.get("toolCallId"), "")):
        tool["title"] = title
    return tool


def permission_detail_v2(params: Mapping[str, Any]) -> str | None:
    """What a v2 permission prompt says (``PermissionRequest.detail``): its required ``title``,
    then its optional ``description`` on the next line."""
    said = [t for t in (j.text(params.get("title")), j.text(params.get("description"))) if t]
    return "\n".join(said) or None


def login_methods(init: Mapping[str, Any], executable: Path) -> tuple[LoginMethod, ...]:
    """Runnable login methods from ``authMethods``: terminal methods (typed, or qwen's ``_meta``
    form) run the agent with their args; env-var methods name their variables."""
    methods: list[LoginMethod] = []
    for raw in j.arr(init.get("authMethods")):
        method = j.obj(raw)
        name = j.text(method.get("name")) or j.text(method.get("id")) or "log in"
        kind = j.text(method.get("type"))
        meta = j.obj(method.get("_meta"))
        if kind == "env_var":
            for var in j.arr(method.get("vars")):
                var_name = j.text(j.obj(var).get("name"))
                if var_name:
                    methods.append(EnvVarLogin(var_name, name))
            continue
        if kind == "terminal" or j.text(meta.get("type")) == "terminal":
            source = method if kind == "terminal" else meta
            args = [a for a in j.arr(source.get("args")) if isinstance(a, str)]
            env = {k: v for k, v in j.obj(method.get("env")).items() if isinstance(v, str)}
            methods.append(TerminalLogin((str(executable), *args), name, env))
    return tuple(methods)


_SIGNED_OUT = frozenset({"none", "unauthenticated", "logged_out", "loggedout", "signed_out", "signedout"})
_AUTH_KINDS = {
    "chatgpt": AuthKind.SUBSCRIPTION,
    "chat-gpt": AuthKind.SUBSCRIPTION,
    "chatgptauthtokens": AuthKind.SUBSCRIPTION,
    "subscription": AuthKind.SUBSCRIPTION,
    "apikey": AuthKind.API_KEY,
    "api-key": AuthKind.API_KEY,
    "api_key": AuthKind.API_KEY,
}


def auth_status(raw: Any) -> Authenticated | None:
    """An ``authStatus`` object (codex-acp 2.x: in ``initialize``'s ``agentCapabilities._meta`` and
    its ``_auth/status_update`` notification, ``{kind, label, detail}``) as proof of a login: a
    ChatGPT login is a subscription, an API key a key, any other kind (``gateway``: a custom
    provider) ``OTHER``. None when it proves nothing (empty, or a signed-out kind)."""
    kind = j.text(j.obj(raw).get("kind"))
    if not kind or kind.lower() in _SIGNED_OUT:
        return None
    return Authenticated(_AUTH_KINDS.get(kind.lower(), AuthKind.OTHER))


# ---------------------------------------------------------------------------------------------
# configuration


def _choices(options: Iterable[Any]) -> list[ConfigChoice]:
    """Select options (flat, or grouped as ``{group, name, options}``) as flat choices."""
    choices: list[ConfigChoice] = []
    for raw in options:
        option = j.obj(raw)
        if "options" in option and "value" not in option:
            choices.extend(_choices(j.arr(option.get("options"))))
            continue
        value = j.text(option.get("value"))
        if value is not None:
            label = j.text(option.get("name")) or value
            choices.append(ConfigChoice(value, label, j.text(option.get("description"))))
    return choices


def config_from_modes(modes: Any) -> ConfigOption | None:
    """The session's ``modes`` state as the ``mode`` select option (None when absent)."""
    state = j.obj(modes)
    available = j.arr(state.get("availableModes"))
    if not available:
        return None
    choices = []
    for raw in available:
        mode = j.obj(raw)
        mode_id = j.text(mode.get("id"))
        if mode_id is not None:
            choices.append(ConfigChoice(mode_id, j.text(mode.get("name")) or mode_id, j.text(mode.get("description"))))
    current = j.text(state.get("currentModeId"))
    return ConfigOption("mode", "Mode", SelectKind(tuple(choices)), current, live=True, category="mode")


def config_from_configoptions(options: Any) -> list[ConfigOption]:
    """``configOptions`` (select or boolean) as ``ConfigOption``s; other kinds are skipped."""
    result: list[ConfigOption] = []
    for raw in j.arr(options):
        option = j.obj(raw)
        option_id = j.text(option.get("id") or option.get("configId"))  # v2 renamed id to configId
        if not option_id:
            continue
        name = j.text(option.get("name")) or option_id
        category = j.text(option.get("category"))
        current = option.get("currentValue")
        if option.get("type") == "boolean":
            value = current if isinstance(current, bool) else None
            result.append(ConfigOption(option_id, name, BooleanKind(), value, live=True, category=category))
        elif option.get("type") == "select" or "options" in option:
            choices = _choices(j.arr(option.get("options")))
            text_value = j.text(current)
            result.append(ConfigOption(option_id, name, SelectKind(tuple(choices)), text_value, True, category))
    return result


def config_from_models(models: Any) -> tuple[ConfigOption | None, ConfigOption | None]:
    """The first-class ``models`` state as the ``model`` option, plus ``effort`` when the current
    model lists ``_meta.reasoningEfforts`` (grok). Either is None when absent."""
    state = j.obj(models)
    available = [j.obj(m) for m in j.arr(state.get("availableModels"))]
    choices = []
    for model in available:
        model_id = j.text(model.get("modelId"))
        if model_id is not None:
            choices.append(
                ConfigChoice(model_id, j.text(model.get("name")) or model_id, j.text(model.get("description")))
            )
    if not choices:
        return None, None
    current_id = j.text(state.get("currentModelId"))
    model_option = ConfigOption("model", "Model", SelectKind(tuple(choices)), current_id, live=True, category="model")
    current = next((m for m in available if m.get("modelId") == current_id), {})
    efforts = []
    for raw in j.arr(j.path(current, "_meta", "reasoningEfforts")):
        effort = j.obj(raw)
        value = j.text(effort.get("value")) or j.text(effort.get("id"))
        if value is not None:
            efforts.append(ConfigChoice(value, j.text(effort.get("label")) or value, j.text(effort.get("description"))))
    if not efforts:
        return model_option, None
    effort_now = j.text(j.path(current, "_meta", "reasoningEffort"))
    effort_option = ConfigOption(
        "effort", "Effort", SelectKind(tuple(efforts)), effort_now, live=True, category="thought_level"
    )
    return model_option, effort_option


def with_current(option: ConfigOption, value: ConfigValue) -> ConfigOption:
    """``option`` with ``value`` selected."""
    return attrs.evolve(option, current=value)


# ---------------------------------------------------------------------------------------------
# session updates


def commands(available: Any) -> tuple[SlashCommand, ...]:
    """``availableCommands`` (or kiro's ``commands``) as slash commands."""
    result = []
    for raw in j.arr(available):
        command = j.obj(raw)
        name = j.text(command.get("name"))
        if not name:
            continue
        hint = j.text(j.path(command, "input", "hint")) or j.text(j.path(command, "meta", "hint"))
        result.append(SlashCommand(name, j.text(command.get("description")) or "", hint or None))
    return tuple(result)


def plan_entries(entries: Any) -> tuple[PlanEntry, ...]:
    """ACP plan entries (or cursor todos: ``content``/``title``) as ``PlanEntry``s."""
    result = []
    for raw in j.arr(entries):
        entry = j.obj(raw)
        content = j.text(entry.get("content")) or j.text(entry.get("title"))
        if not content:
            continue
        status = _PLAN_STATUSES.get(j.text(entry.get("status")) or "", PlanEntryStatus.PENDING)
        result.append(PlanEntry(content, status, j.text(entry.get("priority"))))
    return tuple(result)


def usage(update: Mapping[str, Any]) -> ContextUsage | None:
    """A ``usage_update`` as ``ContextUsage``; cost only when it is in USD."""
    used = j.integer(update.get("used"))
    if used is None:
        return None
    cost = j.obj(update.get("cost"))
    amount = j.number(cost.get("amount")) if j.text(cost.get("currency")) in ("USD", "usd") else None
    return ContextUsage(used, j.integer(update.get("size")), amount)


def stop_reason(result: Any) -> StopReason:
    """A ``session/prompt`` result's ``stopReason`` as a ``StopReason``."""
    reason = j.text(j.obj(result).get("stopReason")) or "end_turn"
    if reason == "end_turn":
        return Completed()
    if reason == "cancelled":
        return Cancelled()
    if reason == "refusal":
        return Refused()
    if reason == "max_tokens":
        return Failed("the agent stopped: it reached its token limit (max_tokens)")
    if reason == "max_turn_requests":
        return Failed("the agent stopped: it reached its request limit for one turn (max_turn_requests)")
    return Failed(f"the agent stopped: {reason}")


def permission_options(options: Any) -> tuple[tuple[PermissionChoice, ...], dict[PermissionChoice, str]]:
    """A permission request's options: the choices offered (in the agent's order) and the agent's
    ``optionId`` for each (the first option of a kind wins)."""
    ids: dict[PermissionChoice, str] = {}
    for raw in j.arr(options):
        option = j.obj(raw)
        choice = _PERMISSION_KINDS.get(j.text(option.get("kind")) or "")
        option_id = option.get("optionId")
        if choice is not None and isinstance(option_id, str) and choice not in ids:
            ids[choice] = option_id
    return tuple(ids), ids


def permission_question(options: Any, tool: Mapping[str, Any]) -> Question | None:
    """A permission request that is really a choice, as one question; None when it is a permission.

    It is a choice when two or more options share a one-time kind (two ``allow_once`` options named
    "Red" and "Blue", or two ``reject_once``): one-time options of one kind can only differ by what
    they answer, so their names are the answers. Options sharing an ``*_always`` kind are scopes of
    a standing rule (gemini and qwen offer ``proceed_always_project`` and ``proceed_always_user``)
    and keep the request a permission. Every option with an ``optionId`` becomes a choice (id: the
    ``optionId``; label: its name), in the agent's order; the question's id is the tool's
    ``toolCallId`` and its text the tool's title.
    """
    kinds: list[str] = []
    choices: list[QuestionChoice] = []
    for raw in j.arr(options):
        option = j.obj(raw)
        option_id = j.text(option.get("optionId"))
        if not option_id:
            continue
        kinds.append(j.text(option.get("kind")) or "")
        choices.append(QuestionChoice(option_id, j.text(option.get("name")) or option_id))
    once = [kind for kind in kinds if kind in ("allow_once", "reject_once")]
    if len(set(once)) == len(once):
        return None
    qid = j.text(tool.get("toolCallId")) or "choice"
    text = j.text(tool.get("title")) or "Choose one"
    return Question(qid, text, None, tuple(choices), multi_select=False, allows_free_text=False)


def question_from_cursor(raw: Any) -> Question | None:
    """One cursor ``ask_question`` question (``{id, prompt, options: [{id, label}], allowMultiple}``)."""
    q = j.obj(raw)
    qid = j.text(q.get("id"))
    prompt = j.text(q.get("prompt")) or j.text(q.get("question"))
    if not qid or prompt is None:
        return None
    choices = []
    for option in map(j.obj, j.arr(q.get("options"))):
        cid, label = j.text(option.get("id")), j.text(option.get("label"))
        if cid and label is not None:
            choices.append(QuestionChoice(cid, label))
    return Question(qid, prompt, None, tuple(choices), j.flag(q.get("allowMultiple")), allows_free_text=False)


def question_from_grok(raw: Any, index: int) -> Question | None:
    """One grok ``ask_user_question`` question; ids fall back to the text (grok marks them optional)."""
    q = j.obj(raw)
    text = j.text(q.get("question"))
    if text is None:
        return None
    choices = []
    for option in map(j.obj, j.arr(q.get("options"))):
        label = j.text(option.get("label"))
        if label is not None:
            choices.append(QuestionChoice(j.text(option.get("id")) or label, label, j.text(option.get("description"))))
    qid = j.text(q.get("id")) or f"q{index + 1}"
    return Question(qid, text, j.text(q.get("header")), tuple(choices), j.flag(q.get("multiSelect")), False)


# ---------------------------------------------------------------------------------------------
# tools


def tool_kind(value: Any) -> ToolKindValue:
    """An ACP tool kind as ours (``switch_mode`` and unknown kinds are ``OTHER``)."""
    return _TOOL_KINDS.get(j.text(value) or "", ToolKind.OTHER)


def tool_status(value: Any, default: ToolStatus, *, v2: bool = False) -> ToolStatus:
    """An ACP tool status as ours; absent or unknown keeps ``default``. v2 adds ``cancelled``."""
    return (_TOOL_STATUSES_V2 if v2 else _TOOL_STATUSES).get(j.text(value) or "", default)


def _command_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    parts = j.arr(value)
    if parts and all(isinstance(p, str) for p in parts):
        return " ".join(parts)
    return None


def _first_text(raw: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = j.text(raw.get(key))
        if value:
            return value
    return None


def tool_input(raw_input: Any) -> ToolInput:
    """An agent's ``rawInput`` as the typed parts a UI shows, plus every argument."""
    raw = j.obj(raw_input)
    if not raw:
        return ToolInput()
    return ToolInput(
        command=_command_text(raw.get("command")) or _command_text(raw.get("cmd")),
        path=_first_text(raw, "path", "file_path", "filePath", "abs_path", "absolute_path"),
        pattern=_first_text(raw, "pattern", "query", "glob"),
        url=_first_text(raw, "url"),
        description=_first_text(raw, "description", "justification"),
        arguments=raw,
    )


_MCP_NAME_KEYS = (("claudeCode", "toolName"), ("toolName",), ("tool_name",), ("name",))
"""Where agents put a tool's own name in its ``_meta`` (claude-agent-acp: ``claudeCode.toolName``;
qwen: ``toolName``)."""
_MCP_PAIR_KEYS = (("server", "tool"), ("server_name", "tool_name"), ("serverName", "toolName"), ("mcp_server", "tool"))
"""``rawInput`` (or ``_meta``) key pairs naming an MCP call's server and tool (codex: ``{server, tool, arguments}``)."""


def _split_mcp_name(name: str, server: str) -> str | None:
    """The tool part of ``name`` when it names a tool of ``server`` in one of the spellings agents
    use: ``mcp__S__T`` (Claude Code, codex), ``S__T`` (gemini's qualified names), ``mcp_S_T``
    (hermes), ``S/T``, ``S.T``, ``S:T`` and codex's title ``Tool: S/T``, or gemini's display name
    ``T (S MCP Server)``."""
    name = name.strip()
    if name.startswith("Tool: "):
        name = name[len("Tool: ") :]
    for prefix in (f"mcp__{server}__", f"{server}__", f"mcp_{server}_", f"{server}/", f"{server}.", f"{server}:"):
        if name.startswith(prefix) and len(name) > len(prefix):
            tool = name[len(prefix) :]
            return tool if not any(c.isspace() for c in tool) else None
    suffix = f" ({server} MCP Server)"
    if name.endswith(suffix) and len(name) > len(suffix):
        return name[: -len(suffix)]
    return None


def mcp_tool(fields: Mapping[str, Any], servers: Iterable[str]) -> McpTool | None:
    """``McpTool(server, tool)`` when a tool call names one of ``servers`` (the session's own MCP
    servers), else None.

    ACP has no field for a tool's name, so each agent says it its own way; this reads, in order:
    a server/tool pair in ``rawInput`` or ``_meta`` (codex), the tool name in ``_meta``
    (claude-agent-acp's ``claudeCode.toolName`` ``mcp__S__T``, qwen's ``toolName``), then the title
    (see ``_split_mcp_name`` for the spellings). Only the session's own servers count: Claude's
    bridge routes its built-in tools through an internal server (``mcp__acp__Write``), which stays a
    built-in tool. A longer server name is tried before a shorter one it starts with.
    """
    names = sorted({s for s in servers if s}, key=len, reverse=True)
    if not names:
        return None
    meta = j.obj(fields.get("_meta"))
    for source in (j.obj(fields.get("rawInput")), meta):
        for server_key, tool_key in _MCP_PAIR_KEYS:
            server, tool = j.text(source.get(server_key)), j.text(source.get(tool_key))
            if server in names and tool:
                return McpTool(server, tool)
    candidates = [j.text(j.path(meta, *keys)) for keys in _MCP_NAME_KEYS]
    candidates.append(j.text(fields.get("title")))
    for candidate in candidates:
        if not candidate:
            continue
        for server in names:
            tool = _split_mcp_name(candidate, server)
            if tool:
                return McpTool(server, tool)
    return None


def _cap(text: str) -> str:
    return text if len(text) <= OUTPUT_CAP else text[-OUTPUT_CAP:]


@attrs.define
class _Tool:
    raw: dict[str, Any]
    update: ToolUpdate
    terminals: list[str] = attrs.Factory(list)


class ToolBook:
    """Cumulative tool snapshots, merged from ``tool_call``, ``tool_call_update`` and permission
    requests wherever a tool first appears (create-or-update by ``toolCallId``).

    ``terminal_text`` reads the output of a client terminal a tool embeds (``{type: terminal}``);
    ``mcp_servers`` are the session's own MCP servers, whose calls get the kind ``McpTool``
    (``mcp_tool``).
    """

    def __init__(
        self,
        terminal_text: Callable[[str], str | None] | None = None,
        mcp_servers: Iterable[str] = (),
        *,
        v2: bool = False,
    ) -> None:
        self._tools: dict[str, _Tool] = {}
        self._terminal_text = terminal_text
        self._mcp_servers = tuple(mcp_servers)
        self._v2 = v2

    def upsert(self, fields: Mapping[str, Any]) -> ToolUpdate | None:
        """Merge one partial tool description; returns the whole new snapshot (None without an id)."""
        tool_id = j.text(fields.get("toolCallId"))
        if not tool_id:
            return None
        entry = self._tools.get(tool_id)
        if entry is None:
            entry = _Tool({}, ToolUpdate(id=tool_id))
            self._tools[tool_id] = entry
        for key, value in fields.items():
            if key != "sessionUpdate" and value is not None:
                entry.raw[key] = value
            elif self._v2 and key != "sessionUpdate":  # v2 patches: null clears the field
                entry.raw.pop(key, None)
        entry.update = self._snapshot(entry, fields)
        return entry.update

    def append_content(self, fields: Mapping[str, Any]) -> ToolUpdate | None:
        """v2's ``tool_call_content_chunk``: one ``content`` item appended to what the tool holds
        (a later ``content`` in an upsert replaces the whole list); None without an id."""
        tool_id = j.text(fields.get("toolCallId"))
        if not tool_id:
            return None
        entry = self._tools.get(tool_id)
        held = j.arr(entry.raw.get("content")) if entry is not None else []
        item = fields.get("content")
        return self.upsert({"toolCallId": tool_id, "content": [*held, item] if isinstance(item, dict) else held})

    def get(self, tool_id: str) -> ToolUpdate | None:
        """The current snapshot of ``tool_id``."""
        entry = self._tools.get(tool_id)
        return entry.update if entry is not None else None

    def embedding(self, terminal_id: str) -> str | None:
        """The first tool that embeds ``terminal_id`` (None when none does)."""
        return next((tool_id for tool_id, entry in self._tools.items() if terminal_id in entry.terminals), None)

    def refresh(self, tool_id: str) -> ToolUpdate | None:
        """``tool_id``'s snapshot read again (its embedded terminals' output changed)."""
        return self.upsert({"toolCallId": tool_id}) if tool_id in self._tools else None

    def terminals(self, tool_id: str) -> tuple[str, ...]:
        """The client terminals ``tool_id`` embeds."""
        entry = self._tools.get(tool_id)
        return tuple(entry.terminals) if entry is not None else ()

    def clear(self) -> None:
        """Forget every tool (between turns; the engine ends those still active)."""
        self._tools.clear()

    def _snapshot(self, entry: _Tool, fields: Mapping[str, Any]) -> ToolUpdate:
        current = entry.update
        raw = entry.raw
        changes: dict[str, Any] = {"raw": dict(raw)}
        if "kind" in fields:
            changes["kind"] = tool_kind(fields.get("kind"))
        mcp = mcp_tool(raw, self._mcp_servers) if self._mcp_servers else None
        if mcp is not None:
            changes["kind"] = mcp
        if "status" in fields:
            changes["status"] = tool_status(fields.get("status"), current.status, v2=self._v2)
        if j.text(fields.get("title")) is not None:
            changes["title"] = fields["title"]
        if "rawInput" in fields and isinstance(fields.get("rawInput"), dict):
            changes["input"] = tool_input(fields["rawInput"])
        if isinstance(fields.get("locations"), list):
            changes["locations"] = tuple(
                ToolLocation(str(loc["path"]), j.integer(loc.get("line")))
                for loc in map(j.obj, fields["locations"])
                if isinstance(loc.get("path"), str)
            )
        if self._v2:
            self._cleared(fields, changes)
        output = current.output
        if self._v2 and "content" in fields and not isinstance(fields.get("content"), list):
            changes["diffs"], entry.terminals, output = (), [], None  # null (or not a list): cleared
        elif self._v2 and isinstance(fields.get("content"), list):
            # v2: a concrete content array replaces everything the tool held, its text too
            diffs, text, terminals = _content(fields["content"])
            changes["diffs"] = tuple(diffs)
            touched = [p for i in fields["content"] if _is_structured_diff(i) for p in diff_paths(i)]
            if touched and not isinstance(raw.get("locations"), list):  # v2 diffs name their files
                changes["locations"] = tuple(ToolLocation(p) for p in touched)
            entry.terminals, output = terminals, text
        elif isinstance(fields.get("content"), list):
            diffs, text, terminals = _content(fields["content"])
            changes["diffs"] = tuple(diffs)
            entry.terminals = terminals or entry.terminals
            output = text if text is not None else output
        if output is None:
            output = _raw_output_text(raw.get("rawOutput"))
        changes["output"] = self._output(entry, output)
        return attrs.evolve(current, **changes)

    @staticmethod
    def _cleared(fields: Mapping[str, Any], changes: dict[str, Any]) -> None:
        """v2's three-state patches: a field sent as null is cleared (omitted: unchanged)."""
        for key, field, empty in (
            ("title", "title", ""),
            ("rawInput", "input", ToolInput()),
            ("locations", "locations", ()),
            ("kind", "kind", ToolKind.OTHER),
        ):
            if key in fields and fields[key] is None:
                changes[field] = empty

    def _output(self, entry: _Tool, output: str | None) -> str | None:
        if self._terminal_text is not None:
            for terminal_id in entry.terminals:
                text = self._terminal_text(terminal_id)
                if text:
                    output = text
        return _cap(output) if output is not None else None


def _is_structured_diff(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "diff" and isinstance(item.get("changes"), list)


def _content(items: list[Any]) -> tuple[list[FileDiff], str | None, list[str]]:
    """A tool's ``content`` list: its diffs, its text (joined), the terminals it embeds."""
    diffs: list[FileDiff] = []
    texts: list[str] = []
    terminals: list[str] = []
    for raw in items:
        item = j.obj(raw)
        kind = item.get("type")
        if _is_structured_diff(item):
            diffs.extend(structured_diffs(item))
        elif kind == "diff":
            path, new_text = j.text(item.get("path")), j.text(item.get("newText"))
            if path is not None:
                diffs.append(FileDiff(path, new_text or "", j.text(item.get("oldText"))))
        elif kind == "terminal":
            terminal_id = j.text(item.get("terminalId"))
            if terminal_id:
                terminals.append(terminal_id)
        elif kind == "content":
            block = j.obj(item.get("content"))
            block_text = j.text(block.get("text"))
            if block_text is not None:
                texts.append(block_text)
    return diffs, ("\n".join(texts) if texts else None), terminals


def _raw_output_text(raw_output: Any) -> str | None:
    if isinstance(raw_output, str):
        return raw_output
    data = j.obj(raw_output)
    for key in ("output", "stdout", "content", "formatted_output"):
        value = j.text(data.get(key))
        if value is not None:
            return value
    return None


# ---------------------------------------------------------------------------------------------
# v2 structured diffs


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def diff_paths(item: Mapping[str, Any]) -> list[str]:
    """The files a v2 ``diff`` content item touches, in its ``changes`` order: each change's
    ``path``, and a ``move``'s or ``copy``'s ``oldPath`` before it."""
    paths: list[str] = []
    for change in map(j.obj, j.arr(item.get("changes"))):
        for key in ("oldPath", "path"):
            path = j.text(change.get(key))
            if path and path not in paths:
                paths.append(path)
    return paths


def structured_diffs(item: Mapping[str, Any]) -> list[FileDiff]:
    """A v2 ``diff`` content item (``changes`` + an optional ``git_patch``) as ``FileDiff``s.

    v2 has no whole old/new texts, so what a ``FileDiff`` can say exactly is read from the patch:
    an ``add`` is the created file (``old_text`` None, ``new_text`` every added line), a ``delete``
    the removed file (``new_text`` empty, ``old_text`` every removed line), and each hunk of a
    ``modify`` (or of a ``move``/``copy`` that edits) one ``FileDiff`` whose texts are the hunk's
    old and new sides (context included), as claude's ``Edit`` fragments are. A change the patch
    does not cover (no patch, a binary change, a pure move, a directory or symlink) gives no
    ``FileDiff``; its path still lands in the tool's ``locations`` (``diff_paths``)."""
    patch = j.obj(item.get("patch"))
    text = j.text(patch.get("text")) if j.text(patch.get("format"), "git_patch") == "git_patch" else None
    sections = _patch_sections(text or "")
    diffs: list[FileDiff] = []
    for change in map(j.obj, j.arr(item.get("changes"))):
        path = j.text(change.get("path"))
        if not path:
            continue
        operation = j.text(change.get("operation"))
        hunks = sections.get(path)
        if not hunks and operation == "move":  # a patch may name a moved file by its old path
            hunks = sections.get(j.text(change.get("oldPath")) or "")
        if not hunks:
            continue
        if operation == "add":
            diffs.append(FileDiff(path, "".join(new for _old, new in hunks), None))
        elif operation == "delete":
            diffs.append(FileDiff(path, "", "".join(old for old, _new in hunks)))
        else:
            diffs.extend(FileDiff(path, new, old) for old, new in hunks)
    return diffs


def _patch_path(value: str) -> str | None:
    value = value.split("\t", 1)[0].strip()
    if value == "/dev/null" or not value:
        return None
    if value.startswith('"') and value.endswith('"') and len(value) > 1:
        value = value[1:-1]
    if value[:2] in ("a/", "b/"):  # git's default prefixes (v2 asks for absolute paths, without them)
        value = value[2:]
    return value


def _patch_sections(text: str) -> dict[str, list[tuple[str, str]]]:
    """A ``git_patch`` text's hunks by file: ``{path: [(old side, new side), ...]}``, a file under
    both its old and its new path (``--- ``/``+++ `` or ``rename from``/``rename to``)."""
    sections: dict[str, list[tuple[str, str]]] = {}
    lines = text.splitlines(keepends=True)
    paths: list[str] = []
    hunks: list[tuple[str, str]] = []

    def flush() -> None:
        for path in paths:
            sections.setdefault(path, []).extend(hunks)

    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if line.startswith("diff --git "):
            flush()
            paths, hunks = [], []
        elif line.startswith(("--- ", "+++ ", "rename from ", "rename to ", "copy from ", "copy to ")):
            path = _patch_path(line.split(" ", 2)[-1] if line.startswith(("rename", "copy")) else line[4:])
            if path is not None and path not in paths:
                paths.append(path)
        elif (match := _HUNK.match(line)) is not None:
            old_left = int(match.group(2) or "1")
            new_left = int(match.group(4) or "1")
            old: list[str] = []
            new: list[str] = []
            last: list[list[str]] = []
            while index < len(lines) and (old_left > 0 or new_left > 0 or lines[index].startswith("\\")):
                body = lines[index]
                mark, rest = body[:1], body[1:]
                if mark == "\\":  # "\ No newline at end of file": the line before it has none
                    for side in last:
                        if side:
                            side[-1] = side[-1].rstrip("\r\n")
                elif mark in (" ", "\n", "\r", ""):
                    rest = rest if mark == " " else "\n"
                    old.append(rest)
                    new.append(rest)
                    old_left, new_left, last = old_left - 1, new_left - 1, [old, new]
                elif mark == "-":
                    old.append(rest)
                    old_left, last = old_left - 1, [old]
                elif mark == "+":
                    new.append(rest)
                    new_left, last = new_left - 1, [new]
                else:
                    break
                index += 1
            hunks.append(("".join(old), "".join(new)))
    flush()
    return sections
