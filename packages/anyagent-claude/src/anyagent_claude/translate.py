"""Claude Code's stdout frames → anyagent seam events, and anyagent answers → stdin frames. No I/O.

``Translator.feed(frame)`` takes one parsed stdout line and returns a ``Translation``: the
``DriverEvent``s to send to the engine, frames to write back to the CLI (answers to control
requests anyagent does not serve, so the CLI never waits), replies to anyagent's own control
requests, and notes for the driver (session id, permission mode, a finished turn). A frame of an
unexpected shape becomes defaults or a ``Diagnostic`` (the frame in ``raw``), never an exception.

Turn rules stay in the engine; the translator only keeps what the wire needs to be read:
which message a delta belongs to, which tools are running (a tool that goes to the background is
reported with ``ToolBackgrounded``; the engine ends the others at the turn's end), which
``can_use_tool`` requests wait for an answer (answered or declined once), the last usage for
context occupancy, and the (user uuid, fork point) of every finished turn.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from typing import Any, Union

import attrs

from anyagent import (
    Answer,
    Cancelled,
    ChoicesAnswer,
    Completed,
    ContextCompacted,
    ContextUsage,
    Diagnostic,
    DiagnosticCode,
    DiagnosticInfo,
    DiagnosticLevel,
    EventKind,
    Failed,
    LoginMethod,
    MessageEnded,
    PermissionAnswer,
    PermissionChoice,
    PermissionRequest,
    PlanUpdated,
    Question,
    QuestionRequest,
    QuestionsAnswer,
    ReasoningDelta,
    Refused,
    RequestOpened,
    StopReason,
    TextAnswer,
    TextDelta,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
    UserMessage,
    seam,
)
from anyagent import jsonread as j

from . import frames
from .tools import PLAN_TOOL, QUESTION_TOOL, cap, plan_entries, questions_of, tool_finished, tool_started

__all__ = [
    "FORK_POINT",
    "ControlReply",
    "ModeSeen",
    "SessionSeen",
    "Translation",
    "Translator",
    "TurnFinished",
    "TurnMark",
]

FORK_POINT = "claude/fork_point"
"""Extension key on ``MessageEnded``: the assistant uuid to fork a new session at."""

# system subtypes that carry nothing an app needs (hooks, telemetry, task bookkeeping)
_QUIET_SYSTEM = frozenset(
    {
        "hook_started",
        "hook_response",
        "hook_progress",
        "thinking_tokens",
        "background_tasks_changed",
        "task_updated",
        "task_progress",
        "session_state_changed",
        "files_persisted",
        "local_command_output",
        "notification",
        "permission_denied",
        "plugin_install",
        "mirror_error",
        "memory_recall",
        "elicitation_complete",
    }
)
# top-level frame types that carry nothing an app needs
_QUIET_TYPES = frozenset(
    {
        "rate_limit_event",
        "command_lifecycle",
        "keep_alive",
        "tool_progress",
        "tool_use_summary",
        "prompt_suggestion",
        "auth_status",
        "streamlined_text",
        "streamlined_tool_use_summary",
    }
)


@attrs.frozen
class ControlReply:
    """The CLI's answer to one of anyagent's control requests."""

    request_id: str
    ok: bool
    body: Mapping[str, Any] = attrs.field(factory=dict)
    error: str = ""


@attrs.frozen
class SessionSeen:
    """``system/init``: the session id the CLI is using, its model, permission mode and the
    tools it offers the model (None when the frame lists none)."""

    session_id: str
    model: str | None = None
    permission_mode: str | None = None
    tools: tuple[str, ...] | None = None


@attrs.frozen
class ModeSeen:
    """The CLI reported a new permission mode."""

    mode: str


@attrs.frozen
class TurnMark:
    """One finished turn: the uuid of the prompt that started it (None for an agent turn) and the
    uuid of its last main assistant frame (the point to fork at to keep this turn)."""

    user_uuid: str | None
    fork_point: str | None


@attrs.frozen
class TurnFinished:
    """A ``result`` frame ended a turn with ``stop``."""

    mark: TurnMark
    stop: StopReason


Note = Union[SessionSeen, ModeSeen, TurnFinished]


@attrs.define
class Translation:
    """What one frame means: events for the engine, frames to write back, replies, notes."""

    events: list[seam.DriverEvent] = attrs.Factory(list)
    writes: list[dict[str, Any]] = attrs.Factory(list)
    replies: list[ControlReply] = attrs.Factory(list)
    notes: list[Note] = attrs.Factory(list)

    def content(self, kind: EventKind, parent: str | None = None, extensions: Mapping[str, Any] | None = None) -> None:
        """Queue one content event."""
        self.events.append(seam.Content(kind, parent, extensions))

    def diagnostic(
        self,
        message: str,
        code: str,
        level: DiagnosticLevel = DiagnosticLevel.INFO,
        frame: object = None,
    ) -> None:
        """Queue a diagnostic with a ``DiagnosticCode``; ``frame`` (the raw frame) goes in ``raw``."""
        self.content(Diagnostic(DiagnosticInfo(message, level, code, frame)))


@attrs.define
class _Tool:
    update: ToolUpdate
    parent: str | None


@attrs.define
class _OpenRequest:
    input: Mapping[str, Any]
    suggestions: list[Any]
    questions: tuple[Question, ...] = ()


class Translator:
    """Reads Claude Code frames one at a time; see the module docstring.

    ``login`` is what ``AuthLost`` carries when the CLI reports ``authentication_failed``.
    """

    def __init__(self, login: Sequence[LoginMethod] = ()) -> None:
        self.login = tuple(login)
        self.session_id: str | None = None
        self.history: list[TurnMark] = []
        self.fork_point: str | None = None
        self._tools: dict[str, _Tool] = {}
        self._skipped: set[str] = set()
        self._tasks: dict[str, str] = {}
        self._background: set[str] = set()
        self._requests: dict[str, _OpenRequest] = {}
        self._current: dict[str | None, str] = {}
        self._open: dict[str, str | None] = {}
        self._streamed: set[str] = set()
        self._usage: dict[str, int] | None = None
        self._usage_message: str | None = None
        self._turn_user: str | None = None
        self._in_flight: collections.deque[tuple[str | None, str | None]] = collections.deque()
        self._turn_fork: str | None = None
        self._cancelling = False
        self._compacted = False
        self._auth_lost = False

    # -----------------------------------------------------------------------------------------
    # driver → translator

    def begin_turn(self, user_uuid: str | None, turn_id: str | None = None) -> None:
        """The driver wrote the prompt ``user_uuid`` for the engine's turn ``turn_id`` (None: a
        compaction). Claude answers prompts in order, one ``result`` each, so results are matched
        to prompts first in, first out: a result that arrives while a newer prompt is already on
        the wire ends an older turn (one the engine gave up on) and is stamped with its id."""
        if self._in_flight and self._turn_user is not None:
            # the engine ended the previous turn without its result (a cancel it gave up on):
            # close its books here, so its leftovers never spill into the new turn
            self._forget_tools()
            self._finish_turn(Cancelled())
        self._in_flight.append((user_uuid, turn_id))
        self._turn_user = user_uuid
        self._turn_fork = None
        self._cancelling = False

    def cancel(self) -> list[dict[str, Any]]:
        """The turn is being cancelled: its ``result`` means ``Cancelled``; the frames that deny
        every open request (each is then forgotten, so a later ``decline`` of it writes nothing)."""
        self._cancelling = True
        writes = [self.decline(request_id, frames.CANCEL_MESSAGE) for request_id in list(self._requests)]
        return [frame for frame in writes if frame is not None]

    def decline(self, request_id: str, message: str = frames.DECLINE_MESSAGE) -> dict[str, Any] | None:
        """The frame that denies the open request ``request_id`` (the engine closed it unanswered),
        or None when it is not open (already answered, withdrawn, denied or ended with its turn)."""
        if self._requests.pop(request_id, None) is None:
            return None
        return frames.permission_deny(request_id, message)

    def cancelled_without_result(self) -> TurnFinished:
        """The interrupt removed the prompt before it ran: no ``result`` will come, end it here."""
        self.forget_prompt(self._turn_user)
        return self._finish_turn(Cancelled())

    def forget_prompt(self, user_uuid: str | None) -> str | None:
        """Prompt ``user_uuid`` will get no ``result`` (never written, or removed by an interrupt);
        returns its turn id."""
        for entry in self._in_flight:
            if entry[0] == user_uuid:
                self._in_flight.remove(entry)
                return entry[1]
        return None

    def new_process(self) -> None:
        """A relaunched ``claude`` answers only the prompts written to it."""
        self._in_flight.clear()

    def turn_of(self, user_uuid: str | None) -> str | None:
        """The engine turn of the prompt ``user_uuid`` still waiting for its result."""
        return next((turn_id for uuid_, turn_id in self._in_flight if uuid_ == user_uuid), None)

    def answer(self, request_id: str, answer: Answer) -> dict[str, Any] | None:
        """The frame that answers the open ``can_use_tool`` request ``request_id`` (None if not open)."""
        pending = self._requests.pop(request_id, None)
        if pending is None:
            return None
        if isinstance(answer, QuestionsAnswer):
            return frames.permission_allow(request_id, {**pending.input, "answers": _answers(pending, answer)})
        if isinstance(answer, PermissionAnswer):
            if answer.choice is PermissionChoice.ALLOW_ONCE:
                return frames.permission_allow(request_id, pending.input)
            if answer.choice is PermissionChoice.ALLOW_ALWAYS:
                return frames.permission_allow(request_id, pending.input, pending.suggestions)
        return frames.permission_deny(request_id)

    @property
    def open_requests(self) -> list[str]:
        """Ids of ``can_use_tool`` requests waiting for an answer."""
        return list(self._requests)

    # -----------------------------------------------------------------------------------------
    # frames

    def feed(self, frame: object) -> Translation:
        """Translate one parsed stdout line. A frame of an odd shape becomes defaults or a
        diagnostic; the driver loop reports anything that still raises as ``frame_error``."""
        out = Translation()
        if not isinstance(frame, Mapping):
            out.diagnostic("Claude sent a line that is not a JSON object", DiagnosticCode.BAD_LINE, frame=frame)
            return out
        kind = frame.get("type")
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            handler(self, frame, out)
        elif not isinstance(kind, str) or kind not in _QUIET_TYPES:  # a list or object "type" is unknown too
            out.diagnostic(f"Claude sent an unknown frame type {kind!r}", DiagnosticCode.UNKNOWN_FRAME, frame=frame)
        return out

    def text_delta(self, frame: object) -> TextDelta | None:
        """The fast path for the most common frame: a top-level ``stream_event`` text delta of a
        message with an ``api_message_id`` becomes its ``TextDelta`` (exactly what ``feed`` makes
        of it, as a bare ``TextDelta`` the engine takes as its content); anything else is None
        (use ``feed``). A frame without one of those keys, or with the wrong types, is None too."""
        if type(frame) is not dict:
            return None
        try:  # subscripts, not ``get``: no call per key on the flood's path
            if frame["type"] != "stream_event" or frame["parent_tool_use_id"]:
                return None
            event = frame["event"]
            if type(event) is not dict or event["type"] != "content_block_delta":
                return None
            delta = event["delta"]
            if type(delta) is not dict or delta["type"] != "text_delta":
                return None
            message_id = frame["api_message_id"]
            text = delta["text"]
        except KeyError:
            return None
        if type(text) is not str or type(message_id) is not str or not text or not message_id:
            return None
        self._streamed.add(message_id)
        self._open[message_id] = None
        return TextDelta(message_id, text)

    # stream_event: the Anthropic streaming events, wrapped

    def _stream(self, frame: Mapping[str, Any], out: Translation) -> None:
        event = j.obj(frame.get("event"))
        parent = j.nonempty(frame.get("parent_tool_use_id"))
        kind = event.get("type")
        if kind == "message_start":
            message = j.obj(event.get("message"))
            message_id = j.nonempty(message.get("id")) or j.nonempty(frame.get("api_message_id"))
            if message_id is not None:
                self._current[parent] = message_id
                if parent is None:
                    self._take_usage(message_id, message.get("usage"))
        elif kind == "content_block_delta":
            self._delta(self._message_id(frame, parent), j.obj(event.get("delta")), parent, out)
        elif kind == "message_delta":
            if parent is None:
                self._merge_usage(event.get("usage"))
        elif kind == "message_stop":
            self._end_message(self._message_id(frame, parent), out)

    def _message_id(self, frame: Mapping[str, Any], parent: str | None) -> str:
        return j.nonempty(frame.get("api_message_id")) or self._current.get(parent) or f"{parent or 'main'}-message"

    def _delta(self, message_id: str, delta: Mapping[str, Any], parent: str | None, out: Translation) -> None:
        kind = delta.get("type")
        if kind not in ("text_delta", "thinking_delta"):
            return  # input_json_delta (the tool input arrives whole), signature_delta, citations
        self._streamed.add(message_id)
        text = j.text(delta.get("text") if kind == "text_delta" else delta.get("thinking"), "")
        if not text:
            return
        self._open[message_id] = parent
        value: EventKind = TextDelta(message_id, text) if kind == "text_delta" else ReasoningDelta(message_id, text)
        out.content(value, parent)

    def _end_message(self, message_id: str, out: Translation) -> None:
        if message_id not in self._open:
            return
        parent = self._open.pop(message_id)
        extensions = {FORK_POINT: self.fork_point} if parent is None and self.fork_point else None
        out.content(MessageEnded(message_id), parent, extensions)

    # assistant: one frame per finished content block

    def _assistant(self, frame: Mapping[str, Any], out: Translation) -> None:
        message = j.obj(frame.get("message"))
        parent = j.nonempty(frame.get("parent_tool_use_id"))
        message_id = j.nonempty(message.get("id")) or j.nonempty(frame.get("uuid")) or "assistant"
        uuid = j.nonempty(frame.get("uuid"))
        if parent is None:
            if uuid is not None:
                self.fork_point = uuid
                self._turn_fork = uuid
            if message_id != self._usage_message:
                self._take_usage(message_id, message.get("usage"))
        streamed = message_id in self._streamed
        for block in j.arr(message.get("content")):
            block = j.obj(block)
            kind = block.get("type")
            if kind in ("text", "thinking") and not streamed:
                text = j.text(block.get("text") if kind == "text" else block.get("thinking"), "")
                if text:
                    self._open[message_id] = parent
                    out.content(
                        TextDelta(message_id, text) if kind == "text" else ReasoningDelta(message_id, text), parent
                    )
            elif kind in ("tool_use", "server_tool_use"):
                self._tool_use(block, parent, out)
            elif isinstance(kind, str) and kind.endswith("_tool_result"):
                self._tool_result(block, None, parent, out)
        if not streamed:
            self._end_message(message_id, out)  # nothing streams for it (a synthetic message)
        if frame.get("error") == "authentication_failed" and not self._auth_lost:
            self._auth_lost = True
            out.events.append(seam.AuthLost(self.login))

    def _tool_use(self, block: Mapping[str, Any], parent: str | None, out: Translation) -> None:
        tool_id = j.nonempty(block.get("id"))
        name = j.text(block.get("name"), "")
        if tool_id is None or tool_id in self._tools or tool_id in self._skipped:
            return
        if name == PLAN_TOOL:
            self._skipped.add(tool_id)
            out.content(PlanUpdated(plan_entries(block.get("input"))), parent)
            return
        if name == QUESTION_TOOL:
            self._skipped.add(tool_id)  # it surfaces as a question when the CLI asks for permission
            return
        update = tool_started(tool_id, name, block.get("input"))
        self._tools[tool_id] = _Tool(update, parent)
        out.content(ToolUpdated(update), parent)

    # user: tool results, subagent prompts, replays of anyagent's own prompts

    def _user(self, frame: Mapping[str, Any], out: Translation) -> None:
        if j.flag(frame.get("isReplay")):
            return
        parent = j.nonempty(frame.get("parent_tool_use_id"))
        content = j.obj(frame.get("message")).get("content")
        if isinstance(content, str):
            self._user_text(frame, content, parent, out)
            return
        blocks = [j.obj(block) for block in j.arr(content)]
        results = [block for block in blocks if block.get("type") == "tool_result"]
        use_result = frame.get("tool_use_result") if len(results) == 1 else None
        for block in results:
            self._tool_result(block, use_result, parent, out)
        texts = [j.text(block.get("text"), "") for block in blocks if block.get("type") == "text"]
        if texts:
            self._user_text(frame, "\n".join(texts), parent, out)

    def _user_text(self, frame: Mapping[str, Any], text: str, parent: str | None, out: Translation) -> None:
        if parent is None or not text:
            return  # the CLI's own bookkeeping ("[Request interrupted by user]", command echoes)
        message_id = j.nonempty(frame.get("uuid")) or f"{parent}-prompt"
        out.content(UserMessage(message_id, text), parent)
        out.content(MessageEnded(message_id), parent)

    def _tool_result(self, block: Mapping[str, Any], use_result: object, parent: str | None, out: Translation) -> None:
        tool_id = j.nonempty(block.get("tool_use_id"))
        if tool_id is None or tool_id in self._skipped:
            return
        entry = self._tools.get(tool_id)
        if entry is None:
            entry = _Tool(ToolUpdate(tool_id, status=ToolStatus.RUNNING), parent)
        update = tool_finished(entry.update, block, use_result, background=tool_id in self._background)
        if self._cancelling and update.status is ToolStatus.FAILED:
            update = attrs.evolve(update, status=ToolStatus.CANCELLED)  # denied or stopped by the cancel
        if update.status.active:
            entry.update = update
            self._tools[tool_id] = entry
            task_id = j.nonempty(j.obj(use_result).get("backgroundTaskId"))
            if task_id is not None:
                self._tasks[task_id] = tool_id
            out.content(ToolUpdated(update), entry.parent)
            self._backgrounded(tool_id, out)  # its result only says it started: it runs on
            return
        self._tools.pop(tool_id, None)
        out.content(ToolUpdated(update), entry.parent)

    def _backgrounded(self, tool_id: str, out: Translation) -> None:
        """``tool_id`` runs past its turn: tell the engine once (``TurnEnded.background``)."""
        if tool_id not in self._background:
            self._background.add(tool_id)
            out.events.append(seam.ToolBackgrounded(tool_id))

    # control protocol

    def _control_request(self, frame: Mapping[str, Any], out: Translation) -> None:
        request_id = j.nonempty(frame.get("request_id"))
        request = j.obj(frame.get("request"))
        subtype = j.text(request.get("subtype"), "")
        if request_id is None:
            out.diagnostic("Claude sent a control request without an id", DiagnosticCode.BAD_FRAME, frame=frame)
            return
        if subtype == "can_use_tool":
            self._can_use_tool(request_id, request, frame, out)
            return
        out.writes.append(frames.control_error(request_id, f"anyagent does not handle {subtype!r} control requests"))
        out.diagnostic(
            f"Claude sent an unsupported control request {subtype!r}; answered with an error",
            DiagnosticCode.UNKNOWN_FRAME,
            frame=frame,
        )

    def _can_use_tool(
        self, request_id: str, request: Mapping[str, Any], frame: Mapping[str, Any], out: Translation
    ) -> None:
        tool_name = j.text(request.get("tool_name"), "")
        tool_use_id = j.nonempty(request.get("tool_use_id"))
        arguments = dict(j.obj(request.get("input")))
        entry = self._tools.get(tool_use_id) if tool_use_id else None
        parent = entry.parent if entry is not None else None
        if tool_name == QUESTION_TOOL:
            questions = questions_of(arguments)
            if not questions:
                out.writes.append(frames.permission_deny(request_id, "The question had no readable questions."))
                out.diagnostic(
                    "Claude asked an AskUserQuestion without questions; declined", DiagnosticCode.BAD_FRAME, frame=frame
                )
                return
            self._requests[request_id] = _OpenRequest(arguments, [], questions)
            out.content(RequestOpened(QuestionRequest(request_id, questions)), parent)
            return
        suggestions = j.arr(request.get("permission_suggestions"))
        tool = entry.update if entry is not None else tool_started(tool_use_id or request_id, tool_name, arguments)
        tool = attrs.evolve(tool, status=ToolStatus.PENDING)
        options = [PermissionChoice.ALLOW_ONCE]
        if suggestions:
            options.append(PermissionChoice.ALLOW_ALWAYS)
        options.append(PermissionChoice.DENY_ONCE)
        detail = (
            j.nonempty(request.get("decision_reason"))
            or j.nonempty(request.get("description"))
            or j.nonempty(request.get("blocked_path"))
        )
        self._requests[request_id] = _OpenRequest(arguments, suggestions)
        out.content(RequestOpened(PermissionRequest(request_id, tool, tuple(options), detail)), parent)

    def _control_cancel(self, frame: Mapping[str, Any], out: Translation) -> None:
        request_id = j.nonempty(frame.get("request_id"))
        if request_id is not None and self._requests.pop(request_id, None) is not None:
            out.events.append(seam.RequestWithdrawn(request_id))

    def _control_response(self, frame: Mapping[str, Any], out: Translation) -> None:
        response = j.obj(frame.get("response"))
        request_id = j.nonempty(response.get("request_id"))
        if request_id is None:
            out.diagnostic("Claude sent a control response without a request id", DiagnosticCode.BAD_FRAME, frame=frame)
            return
        ok = response.get("subtype") == "success"
        out.replies.append(
            ControlReply(request_id, ok, dict(j.obj(response.get("response"))), j.text(response.get("error"), ""))
        )

    # system

    def _system(self, frame: Mapping[str, Any], out: Translation) -> None:
        subtype = j.text(frame.get("subtype"), "")
        if subtype == "init":
            session_id = j.nonempty(frame.get("session_id"))
            if session_id is not None:
                self.session_id = session_id
                tools = frame.get("tools")
                out.notes.append(
                    SessionSeen(
                        session_id,
                        j.nonempty(frame.get("model")),
                        j.nonempty(frame.get("permissionMode")),
                        tuple(tool for tool in tools if isinstance(tool, str)) if isinstance(tools, list) else None,
                    )
                )
        elif subtype == "status":
            self._status(frame, out)
        elif subtype == "compact_boundary":
            post = j.integer(j.obj(frame.get("compact_metadata")).get("post_tokens"), -1)
            if post >= 0:
                self._usage = {"input_tokens": post}  # what the turn's ContextUsage reports
                self._usage_message = None
            self._compaction_done(out)
        elif subtype == "task_started":
            self._task_started(frame, out)
        elif subtype == "task_notification":
            self._task_notification(frame, out)
        elif subtype == "api_retry":
            attempt, most = j.integer(frame.get("attempt"), 0), j.integer(frame.get("max_retries"), 0)
            error = j.text(frame.get("error"), "") or j.text(frame.get("error_status"), "") or "an API error"
            out.diagnostic(
                f"Claude is retrying the model request (attempt {attempt} of {most}): {error}",
                DiagnosticCode.API_RETRY,
                frame=frame,
            )
        elif subtype not in _QUIET_SYSTEM:
            out.diagnostic(
                f"Claude sent an unknown system frame {subtype!r}", DiagnosticCode.UNKNOWN_FRAME, frame=frame
            )

    def _status(self, frame: Mapping[str, Any], out: Translation) -> None:
        mode = j.nonempty(frame.get("permissionMode"))
        if mode is not None:
            out.notes.append(ModeSeen(mode))
        if frame.get("status") == "compacting":
            self._compacted = False
        result = frame.get("compact_result")
        if result == "success":
            self._compaction_done(out)
        elif isinstance(result, str):
            error = j.text(frame.get("compact_error"), "") or f"compaction {result}"
            out.diagnostic(
                f"Claude did not compact: {error}", DiagnosticCode.COMPACT_FAILED, DiagnosticLevel.WARNING, frame
            )

    def _compaction_done(self, out: Translation) -> None:
        if not self._compacted:
            self._compacted = True
            out.content(ContextCompacted())

    def _task_started(self, frame: Mapping[str, Any], out: Translation) -> None:
        """A tool went to the background (``run_in_background``, an async subagent): its result
        will not finish it; the task's notification will."""
        task_id = j.nonempty(frame.get("task_id"))
        tool_id = j.nonempty(frame.get("tool_use_id"))
        if task_id is not None and tool_id is not None and j.flag(frame.get("is_backgrounded")):
            self._tasks[task_id] = tool_id
            self._backgrounded(tool_id, out)

    def _task_notification(self, frame: Mapping[str, Any], out: Translation) -> None:
        task_id = j.nonempty(frame.get("task_id"))
        tool_id = j.nonempty(frame.get("tool_use_id")) or (self._tasks.get(task_id) if task_id else None)
        if tool_id is None:
            return
        if task_id is not None:
            self._tasks.pop(task_id, None)
        if tool_id not in self._background:
            # a foreground task (an ``Agent`` call with ``run_in_background: false``): the
            # pinned CLI may notify before the call's ``tool_result``, which is what ends the tool
            # (with its kind, title and result); a notification after the result finds no entry
            return
        self._background.discard(tool_id)
        entry = self._tools.pop(tool_id, None)
        if entry is None:
            return  # a task this process never saw start (or already reported)
        status = j.text(frame.get("status"), "")
        if status == "completed":
            final = ToolStatus.COMPLETED
        elif status in ("killed", "stopped", "cancelled"):
            final = ToolStatus.CANCELLED
        else:
            final = ToolStatus.FAILED
        summary = j.text(frame.get("summary"), "")
        output = "\n".join(part for part in (entry.update.output, summary) if part)
        out.content(ToolUpdated(attrs.evolve(entry.update, status=final, output=cap(output) or None)), entry.parent)

    # result: the end of a turn, exactly one per turn

    def _result(self, frame: Mapping[str, Any], out: Translation) -> None:
        stop = self._stop(frame)
        owner = self._in_flight.popleft()[1] if self._in_flight else None
        if self._in_flight:  # a newer prompt is on the wire: this ends an older turn, already over
            out.events.append(seam.TurnEnd(stop, turn_id=owner))
            return
        self._forget_tools()
        for message_id in list(self._open):
            self._end_message(message_id, out)  # an interrupted message never gets its message_stop
        usage = self._context_usage(frame)
        if usage is not None:
            out.content(usage)
        finished = self._finish_turn(stop)
        out.notes.append(finished)
        out.events.append(seam.TurnEnd(stop, turn_id=owner))

    def _stop(self, frame: Mapping[str, Any]) -> StopReason:
        if self._cancelling or j.text(frame.get("terminal_reason"), "").startswith("aborted"):
            return Cancelled()
        subtype = j.text(frame.get("subtype"), "")
        if j.flag(frame.get("is_error")) or (subtype and subtype != "success"):
            errors = [error for error in j.arr(frame.get("errors")) if isinstance(error, str)]
            message = j.nonempty(frame.get("result")) or "; ".join(errors) or subtype or "the turn failed"
            return Failed(message)
        if frame.get("stop_reason") == "refusal":
            return Refused()
        return Completed()

    def _context_usage(self, frame: Mapping[str, Any]) -> ContextUsage | None:
        usage = self._usage
        if usage is None:
            return None
        used = sum(usage.get(key, 0) for key in _USAGE_KEYS)
        windows = [j.integer(j.obj(model).get("contextWindow"), 0) for model in j.obj(frame.get("modelUsage")).values()]
        window = max((w for w in windows if w > 0), default=None)
        cost = frame.get("total_cost_usd")
        return ContextUsage(
            used, window, float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
        )

    def _forget_tools(self) -> None:
        """Tools that never got a result end with the turn (the engine reports them ``FAILED``,
        or ``CANCELLED`` for a cancelled turn); background tasks keep running."""
        background = self._background | set(self._tasks.values())
        for tool_id in [tool_id for tool_id in self._tools if tool_id not in background]:
            del self._tools[tool_id]

    def _finish_turn(self, stop: StopReason) -> TurnFinished:
        mark = TurnMark(self._turn_user, self._turn_fork or self.fork_point)
        self.history.append(mark)
        self._requests.clear()
        self._current.clear()
        self._streamed.clear()
        self._open.clear()
        self._usage = None
        self._usage_message = None
        self._turn_user = None
        self._turn_fork = None
        self._cancelling = False
        self._compacted = False
        return TurnFinished(mark, stop)

    # usage

    def _take_usage(self, message_id: str, usage: object) -> None:
        counts = _counts(usage)
        if counts:
            self._usage = counts
            self._usage_message = message_id

    def _merge_usage(self, usage: object) -> None:
        counts = _counts(usage)
        if counts and self._usage is not None:
            self._usage.update(counts)


_USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


def _counts(usage: object) -> dict[str, int]:
    data = j.obj(usage)
    return {key: j.integer(data[key], 0) for key in _USAGE_KEYS if key in data and j.integer(data[key], -1) >= 0}


def _answers(pending: _OpenRequest, answer: QuestionsAnswer) -> dict[str, str]:
    """AskUserQuestion's ``answers``: question text → the chosen labels (comma-joined) or free text."""
    result: dict[str, str] = {}
    for question, given in zip(pending.questions, answer.answers, strict=False):
        if isinstance(given, TextAnswer):
            result[question.text] = given.value
        elif isinstance(given, ChoicesAnswer):
            labels = {choice.id: choice.label for choice in question.choices}
            result[question.text] = ", ".join(labels.get(choice_id, choice_id) for choice_id in given.ids)
    return result


_HANDLERS = {
    "stream_event": Translator._stream,
    "assistant": Translator._assistant,
    "user": Translator._user,
    "control_request": Translator._control_request,
    "control_cancel_request": Translator._control_cancel,
    "control_response": Translator._control_response,
    "system": Translator._system,
    "result": Translator._result,
}
