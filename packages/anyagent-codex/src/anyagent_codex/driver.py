"""The Codex driver: one app-server thread, engine commands out, notifications in.

``toolkit.DriverLoop`` runs it with the ``JsonRpcPeer`` as the frame source (what the handshake
read besides its answers is still queued in the peer and comes first). Requests we send mid-session
(``turn/start``, ``turn/steer``, ``turn/interrupt``, ``thread/revert``, ``thread/compact/start``)
go out with ``send_request``; their answers arrive as ``Response`` messages in wire order.

Turn rules stay the engine's; the driver only reports what codex says:

* ``TurnAck`` before ``turn/start`` is written (so no content can precede it); exactly one
  ``TurnEnd`` per turn, from ``turn/completed`` (completed → ``Completed``; interrupted →
  ``Cancelled`` when we cancelled, else ``Failed``; failed → ``Failed`` with codex's error), or
  from a refused ``turn/start``.
* ``Steer`` → ``turn/steer`` with the expected turn id (held until codex names the turn); a
  refused steer, or one whose turn ended first, is ``SteerResult(False)`` (the engine re-queues).
* ``Cancel`` → ``turn/interrupt`` (sent once the turn id is known). Codex settles a pending
  approval itself (its ``serverRequest/resolved`` comes after the turn's end: bookkeeping).
* Model API retries are bounded: codex retries a dead or refusing model forever; after
  ``MAX_RETRIES`` retry notices in one turn (or the first one that says 401) the driver interrupts
  the turn and it ends ``Failed`` with the last error (a 401 also reports ``AuthLost``).
* Subagents (codex's ``multi_agent_v1`` tools, on by default): a ``collabAgentToolCall`` is a
  ``SUBAGENT`` tool; the thread a ``spawnAgent`` call names in ``receiverThreadIds`` (with
  ``multi_agent_v2``: the ``agentThreadId`` of a ``subAgentActivity`` that started) is its child, and every frame of
  that thread is translated with ``parent_tool_id`` = the spawn call's id (a child frame that
  comes before codex names the thread goes to the one spawn in flight). A child's
  ``turn/completed`` is a ``TurnEnd`` with that ``parent_tool_id``, which the engine consumes: it
  never ends ours. A child that outlives our turn and speaks then gets an agent-originated turn
  from the engine; its ``turn/completed`` is that turn's end (else the next prompt would wait
  behind it forever). Frames of threads no spawn of ours named are dropped.
* Approvals (``item/commandExecution/requestApproval``, ``item/fileChange/requestApproval``) →
  ``PermissionRequest`` with the choices codex offers, answered ``accept`` / ``acceptForSession``
  (or the proposed exec-policy amendment) / ``decline``; ``item/tool/requestUserInput`` (the
  model's ``request_user_input`` tool) → ``QuestionRequest`` (choices by label, free text when
  codex adds its "Other"), answered ``{"answers": {question id: {"answers": [...]}}}``. A
  subagent's requests carry its spawn call as ``parent_tool_id``. Every other server request is
  answered ``-32601`` by the peer, so codex never waits on us.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Union

import attrs

from anyagent import (
    AgentDetails,
    Authenticated,
    AuthKind,
    AuthStatus,
    Cancelled,
    Capabilities,
    Capability,
    ChoicesAnswer,
    Completed,
    Diagnostic,
    DiagnosticCode,
    DiagnosticInfo,
    DiagnosticLevel,
    EventKind,
    Failed,
    Input,
    LoginMethod,
    McpTool,
    PermissionAnswer,
    PermissionChoice,
    PermissionRequest,
    Question,
    QuestionChoice,
    QuestionRequest,
    QuestionsAnswer,
    RequestOpened,
    RollbackScope,
    SlashCommand,
    StopReason,
    TextAnswer,
    TextDelta,
    ToolInput,
    ToolKind,
    ToolStatus,
    ToolUpdate,
    seam,
    toolkit,
)
from anyagent import jsonread as j
from anyagent.process import AgentProcess
from anyagent.wire import IncomingRequest, JsonRpcPeer, Message, Notification, Response

from .settings import Settings
from .translate import CLIENT_ID_PREFIX, Translator, tool_update

__all__ = ["ACCEPTED_REQUESTS", "CAPABILITIES", "IMAGE_SUFFIXES", "MAX_RETRIES", "CodexDriver", "Handshaken"]

MAX_RETRIES = 4
"""Model-API retry notices (``error`` with ``willRetry``) one turn may see before the driver
interrupts it and ends it ``Failed``: codex retries an unreachable model forever, its notices
5, 10, 20, 40, 60 s apart, so the fourth comes about 35 s after the first attempt."""

CAPABILITIES = Capabilities.of(
    Capability.IMAGES,
    Capability.RESUME,
    Capability.STEER,
    Capability.PERMISSIONS,
    Capability.ROLLBACK,
    Capability.FORK,
    Capability.COMPACT,
    Capability.SLASH_COMMANDS,
    Capability.PLAN,
    Capability.SUBAGENTS,
    Capability.CONTEXT_USAGE,
    mcp_transports=("stdio", "http"),
)
"""What every connection reports; ``PLAN_USAGE`` is added for a ChatGPT (subscription) login, and
``QUESTIONS`` once codex has asked one on the wire (``item/tool/requestUserInput``: the model's
``request_user_input`` tool is not offered in every mode or release, so the capability stays off
until observed; ``SessionUpdated`` then adds it)."""

MCP_APPROVAL = "mcpServer/elicitation/request"
"""How codex asks before an MCP tool runs (an elicitation with ``_meta.codex_approval_kind``
``mcp_tool_call``): a ``PermissionRequest`` on the running ``McpTool`` call."""

ACCEPTED_REQUESTS = frozenset(
    {"item/commandExecution/requestApproval", "item/fileChange/requestApproval", "item/tool/requestUserInput"}
    | {MCP_APPROVAL}
)
"""The server requests the driver answers itself (the peer answers every other one ``-32601``)."""

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp"})
"""Attachments sent as ``localImage`` items; any other file is a ``mention`` of its path."""

_AUTH_CODES = frozenset({"unauthorized"})
_NOT_THE_CHILDS = frozenset({"turn/started", "thread/tokenUsage/updated", "thread/name/updated"})
"""Subagent frames that say nothing about the parent's session (its context is its own)."""


