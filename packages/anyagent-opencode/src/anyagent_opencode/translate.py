"""opencode's ``/event`` stream → seam events: a small stateful translator that never raises.

One ``Translator`` per session. ``feed(frame)`` takes one SSE event's JSON (``{"id", "type",
"properties"}``) and returns a ``Translation``: the seam events to send (content of our session
and of its Task-tool child sessions, the latter with ``parent_tool_id``) plus what the driver needs
to know to keep its own books — the session went busy or idle, it reported an error, a permission
or question was asked or settled, its model or title changed. The driver, not the translator,
decides what a turn end is (``OpencodeDriver``); the engine decides the rest.

Text arrives as ``message.part.delta`` (``field: "text"``) and/or as whole ``message.part.updated``
snapshots; the translator remembers how much of each part it has sent, so either way (and a
resync after a reconnect, ``catch_up``) the text is sent exactly once. A permission or question
is surfaced once, however often opencode lists it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from anyagent import (
    ContextCompacted,
    ContextUsage,
    Diagnostic,
    DiagnosticCode,
    DiagnosticInfo,
    DiagnosticLevel,
    McpTool,
    MessageEnded,
    PermissionChoice,
    PermissionRequest,
    PlanEntry,
    PlanEntryStatus,
    PlanUpdated,
    Question,
    QuestionChoice,
    QuestionRequest,
    ReasoningDelta,
    RequestOpened,
    TextDelta,
    ToolInput,
    ToolKind,
    ToolKindValue,
    ToolOutputDelta,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
    seam,
)
from anyagent import jsonread as j
from anyagent.seam import OUTPUT_CAP

__all__ = ["QUIET_EVENTS", "STREAM_INTERVAL", "STREAM_LIMIT", "Asked", "Settled", "Translation", "Translator"]

STREAM_INTERVAL = 0.05
"""Seconds between two ``ToolOutputDelta``s of one running tool: what opencode reports meanwhile
joins the next one (at most 20 a second per tool; the rest is sent when the tool finishes)."""

STREAM_LIMIT = 1024 * 1024
"""Characters of one tool's output streamed as ``ToolOutputDelta``s; past it only the tool's
final snapshot carries the output."""

QUIET_EVENTS = frozenset(
    {
        "server.heartbeat",
        "server.instance.disposed",
        "plugin.added",
        "catalog.updated",
        "reference.updated",
        "integration.updated",
        "integration.connection.updated",
        "session.diff",
        "session.deleted",
        "message.removed",
        "message.part.removed",
        "file.edited",
        "file.watcher.updated",
        "lsp.updated",
        "lsp.client.diagnostics",
        "project.updated",
        "project.directories.updated",
        "vcs.branch.updated",
        "installation.updated",
        "installation.update-available",
        "mcp.tools.changed",
        "command.executed",
        "global.disposed",
        "workspace.ready",
        "workspace.status",
        "worktree.ready",
        "models-dev.refreshed",
        "tui.toast.show",
    }
)
"""Event types that carry nothing for a session's events (known, so no ``unknown_frame``)."""

TOOL_KINDS: Mapping[str, ToolKind] = {
    "bash": ToolKind.EXECUTE,
    "read": ToolKind.READ,
    "edit": ToolKind.EDIT,
    "write": ToolKind.EDIT,
    "patch": ToolKind.EDIT,
    "multiedit": ToolKind.EDIT,
    "apply_patch": ToolKind.EDIT,
    "glob": ToolKind.SEARCH,
    "grep": ToolKind.SEARCH,
    "list": ToolKind.SEARCH,
    "codesearch": ToolKind.SEARCH,
    "websearch": ToolKind.FETCH,
    "webfetch": ToolKind.FETCH,
    "task": ToolKind.SUBAGENT,
    "todowrite": ToolKind.THINK,
    "todoread": ToolKind.THINK,
}

