"""The Codex translator: app-server notifications in, seam events out. Never raises.

What flows in: one notification at a time (``method``, ``params``), as ``codex app-server``
writes them. What flows out: ``seam.Content`` events (text, reasoning, tools, plan, usage,
diagnostics). Turn boundaries (``turn/started``, ``turn/completed``), errors and server
requests are the driver's: it decides nothing either, but it knows which prompt is on the wire.

The mapping (codex 0.171.0 ``app-server``, schema dumped with ``generate-json-schema``):

* ``item/agentMessage/delta`` → ``TextDelta``; ``item/completed`` agentMessage → ``MessageEnded``
  (the full text first when nothing streamed), extension ``codex/fork_point`` = its turn id.
  Plan mode's proposed plan (``item/plan/delta``, a ``plan`` item) is a message of its own, its
  ``MessageEnded`` marked ``codex/proposed_plan``.
* ``item/reasoning/summaryTextDelta`` / ``textDelta`` → ``ReasoningDelta``; its completion →
  ``MessageEnded`` when it streamed.
* ``item/started|completed`` of a tool item → ``ToolUpdated``: commandExecution ``EXECUTE``,
  fileChange ``EDIT`` (an added file is a ``FileDiff``), mcpToolCall ``McpTool``, webSearch
  ``SEARCH``, collabAgentToolCall ``SUBAGENT``, anything else ``OTHER``; status inProgress →
  running, completed → completed (a non-zero exit code → failed), failed / declined → failed.
* ``item/commandExecution/outputDelta`` / ``item/fileChange/outputDelta`` → ``ToolOutputDelta``.
* userMessage items → ``UserMessage`` unless they carry our own ``clientId`` (our prompts).
* contextCompaction → ``ContextCompacted``; ``turn/plan/updated`` → ``PlanUpdated``;
  ``thread/tokenUsage/updated`` → ``ContextUsage`` (``last.totalTokens`` of
  ``modelContextWindow``); ``account/rateLimits/updated`` → ``PlanUsageUpdated`` (when it has a
  window).
* ``warning`` / ``configWarning`` / ``deprecationNotice`` / ``guardianWarning`` → ``Diagnostic``.
* bookkeeping (thread status, read state, remote control, …) → nothing; anything unknown → an
  ``unknown_frame`` diagnostic carrying the frame.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from anyagent import (
    ContextCompacted,
    ContextUsage,
    Diagnostic,
    DiagnosticCode,
    DiagnosticInfo,
    DiagnosticLevel,
    EventKind,
    FileDiff,
    McpTool,
    MessageEnded,
    PlanEntry,
    PlanEntryStatus,
    PlanUpdated,
    PlanUsage,
    PlanUsageUpdated,
    PlanUsageWindow,
    ReasoningDelta,
    TextDelta,
    ToolInput,
    ToolKind,
    ToolKindValue,
    ToolLocation,
    ToolOutputDelta,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
    UserMessage,
    seam,
)
from anyagent import jsonread as j

__all__ = [
    "CLIENT_ID_PREFIX",
    "FORK_POINT",
    "PROPOSED_PLAN",
    "IGNORED",
    "Translator",
    "plan_usage",
    "tool_update",
]

FORK_POINT = "codex/fork_point"
"""``MessageEnded`` extension: the turn id to pass to ``SessionOptions.fork_from(token, at=...)``."""

PROPOSED_PLAN = "codex/proposed_plan"
"""``MessageEnded`` extension (``True``): the message was Plan mode's proposed plan (markdown that
codex takes out of the model's answer, a ``plan`` item), not the answer itself."""

CLIENT_ID_PREFIX = "anyagent-m"
"""Our prompts carry ``clientUserMessageId`` = this prefix + a counter; their echo is dropped."""

