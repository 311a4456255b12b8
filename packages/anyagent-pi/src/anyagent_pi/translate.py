"""pi's RPC events → seam events: a small stateful translator that never raises.

In: one stdout frame of ``pi --mode rpc`` that is not a ``response`` (the driver correlates
those). Out: a ``Translation`` — seam events for the engine, and at most one
``extension_ui_request`` for the driver to register and answer.

What maps to what:

* ``agent_start`` opens a run; ``agent_end`` ends it: one ``TurnEnd`` per run (``Cancelled`` when
  anyagent cancelled, ``Failed`` when the last assistant message stopped with ``error`` or was
  aborted by pi itself, else ``Completed``). pi ≥ 0.84 adds ``agent_settled`` after
  ``agent_end``; it ends a run only if no ``agent_end`` did. A run nobody prompted (no
  ``StartTurn`` waits) is an agent-originated turn: its content opens it in the engine.
* ``message_start``/``message_end`` of the assistant → a message id and ``MessageEnded``, plus
  ``ContextUsage`` (the message's ``usage.totalTokens`` against the model's context window, the
  session's summed ``usage.cost.total``); ``message_update`` ``text_delta`` / ``thinking_delta``
  → ``TextDelta`` / ``ReasoningDelta``. A user message after the run's first is either a steer
  anyagent sent (its echo: dropped, it is the user's own prompt) or content pi or an extension
  added → ``UserMessage``.
* ``tool_execution_start|update|end`` → ``ToolUpdated`` (running with its growing output, then
  completed or failed — cancelled when it failed while anyagent cancels; a ``write`` carries its
  ``FileDiff``).
* ``compaction_end`` → ``ContextCompacted``; ``auto_retry_start`` → ``api_retry``;
  ``extension_error`` → ``agent_error``; ``queue_update``, ``turn_start``/``turn_end``,
  ``auto_retry_end``, ``compaction_start`` carry nothing the engine needs; anything else →
  ``unknown_frame``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

import attrs

from anyagent import (
    Cancelled,
    Completed,
    ContextCompacted,
    ContextUsage,
    Diagnostic,
    DiagnosticCode,
    DiagnosticInfo,
    DiagnosticLevel,
    Failed,
    FileDiff,
    MessageEnded,
    ReasoningDelta,
    StopReason,
    TextDelta,
    ToolInput,
    ToolKind,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
    UserMessage,
    seam,
)
from anyagent import jsonread as j

__all__ = ["TOOL_KINDS", "Translation", "Translator", "tool_update"]

TOOL_KINDS: Mapping[str, ToolKind] = {
    "bash": ToolKind.EXECUTE,
    "read": ToolKind.READ,
    "ls": ToolKind.READ,
    "edit": ToolKind.EDIT,
    "write": ToolKind.EDIT,
    "grep": ToolKind.SEARCH,
    "find": ToolKind.SEARCH,
}
"""pi's built-in tools by what they do."""

_QUIET = frozenset({"turn_start", "turn_end", "queue_update", "compaction_start", "auto_retry_end"})


@attrs.define
class Translation:
    """What one frame gives: ``events`` for the engine and a ``ui_request`` for the driver."""

    events: list[seam.DriverEvent] = attrs.Factory(list)
    ui_request: Mapping[str, Any] | None = None


def _text_of(content: object) -> str:
    """The text blocks of a pi ``content`` list, joined."""
    parts = [j.text(j.obj(block).get("text"), "") for block in j.arr(content)]
    return "".join(part for part in parts if part)


def tool_update(call_id: str, name: str, args: Mapping[str, Any], status: ToolStatus) -> ToolUpdate:
    """A ``ToolUpdate`` for pi tool ``name`` called with ``args``."""
    command = j.nonempty(args.get("command"))
    path = j.nonempty(args.get("path")) or j.nonempty(args.get("file_path"))
    pattern = j.nonempty(args.get("pattern"))
    title = command or path or pattern or name
    return ToolUpdate(
        call_id,
        TOOL_KINDS.get(name, ToolKind.OTHER),
        f"{name}: {title}" if title != name else name,
        status,
        ToolInput(command=command, path=path, pattern=pattern, arguments=dict(args)),
        raw={"toolName": name},
    )


def _cut(text: str) -> str:
    return text if len(text) <= seam.OUTPUT_CAP else text[: seam.OUTPUT_CAP]