_STATUS: Mapping[str, ToolStatus] = {
    "pending": ToolStatus.PENDING,
    "running": ToolStatus.RUNNING,
    "completed": ToolStatus.COMPLETED,
    "error": ToolStatus.FAILED,
}

_PLAN: Mapping[str, PlanEntryStatus] = {
    "pending": PlanEntryStatus.PENDING,
    "in_progress": PlanEntryStatus.IN_PROGRESS,
    "completed": PlanEntryStatus.COMPLETED,
}

PERMISSION_CHOICES = (PermissionChoice.ALLOW_ONCE, PermissionChoice.ALLOW_ALWAYS, PermissionChoice.DENY_ONCE)
"""What opencode's ``POST /permission/{id}/reply`` takes: ``once``, ``always``, ``reject``."""

_SEEN = 4096  # event ids remembered (between this and twice this) to drop a repeat after a reconnect


@attrs.frozen
class Asked:
    """A permission (``kind="permission"``) or question (``kind="question"``) opencode waits on."""

    kind: str
    wire_id: str
    session_id: str


@attrs.frozen
class Settled:
    """opencode settled a permission or question itself (another client answered, an ``always``
    rule covered it): the engine should hear it was withdrawn if it is still open."""

    wire_id: str


@attrs.define
class Translation:
    """What one event means: ``events`` to send, and the session facts the driver tracks."""

    events: list[seam.DriverEvent] = attrs.Factory(list)
    connected: bool = False
    busy: bool = False
    idle: bool = False
    error: str | None = None
    error_name: str | None = None
    asked: Asked | None = None
    settled: Settled | None = None
    session_info: dict[str, Any] | None = None