@attrs.define
class Handshaken:
    """What ``connect`` settled, handed to the driver."""

    launch: toolkit.Launch
    process: AgentProcess
    peer: JsonRpcPeer
    thread_id: str
    version: str | None
    auth: AuthStatus
    settings: Settings
    login: tuple[LoginMethod, ...]
    skills_request: int | None = None
    history: list[str] = attrs.Factory(list)
    max_retries: int = MAX_RETRIES


@attrs.define
class _Turn:
    """The turn on the wire: ours (``engine_id``) or a compaction (``compact``)."""

    engine_id: str | None
    compact: bool = False
    wire_id: str | None = None
    started: bool = False  # codex sent ``turn/started``: only then does every release take a steer or interrupt
    cancel_requested: bool = False
    interrupt_sent: bool = False
    failure: str | None = None
    retries: int = 0
    auth_lost: bool = False
    held_steers: list[Input] = attrs.Factory(list)


@attrs.define
class _Approval:
    request: IncomingRequest
    allow_always: Any = None  # what "allow always" sends: "acceptForSession" or an amendment
    elicitation: bool = False  # an MCP tool approval: answered {"action": ...}, not {"decision": ...}


@attrs.define
class _Ask:
    request: IncomingRequest
    question_ids: list[str]


@attrs.define
class _Child:
    """A subagent's thread: the spawn call it belongs to and its own translator state."""

    tool_id: str
    translator: Translator = attrs.Factory(Translator)
    wire_turn: str | None = None  # the child's running turn, interrupted with ours on a cancel


_Open = Union[_Approval, _Ask]
_OnResponse = Callable[[Response], Awaitable[None]]