class Translator:
    """One pi session's frame state: see the module docstring."""

    def __init__(self) -> None:
        self.turn_id: str | None = None
        """The ``StartTurn`` whose prompt pi has not finished (None: a run is pi's own)."""
        self.running = False
        self.cancelling = False
        self.steers: list[str] = []
        """Texts of steers written to pi and not yet seen delivered (their echo is dropped)."""
        self.window: int | None = None
        self._cost = 0.0
        self._ids = itertools.count(1)
        self._message: str | None = None
        self._users = 0
        self._stop: tuple[str, str] = ("stop", "")
        self._tools: dict[str, ToolUpdate] = {}

    # -- the driver's side

    def begin_turn(self, turn_id: str | None) -> None:
        """A prompt (or a compaction) for ``turn_id`` goes on the wire now."""
        self.turn_id = turn_id
        self.cancelling = False

    def end_turn(self, stop: StopReason) -> seam.TurnEnd:
        """The ``TurnEnd`` of the current turn (for ends the driver decides: a refused prompt, a
        compaction's answer, an extension command that ran no model)."""
        turn_id, self.turn_id = self.turn_id, None
        self.running = False
        if self.cancelling:
            stop = Cancelled()
        self.cancelling = False
        return seam.TurnEnd(stop, turn_id=turn_id)

    # -- frames

    def feed(self, frame: Mapping[str, Any]) -> Translation:
        """Translate one non-``response`` frame (never raises on any JSON object)."""
        out = Translation()
        kind = j.text(frame.get("type"), "")
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, frame, out)
        elif kind == "extension_ui_request":
            out.ui_request = frame
        elif kind not in _QUIET:
            info = DiagnosticInfo(
                f"pi sent an unknown frame {kind!r}", DiagnosticLevel.INFO, DiagnosticCode.UNKNOWN_FRAME, dict(frame)
            )
            out.events.append(seam.Content(Diagnostic(info)))
        return out

    def _agent_start(self, frame: Mapping[str, Any], out: Translation) -> None:
        self.running = True
        self._users = 0
        self._stop = ("stop", "")

    def _agent_end(self, frame: Mapping[str, Any], out: Translation) -> None:
        if not self.running and (frame.get("type") == "agent_settled" or self.turn_id is None):
            return  # pi >= 0.84: agent_end already ended this run (or a stray end: nothing runs)
        for message in reversed(j.arr(frame.get("messages"))):
            message = j.obj(message)
            if message.get("role") == "assistant":
                self._stop = (j.text(message.get("stopReason"), "stop"), j.text(message.get("errorMessage"), ""))
                break
        reason, error = self._stop
        stop: StopReason
        if reason == "error":
            stop = Failed(error or "pi reported an error")
        elif reason == "aborted":
            stop = Failed(error or "pi aborted the run")
        else:
            stop = Completed()
        out.events.append(self.end_turn(stop))

    def _message_start(self, frame: Mapping[str, Any], out: Translation) -> None:
        message = j.obj(frame.get("message"))
        role = message.get("role")
        if role == "assistant":
            self._message = f"pi-m{next(self._ids)}"
        elif role == "user":
            self._users += 1
            if self._users > 1:  # delivered into this run: our steer, or pi's / an extension's
                text = _text_of(message.get("content")) or j.text(message.get("content"), "")
                if text in self.steers:
                    self.steers.remove(text)
                    return
                out.events.append(seam.Content(UserMessage(f"pi-u{next(self._ids)}", text)))

    def delta(self, frame: Mapping[str, Any]) -> TextDelta | seam.Content | None:
        """A ``message_update`` frame's text or thinking delta (the hot path: no ``Translation``):
        a bare ``TextDelta`` (the engine takes it as its ``Content``) or a ``ReasoningDelta``'s content."""
        event = frame.get("assistantMessageEvent")
        if not isinstance(event, dict):
            return None
        kind = event.get("type")
        delta = event.get("delta")
        if not delta or not isinstance(delta, str) or kind not in ("text_delta", "thinking_delta"):
            return None
        if self._message is None:
            self._message = f"pi-m{next(self._ids)}"
        if kind == "text_delta":
            return TextDelta(self._message, delta)
        return seam.Content(ReasoningDelta(self._message, delta))

    def _message_update(self, frame: Mapping[str, Any], out: Translation) -> None:
        made = self.delta(frame)
        if made is not None:
            out.events.append(seam.Content(made) if type(made) is TextDelta else made)

    def _message_end(self, frame: Mapping[str, Any], out: Translation) -> None:
        message = j.obj(frame.get("message"))
        if message.get("role") != "assistant":
            return
        self._stop = (j.text(message.get("stopReason"), "stop"), j.text(message.get("errorMessage"), ""))
        message_id, self._message = self._message, None
        if message_id is not None:
            out.events.append(seam.Content(MessageEnded(message_id)))
        usage = j.obj(message.get("usage"))
        cost = j.obj(usage.get("cost")).get("total")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            self._cost += float(cost)
        tokens = usage.get("totalTokens")
        if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
            out.events.append(seam.Content(ContextUsage(tokens, self.window, self._cost)))

    def _tool_start(self, frame: Mapping[str, Any], out: Translation) -> None:
        call_id = j.nonempty(frame.get("toolCallId"))
        if call_id is None:
            out.events.append(_bad(frame, "a tool start without toolCallId"))
            return
        tool = tool_update(call_id, j.text(frame.get("toolName"), "tool"), j.obj(frame.get("args")), ToolStatus.RUNNING)
        self._tools[call_id] = tool
        out.events.append(seam.Content(ToolUpdated(tool)))

    def _tool_update(self, frame: Mapping[str, Any], out: Translation) -> None:
        call_id = j.nonempty(frame.get("toolCallId"))
        tool = self._tools.get(call_id or "")
        if tool is None:
            return
        output = _text_of(j.obj(frame.get("partialResult")).get("content"))
        if output and output != tool.output:
            tool = attrs.evolve(tool, output=_cut(output))
            self._tools[tool.id] = tool
            out.events.append(seam.Content(ToolUpdated(tool)))

    def _tool_end(self, frame: Mapping[str, Any], out: Translation) -> None:
        call_id = j.nonempty(frame.get("toolCallId"))
        if call_id is None:
            out.events.append(_bad(frame, "a tool end without toolCallId"))
            return
        tool = self._tools.pop(call_id, None) or tool_update(
            call_id, j.text(frame.get("toolName"), "tool"), j.obj(frame.get("args")), ToolStatus.RUNNING
        )
        failed = frame.get("isError") is True
        output = _text_of(j.obj(frame.get("result")).get("content"))
        diffs: tuple[FileDiff, ...] = ()
        content = tool.input.arguments.get("content")
        if (
            not failed
            and j.text(tool.raw.get("toolName") if tool.raw else None) == "write"
            and isinstance(content, str)
        ):
            diffs = (FileDiff(tool.input.path or "", content),)
        status = ToolStatus.COMPLETED
        if failed:  # a tool pi stops because of anyagent's cancel (or a dismissed gate) is cancelled
            status = ToolStatus.CANCELLED if self.cancelling else ToolStatus.FAILED
        out.events.append(
            seam.Content(ToolUpdated(attrs.evolve(tool, status=status, output=_cut(output), diffs=diffs)))
        )

    def _compaction_end(self, frame: Mapping[str, Any], out: Translation) -> None:
        if frame.get("aborted") is True or not frame.get("result"):
            return
        out.events.append(seam.Content(ContextCompacted()))

    def _retry(self, frame: Mapping[str, Any], out: Translation) -> None:
        message = j.text(frame.get("errorMessage"), "") or "the model API failed"
        attempt = frame.get("attempt")
        info = DiagnosticInfo(
            f"pi retries the model API (attempt {attempt}): {message}",
            DiagnosticLevel.WARNING,
            DiagnosticCode.API_RETRY,
            dict(frame),
        )
        out.events.append(seam.Content(Diagnostic(info)))

    def _extension_error(self, frame: Mapping[str, Any], out: Translation) -> None:
        message = j.text(frame.get("error"), "") or json.dumps(dict(frame))[:200]
        info = DiagnosticInfo(
            f"a pi extension failed: {message}", DiagnosticLevel.WARNING, DiagnosticCode.AGENT_ERROR, dict(frame)
        )
        out.events.append(seam.Content(Diagnostic(info)))


def _bad(frame: Mapping[str, Any], what: str) -> seam.Content:
    return seam.Content(
        Diagnostic(DiagnosticInfo(f"pi sent {what}", DiagnosticLevel.INFO, DiagnosticCode.BAD_FRAME, dict(frame)))
    )


_HANDLERS = {
    "agent_start": Translator._agent_start,
    "agent_end": Translator._agent_end,
    "agent_settled": Translator._agent_end,
    "message_start": Translator._message_start,
    "message_update": Translator._message_update,
    "message_end": Translator._message_end,
    "tool_execution_start": Translator._tool_start,
    "tool_execution_update": Translator._tool_update,
    "tool_execution_end": Translator._tool_end,
    "compaction_end": Translator._compaction_end,
    "auto_retry_start": Translator._retry,
    "extension_error": Translator._extension_error,
}