class Translator:
    """The state one session's events need: child sessions, parts sent, message roles, tools."""

    def __init__(
        self,
        session_id: str,
        context_window: int | None = None,
        mcp_servers: Iterable[str] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.session_id = session_id
        self._clock = clock
        self.context_window = context_window
        # opencode names an MCP tool ``<server>_<tool>``, both with [^a-zA-Z0-9_-] turned into "_";
        # a longer server name is tried before a shorter one it starts with
        self._mcp = sorted(((_sanitized(name) + "_", name) for name in mcp_servers if name), key=lambda p: -len(p[0]))
        self._streams: dict[str, list[Any]] = {}
        """A running tool's streamed output: [text seen, characters sent, when last sent]."""
        self.children: dict[str, str | None] = {}
        """Task-tool child session id → the parent's tool call id (None until known)."""
        self._roles: dict[str, str] = {}
        self._kinds: dict[str, str] = {}
        self._sent: dict[str, int] = {}
        self.snapshot_only: set[str] = set()
        """Parts whose text comes from their snapshots only (after a resync, the driver's to fill):
        ``fast_delta`` leaves their deltas to the driver, which drops them."""
        self._tools: dict[str, tuple[Any, ...]] = {}
        self._tool_names: dict[str, str] = {}
        self._finished: set[str] = set()
        self._settled: set[str] = set()
        self._asked: set[str] = set()
        """Permission and question ids already surfaced (a resync lists them again; a cancel
        leaves opencode listing them): each is surfaced once."""
        # the event ids seen lately, in two generations: the newest ``_SEEN - _room`` and the
        # ``_SEEN`` before them (a plain dict each: no reordering or eviction per event)
        self._seen: dict[str, None] = {}
        self._seen_before: dict[str, None] = {}
        self._room = _SEEN
        self.last_tokens: int | None = None

    # -- entry points

    def feed(self, frame: object) -> Translation:
        """Translate one event (any JSON; never raises on bad input)."""
        out = Translation()
        if not isinstance(frame, dict):
            out.events.append(_diagnostic("opencode sent an event that is not a JSON object", frame, bad=True))
            return out
        event_id = j.nonempty(frame.get("id"))
        if event_id is not None:
            if event_id in self._seen or event_id in self._seen_before:
                return out  # the same event again (a reconnect replayed it)
            self._remember(event_id)
        kind = _s(frame.get("type"))
        props = j.obj(frame.get("properties"))
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, props, out, frame)
        elif kind not in QUIET_EVENTS:
            out.events.append(_diagnostic(f"opencode sent an event anyagent does not know: {kind!r}", frame))
        return out

    def fast_delta(self, frame: object) -> seam.Content | None:
        """The common case of a flood, cheaply: a ``message.part.delta`` of our own session's
        assistant text part, as ``Content(TextDelta)``, with the same effects as ``feed`` (the
        event id remembered, the text counted); None for anything else (any frame at all), a
        repeated event id included (then ``feed`` it)."""
        try:  # subscripts, not ``get`` calls: whatever is missing or not a mapping is not this case
            props = frame["properties"]  # type: ignore[index]
            if props["sessionID"] != self.session_id or props["field"] != "text":
                return None
            part_id, message_id, delta = props["partID"], props["messageID"], props["delta"]
            if frame["type"] != "message.part.delta":  # type: ignore[index]
                return None
        except (KeyError, TypeError):
            return None
        if type(delta) is not str or not delta or type(part_id) is not str or not part_id:
            return None
        if part_id in self.snapshot_only:
            return None
        if type(message_id) is not str or self._kinds.get(part_id, "text") != "text":
            return None
        if self._roles.get(message_id) == "user":
            return None
        event_id = frame.get("id")  # type: ignore[attr-defined]  # a dict: it has "properties"
        if type(event_id) is str and event_id:
            if event_id in self._seen or event_id in self._seen_before:
                return None  # a repeat after a reconnect: ``feed`` drops it
            self._seen[event_id] = None  # ``_remember`` inlined
            self._room -= 1
            if not self._room:
                self._seen_before, self._seen, self._room = self._seen, {}, _SEEN
        sent = self._sent
        sent[part_id] = sent.get(part_id, 0) + len(delta)
        return seam.Content(TextDelta(message_id, delta))

    def _remember(self, event_id: str) -> None:
        self._seen[event_id] = None
        self._room -= 1
        if not self._room:
            self._seen_before, self._seen, self._room = self._seen, {}, _SEEN

    def catch_up(self, messages: Iterable[object], session: str | None = None) -> list[seam.DriverEvent]:
        """What a reconnect missed: from ``GET /session/{id}/message`` entries (``{info, parts}``;
        the caller passes only the messages of turns this session ran, never older history) of
        our session or of a child ``session``, the text not sent yet, the tools whose state
        changed and the assistant messages that finished meanwhile (``MessageEnded``,
        ``ContextUsage``), in order; nothing twice."""
        session = session or self.session_id
        events: list[seam.DriverEvent] = []
        for message in messages:
            entry = j.obj(message)
            info = j.obj(entry.get("info"))
            message_id = _s(info.get("id"))
            role = _s(info.get("role"))
            if message_id:
                self._roles[message_id] = role
            if role != "assistant":
                continue
            out = Translation()
            for part in j.arr(entry.get("parts")):
                self._part(j.obj(part), out, session)
            _message_updated(self, {"info": info, "sessionID": session}, out, {})
            events.extend(out.events)
        return events

    def active_children(self) -> set[str]:
        """The child sessions whose Task tool has not finished (or is not linked yet)."""
        return {child for child, call in self.children.items() if call is None or call not in self._finished}

    def known_messages(self) -> set[str]:
        """The ids of the messages seen so far (by event or by ``catch_up``)."""
        return set(self._roles)

    # -- helpers

    def _owner(self, session: str) -> tuple[bool, str | None]:
        """(whether ``session`` is ours or a child's, the parent tool id for a child)."""
        if session == self.session_id:
            return True, None
        if session in self.children:
            return True, self._parent_tool(session)
        return False, None

    def _parent_tool(self, session: str) -> str | None:
        tool = self.children.get(session)
        if tool is None:  # not linked yet: the newest task tool still running
            running = [call for call, name in self._tool_names.items() if name == "task" and call not in self._finished]
            linked = set(self.children.values())
            free = [call for call in running if call not in linked]
            if free:
                tool = self.children[session] = free[-1]
        return tool

    def _content(self, out: Translation, kind: Any, parent: str | None) -> None:
        out.events.append(seam.Content(kind, parent))

    def _part(self, part: dict[str, Any], out: Translation, session: str) -> None:
        mine, parent = self._owner(session)
        if not mine:
            return
        part_id = _s(part.get("id"))
        message_id = _s(part.get("messageID"))
        kind = _s(part.get("type"))
        if part_id:
            self._kinds[part_id] = kind
        if kind in ("text", "reasoning"):
            if self._roles.get(message_id) == "user" or j.flag(part.get("synthetic")):
                return
            text = _s(part.get("text"))
            sent = self._sent.get(part_id, 0)
            if len(text) > sent:
                self._sent[part_id] = len(text)
                piece = text[sent:]
                event = TextDelta(message_id, piece) if kind == "text" else ReasoningDelta(message_id, piece)
                self._content(out, event, parent)
        elif kind == "tool":
            self._tool(part, out, parent)

    def _tool(self, part: dict[str, Any], out: Translation, parent: str | None) -> None:
        call = j.nonempty(part.get("callID")) or j.nonempty(part.get("id"))
        if call is None:
            out.events.append(_diagnostic("opencode sent a tool part without an id", part, bad=True))
            return
        name = _s(part.get("tool"), "tool")
        state = j.obj(part.get("state"))
        status = _STATUS.get(_s(state.get("status")), ToolStatus.RUNNING)
        arguments = j.obj(state.get("input"))
        metadata = j.obj(state.get("metadata"))
        title = _s(state.get("title")) or _title(name, arguments)
        output = j.nonempty(state.get("output")) or j.nonempty(state.get("error"))
        if output is not None and len(output) > OUTPUT_CAP:
            output = output[:OUTPUT_CAP]
        key = (status, title, output, tuple(sorted(arguments)))
        self._tool_names[call] = name
        if name == "task":
            child = j.nonempty(metadata.get("sessionId"))
            if child is not None and child != self.session_id:
                self.children[child] = call
        if not status.active:
            self._finished.add(call)
        if call in self._settled:
            return
        self._stream(call, status, metadata, output, out, parent)
        if self._tools.get(call) == key:
            return
        self._tools[call] = key
        update = ToolUpdate(
            call,
            self.tool_kind(name),
            title,
            status,
            _tool_input(name, arguments),
            output,
            raw={"tool": name, "state": state},
        )
        self._content(out, ToolUpdated(update), parent)

    def _stream(
        self,
        call: str,
        status: ToolStatus,
        metadata: Mapping[str, Any],
        output: str | None,
        out: Translation,
        parent: str | None,
    ) -> None:
        """A running tool's output so far (opencode's ``metadata.output``, cumulative) as
        ``ToolOutputDelta``s: at most one per ``STREAM_INTERVAL``, ``STREAM_LIMIT`` characters in
        all; when the tool finishes, what was held back goes first, before its final snapshot."""
        text = metadata.get("output")
        if not isinstance(text, str):
            text = output if not status.active else None
        stream = self._streams.get(call)
        if stream is None:
            if not status.active or not text:
                return
            stream = self._streams[call] = ["", 0, float("-inf")]
        if text is not None:
            seen, sent = stream[0], stream[1]
            if text.startswith(seen[:sent]):
                stream[0] = text[:STREAM_LIMIT]
            else:  # opencode cut or rewrote what it had reported: nothing more streams
                stream[0], stream[1] = seen[:sent], STREAM_LIMIT
        now = self._clock()
        if not status.active or now - stream[2] >= STREAM_INTERVAL:
            seen, sent = stream[0], stream[1]
            if len(seen) > sent:
                stream[1], stream[2] = len(seen), now
                self._content(out, ToolOutputDelta(call, seen[sent:]), parent)
        if not status.active:
            del self._streams[call]

    def tool_kind(self, name: str) -> ToolKindValue:
        """The kind of opencode tool ``name``: a built-in one's, or ``McpTool`` for one of the
        session's MCP servers' tools."""
        kind = TOOL_KINDS.get(name)
        if kind is not None:
            return kind
        for prefix, server in self._mcp:
            if name.startswith(prefix) and len(name) > len(prefix):
                return McpTool(server, name[len(prefix) :])
        return ToolKind.OTHER

    def settle_active_tools(self) -> None:
        """The turn ended: the engine now owns the end of every tool still active (it ends them
        ``CANCELLED`` or ``FAILED``), so later updates of those tools are not reported."""
        for call, key in self._tools.items():
            if key[0].active:
                self._settled.add(call)
                self._streams.pop(call, None)

    def tool_for(self, call: str, fallback: str, metadata: Mapping[str, Any]) -> ToolUpdate:
        """The tool a permission is about (its last known state, or one built from the request)."""
        name = self._tool_names.get(call, fallback)
        command = j.nonempty(metadata.get("command"))
        arguments = dict(metadata) if not command else {"command": command}
        return ToolUpdate(
            call,
            self.tool_kind(name),
            _title(name, arguments),
            ToolStatus.PENDING,
            _tool_input(name, arguments),
        )