IGNORED = frozenset(
    {
        "thread/started",
        "thread/status/changed",
        "thread/readState/changed",
        "thread/archived",
        "thread/unarchived",
        "thread/closed",
        "thread/settings/updated",
        "thread/environment/connected",
        "thread/environment/disconnected",
        "thread/goal/updated",
        "thread/goal/cleared",
        "thread/queue/changed",
        "thread/attachment/updated",
        "thread/section/changed",
        "thread/project/updated",
        "thread/prediction/updated",
        "project/changed",
        "remoteControl/status/changed",
        "skills/changed",
        "turn/diff/updated",
        "turn/moderationMetadata",
        "hook/started",
        "hook/completed",
        "item/updated",
        "item/reasoning/summaryPartAdded",
        "item/fileChange/patchUpdated",
        "item/commandExecution/terminalInteraction",
        "item/mcpToolCall/progress",
        "item/autoApprovalReview/started",
        "item/autoApprovalReview/completed",
        "account/updated",
        "app/list/updated",
        "mcpServer/oauthLogin/completed",
        "mcpServer/event/stream/notification",
        "model/rerouted",
        "model/verification",
        "model/safetyBuffering/updated",
        "modelProvider/authRecoveryStarted",
        "modelProvider/authRecoveryCompleted",
        "fs/changed",
        "process/outputDelta",
        "process/exited",
        "command/exec/outputDelta",
    }
)
"""Notifications that carry nothing an app sees (status the engine tracks itself, UI state)."""

_WARNINGS = {
    "warning": DiagnosticLevel.WARNING,
    "guardianWarning": DiagnosticLevel.WARNING,
    "configWarning": DiagnosticLevel.INFO,
    "deprecationNotice": DiagnosticLevel.INFO,
    "windows/worldWritableWarning": DiagnosticLevel.WARNING,
}
_STEP_STATUS = {
    "pending": PlanEntryStatus.PENDING,
    "inProgress": PlanEntryStatus.IN_PROGRESS,
    "in_progress": PlanEntryStatus.IN_PROGRESS,
    "completed": PlanEntryStatus.COMPLETED,
}
_TOOL_KINDS: Mapping[str, ToolKind] = {
    "commandExecution": ToolKind.EXECUTE,
    "fileChange": ToolKind.EDIT,
    "webSearch": ToolKind.SEARCH,
    "collabAgentToolCall": ToolKind.SUBAGENT,
    "subAgentActivity": ToolKind.SUBAGENT,
    "imageView": ToolKind.READ,
    "dynamicToolCall": ToolKind.OTHER,
    "imageGeneration": ToolKind.OTHER,
    "sleep": ToolKind.OTHER,
}
_NOT_TOOLS = frozenset(
    {
        "userMessage",
        "hookPrompt",
        "agentMessage",
        "reasoning",
        "contextCompaction",
        "functionCallOutput",
        "enteredReviewMode",
        "exitedReviewMode",
    }
)


# notices about codex's own set-up that change nothing in the session (it runs on): reported at
# INFO, once per session. "Model metadata for `m` not found. Defaulting to fallback metadata" (a
# model codex has no table entry for) and the Linux sandbox's missing bubblewrap.
_ADVISORY = re.compile(r"model metadata for .* not found|bubblewrap|\bbwrap\b", re.IGNORECASE)


def _diagnostic(message: str, level: DiagnosticLevel, code: str, raw: Any = None) -> seam.Content:
    return seam.Content(Diagnostic(DiagnosticInfo(message, level, code, raw)))


def _cap(text: str | None) -> str | None:
    if text is None or len(text) <= seam.OUTPUT_CAP:
        return text
    return text[: seam.OUTPUT_CAP]


def _status(item: Mapping[str, Any], completed: bool) -> ToolStatus:
    status = j.text(item.get("status"), "")
    if status in ("failed", "declined"):
        return ToolStatus.FAILED
    if status == "completed" or (completed and status not in ("inProgress",)):
        exit_code = item.get("exitCode")
        if isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0:
            return ToolStatus.FAILED
        return ToolStatus.COMPLETED
    return ToolStatus.RUNNING


