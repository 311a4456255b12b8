"""agy's headless stream-json frames -> seam events (pure, never raises).

What flows in: one decoded stdout frame of ``agy --output-format=stream-json``. What flows out: a
list of ``seam.DriverEvent`` s. Frames (all recorded, agy 1.1.x):

- ``{"event": "init", "conversation_id", "init": {cwd, tools, permission_mode}}`` — once per
  process, before the first prompt; the conversation id is the resume token.
- ``{"event": "step_update", "step_update": {conversation_id, step_index, state, step_type, ...}}``
  with ``step_type`` ``user_input`` (the prompt's echo), ``agent_response`` (``text_delta``;
  ``usage`` when ``state`` is ``DONE``), ``tool`` (``tool_name``, ``tool_info`` with ``parameters``,
  ``output`` or ``error``), ``subagent`` (``subagent_info.subagents``), ``system_message`` and
  ``unknown`` (what a skipped ``ask_question`` leaves behind). ``state``: ``ACTIVE``, ``DONE``,
  ``ERROR``.
- ``{"event": "result", "result": {status, response, error?, usage, num_turns}}`` — exactly one
  per prompt; ``SUCCESS`` or ``ERROR``.

Tools are keyed by ``step_index`` (it keeps counting across a resume of the same conversation,
recorded in 08-resume-b/c). Turn rules stay in the engine: a tool still running at a turn's end is
ended there, never here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from anyagent import (
    Cancelled,
    Completed,
    ContextUsage,
    Diagnostic,
    DiagnosticCode,
    DiagnosticInfo,
    DiagnosticLevel,
    Failed,
    MessageEnded,
    TextDelta,
    ToolInput,
    ToolKind,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
    seam,
)
from anyagent import jsonread as j

__all__ = ["TOOL_KINDS", "Translator", "tool_kind", "tool_update"]

TOOL_KINDS: Mapping[str, ToolKind] = {
    "run_command": ToolKind.EXECUTE,
    "send_command_input": ToolKind.EXECUTE,
    "command_status": ToolKind.EXECUTE,
    "view_file": ToolKind.READ,
    "list_dir": ToolKind.READ,
    "read_resource": ToolKind.READ,
    "write_to_file": ToolKind.EDIT,
    "replace_file_content": ToolKind.EDIT,
    "multi_replace_file_content": ToolKind.EDIT,
    "sed_file": ToolKind.EDIT,
    "notebook_edit": ToolKind.EDIT,
    "grep_search": ToolKind.SEARCH,
    "find_by_name": ToolKind.SEARCH,
    "search_web": ToolKind.SEARCH,
    "read_url_content": ToolKind.FETCH,
    "invoke_subagent": ToolKind.SUBAGENT,
    "browser_subagent": ToolKind.SUBAGENT,
}
"""Tool names (the ``init`` frame's list, recorded) -> kinds; anything else is ``OTHER``."""

_STATUS = {"ACTIVE": ToolStatus.RUNNING, "DONE": ToolStatus.COMPLETED, "ERROR": ToolStatus.FAILED}

# parameter names agy's tools use (recorded: CommandLine, TargetFile; the rest unverified)
_COMMAND = ("CommandLine",)
_PATH = ("TargetFile", "AbsolutePath", "DirectoryPath", "SearchPath", "File")
_PATTERN = ("Query", "Pattern", "SearchPattern")
_URL = ("Url", "URL")


def tool_kind(name: str) -> ToolKind:
    """The kind of agy tool ``name``."""
    return TOOL_KINDS.get(name, ToolKind.OTHER)


def _first(parameters: Mapping[str, Any], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = j.nonempty(parameters.get(name))
        if value is not None:
            return value
    return None


def tool_update(step: Mapping[str, Any]) -> ToolUpdate | None:
    """A ``tool`` or ``subagent`` step -> its cumulative snapshot (None without a step index)."""
    index = j.integer(step.get("step_index"))
    if index is None:
        return None
    info = j.obj(step.get("tool_info"))
    name = j.nonempty(step.get("tool_name")) or j.nonempty(info.get("name")) or "tool"
    status = _STATUS.get(j.text(step.get("state"), ""), ToolStatus.RUNNING)
    tool_id = f"step-{index}"
    if j.text(step.get("step_type")) == "subagent":
        agents = [j.obj(agent) for agent in j.arr(j.path(step, "subagent_info", "subagents"))]
        first = agents[0] if agents else {}
        label = j.nonempty(first.get("role")) or j.nonempty(first.get("type_name")) or "subagent"
        prompt = j.nonempty(first.get("initial_prompt"))
        raw = {"subagents": agents} if agents else None
        return ToolUpdate(
            tool_id,
            ToolKind.SUBAGENT,
            f"Subagent: {label}",
            status,
            ToolInput(description=prompt, arguments={"subagents": agents}),
            raw=raw,
        )
    parameters = j.obj(info.get("parameters"))
    command, path = _first(parameters, _COMMAND), _first(parameters, _PATH)
    pattern, url = _first(parameters, _PATTERN), _first(parameters, _URL)
    detail = command or path or pattern or url
    error = j.obj(info.get("error"))
    output = j.text(info.get("output")) if not error else j.text(error.get("message"))
    return ToolUpdate(
        tool_id,
        tool_kind(name),
        f"{name}: {detail}" if detail else name,
        status,
        ToolInput(command=command, path=path, pattern=pattern, url=url, arguments=parameters),
        output=output,
        raw={"tool_name": name, **({"error": error} if error else {})},
    )


@attrs.define
class Translator:
    """One session's translation state: which messages got text, the last step's usage."""

    conversation_id: str | None = None
    _texted: set[int] = attrs.Factory(set)
    _used: int | None = None

    def feed(self, frame: Mapping[str, Any]) -> list[seam.DriverEvent]:
        """One frame -> the events it means (never raises; oddities become diagnostics)."""
        event = j.text(frame.get("event"))
        if event == "step_update":
            return self._step(j.obj(frame.get("step_update")), frame)
        if event == "result":
            return self._result(j.obj(frame.get("result")), frame)
        if event == "init":
            self.conversation_id = j.nonempty(frame.get("conversation_id")) or self.conversation_id
            return []
        return [_diagnostic(f"agy sent an unknown {event or 'untyped'} frame", DiagnosticCode.UNKNOWN_FRAME, frame)]

    def _step(self, step: Mapping[str, Any], frame: Mapping[str, Any]) -> list[seam.DriverEvent]:
        kind = j.text(step.get("step_type"), "")
        index = j.integer(step.get("step_index"))
        if index is None:
            return [_diagnostic("agy sent a step_update without a step_index", DiagnosticCode.BAD_FRAME, frame)]
        if kind == "agent_response":
            return self._response(index, step)
        if kind in ("tool", "subagent"):
            update = tool_update(step)
            return [seam.Content(ToolUpdated(update))] if update is not None else []
        if kind in ("user_input", "system_message"):
            return []  # the prompt's echo; agy's own bookkeeping (no content either way)
        if kind == "unknown":
            message = (
                "agy ran a step it does not describe (an ask_question it skipped: the headless wire "
                "cannot ask questions; the ACP server can)"
            )
            return [_diagnostic(message, DiagnosticCode.UNSUPPORTED, frame, DiagnosticLevel.WARNING)]
        return [_diagnostic(f"agy sent a step of unknown type {kind!r}", DiagnosticCode.UNKNOWN_FRAME, frame)]

    def _response(self, index: int, step: Mapping[str, Any]) -> list[seam.DriverEvent]:
        events: list[seam.DriverEvent] = []
        message_id = f"step-{index}"
        delta = j.text(step.get("text_delta"), "")
        if delta:
            self._texted.add(index)
            events.append(seam.Content(TextDelta(message_id, delta)))
        total = j.integer(j.path(step, "usage", "total_tokens"))
        if total is not None and total > 0:
            self._used = total
        if j.text(step.get("state")) != "ACTIVE" and index in self._texted:
            self._texted.discard(index)
            events.append(seam.Content(MessageEnded(message_id)))
        return events

    def _result(self, result: Mapping[str, Any], frame: Mapping[str, Any]) -> list[seam.DriverEvent]:
        events: list[seam.DriverEvent] = []
        for index in sorted(self._texted):  # a message the turn left open ends with it
            events.append(seam.Content(MessageEnded(f"step-{index}")))
        self._texted.clear()
        if self._used is not None:
            events.append(seam.Content(ContextUsage(self._used)))
        status = j.text(result.get("status"), "")
        if status == "SUCCESS":
            events.append(seam.TurnEnd(Completed()))
        else:
            error = j.nonempty(result.get("error")) or f"agy ended the turn with status {status or 'unknown'}"
            events.append(seam.TurnEnd(Failed(error)))
        return events

    def cancelled(self) -> list[seam.DriverEvent]:
        """The turn's end when anyagent killed agy to cancel it (no ``result`` will come)."""
        events: list[seam.DriverEvent] = [seam.Content(MessageEnded(f"step-{i}")) for i in sorted(self._texted)]
        self._texted.clear()
        events.append(seam.TurnEnd(Cancelled()))
        return events


def result_error(frame: object) -> str | None:
    """The error of a ``result`` frame that is not ``SUCCESS`` (agy's answer to a bad launch), else None."""
    if not isinstance(frame, dict) or frame.get("event") != "result":
        return None
    result = j.obj(frame.get("result"))
    if j.text(result.get("status")) == "SUCCESS":
        return None
    return j.nonempty(result.get("error")) or "agy failed without saying why"


def _diagnostic(
    message: str,
    code: str,
    frame: Mapping[str, Any],
    level: DiagnosticLevel = DiagnosticLevel.INFO,
) -> seam.DriverEvent:
    return seam.Content(Diagnostic(DiagnosticInfo(message, level, code, dict(frame))))