# ---------------------------------------------------------------------------------------------
# handlers: (translator, properties, out, frame)


def _connected(t: Translator, props: dict[str, Any], out: Translation, frame: dict[str, Any]) -> None:
    out.connected = True


def _session_created(t: Translator, props: dict[str, Any], out: Translation, frame: dict[str, Any]) -> None:
    info = j.obj(props.get("info"))
    child, parent = j.nonempty(info.get("id")), j.nonempty(info.get("parentID"))
    if child is not None and parent is not None and (parent == t.session_id or parent in t.children):
        t.children.setdefault(child, None)


def _session_updated(t: Translator, props: dict[str, Any], out: Translation, frame: dict[str, Any]) -> None:
    info = j.obj(props.get("info"))
    if _s(info.get("id")) == t.session_id:
        out.session_info = info
    else:
        _session_created(t, props, out, frame)


def _session_status(t: Translator, props: dict[str, Any], out: Translation, frame: dict[str, Any]) -> None:
    session = _s(props.get("sessionID"))
    mine, parent = t._owner(session)
    if not mine:
        return
    status = j.obj(props.get("status"))
    kind = _s(status.get("type"))
    if kind == "retry":
        attempt = j.integer(status.get("attempt"))
        message = _s(status.get("message"), "the model API failed")
        text = f"opencode is retrying its model API (attempt {attempt}): {message}"
        info = DiagnosticInfo(text, DiagnosticLevel.WARNING, DiagnosticCode.API_RETRY, frame)
        out.events.append(seam.Content(Diagnostic(info), parent))
    elif session != t.session_id:
        return  # a child's busy/idle never ends the parent's turn
    elif kind == "busy":
        out.busy = True
    elif kind == "idle":
        out.idle = True
    elif kind:
        out.events.append(_diagnostic(f"opencode reported an unknown session status {kind!r}", frame))