def tool_update(item: Mapping[str, Any], completed: bool = False, status: ToolStatus | None = None) -> ToolUpdate:
    """One tool item (``commandExecution``, ``fileChange``, ``mcpToolCall``, …) as a ``ToolUpdate``."""
    kind_name = j.text(item.get("type"), "")
    tool_id = j.text(item.get("id"), "")
    kind: ToolKindValue = _TOOL_KINDS.get(kind_name, ToolKind.OTHER)
    title = kind_name
    tool_input = ToolInput()
    output: str | None = None
    diffs: list[FileDiff] = []
    locations: list[ToolLocation] = []
    if kind_name == "commandExecution":
        command = j.text(item.get("command"), "")
        title = command or "command"
        tool_input = ToolInput(command=command or None)
        output = j.nonempty(item.get("aggregatedOutput"))
    elif kind_name == "fileChange":
        for change in j.arr(item.get("changes")):
            change = j.obj(change)
            path = j.nonempty(change.get("path"))
            if path is None:
                continue
            locations.append(ToolLocation(path))
            if j.text(j.obj(change.get("kind")).get("type")) == "add":
                diffs.append(FileDiff(path, j.text(change.get("diff"), "")))
        paths = [location.path for location in locations]
        title = "Edit " + ", ".join(paths) if paths else "Edit files"
        tool_input = ToolInput(path=paths[0] if len(paths) == 1 else None)
    elif kind_name == "mcpToolCall":
        server, tool = j.text(item.get("server"), ""), j.text(item.get("tool"), "")
        kind = McpTool(server, tool)
        title = f"{server}/{tool}" if server else tool
        arguments = item.get("arguments")
        tool_input = ToolInput(arguments=arguments if isinstance(arguments, dict) else None)
        result = item.get("result")
        if result is not None:
            first = j.arr(j.obj(result).get("content"))[:1]
            output = j.text(j.obj(first[0]).get("text")) if first else None
        error = j.text(j.obj(item.get("error")).get("message")) or None
        output = output or error
    elif kind_name == "webSearch":
        query = j.text(item.get("query"), "")
        title = f"Search {query}" if query else "Web search"
        tool_input = ToolInput(pattern=query or None)
    elif kind_name in ("collabAgentToolCall", "subAgentActivity"):
        prompt = j.nonempty(item.get("prompt"))
        title = j.text(item.get("tool"), "") or " ".join(
            part for part in ("Subagent", j.text(item.get("agentPath"), ""), j.text(item.get("kind"), "")) if part
        )
        tool_input = ToolInput(description=prompt)
        said = [j.text(j.obj(state).get("message"), "") for state in j.obj(item.get("agentsStates")).values()]
        output = "\n".join(message for message in said if message) or None  # what the agents answered
    elif kind_name == "imageView":
        path = j.nonempty(item.get("path"))
        title = f"View {path}" if path else "View image"
        tool_input = ToolInput(path=path)
    elif kind_name == "dynamicToolCall":
        title = j.text(item.get("tool"), "") or "tool"
        arguments = item.get("arguments")
        tool_input = ToolInput(arguments=arguments if isinstance(arguments, dict) else None)
    return ToolUpdate(
        tool_id,
        kind,
        title,
        status or _status(item, completed),
        tool_input,
        _cap(output),
        diffs,
        locations,
    )


def _epoch(value: Any) -> datetime | None:
    seconds = j.integer(value)
    if seconds is None or seconds <= 0:
        return None
    try:
        return datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def _window(label: str, window: Any) -> PlanUsageWindow | None:
    window = j.obj(window)
    used = window.get("usedPercent")
    if not isinstance(used, (int, float)) or isinstance(used, bool):
        return None
    minutes = j.integer(window.get("windowDurationMins"))
    if minutes:
        label = f"{minutes // 60}h" if minutes < 24 * 60 else f"{minutes // (24 * 60)}d"
    return PlanUsageWindow(label, float(used), _epoch(window.get("resetsAt")))


def plan_usage(snapshot: Any, fetched_at: datetime | None = None) -> PlanUsage | None:
    """A ``RateLimitSnapshot`` as ``PlanUsage``; None when it has no window (an API-key account,
    a custom provider: every field null)."""
    snapshot = j.obj(snapshot)
    windows = [
        window
        for window in (_window("primary", snapshot.get("primary")), _window("secondary", snapshot.get("secondary")))
        if window is not None
    ]
    if not windows:
        return None
    return PlanUsage(j.nonempty(snapshot.get("planType")), windows, fetched_at)


