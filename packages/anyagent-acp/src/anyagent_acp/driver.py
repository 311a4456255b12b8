"""The ACP driver: one live session, engine commands out, agent frames in.

``run`` reads the agent's messages in one task, in wire order, and the engine's commands in
another. Prompts (and steers) go out with our own string ids, so their responses arrive through
the same ordered stream as the updates before them: a turn's last chunk is always sent to the
engine before its ``TurnEnd``. Everything the driver started (the process, its terminals) is
reaped in ``run``'s ``finally``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import anyio.abc
import attrs

from anyagent import (
    Cancelled,
    Capability,
    ChoicesAnswer,
    ContextUsage,
    Diagnostic,
    DiagnosticInfo,
    DiagnosticLevel,
    EventKind,
    Failed,
    Input,
    LoginMethod,
    MessageEnded,
    PermissionAnswer,
    PermissionChoice,
    PermissionRequest,
    PlanUpdated,
    QuestionRequest,
    QuestionsAnswer,
    ReasoningDelta,
    RequestOpened,
    StopReason,
    TextAnswer,
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
from anyagent.process import AgentProcess
from anyagent.wire import (
    BadLine,
    IncomingRequest,
    JsonRpcError,
    JsonRpcPeer,
    Notification,
    Stray,
)

from . import translate
from ._state import InfoState, Setter
from .client import FileAccess, RpcFailure, Terminals
from .prompt import PromptMedia, prompt_blocks
from .quirks import Quirks

__all__ = ["AcpDriver", "Handshaken"]

AUTH_REQUIRED = -32000
_CHARS_PER_TOKEN = 4
_INFO_UPDATES = frozenset(
    {"available_commands_update", "current_mode_update", "config_option_update", "session_info_update"}
)
_CONTENT_UPDATES = frozenset(
    {"agent_message_chunk", "agent_thought_chunk", "user_message_chunk", "tool_call", "tool_call_update", "plan"}
)


@attrs.define
class Handshaken:
    """What ``connect`` settled, handed to the driver."""

    peer: JsonRpcPeer
    process: AgentProcess
    session_id: str
    state: InfoState
    quirks: Quirks
    media: PromptMedia
    files: FileAccess
    terminals: Terminals
    login: tuple[LoginMethod, ...]
    auth_hints: tuple[str, ...] = ()
    early: list[Any] = attrs.Factory(list)


@attrs.define
class _Prompt:
    wire_id: str
    params: dict[str, Any]
    prompt_id: str
    cancel_requested: bool = False
    saw_content: bool = False
    retried: bool = False
    hidden: bool = False
    effort: str | None = None


@attrs.define
class _Permission:
    request: IncomingRequest
    option_ids: dict[PermissionChoice, str]


@attrs.define
class _Question:
    request: IncomingRequest
    dialect: str
    raw: list[Any]


class AcpDriver(seam.Driver):
    """Serves one ACP session for the engine (see the module docstring)."""

    def __init__(self, setup: Handshaken) -> None:
        self._peer = setup.peer
        self._process = setup.process
        self._session_id = setup.session_id
        self._state = setup.state
        self._quirks = setup.quirks
        self._media = setup.media
        self._files = setup.files
        self._terminals = setup.terminals
        self._login = setup.login
        self._auth_hints = tuple(h.lower() for h in setup.auth_hints)
        self._early = setup.early
        self.info = setup.state.info()
        self._link: seam.DriverLink | None = None
        self._tools = translate.ToolBook(self._terminals.text)
        self._counter = 0
        self._prompt: _Prompt | None = None
        self._held: list[_Prompt] = []  # prompts waiting for a hidden one (kiro's effort switch)
        self._pending_effort: str | None = None
        self._steer_id: str | None = None
        self._permissions: dict[str, _Permission] = {}
        self._questions: dict[str, _Question] = {}
        self._message: tuple[type, str] | None = None
        self._turn_chars = 0
        self._session_chars = 0
        self._closing = False

    # -----------------------------------------------------------------------------------------
    # lifecycle

    async def run(self, link: seam.DriverLink) -> None:
        """Serve until ``Close`` or the agent's end; always reap the agent and its terminals."""
        self._link = link
        try:
            async with anyio.create_task_group() as tg:
                self._terminals.bind(tg)
                tg.start_soon(self._read, tg)
                await self._report_recording()
                for message in self._early:
                    await self._dispatch(message, tg)
                self._early = []
                async for command in link.commands:
                    if isinstance(command, seam.Close):
                        break
                    await self._command(command, tg)
                self._closing = True
                tg.cancel_scope.cancel()
        finally:
            await self._shutdown()

    async def aclose(self) -> None:
        """``open`` failed after ``connect``: reap without running."""
        await self._shutdown()

    async def _shutdown(self) -> None:
        with anyio.CancelScope(shield=True):
            await self._terminals.aclose()
            await self._process.aclose()
            recorder = self._process.recorder
            if recorder is not None:
                recorder.close()

    async def _report_recording(self) -> None:
        recorder = self._process.recorder
        failure = recorder.take_failure() if recorder is not None else None
        if failure is not None:
            await self._diag(failure, "record_wire")

    async def _read(self, tg: anyio.abc.TaskGroup) -> None:
        """The one reader: every agent message, in order, until the wire ends."""
        try:
            async for message in self._peer:
                try:
                    await self._dispatch(message, tg)
                except Exception as exc:  # one frame we could not handle never ends the session
                    await self._diag(
                        f"could not handle a frame: {type(exc).__name__}: {exc}", "acp_frame_error", raw=repr(message)
                    )
        except Exception as exc:  # a wire broken mid-frame is the agent's end, not our crash
            await self._diag(f"the agent's wire failed: {exc}", "wire_failed", DiagnosticLevel.ERROR)
        if not self._closing:
            status = await self._process.aclose()
            await self._send(seam.Exited(status, self._process.stderr_tail))
            tg.cancel_scope.cancel()

    # -----------------------------------------------------------------------------------------
    # sending to the engine

    async def _send(self, event: seam.DriverEvent) -> None:
        assert self._link is not None
        await self._link.send(event)

    async def _content(self, kind: EventKind, extensions: Mapping[str, Any] | None = None) -> None:
        await self._send(seam.Content(kind, None, extensions))

    async def _diag(
        self, message: str, code: str, level: DiagnosticLevel = DiagnosticLevel.WARNING, raw: Any = None
    ) -> None:
        """A diagnostic; a ``raw`` frame also rides in the ``acp/raw`` extension (nothing is lost)."""
        extensions = {"acp/raw": raw} if raw is not None else None
        await self._send(seam.Content(_diagnostic_kind(message, code, raw, level), None, extensions))

    async def _publish(self) -> None:
        self.info = self._state.info()
        await self._send(seam.InfoChanged(self.info))

    async def _first_sight(self, capability: Capability) -> None:
        if self._state.add_capability(capability):
            await self._publish()

    # -----------------------------------------------------------------------------------------
    # agent → client

    async def _dispatch(self, message: Any, tg: anyio.abc.TaskGroup) -> None:
        if isinstance(message, Notification):
            await self._on_notification(message.method, message.params)
        elif isinstance(message, IncomingRequest):
            await self._on_request(message, tg)
        elif isinstance(message, Stray):
            await self._on_stray(message)
        elif isinstance(message, BadLine):
            await self._diag(f"the agent wrote {message.reason}", "bad_line", DiagnosticLevel.WARNING, message.text)

    async def _on_stray(self, stray: Stray) -> None:
        frame = stray.frame
        frame_id = frame.get("id")
        if "method" not in frame and isinstance(frame_id, str):
            if await self._on_own_response(frame_id, frame):
                return
            if frame_id.startswith("anyagent-"):
                return  # the answer to a prompt that already ended (grok's prompt_complete came first)
        await self._diag(f"unexpected frame: {stray.reason}", "stray_frame", DiagnosticLevel.INFO, frame)

    async def _on_notification(self, method: str, params: Any) -> None:
        body = j.obj(params)
        if method == "session/update":
            await self._on_update(j.obj(body.get("update")), body)
            return
        if method == self._quirks.turn_end_notification:
            await self._on_vendor_turn_end(body)
            return
        hook = self._quirks.notifications.get(method)
        if hook is not None:
            await _NOTIFICATION_HOOKS[hook](self, body)
            return
        await self._diag(
            f"unknown notification {method}",
            "acp_unknown_notification",
            DiagnosticLevel.INFO,
            {"method": method, "params": params},
        )

    async def _on_request(self, request: IncomingRequest, tg: anyio.abc.TaskGroup) -> None:
        method, params = request.method, j.obj(request.params)
        if method == "session/request_permission":
            await self._on_permission(request, params)
            return
        hook = self._quirks.requests.get(method)
        if hook is not None:
            await _REQUEST_HOOKS[hook](self, request, params)
            return
        handler = self._client_method(method)
        if handler is None:  # accepted but not ours to serve (cannot happen with our accept set)
            await request.reply_error(-32601, f"method not found: {method}")
            return
        tg.start_soon(self._serve, request, handler, params)

    def _client_method(self, method: str) -> Callable[[Mapping[str, Any]], Awaitable[Any]] | None:
        table: dict[str, Callable[[Mapping[str, Any]], Awaitable[Any]]] = {
            "fs/read_text_file": self._files.read,
            "fs/write_text_file": self._files.write,
            "terminal/create": self._terminals.create,
            "terminal/output": self._terminals.output,
            "terminal/wait_for_exit": self._terminals.wait_for_exit,
            "terminal/kill": self._terminals.kill,
            "terminal/release": self._terminals.release,
        }
        return table.get(method)

    async def _serve(
        self, request: IncomingRequest, handler: Callable[[Mapping[str, Any]], Awaitable[Any]], params: Any
    ) -> None:
        """Run one client method in its own task (``wait_for_exit`` may take minutes)."""
        try:
            result = await handler(params)
        except RpcFailure as failure:
            await _reply_error(request, failure.code, failure.message, failure.data)
            return
        except Exception as exc:  # a bug in a handler must still answer the agent
            await _reply_error(request, -32603, f"internal error: {type(exc).__name__}: {exc}")
            return
        await _reply(request, result)

    # -- session/update

    async def _on_update(self, update: dict[str, Any], params: dict[str, Any]) -> None:
        kind = j.text(update.get("sessionUpdate")) or ""
        handler = _UPDATE_HANDLERS.get(kind)
        if handler is None:
            message = f"unknown session update {kind or '(none)'}"
            await self._diag(message, "acp_unknown_update", DiagnosticLevel.INFO, params)
            return
        if self._prompt is not None and kind in _CONTENT_UPDATES:
            self._prompt.saw_content = True
        if self._prompt is not None and self._prompt.hidden and kind in ("agent_message_chunk", "agent_thought_chunk"):
            return  # the hidden /effort prompt's acknowledgement is not content
        await handler(self, update)

    async def _chunk(self, update: dict[str, Any], make: Callable[[str, str], EventKind]) -> None:
        block = j.obj(update.get("content"))
        text = j.text(block.get("text"))
        if text is None:
            await self._diag("non-text content in a message", "acp_content", DiagnosticLevel.INFO, update)
            return
        if not text:
            return  # claude's bridge opens each message with an empty chunk
        message_type = type(make("", ""))
        message_id = j.text(update.get("messageId"))
        current = self._message
        if current is None or current[0] is not message_type or (message_id and message_id != current[1]):
            await self._end_message()
            self._counter += 1
            self._message = (message_type, message_id or f"m{self._counter}")
        assert self._message is not None
        self._turn_chars += len(text)
        await self._content(make(self._message[1], text))

    async def _end_message(self) -> None:
        if self._message is not None:
            message_id = self._message[1]
            self._message = None
            await self._content(MessageEnded(message_id))

    async def _agent_text(self, update: dict[str, Any]) -> None:
        prefix = self._quirks.mode_text_prefix
        text = j.text(j.obj(update.get("content")).get("text"))
        if prefix and text is not None and text.startswith(prefix):
            await self._adopt_mode(text[len(prefix) :].strip())
            return
        await self._chunk(update, TextDelta)

    async def _thought(self, update: dict[str, Any]) -> None:
        await self._chunk(update, ReasoningDelta)

    async def _user_text(self, update: dict[str, Any]) -> None:
        await self._chunk(update, UserMessage)

    async def _tool(self, update: dict[str, Any]) -> None:
        await self._end_message()
        tool = self._tools.upsert(update)
        if tool is None:
            await self._diag("a tool update without a toolCallId", "acp_bad_tool", DiagnosticLevel.WARNING, update)
            return
        await self._content(ToolUpdated(tool))

    async def _plan(self, update: dict[str, Any]) -> None:
        await self._end_message()
        await self._content(PlanUpdated(translate.plan_entries(update.get("entries"))))

    async def _usage(self, update: dict[str, Any]) -> None:
        usage = translate.usage(update)
        if usage is None:
            await self._diag("a usage update without `used`", "acp_bad_usage", DiagnosticLevel.INFO, update)
            return
        await self._first_sight(Capability.CONTEXT_USAGE)
        await self._content(usage)

    async def _commands(self, update: dict[str, Any]) -> None:
        self._state.set_commands(translate.commands(update.get("availableCommands")))
        await self._publish()

    async def _mode(self, update: dict[str, Any]) -> None:
        mode = j.text(update.get("currentModeId"))
        if mode is not None:
            await self._adopt_mode(mode)

    async def _adopt_mode(self, mode: str) -> None:
        if self._state.select("mode", mode):
            await self._publish()

    async def _config_options(self, update: dict[str, Any]) -> None:
        self._state.adopt_config_options(update.get("configOptions"))
        await self._publish()

    async def _session_info(self, update: dict[str, Any]) -> None:
        if "title" in update:
            self._state.title = j.text(update.get("title"))
            await self._publish()

    # -- permissions and questions

    async def _on_permission(self, request: IncomingRequest, params: dict[str, Any]) -> None:
        await self._end_message()
        choices, option_ids = translate.permission_options(params.get("options"))
        tool = self._tools.upsert(j.obj(params.get("toolCall")))
        if tool is None or not choices:
            await _reply(request, {"outcome": {"outcome": "cancelled"}})
            await self._diag(
                "a permission request without a tool or usable options; declined", "acp_bad_permission", raw=params
            )
            return
        if self._prompt is not None:
            self._prompt.saw_content = True
        request_id = self._request_id()
        self._permissions[request_id] = _Permission(request, option_ids)
        await self._content(ToolUpdated(tool))
        await self._content(RequestOpened(PermissionRequest(request_id, tool, choices)))

    def _request_id(self) -> str:
        self._counter += 1
        return f"r{self._counter}"

    async def _open_question(
        self, request: IncomingRequest, dialect: str, raw: list[Any], request_kind: QuestionRequest
    ) -> None:
        await self._first_sight(Capability.QUESTIONS)
        self._questions[request_kind.id] = _Question(request, dialect, raw)
        await self._content(RequestOpened(request_kind))

    async def _cursor_question(self, request: IncomingRequest, params: dict[str, Any]) -> None:
        raw = j.arr(params.get("questions"))
        questions = [q for q in map(translate.question_from_cursor, raw) if q is not None]
        if not questions or len(questions) != len(raw):
            await _reply(request, {"outcome": {"outcome": "cancelled"}})
            await self._diag("an unreadable cursor/ask_question; declined", "acp_bad_question", raw=params)
            return
        await self._end_message()
        await self._open_question(request, "cursor", raw, QuestionRequest(self._request_id(), questions))

    async def _grok_question(self, request: IncomingRequest, params: dict[str, Any]) -> None:
        body = j.obj(params.get("params")) or params
        raw = j.arr(body.get("questions"))
        parsed = [translate.question_from_grok(item, index) for index, item in enumerate(raw)]
        questions = [q for q in parsed if q is not None]
        if not questions or len(questions) != len(raw):
            await _reply(request, {"outcome": "cancelled"})
            await self._diag("an unreadable ask_user_question; declined", "acp_bad_question", raw=params)
            return
        await self._end_message()
        await self._open_question(request, "grok", raw, QuestionRequest(self._request_id(), questions))

    async def _answer(self, command: seam.AnswerRequest) -> None:
        permission = self._permissions.pop(command.request_id, None)
        if permission is not None:
            answer = command.answer
            option = _option_for(answer.choice, permission.option_ids) if isinstance(answer, PermissionAnswer) else None
            outcome = {"outcome": "selected", "optionId": option} if option else {"outcome": "cancelled"}
            await _reply(permission.request, {"outcome": outcome})
            return
        question = self._questions.pop(command.request_id, None)
        if question is not None:
            answer = command.answer
            answers = answer.answers if isinstance(answer, QuestionsAnswer) else None
            await _reply(question.request, _question_response(question, answers))

    async def _decline_open_requests(self) -> None:
        """Answer every open permission and question ``cancelled``."""
        permissions, self._permissions = self._permissions, {}
        for permission in permissions.values():
            await _reply(permission.request, {"outcome": {"outcome": "cancelled"}})
        questions, self._questions = self._questions, {}
        for question in questions.values():
            await _reply(question.request, _question_response(question, None))

    # -- vendor hooks

    async def _withdraw(self, params: dict[str, Any]) -> None:
        wire_id = params.get("requestId")
        for request_id, permission in list(self._permissions.items()):
            if permission.request.id == wire_id:
                del self._permissions[request_id]
                await _reply(permission.request, {"outcome": {"outcome": "cancelled"}})
                await self._send(seam.RequestWithdrawn(request_id))
        for request_id, question in list(self._questions.items()):
            if question.request.id == wire_id:
                del self._questions[request_id]
                await _reply(question.request, _question_response(question, None))
                await self._send(seam.RequestWithdrawn(request_id))

    async def _vendor_mode(self, params: dict[str, Any]) -> None:
        mode = j.text(params.get("currentModeId")) or j.text(params.get("modeId"))
        if mode is not None:
            await self._adopt_mode(mode)

    async def _vendor_model(self, params: dict[str, Any]) -> None:
        model = j.text(params.get("currentModelId")) or j.text(params.get("modelId"))
        if model is not None and self._state.select("model", model):
            await self._publish()

    async def _models_update(self, params: dict[str, Any]) -> None:
        self._state.adopt_models(params.get("models") if "models" in params else params)
        await self._publish()

    async def _model_changed(self, params: dict[str, Any]) -> None:
        update = j.obj(params.get("update"))
        if update.get("sessionUpdate") != "model_changed":
            await self._diag("vendor session notification", "acp_vendor_notification", DiagnosticLevel.INFO, params)
            return
        changed = False
        for option_id, key in (("model", "model_id"), ("effort", "reasoning_effort")):
            value = j.text(update.get(key))
            if value is not None:
                changed = self._state.select(option_id, value) or changed
        if changed:
            await self._publish()

    async def _vendor_commands(self, params: dict[str, Any]) -> None:
        self._state.set_commands(translate.commands(params.get("commands")))
        await self._publish()

    async def _effort_metadata(self, params: dict[str, Any]) -> None:
        effort = j.text(params.get("effort"))
        option = self._state.option("effort")
        if (
            effort is not None
            and option is not None
            and option.accepts(effort)
            and self._state.select("effort", effort)
        ):
            await self._publish()

    async def _cursor_todos(self, params: dict[str, Any]) -> None:
        await self._end_message()
        await self._content(PlanUpdated(translate.plan_entries(params.get("todos"))))

    async def _cursor_task(self, params: dict[str, Any]) -> None:
        tool_id = j.text(params.get("toolCallId"))
        if not tool_id:
            await self._diag("a cursor/task without toolCallId", "acp_bad_task", DiagnosticLevel.INFO, params)
            return
        await self._end_message()
        done = params.get("durationMs") is not None
        tool = ToolUpdate(
            id=tool_id,
            kind=ToolKind.SUBAGENT,
            title=j.text(params.get("description")) or "task",
            status=ToolStatus.COMPLETED if done else ToolStatus.RUNNING,
            input=ToolInput(description=j.text(params.get("prompt")), arguments=params),
            raw=params,
        )
        await self._content(ToolUpdated(tool))

    async def _todos_request(self, request: IncomingRequest, params: dict[str, Any]) -> None:
        await _reply(request, {})
        await self._cursor_todos(params)

    async def _task_request(self, request: IncomingRequest, params: dict[str, Any]) -> None:
        await _reply(request, {})
        await self._cursor_task(params)

    # -----------------------------------------------------------------------------------------
    # engine → agent

    async def _command(self, command: seam.DriverCommand, tg: anyio.abc.TaskGroup) -> None:
        if isinstance(command, seam.StartTurn):
            await self._start_turn(command.input)
        elif isinstance(command, seam.Steer):
            await self._steer(command.input)
        elif isinstance(command, seam.AnswerRequest):
            await self._answer(command)
        elif isinstance(command, seam.Cancel):
            await self._cancel()
        elif isinstance(command, seam.Configure):
            await self._configure(command.option_id, command.value, tg)
        elif isinstance(command, seam.Compact):
            await self._diag("ACP has no compaction; the request was refused", "unsupported", DiagnosticLevel.WARNING)
            await self._send(seam.TurnEnd(Failed("compaction is not supported over ACP")))
        elif isinstance(command, seam.Rollback):
            await self._diag("ACP has no rollback; the request was refused", "unsupported", DiagnosticLevel.WARNING)

    async def _start_turn(self, value: Input) -> None:
        await self._send(seam.TurnAck())
        blocks, problems = await prompt_blocks(value, self._media)
        for problem in problems:
            await self._diag(problem, "attachment")
        self._counter += 1
        prompt_id = f"p{self._counter}"
        params: dict[str, Any] = {"sessionId": self._session_id, "prompt": blocks}
        if self._quirks.turn_end_notification:
            params["_meta"] = {"promptId": prompt_id, "requestId": prompt_id}
        prompt = _Prompt(f"anyagent-prompt-{self._counter}", params, prompt_id)
        if self._prompt is not None:  # a hidden effort prompt is on the wire: this one waits for it
            self._held.append(prompt)
            return
        await self._put_prompt(prompt)

    async def _put_prompt(self, prompt: _Prompt) -> None:
        self._prompt = prompt
        self._turn_chars = sum(len(j.text(b.get("text")) or "") for b in prompt.params["prompt"])
        await self._write({"jsonrpc": "2.0", "id": prompt.wire_id, "method": "session/prompt", "params": prompt.params})

    async def _write(self, frame: dict[str, Any]) -> None:
        try:
            await self._peer.lines.send(frame)
        except Exception as exc:  # the agent is gone: the reader reports its exit
            await self._diag(f"could not write to the agent: {exc}", "write_failed", DiagnosticLevel.ERROR)

    async def _steer(self, value: Input) -> None:
        blocks, _problems = await prompt_blocks(value, self._media)
        self._counter += 1
        self._steer_id = f"anyagent-steer-{self._counter}"
        await self._write(
            {
                "jsonrpc": "2.0",
                "id": self._steer_id,
                "method": "_session/steering",
                "params": {"sessionId": self._session_id, "prompt": blocks},
            }
        )

    async def _cancel(self) -> None:
        held, self._held = self._held, []
        if held:  # a prompt that never reached the agent just ends
            await self._send(seam.TurnEnd(Cancelled()))
            return
        prompt = self._prompt if self._prompt is not None and not self._prompt.hidden else None
        if prompt is not None:
            prompt.cancel_requested = True
        if self._quirks.cancel_answers_first:
            await self._decline_open_requests()
            if prompt is not None:
                await self._notify("session/cancel", {"sessionId": self._session_id})
        else:
            # cancel first: an agent parked on a permission must know the turn is over when it wakes
            await self._notify("session/cancel", {"sessionId": self._session_id})
            await self._decline_open_requests()
        if prompt is None:  # an agent-originated turn: nothing on the wire will end it
            await self._finish_turn(Cancelled())

    async def _notify(self, method: str, params: Any) -> None:
        try:
            await self._peer.notify(method, params)
        except Exception as exc:
            await self._diag(f"could not write to the agent: {exc}", "write_failed", DiagnosticLevel.ERROR)

    # -- responses to our own prompts and steers

    async def _on_own_response(self, wire_id: str, frame: dict[str, Any]) -> bool:
        if wire_id == self._steer_id:
            self._steer_id = None
            accepted = "error" not in frame and j.flag(j.obj(frame.get("result")).get("accepted"))
            await self._send(seam.SteerResult(accepted))
            return True
        prompt = self._prompt
        if prompt is None or wire_id != prompt.wire_id:
            return False
        if "error" in frame and frame["error"] is not None:
            await self._prompt_failed(prompt, j.obj(frame["error"]))
            return True
        result = j.obj(frame.get("result"))
        stop = translate.stop_reason(result)
        if (
            isinstance(stop, Cancelled)
            and self._quirks.retry_spurious_cancel
            and not prompt.cancel_requested
            and not prompt.saw_content
            and not prompt.retried
        ):
            prompt.retried = True
            await self._write(
                {"jsonrpc": "2.0", "id": prompt.wire_id, "method": "session/prompt", "params": prompt.params}
            )
            return True
        await self._prompt_done(prompt, stop)
        return True

    async def _prompt_failed(self, prompt: _Prompt, error: dict[str, Any]) -> None:
        code = j.integer(error.get("code"))
        message = j.text(error.get("message")) or "the prompt failed"
        detail = error.get("data")
        text = f"{message}: {detail}" if isinstance(detail, str) and detail else message
        if prompt.hidden:
            await self._hidden_done(prompt, ok=False, message=text)
            return
        lowered = text.lower()
        auth = code in (AUTH_REQUIRED, 401) or any(hint in lowered for hint in self._auth_hints)
        if auth and not prompt.cancel_requested:
            self._prompt = None
            await self._decline_open_requests()
            await self._send(seam.AuthLost(self._login))
            return
        stop: StopReason = Cancelled() if prompt.cancel_requested else Failed(f"{text} ({code})")
        await self._prompt_done(prompt, stop)

    async def _prompt_done(self, prompt: _Prompt, stop: StopReason) -> None:
        if prompt.hidden:
            await self._hidden_done(prompt, ok=True, message="")
            return
        if prompt.cancel_requested:
            stop = Cancelled()
        await self._finish_turn(stop)
        await self._after_prompt()

    async def _finish_turn(self, stop: StopReason) -> None:
        """Close the turn's loose ends, then report its end."""
        self._prompt = None
        await self._decline_open_requests()
        await self._end_message()
        for tool in self._tools.finish_active(ToolStatus.CANCELLED):
            await self._content(ToolUpdated(tool))
        self._session_chars += self._turn_chars
        if self._quirks.estimate_context_usage and self._session_chars:
            await self._first_sight(Capability.CONTEXT_USAGE)
            estimate = ContextUsage(max(1, self._session_chars // _CHARS_PER_TOKEN))
            await self._content(estimate, {"anyagent/estimated": True})
        self._tools.clear()
        self._turn_chars = 0
        await self._send(seam.TurnEnd(stop))

    async def _on_vendor_turn_end(self, params: dict[str, Any]) -> None:
        """Grok's authoritative turn end, guarded by session and prompt id."""
        prompt = self._prompt
        if prompt is None or prompt.hidden or j.text(params.get("sessionId")) != self._session_id:
            return
        echoed = j.text(params.get("promptId"))
        if echoed is not None and echoed != prompt.prompt_id:
            return
        await self._prompt_done(prompt, translate.stop_reason({"stopReason": params.get("stopReason")}))

    async def _after_prompt(self) -> None:
        """Start what waited for the wire: an effort switch first, then a held prompt."""
        if self._pending_effort is not None and self._prompt is None:
            level, self._pending_effort = self._pending_effort, None
            await self._put_effort(level)
            return
        if self._held and self._prompt is None:
            await self._put_prompt(self._held.pop(0))

    # -- configuration

    async def _configure(self, option_id: str, value: Any, tg: anyio.abc.TaskGroup) -> None:
        setter = self._state.setters.get(option_id)
        if setter is Setter.EFFORT_PROMPT:
            if self._prompt is not None:
                self._pending_effort = str(value)
            else:
                await self._put_effort(str(value))
            return
        if setter is None:
            await self._diag(f"no wire call sets {option_id!r}", "configure_rejected")
            return
        method, params = config_call(self._session_id, setter, option_id, value, self._state)
        tg.start_soon(self._configure_call, option_id, value, method, params)

    async def _configure_call(self, option_id: str, value: Any, method: str, params: dict[str, Any]) -> None:
        try:
            result = await self._peer.request(method, params)
        except JsonRpcError as exc:
            await self._diag(
                f"the agent refused {option_id}={value!r}: {exc.message} ({exc.code})", "configure_rejected"
            )
            return
        except Exception as exc:
            await self._diag(f"configure {option_id} failed: {exc}", "configure_rejected")
            return
        body = j.obj(result)
        if isinstance(body.get("configOptions"), list):
            self._state.adopt_config_options(body["configOptions"])
        self._state.select(option_id, value)
        await self._publish()

    async def _put_effort(self, level: str) -> None:
        self._counter += 1
        params = {"sessionId": self._session_id, "prompt": [{"type": "text", "text": f"/effort {level}"}]}
        prompt = _Prompt(f"anyagent-effort-{self._counter}", params, f"e{self._counter}", hidden=True, effort=level)
        self._prompt = prompt
        await self._write({"jsonrpc": "2.0", "id": prompt.wire_id, "method": "session/prompt", "params": params})

    async def _hidden_done(self, prompt: _Prompt, *, ok: bool, message: str) -> None:
        self._prompt = None
        self._tools.clear()
        self._message = None
        if ok and prompt.effort is not None:
            if self._state.select("effort", prompt.effort):
                await self._publish()
        elif not ok:
            await self._diag(f"the agent refused effort={prompt.effort!r}: {message}", "configure_rejected")
        await self._after_prompt()


# ---------------------------------------------------------------------------------------------
# helpers


def config_call(
    session_id: str, setter: Setter, option_id: str, value: Any, state: InfoState
) -> tuple[str, dict[str, Any]]:
    """The wire call that sets ``option_id`` to ``value``."""
    if setter is Setter.MODE:
        return "session/set_mode", {"sessionId": session_id, "modeId": value}
    if setter is Setter.MODEL:
        return "session/set_model", {"sessionId": session_id, "modelId": value}
    if setter is Setter.MODEL_EFFORT:
        model = state.option("model")
        model_id = model.current if model is not None else None
        return "session/set_model", {"sessionId": session_id, "modelId": model_id, "_meta": {"reasoningEffort": value}}
    params: dict[str, Any] = {"sessionId": session_id, "configId": option_id, "value": value}
    if isinstance(value, bool):
        params["type"] = "boolean"
    return "session/set_config_option", params


def _option_for(choice: PermissionChoice, option_ids: Mapping[PermissionChoice, str]) -> str | None:
    """The agent's option for ``choice``: exact, else the same allow/deny family."""
    if choice in option_ids:
        return option_ids[choice]
    allow = choice in (PermissionChoice.ALLOW_ONCE, PermissionChoice.ALLOW_ALWAYS)
    for offered, option_id in option_ids.items():
        if (offered in (PermissionChoice.ALLOW_ONCE, PermissionChoice.ALLOW_ALWAYS)) == allow:
            return option_id
    return None


def _question_response(question: _Question, answers: tuple[Any, ...] | None) -> dict[str, Any]:
    """The wire answer to a cursor or grok question (``cancelled`` without answers)."""
    if question.dialect == "cursor":
        if answers is None:
            return {"outcome": {"outcome": "cancelled"}}
        entries = []
        for raw, answer in zip(question.raw, answers, strict=False):
            ids: list[str] = list(answer.ids) if isinstance(answer, ChoicesAnswer) else []
            entries.append({"questionId": j.obj(raw).get("id"), "selectedOptionIds": ids})
        return {"outcome": {"outcome": "answered", "answers": entries}}
    if answers is None:
        return {"outcome": "cancelled"}
    mapped: dict[str, Any] = {}
    for raw, answer in zip(question.raw, answers, strict=False):
        q = j.obj(raw)
        options = [j.obj(o) for o in j.arr(q.get("options"))]
        labels: list[Any]
        if isinstance(answer, TextAnswer):
            labels = [answer.value]
        else:
            chosen = answer.ids if isinstance(answer, ChoicesAnswer) else ()
            labels = [
                o.get("label")
                for choice in chosen
                for o in options
                if o.get("id") == choice or (o.get("id") is None and o.get("label") == choice)
            ]
        mapped[j.text(q.get("question")) or ""] = labels
    return {"outcome": "accepted", "answers": mapped}


async def _reply(request: IncomingRequest, result: Any) -> None:
    try:
        await request.reply(result)
    except Exception:
        pass  # already answered, or the agent is gone (the reader reports that)


async def _reply_error(request: IncomingRequest, code: int, message: str, data: Any = None) -> None:
    try:
        await request.reply_error(code, message, data)
    except Exception:
        pass


def _diagnostic_kind(message: str, code: str, raw: Any, level: DiagnosticLevel = DiagnosticLevel.INFO) -> EventKind:
    return Diagnostic(DiagnosticInfo(message, level, code, raw))


_Handler = Callable[[AcpDriver, dict[str, Any]], Awaitable[None]]
_RequestHandler = Callable[[AcpDriver, IncomingRequest, dict[str, Any]], Awaitable[None]]

_UPDATE_HANDLERS: dict[str, _Handler] = {
    "agent_message_chunk": AcpDriver._agent_text,
    "agent_thought_chunk": AcpDriver._thought,
    "user_message_chunk": AcpDriver._user_text,
    "tool_call": AcpDriver._tool,
    "tool_call_update": AcpDriver._tool,
    "plan": AcpDriver._plan,
    "usage_update": AcpDriver._usage,
    "available_commands_update": AcpDriver._commands,
    "current_mode_update": AcpDriver._mode,
    "config_option_update": AcpDriver._config_options,
    "session_info_update": AcpDriver._session_info,
}

_NOTIFICATION_HOOKS: dict[str, _Handler] = {
    "mode_update": AcpDriver._vendor_mode,
    "model_update": AcpDriver._vendor_model,
    "models_update": AcpDriver._models_update,
    "model_changed": AcpDriver._model_changed,
    "commands": AcpDriver._vendor_commands,
    "effort_metadata": AcpDriver._effort_metadata,
    "cursor_todos": AcpDriver._cursor_todos,
    "cursor_task": AcpDriver._cursor_task,
    "withdraw_request": AcpDriver._withdraw,
}

_REQUEST_HOOKS: dict[str, _RequestHandler] = {
    "cursor_question": AcpDriver._cursor_question,
    "grok_question": AcpDriver._grok_question,
    "cursor_todos": AcpDriver._todos_request,
    "cursor_task": AcpDriver._task_request,
}

INFO_UPDATES = _INFO_UPDATES
"""Update kinds that carry session info (applied during the handshake; never content)."""