def _session_idle(t: Translator, props: dict[str, Any], out: Translation, frame: dict[str, Any]) -> None:
    if _s(props.get("sessionID")) == t.session_id:
        out.idle = True


def _session_error(t: Translator, props: dict[str, Any], out: Translation, frame: dict[str, Any]) -> None:
    session = _s(props.get("sessionID"))
    mine, parent = t._owner(session) if session else (True, None)
    if not mine:
        return
    error = j.obj(props.get("error"))
    name = _s(error.get("name"), "Error")
    message = _s(j.obj(error.get("data")).get("message")) or name
    if session and session != t.session_id:
        info = DiagnosticInfo(
            f"a subagent failed: {message}", DiagnosticLevel.WARNING, DiagnosticCode.AGENT_ERROR, frame
        )
        out.events.append(seam.Content(Diagnostic(info), parent))
        return
    out.error, out.error_name = message, name


def _session_compacted(t: Translator, props: dict[str, Any], out: Translation, frame: dict[str, Any]) -> None:
    if _s(props.get("sessionID")) == t.session_id:
        out.events.append(seam.Content(ContextCompacted()))


def _message_updated(t: Translator, props: dict[str, Any], out: Translation, frame: dict[str, Any]) -> None:
    info = j.obj(props.get("info"))
    session = _s(info.get("sessionID")) or _s(props.get("sessionID"))
    mine, parent = t._owner(session)
    message_id = _s(info.get("id"))
    role = _s(info.get("role"))
    if message_id:
        t._roles[message_id] = role
    if not mine or role != "assistant" or message_id in t._finished:
        return
    completed = j.obj(info.get("time")).get("completed") is not None
    if not completed:
        return
    t._finished.add(message_id)
    t._content(out, MessageEnded(message_id), parent)
    if parent is None:
        tokens = j.obj(info.get("tokens"))
        cache = j.obj(tokens.get("cache"))
        used = sum(j.integer(value) or 0 for value in (tokens.get("input"), tokens.get("output"), cache.get("read")))
        if used > 0:
            t.last_tokens = used
            cost = info.get("cost")
            cost_usd = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
            out.events.append(seam.Content(ContextUsage(used, t.context_window, cost_usd)))