class Translator:
    """Translate one session's notifications (see the module docstring). One per connection;
    ``feed(method, params)`` returns the events for one notification and never raises on
    malformed input (a frame it cannot use is a ``bad_frame`` diagnostic)."""

    def __init__(self) -> None:
        self._warned: set[str] = set()  # the notices already reported this session
        self._streamed: set[str] = set()
        self._reasoning: set[str] = set()
        self._tools: dict[str, ToolUpdate] = {}

    def text_delta(self, params: object) -> TextDelta | None:
        """The fast path for the flood: the ``params`` of an ``item/agentMessage/delta`` with an
        item id and a string delta become its ``TextDelta`` (a bare one, which the engine takes as
        the ``Content`` ``feed`` makes of them); None for anything else (then ``feed`` it)."""
        if type(params) is not dict:
            return None
        try:  # subscripts, not ``get``: no call per key on the flood's path
            item_id, delta = params["itemId"], params["delta"]
        except KeyError:
            return None
        if type(item_id) is not str or not item_id or type(delta) is not str:
            return None
        self._streamed.add(item_id)
        return TextDelta(item_id, delta)

    def tool(self, tool_id: str) -> ToolUpdate | None:
        """The last snapshot of tool ``tool_id`` (for a permission request about it)."""
        return self._tools.get(tool_id)

    def running_mcp_call(self, server: str, tool: str) -> ToolUpdate | None:
        """The newest running call of MCP ``tool`` on ``server`` (codex's MCP approval names no item)."""
        for update in reversed(self._tools.values()):
            if update.kind == McpTool(server, tool) and update.status.active:
                return update
        return None

    def reset_turn(self) -> None:
        """Forget per-turn state (streamed messages, tool snapshots) at a turn's end."""
        self._streamed.clear()
        self._reasoning.clear()
        self._tools.clear()

    def feed(self, method: str, params: Any, raw: Any = None) -> list[seam.DriverEvent]:
        """The events one notification stands for (``raw``: the frame, for diagnostics)."""
        params = j.obj(params)
        frame = raw if raw is not None else {"method": method, "params": params}
        if method in ("item/agentMessage/delta", "item/plan/delta"):
            item_id, delta = j.nonempty(params.get("itemId")), params.get("delta")
            if item_id is None or not isinstance(delta, str):
                return [self._bad(method, frame)]
            self._streamed.add(item_id)
            return [seam.Content(TextDelta(item_id, delta))]
        if method in ("item/reasoning/summaryTextDelta", "item/reasoning/textDelta"):
            item_id, delta = j.nonempty(params.get("itemId")), params.get("delta")
            if item_id is None or not isinstance(delta, str):
                return [self._bad(method, frame)]
            self._reasoning.add(item_id)
            return [seam.Content(ReasoningDelta(item_id, delta))]
        if method in ("item/commandExecution/outputDelta", "item/fileChange/outputDelta"):
            item_id, delta = j.nonempty(params.get("itemId")), params.get("delta")
            if item_id is None or not isinstance(delta, str):
                return [self._bad(method, frame)]
            return [seam.Content(ToolOutputDelta(item_id, delta))]
        if method in ("item/started", "item/completed"):
            return self._item(params, method == "item/completed", frame)
        if method == "turn/plan/updated":
            return self._plan(params, frame)
        if method == "thread/tokenUsage/updated":
            usage = j.obj(params.get("tokenUsage"))
            used = j.integer(j.obj(usage.get("last")).get("totalTokens"))
            if used is None:
                return [self._bad(method, frame)]
            return [seam.Content(ContextUsage(used, j.integer(usage.get("modelContextWindow"))))]
        if method == "account/rateLimits/updated":
            found = plan_usage(params.get("rateLimits"), datetime.now(timezone.utc))
            return [seam.Content(PlanUsageUpdated(found))] if found is not None else []
        if method == "thread/compacted":
            return [seam.Content(ContextCompacted())]
        if method in _WARNINGS:
            message = j.text(params.get("message"), "") or j.text(params.get("summary"), "") or method
            if message in self._warned:  # codex repeats some notices every turn: once per session
                return []
            self._warned.add(message)
            level = DiagnosticLevel.INFO if _ADVISORY.search(message) else _WARNINGS[method]
            return [_diagnostic(f"codex: {message}", level, DiagnosticCode.AGENT_WARNING, frame)]
        if method == "mcpServer/startupStatus/updated":
            if j.text(params.get("status")) == "failed":
                name = j.text(params.get("name"), "") or j.text(params.get("server"), "?")
                error = j.text(params.get("error"), "")
                return [
                    _diagnostic(
                        f"codex: MCP server {name} failed to start {error}".rstrip(),
                        DiagnosticLevel.WARNING,
                        DiagnosticCode.AGENT_WARNING,
                        frame,
                    )
                ]
            return []
        if method in IGNORED:
            return []
        return [
            _diagnostic(
                f"codex sent an unknown notification {method!r}",
                DiagnosticLevel.INFO,
                DiagnosticCode.UNKNOWN_FRAME,
                frame,
            )
        ]

    # -- items

    def _item(self, params: Mapping[str, Any], completed: bool, frame: Any) -> list[seam.DriverEvent]:
        item = j.obj(params.get("item"))
        kind = j.text(item.get("type"), "")
        item_id = j.nonempty(item.get("id"))
        if not kind or item_id is None:
            return [self._bad("item", frame)]
        if kind in ("agentMessage", "plan"):
            if not completed:
                return []
            events: list[seam.DriverEvent] = []
            if item_id not in self._streamed:
                text = j.text(item.get("text"), "")
                if text:
                    events.append(seam.Content(TextDelta(item_id, text)))
            self._streamed.discard(item_id)
            if kind == "plan":
                events.append(seam.Content(MessageEnded(item_id), extensions={PROPOSED_PLAN: True}))
                return events
            turn_id = j.nonempty(params.get("turnId"))
            extensions = {FORK_POINT: turn_id} if turn_id else None
            events.append(seam.Content(MessageEnded(item_id), extensions=extensions))
            return events
        if kind == "reasoning":
            if completed and item_id in self._reasoning:
                self._reasoning.discard(item_id)
                return [seam.Content(MessageEnded(item_id))]
            return []
        if kind == "userMessage":
            if completed:
                return []
            client_id = j.text(item.get("clientId"), "")
            if client_id.startswith(CLIENT_ID_PREFIX):
                return []
            parts = [j.text(j.obj(part).get("text"), "") for part in j.arr(item.get("content"))]
            text = "".join(parts)
            return [seam.Content(UserMessage(item_id, text))] if text else []
        if kind == "contextCompaction":
            return [seam.Content(ContextCompacted())] if completed else []
        if kind in _NOT_TOOLS:
            return []
        update = tool_update(item, completed)
        previous = self._tools.get(item_id)
        if previous is not None and previous == update:
            return []
        self._tools[item_id] = update
        return [seam.Content(ToolUpdated(update))]

    def _plan(self, params: Mapping[str, Any], frame: Any) -> list[seam.DriverEvent]:
        plan = params.get("plan")
        if not isinstance(plan, list):
            return [self._bad("turn/plan/updated", frame)]
        entries = []
        for step in plan:
            step = j.obj(step)
            content = j.text(step.get("step"), "")
            if content:
                entries.append(
                    PlanEntry(content, _STEP_STATUS.get(j.text(step.get("status"), ""), PlanEntryStatus.PENDING))
                )
        return [seam.Content(PlanUpdated(entries))]

    @staticmethod
    def _bad(what: str, frame: Any) -> seam.Content:
        return _diagnostic(
            f"codex sent a {what} frame without what it needs", DiagnosticLevel.INFO, DiagnosticCode.BAD_FRAME, frame
        )


def content_kinds(events: list[seam.DriverEvent]) -> list[EventKind]:
    """The event kinds among ``events`` (for tests)."""
    return [event.kind for event in events if isinstance(event, seam.Content)]