class CodexDriver(seam.Driver):
    """Serves one Codex thread for the engine (see the module docstring)."""

    def __init__(self, setup: Handshaken) -> None:
        self._peer = setup.peer
        self._thread_id = setup.thread_id
        self._version = setup.version
        self._auth = setup.auth
        self._settings = setup.settings
        self._commands: tuple[SlashCommand, ...] = ()
        self._login = setup.login
        self._history = list(setup.history)
        self._max_retries = setup.max_retries
        self._title: str | None = None
        self._questions = False  # codex asked a question on the wire: QUESTIONS is reported from then on
        self._translator = Translator()
        self._children: dict[str, _Child] = {}  # child thread id → its spawn call
        self._spawning: list[str] = []  # spawn calls whose thread codex has not named yet
        self._turn: _Turn | None = None
        self._responses: dict[int, _OnResponse] = {}
        self._by_wire: dict[str, str] = {}  # wire request id → engine request id
        self._messages = 0
        self._requests: toolkit.RequestBook[_Open] = toolkit.RequestBook(self._say_no)
        self._loop: toolkit.DriverLoop[Message] = toolkit.DriverLoop(
            self._on_frame,
            self._on_command,
            recorder=setup.launch.recorder,
            name="codex",
            fast_frame=self._fast_frame,  # the flood's text deltas, without ``_on_frame``
        )
        self._loop.attach(setup.process, self._peer)
        if setup.skills_request is not None:
            self._responses[setup.skills_request] = self._skills_listed
        self.info = self._info()

    # -- seam.Driver

    async def run(self, link: seam.DriverLink) -> None:
        """Drive codex: read its frames and the engine's commands through `link` until the session closes."""
        await self._loop.run(link)

    async def aclose(self) -> None:
        """Stop codex (stdin EOF, then signals) and reap it; safe to call twice."""
        await self._loop.shutdown()

    def _info(self) -> seam.DriverInfo:
        capabilities = CAPABILITIES
        if isinstance(self._auth, Authenticated) and self._auth.kind is AuthKind.SUBSCRIPTION:
            capabilities = capabilities.with_(Capability.PLAN_USAGE)
        if self._questions:
            capabilities = capabilities.with_(Capability.QUESTIONS)
        details = AgentDetails(
            version=self._version,
            auth=self._auth,
            capabilities=capabilities,
            config_options=self._settings.options(),
            commands=self._commands,
        )
        return seam.DriverInfo(
            details=details,
            configuration=self._settings.configuration(),
            resume_token=self._thread_id,
            title=self._title,
            refuses_prompt_while_busy=True,  # turn/start while a turn runs: "still running a turn"
        )

    async def _skills_listed(self, response: Response) -> None:
        """``skills/list``: codex's skills (enabled, by name, first wins) are the slash commands."""
        found: dict[str, SlashCommand] = {}
        for entry in j.arr(j.obj(response.result).get("data")):
            for skill in j.arr(j.obj(entry).get("skills")):
                skill = j.obj(skill)
                name = j.nonempty(skill.get("name"))
                if name and skill.get("enabled", True) is not False and name not in found:
                    found[name] = SlashCommand(name, j.text(skill.get("description"), ""))
        if tuple(found.values()) != self._commands:
            self._commands = tuple(found.values())
            await self._info_changed()

    async def _info_changed(self) -> None:
        self.info = self._info()
        await self._loop.send(seam.InfoChanged(self.info))

    # -- frames

    def _fast_frame(self, message: Message) -> TextDelta | None:
        """The loop's ``fast_frame``: an ``item/agentMessage/delta`` of our thread the translator's
        fast path takes, as its ``TextDelta``; None for anything else (then ``_on_frame``)."""
        if type(message) is Notification and message.method == "item/agentMessage/delta":
            params = message.params
            try:  # a subscript, not ``get``: no call on the flood's path
                if type(params) is dict and params["threadId"] == self._thread_id:
                    return self._translator.text_delta(params)  # the flood: no dispatch, one event
            except KeyError:  # no thread id: the full path decides
                pass
        return None

    async def _on_frame(self, message: Message) -> None:
        # only frames the loop's ``fast_frame`` declined come here (``_on_notification`` takes a
        # delta of ours too, the full path, for a caller that skips it)
        if isinstance(message, Notification):
            await self._on_notification(message)
        elif isinstance(message, Response):
            handler = self._responses.pop(message.id, None)
            if handler is not None:
                await handler(message)
        elif isinstance(message, IncomingRequest):
            if message.method == MCP_APPROVAL:
                await self._open_mcp_approval(message)
            else:
                await self._on_request(message)

    async def _on_notification(self, note: Notification) -> None:
        method, params = note.method, j.obj(note.params)
        thread = j.nonempty(params.get("threadId")) or j.nonempty(j.obj(params.get("thread")).get("id"))
        if thread is not None and thread != self._thread_id:
            await self._child_notification(thread, note)  # its turns never move ours
            return
        if method in ("item/started", "item/completed"):
            self._note_spawn(j.obj(params.get("item")), method == "item/completed")
        if method == "turn/started":
            await self._turn_started(j.nonempty(j.obj(params.get("turn")).get("id")))
        elif method == "turn/completed":
            await self._turn_completed(j.obj(params.get("turn")))
        elif method == "error":
            await self._error(params, note)
        elif method == "serverRequest/resolved":
            await self._resolved(params.get("requestId"))
        elif method == "thread/name/updated":
            self._title = j.nonempty(params.get("threadName"))
            await self._info_changed()
        else:
            for event in self._translator.feed(method, params, {"method": method, "params": note.params}):
                await self._loop.send(event)

    def _note_spawn(self, item: dict[str, Any], completed: bool) -> None:
        """A ``spawnAgent`` call of ours: the threads it names are its children (``multi_agent_v2``:
        a ``subAgentActivity`` that started names its thread at once)."""
        tool_id = j.nonempty(item.get("id"))
        if tool_id is None:
            return
        if item.get("type") == "subAgentActivity" and item.get("kind") == "started":
            thread = j.nonempty(item.get("agentThreadId"))
            if thread is not None:
                self._children.setdefault(thread, _Child(tool_id))
            return
        if item.get("type") != "collabAgentToolCall" or item.get("tool") != "spawnAgent":
            return
        receivers = [thread for thread in j.arr(item.get("receiverThreadIds")) if isinstance(thread, str) and thread]
        for thread in receivers:
            self._children.setdefault(thread, _Child(tool_id))
        if receivers or completed:
            if tool_id in self._spawning:
                self._spawning.remove(tool_id)
        elif tool_id not in self._spawning:
            self._spawning.append(tool_id)

    def _child(self, thread: str) -> _Child | None:
        """The subagent ``thread`` is, if a spawn call of ours made it (or the one spawn in flight)."""
        child = self._children.get(thread)
        if child is None and len(self._spawning) == 1:
            child = self._children[thread] = _Child(self._spawning[0])
        return child

    def _requester(self, params: dict[str, Any]) -> _Child | None:
        """The subagent a server request comes from (its ``threadId``), None for our own thread."""
        thread = j.nonempty(params.get("threadId"))
        return self._child(thread) if thread is not None and thread != self._thread_id else None

    async def _child_notification(self, thread: str, note: Notification) -> None:
        """A subagent's frame: its content under its spawn call, its turn end consumed by the engine."""
        child = self._child(thread)
        if child is None:
            return  # a thread none of our spawn calls named
        method, params = note.method, j.obj(note.params)
        if method == "turn/started":
            child.wire_turn = j.nonempty(j.obj(params.get("turn")).get("id"))
        elif method == "turn/completed":
            child.wire_turn = None
            wire_turn = j.obj(params.get("turn"))
            status = j.text(wire_turn.get("status"), "")
            error = j.text(j.obj(wire_turn.get("error")).get("message"), "")
            stop: StopReason = (
                Completed()
                if status == "completed"
                else Cancelled()
                if status == "interrupted"
                else Failed(error or f"the subagent's turn ended {status or 'without a status'}")
            )
            child.translator.reset_turn()
            # the engine consumes it, or ends with it the turn it opened for the child's lone output
            await self._loop.send(seam.TurnEnd(stop, parent_tool_id=child.tool_id))
        elif method == "error":
            message = j.text(j.obj(params.get("error")).get("message"), "") or "codex reported an error"
            info = DiagnosticInfo(f"codex subagent: {message}", DiagnosticLevel.WARNING, DiagnosticCode.AGENT_WARNING)
            await self._child_content(child, Diagnostic(info))
        elif method == "serverRequest/resolved":
            await self._resolved(params.get("requestId"))
        elif method not in _NOT_THE_CHILDS:
            for event in child.translator.feed(method, params, {"method": method, "params": note.params}):
                if isinstance(event, seam.Content):
                    await self._child_content(child, event.kind, event.extensions)
                else:
                    await self._loop.send(event)

    async def _child_content(self, child: _Child, kind: EventKind, extensions: Any = None) -> None:
        """Send a subagent's content under its spawn call."""
        await self._loop.send(seam.Content(kind, child.tool_id, extensions))

    async def _turn_started(self, wire_id: str | None) -> None:
        turn = self._turn
        if turn is None or wire_id is None or turn.wire_id not in (None, wire_id) or turn.started:
            return
        turn.started = True
        turn.wire_id = wire_id
        await self._release(turn)

    def _adopt_turn_id(self, turn: _Turn, wire_id: str) -> None:
        """The ``turn/start`` answer names the turn; what waits for it waits on for ``turn/started``
        (codex 0.171 takes a steer in between, older releases refuse it: "no active turn to steer")."""
        if turn.wire_id is None:
            turn.wire_id = wire_id

    async def _release(self, turn: _Turn) -> None:
        """The turn started: send the steers and the interrupt held until then."""
        held, turn.held_steers = turn.held_steers, []
        for steer in held:
            await self._send_steer(turn, steer)
        if turn.cancel_requested or turn.failure is not None:
            await self._interrupt(turn)

    async def _turn_completed(self, wire_turn: dict[str, Any]) -> None:
        turn = self._turn
        wire_id = j.nonempty(wire_turn.get("id"))
        if turn is None or (turn.wire_id is not None and wire_id is not None and wire_id != turn.wire_id):
            return
        status = j.text(wire_turn.get("status"), "")
        error = j.text(j.obj(wire_turn.get("error")).get("message"), "")
        stop: StopReason
        if status == "completed":
            stop = Completed()
            if wire_id is not None and not turn.compact:
                self._history.append(wire_id)
        elif status == "interrupted":
            if turn.failure is not None:
                stop = Failed(turn.failure)
            elif turn.cancel_requested:
                stop = Cancelled()
            else:
                stop = Failed(error or "codex interrupted the turn")
        else:
            stop = Failed(error or turn.failure or f"the turn ended {status or 'without a status'}")
        await self._end(turn, stop)

    async def _end(self, turn: _Turn, stop: StopReason) -> None:
        if self._turn is not turn:
            return
        self._turn = None
        self._translator.reset_turn()
        self._spawning.clear()
        for _steer in turn.held_steers:
            await self._loop.send(seam.SteerResult(False))
        turn.held_steers.clear()
        await self._loop.send(seam.TurnEnd(stop, turn_id=turn.engine_id))

    async def _error(self, params: dict[str, Any], note: Notification) -> None:
        error = j.obj(params.get("error"))
        message = j.text(error.get("message"), "") or "codex reported an error"
        raw = {"method": note.method, "params": note.params}
        turn = self._turn
        if not j.flag(params.get("willRetry")):
            await self._loop.diagnostic(f"codex: {message}", DiagnosticCode.AGENT_ERROR, DiagnosticLevel.ERROR, raw)
            if turn is not None and _is_auth(error) and not turn.auth_lost:
                turn.auth_lost = True  # codex ends this turn failed itself; the login is what is lost
                await self._loop.send(seam.AuthLost(self._login))
            return
        await self._loop.diagnostic(
            f"codex is retrying: {message}", DiagnosticCode.API_RETRY, DiagnosticLevel.WARNING, raw
        )
        if turn is None or turn.failure is not None:
            return
        turn.retries += 1
        if _is_auth(error):
            turn.failure = f"codex lost its login: {message}"
            if not turn.auth_lost:
                turn.auth_lost = True
                await self._loop.send(seam.AuthLost(self._login))
        elif turn.retries >= self._max_retries:
            turn.failure = f"codex gave up after {turn.retries} retries: {message}"
        else:
            return
        await self._interrupt(turn)

    async def _resolved(self, wire_request: Any) -> None:
        engine_id = self._by_wire.pop(str(wire_request), None)
        if engine_id is not None and self._requests.take(engine_id) is not None:
            await self._loop.send(seam.RequestWithdrawn(engine_id))

    async def _open_mcp_approval(self, request: IncomingRequest) -> None:
        """An MCP tool approval (it names no item: the running call of that server's tool is the
        one). Any other elicitation (a server's own form) has no surface here: declined."""
        params = j.obj(request.params)
        meta = j.obj(params.get("_meta"))
        server = j.text(params.get("serverName"), "")
        if meta.get("codex_approval_kind") != "mcp_tool_call":
            await self._loop.write(request.reply({"action": "decline", "content": None}))
            message = f"codex relayed a form from MCP server {server!r}; declined (no form surface)"
            await self._loop.diagnostic(message, DiagnosticCode.UNSUPPORTED, DiagnosticLevel.INFO, params)
            return
        name = j.text(meta.get("tool_name"), "")
        child = self._requester(params)
        tool = (child.translator if child is not None else self._translator).running_mcp_call(server, name)
        if tool is None:
            arguments = meta.get("tool_params")
            tool_input = ToolInput(arguments=arguments if isinstance(arguments, dict) else None)
            tool = ToolUpdate(f"mcp-approval-{request.id}", McpTool(server, name), f"{server}/{name}", input=tool_input)
        allow_always = "session" if "session" in j.arr(meta.get("persist")) else None
        choices = [PermissionChoice.ALLOW_ONCE, PermissionChoice.DENY_ONCE]
        if allow_always is not None:
            choices.insert(1, PermissionChoice.ALLOW_ALWAYS)
        engine_id = self._requests.add(_Approval(request, allow_always, elicitation=True))
        self._by_wire[str(request.id)] = engine_id
        tool = attrs.evolve(tool, status=ToolStatus.PENDING)
        opened = RequestOpened(PermissionRequest(engine_id, tool, choices, j.nonempty(params.get("message"))))
        await self._loop.send(seam.Content(opened, child.tool_id if child is not None else None))

    # -- server requests

    async def _on_request(self, request: IncomingRequest) -> None:
        params = j.obj(request.params)
        child = self._requester(params)
        if request.method == "item/tool/requestUserInput":
            if not self._questions:  # the first one seen: the capability comes before the question
                self._questions = True
                await self._info_changed()
            await self._open_question(request, params, child)
            return
        item_id = j.text(params.get("itemId"), "")
        tool = (child.translator if child is not None else self._translator).tool(item_id)
        if request.method == "item/commandExecution/requestApproval":
            command = j.text(params.get("command"), "")
            if tool is None:
                item = {"type": "commandExecution", "id": item_id, "command": command, "status": "inProgress"}
                tool = tool_update(item)
            tool = attrs.evolve(tool, status=ToolStatus.PENDING)
        else:
            tool = (
                attrs.evolve(tool, status=ToolStatus.PENDING)
                if tool is not None
                else ToolUpdate(item_id, ToolKind.EDIT, "Edit files", ToolStatus.PENDING)
            )
        decisions = params.get("availableDecisions")
        allow_always: Any = None
        if isinstance(decisions, list):
            for decision in decisions:
                if decision == "acceptForSession":
                    allow_always = decision
                    break
                if isinstance(decision, dict) and "acceptWithExecpolicyAmendment" in decision and allow_always is None:
                    allow_always = decision
        elif request.method == "item/fileChange/requestApproval":
            allow_always = "acceptForSession"
        choices = [PermissionChoice.ALLOW_ONCE]
        if allow_always is not None:
            choices.append(PermissionChoice.ALLOW_ALWAYS)
        choices.append(PermissionChoice.DENY_ONCE)
        engine_id = self._requests.add(_Approval(request, allow_always))
        self._by_wire[str(request.id)] = engine_id
        detail = j.nonempty(params.get("reason"))
        await self._opened(RequestOpened(PermissionRequest(engine_id, tool, choices, detail)), child)

    async def _opened(self, opened: RequestOpened, child: _Child | None) -> None:
        if child is None:
            await self._loop.send(seam.Content(opened))
        else:
            await self._child_content(child, opened)

    async def _open_question(self, request: IncomingRequest, params: dict[str, Any], child: _Child | None) -> None:
        questions: list[Question] = []
        for raw in j.arr(params.get("questions")):
            raw = j.obj(raw)
            question_id = j.nonempty(raw.get("id"))
            if question_id is None:
                continue
            choices = [
                QuestionChoice(label, label, j.nonempty(j.obj(option).get("description")))
                for option in j.arr(raw.get("options"))
                if (label := j.nonempty(j.obj(option).get("label")))
            ]
            questions.append(
                Question(
                    question_id,
                    j.text(raw.get("question"), ""),
                    j.nonempty(raw.get("header")),
                    choices,
                    allows_free_text=not choices or j.flag(raw.get("isOther")),
                )
            )
        if not questions:
            await request.reply({"answers": {}})
            await self._loop.diagnostic(
                "codex asked for user input without questions; answered empty",
                DiagnosticCode.BAD_FRAME,
                DiagnosticLevel.INFO,
                {"method": request.method, "params": request.params},
            )
            return
        engine_id = self._requests.add(_Ask(request, [q.id for q in questions]))
        self._by_wire[str(request.id)] = engine_id
        await self._opened(RequestOpened(QuestionRequest(engine_id, questions)), child)

    async def _say_no(self, entry: _Open) -> None:
        """The engine closed the request unanswered: decline on the wire (once)."""
        self._by_wire.pop(str(entry.request.id), None)
        if entry.request.answered:
            return
        if isinstance(entry, _Approval):
            await self._loop.write(entry.request.reply(_approval_reply(entry, "decline")))
        else:
            await self._loop.write(entry.request.reply({"answers": {q: {"answers": []} for q in entry.question_ids}}))

    # -- commands

    async def _on_command(self, command: seam.DriverCommand) -> None:
        if isinstance(command, seam.StartTurn):
            await self._start_turn(command)
        elif isinstance(command, seam.Steer):
            await self._steer(command)
        elif isinstance(command, seam.Cancel):
            await self._cancel()
        elif isinstance(command, seam.AnswerRequest):
            await self._answer(command)
        elif isinstance(command, seam.Decline):
            await self._requests.decline(command.request_id)
        elif isinstance(command, seam.Configure):
            self._settings.set(command.option_id, command.value)
            await self._info_changed()
        elif isinstance(command, seam.Rollback):
            await self._rollback(command)
        elif isinstance(command, seam.Compact):
            await self._compact(command)
        else:
            await toolkit.refuse(self._loop.link, command)

    async def _input(self, given: Input) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = [{"type": "text", "text": given.content, "text_elements": []}]
        for path in given.attachments:
            if not path.is_file():
                await self._loop.diagnostic(
                    f"attachment {path} is not a regular file; sent without it", DiagnosticCode.ATTACHMENT
                )
                continue
            if path.suffix.lower() in IMAGE_SUFFIXES:
                items.append({"type": "localImage", "path": str(path)})
            else:
                items.append({"type": "mention", "name": path.name, "path": str(path)})
        return items

    def _client_id(self) -> str:
        self._messages += 1
        return f"{CLIENT_ID_PREFIX}{self._messages}"

    async def _request(self, method: str, params: dict[str, Any], on_response: _OnResponse) -> bool:
        rid = self._peer.new_id()
        self._responses[rid] = on_response
        if await self._loop.write(self._peer.send_request(method, params, request_id=rid)):
            return True
        self._responses.pop(rid, None)
        return False

    async def _start_turn(self, command: seam.StartTurn) -> None:
        if self._turn is not None:
            await toolkit.refuse(self._loop.link, command, "codex is still running a turn")
            return
        items = await self._input(command.input)
        params = {
            "threadId": self._thread_id,
            "input": items,
            "clientUserMessageId": self._client_id(),
            **self._settings.turn_overrides(),
        }
        turn = self._turn = _Turn(command.turn_id)
        await self._loop.send(seam.TurnAck())  # before the write: nothing of the turn can precede it

        async def started(response: Response) -> None:
            if response.error is not None:
                await self._end(turn, Failed(f"codex refused the prompt: {response.error.message}"))
                return
            wire_id = j.nonempty(j.obj(j.obj(response.result).get("turn")).get("id"))
            if wire_id is not None and self._turn is turn:
                self._adopt_turn_id(turn, wire_id)

        if not await self._request("turn/start", params, started):
            await self._end(turn, Failed("the prompt could not be sent: codex no longer reads"))

    async def _steer(self, command: seam.Steer) -> None:
        turn = self._turn
        if turn is None or turn.compact or turn.cancel_requested or turn.failure is not None:
            await self._loop.send(seam.SteerResult(False))
        elif not turn.started:
            turn.held_steers.append(command.input)  # older codex refuses a steer before ``turn/started``
        else:
            await self._send_steer(turn, command.input)

    async def _send_steer(self, turn: _Turn, given: Input) -> None:
        params = {
            "threadId": self._thread_id,
            "expectedTurnId": turn.wire_id,
            "input": await self._input(given),
            "clientUserMessageId": self._client_id(),
        }

        async def steered(response: Response) -> None:
            await self._loop.send(seam.SteerResult(response.ok))

        if not await self._request("turn/steer", params, steered):
            await self._loop.send(seam.SteerResult(False))

    async def _cancel(self) -> None:
        for request_id in self._requests.find(lambda entry: True):
            self._requests.take(request_id)  # codex settles its own approvals when the turn stops
        turn = self._turn
        if turn is not None:
            turn.cancel_requested = True
            await self._interrupt(turn)
        # and the subagents: codex lets them run on when their parent stops, and the turn being
        # cancelled may be the one the engine runs for a subagent that outlived its parent's turn
        for thread, child in self._children.items():
            if child.wire_turn is not None:
                await self._send_interrupt(thread, child.wire_turn)

    async def _interrupt(self, turn: _Turn) -> None:
        if turn.interrupt_sent or turn.wire_id is None or not turn.started:
            return  # sent once the turn started (``_release``): older codex refuses it before
        turn.interrupt_sent = True
        await self._send_interrupt(self._thread_id, turn.wire_id)

    async def _send_interrupt(self, thread: str, wire_turn: str) -> None:
        """``turn/interrupt``; its answer says nothing to act on ("no active turn": it already
        ended): the turn's own ``turn/completed`` says how it stopped."""
        await self._request("turn/interrupt", {"threadId": thread, "turnId": wire_turn}, _ignored)

    async def _answer(self, command: seam.AnswerRequest) -> None:
        entry = self._requests.take(command.request_id)
        if entry is None:
            return
        self._by_wire.pop(str(entry.request.id), None)
        answer = command.answer
        if isinstance(entry, _Approval) and isinstance(answer, PermissionAnswer):
            if answer.choice is PermissionChoice.ALLOW_ONCE:
                decision: Any = "accept"
            elif answer.choice is PermissionChoice.ALLOW_ALWAYS and entry.allow_always is not None:
                decision = entry.allow_always
            else:
                decision = "decline"
            await self._loop.write(entry.request.reply(_approval_reply(entry, decision)))
        elif isinstance(entry, _Ask) and isinstance(answer, QuestionsAnswer):
            answers: dict[str, Any] = {}
            for question_id, given in zip(entry.question_ids, answer.answers, strict=False):
                if isinstance(given, TextAnswer):
                    answers[question_id] = {"answers": [given.value]}
                elif isinstance(given, ChoicesAnswer):
                    answers[question_id] = {"answers": list(given.ids)}
            await self._loop.write(entry.request.reply({"answers": answers}))
        else:
            await self._say_no(entry)
            await toolkit.refuse(self._loop.link, command, "codex cannot take that kind of answer here")

    async def _rollback(self, command: seam.Rollback) -> None:
        if command.scope is RollbackScope.CONVERSATION_AND_FILES:
            await toolkit.refuse(self._loop.link, command, "codex rewinds the conversation only, never files")
            return
        if self._turn is not None or command.turns < 1 or command.turns > len(self._history):
            reason = f"codex can rewind at most {len(self._history)} completed turns here"
            await toolkit.refuse(self._loop.link, command, reason)
            return
        before = self._history[-command.turns]

        async def reverted(response: Response) -> None:
            if response.error is not None:
                await toolkit.refuse(self._loop.link, command, f"codex refused thread/revert: {response.error.message}")
                return
            del self._history[-command.turns :]
            await self._info_changed()

        if not await self._request("thread/revert", {"threadId": self._thread_id, "beforeTurnId": before}, reverted):
            await toolkit.refuse(self._loop.link, command, "codex no longer reads")

    async def _compact(self, command: seam.Compact) -> None:
        if self._turn is not None:
            await toolkit.refuse(self._loop.link, command, "codex is running a turn")
            return
        turn = self._turn = _Turn(None, compact=True)

        async def started(response: Response) -> None:
            if response.error is not None:
                message = f"codex refused to compact: {response.error.message}"
                await self._loop.diagnostic(message, DiagnosticCode.COMPACT_FAILED)
                await self._end(turn, Failed(message))

        if not await self._request("thread/compact/start", {"threadId": self._thread_id}, started):
            await self._end(turn, Failed("codex no longer reads"))


async def _ignored(response: Response) -> None:
    """A reply with nothing to act on."""


def _approval_reply(entry: _Approval, decision: Any) -> dict[str, Any]:
    """An approval's answer: ``{"decision": …}``; for an MCP tool approval (an elicitation)
    ``{"action": "accept", "content": {}}`` (``_meta.persist`` for allow-always) or a decline."""
    if not entry.elicitation:
        return {"decision": decision}
    if decision == "decline":
        return {"action": "decline", "content": None}
    if decision == "accept":
        return {"action": "accept", "content": {}}
    return {"action": "accept", "content": {}, "_meta": {"persist": decision}}


def _is_auth(error: dict[str, Any]) -> bool:
    """A ``TurnError`` that means the credentials were refused (401)."""
    info = error.get("codexErrorInfo")
    if isinstance(info, str):
        return info in _AUTH_CODES
    for detail in j.obj(info).values():
        if j.integer(j.obj(detail).get("httpStatusCode")) == 401:
            return True
    message = j.text(error.get("message"), "")
    return "401" in message and "nauthorized" in message