def _part_updated(t: Translator, props: dict[str, Any], out: Translation, frame: dict[str, Any]) -> None:
    part = j.obj(props.get("part"))
    if not part:
        out.events.append(_diagnostic("opencode sent a part update without a part", frame, bad=True))
        return
    t._part(part, out, _s(part.get("sessionID")) or _s(props.get("sessionID")))


def _part_delta(t: Translator, props: dict[str, Any], out: Translation, frame: dict[str, Any]) -> None:
    session = _s(props.get("sessionID"))
    mine, parent = t._owner(session)
    if not mine:
        return
    part_id, message_id = _s(props.get("partID")), _s(props.get("messageID"))
    delta = props.get("delta")
    if not part_id or not isinstance(delta, str):
        out.events.append(_diagnostic("opencode sent a part delta without a part id or text", frame, bad=True))
        return
    if _s(props.get("field"), "text") != "text" or t._roles.get(message_id) == "user" or not delta:
        return
    kind = t._kinds.get(part_id, "text")
    if kind not in ("text", "reasoning"):
        return
    t._sent[part_id] = t._sent.get(part_id, 0) + len(delta)
    event = TextDelta(message_id, delta) if kind == "text" else ReasoningDelta(message_id, delta)
    t._content(out, event, parent)


def _permission_asked(t: Translator, props: dict[str, Any], out: Translation, frame: dict[str, Any]) -> None:
    session = _s(props.get("sessionID"))
    mine, parent = t._owner(session)
    wire_id = j.nonempty(props.get("id"))
    if not mine:
        return
    if wire_id is None:
        out.events.append(_diagnostic("opencode asked a permission without an id", frame, bad=True))
        return
    if wire_id in t._asked:
        return
    t._asked.add(wire_id)
    tool_ref = j.obj(props.get("tool"))
    call = _s(tool_ref.get("callID")) or wire_id
    permission = _s(props.get("permission"), "tool")
    tool = t.tool_for(call, permission, j.obj(props.get("metadata")))
    patterns = [_s(p) for p in j.arr(props.get("always")) if _s(p)]
    detail = f"always allows: {', '.join(patterns)}" if patterns else None
    request = PermissionRequest(wire_id, tool, PERMISSION_CHOICES, detail)
    out.events.append(seam.Content(RequestOpened(request), parent))
    out.asked = Asked("permission", wire_id, session)


def _question_asked(t: Translator, props: dict[str, Any], out: Translation, frame: dict[str, Any]) -> None:
    session = _s(props.get("sessionID"))
    mine, parent = t._owner(session)
    wire_id = j.nonempty(props.get("id"))
    if not mine:
        return
    questions = []
    for index, item in enumerate(j.arr(props.get("questions"))):
        entry = j.obj(item)
        choices = []
        for option in j.arr(entry.get("options")):
            label = _s(j.obj(option).get("label"))
            if label:
                choices.append(QuestionChoice(label, label, j.nonempty(j.obj(option).get("description"))))
        questions.append(
            Question(
                str(index),
                _s(entry.get("question")),
                j.nonempty(entry.get("header")),
                choices,
                multi_select=j.flag(entry.get("multiple")),
                allows_free_text=entry.get("custom") is not False,
            )
        )
    if wire_id is None or not questions:
        out.events.append(_diagnostic("opencode asked a question without an id or questions", frame, bad=True))
        return
    if wire_id in t._asked:
        return
    t._asked.add(wire_id)
    out.events.append(seam.Content(RequestOpened(QuestionRequest(wire_id, questions)), parent))
    out.asked = Asked("question", wire_id, session)


def _settled(t: Translator, props: dict[str, Any], out: Translation, frame: dict[str, Any]) -> None:
    wire_id = j.nonempty(props.get("requestID")) or j.nonempty(props.get("id"))
    if wire_id is not None and t._owner(_s(props.get("sessionID")))[0]:
        out.settled = Settled(wire_id)


def _todo_updated(t: Translator, props: dict[str, Any], out: Translation, frame: dict[str, Any]) -> None:
    mine, parent = t._owner(_s(props.get("sessionID")))
    if not mine:
        return
    entries = []
    for item in j.arr(props.get("todos")):
        todo = j.obj(item)
        content = _s(todo.get("content"))
        status = _PLAN.get(_s(todo.get("status")), PlanEntryStatus.PENDING)
        if _s(todo.get("status")) == "cancelled":
            continue
        entries.append(PlanEntry(content, status, j.nonempty(todo.get("priority"))))
    t._content(out, PlanUpdated(entries), parent)


_HANDLERS = {
    "server.connected": _connected,
    "session.created": _session_created,
    "session.updated": _session_updated,
    "session.status": _session_status,
    "session.idle": _session_idle,
    "session.error": _session_error,
    "session.compacted": _session_compacted,
    "message.updated": _message_updated,
    "message.part.updated": _part_updated,
    "message.part.delta": _part_delta,
    "permission.asked": _permission_asked,
    "permission.replied": _settled,
    "question.asked": _question_asked,
    "question.replied": _settled,
    "question.rejected": _settled,
    "todo.updated": _todo_updated,
}


def _title(name: str, arguments: Mapping[str, Any]) -> str:
    for key in ("description", "command", "filePath", "pattern", "url", "path"):
        value = j.nonempty(arguments.get(key))
        if value is not None:
            return f"{name}: {value}"
    return name


def _tool_input(name: str, arguments: Mapping[str, Any]) -> ToolInput:
    return ToolInput(
        command=j.nonempty(arguments.get("command")),
        path=j.nonempty(arguments.get("filePath")) or j.nonempty(arguments.get("path")),
        pattern=j.nonempty(arguments.get("pattern")),
        url=j.nonempty(arguments.get("url")),
        description=j.nonempty(arguments.get("description")),
        arguments=dict(arguments),
    )


def _diagnostic(message: str, frame: object, *, bad: bool = False) -> seam.Content:
    code = DiagnosticCode.BAD_FRAME if bad else DiagnosticCode.UNKNOWN_FRAME
    raw = frame if isinstance(frame, (dict, list, str, int, float, bool)) or frame is None else repr(frame)
    return seam.Content(Diagnostic(DiagnosticInfo(message, DiagnosticLevel.INFO, code, raw)))


def _sanitized(name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)


def _s(value: object, default: str = "") -> str:
    return j.text(value, default)
