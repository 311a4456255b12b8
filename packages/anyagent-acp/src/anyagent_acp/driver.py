"""The ACP driver: one live session, engine commands out, agent frames in.

``toolkit.DriverLoop`` runs it with the ``JsonRpcPeer`` as the frame source: the agent's messages in
one task, in wire order (what the handshake read early comes first), the engine's commands in
another. The loop owns what every wire shares: bad lines and strays, a frame that could not be
translated, a failed write, the agent's end (``Exited``) and the shielded shutdown, which also
stops the client terminals. Client methods (``fs/*``, ``terminal/*``) and configuration calls run
as side tasks of the loop.

Prompts, steers and kiro's hidden ``/effort`` prompt go out with ``peer.send_request``: their
answers arrive as ``Response`` messages after every update the agent wrote before them, so a
turn's last chunk always reaches the engine before its ``TurnEnd``.

What the driver keeps: the prompt on the wire, the open permissions and questions (a
``toolkit.RequestBook`` that answers ``cancelled`` in each dialect), tool snapshots, the message
being streamed. Turn rules are the engine's: prompts queue there, a tool still active when its
turn ends is ended there, a request it closes comes back as ``Decline``, and the ``effort`` set by
a hidden prompt is a between-turns setting it holds while a turn runs.
"""

from __future__ import annotations

import collections
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Union

import anyio
import attrs

from anyagent import (
    Cancelled,
    Capability,
    ChoicesAnswer,
    Completed,
    ContextUsage,
    DiagnosticCode,
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
    ToolOutputDelta,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
    UserMessage,
    seam,
    toolkit,
)
from anyagent import jsonread as j
from anyagent.process import AgentProcess
from anyagent.wire import (
    IncomingRequest,
    JsonRpcCode,
    JsonRpcError,
    JsonRpcPeer,
    Message,
    Notification,
    Response,
)

from . import translate
from ._state import INFO_UPDATES, InfoState, Setter
from .client import FileAccess, RpcFailure, Terminals, TerminalStreams
from .prompt import PromptMedia, prompt_blocks
from .quirks import INFO_HOOKS, Quirks
from .translate import AcpCode

__all__ = ["AcpDriver", "Handshaken", "config_call"]

_CHARS_PER_TOKEN = 4
CANCELLED_PROMPT_HOLD = 3.0
"""Seconds the next ``session/prompt`` waits for the agent's own end of a prompt we cancelled (its
answer, or v2's idle ``state_update``) when the engine gave up on that prompt first. ACP updates
name no prompt: whatever the agent streams before the next prompt is written is the old prompt's,
and the engine drops it (the new turn awaits its ``TurnAck``). An agent that never ends a
cancelled prompt gets the next one after this bound."""
_AUTH_CODES = frozenset({AcpCode.AUTH_REQUIRED, 401})  # 401: agents that pass their API's status through
_CONTENT_UPDATES = frozenset(
    {
        "agent_message_chunk",
        "agent_thought_chunk",
        "user_message_chunk",
        "tool_call",
        "tool_call_update",
        "tool_call_content_chunk",
        "plan",
        "agent_message",
        "agent_thought",
        "user_message",
    }
)
_MESSAGE_CHUNKS = frozenset({"agent_message_chunk", "agent_thought_chunk"})
_PROMPT = "session/prompt"
_STEER = "_session/steering"
_DENIALS = frozenset({PermissionChoice.DENY_ONCE, PermissionChoice.DENY_ALWAYS})
_SELF_CANCELLED = "the agent ended the turn as cancelled, though no cancel was sent"
_REFUSALS: dict[type, str] = {
    seam.Compact: "ACP has no compaction; the request was refused",
    seam.Rollback: "ACP has no rollback; the request was refused",
}


@attrs.define
class Handshaken:
    """What ``connect`` settled, handed to the driver: the wire, what the agent said about itself,
    the client-method servers, and the messages the handshake read that were not its own."""

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
    early: list[Message] = attrs.Factory(list)
    name: str = "the agent"
    mcp_servers: tuple[str, ...] = ()  # the session's own MCP servers, by name
    protocol: int = translate.PROTOCOL_VERSION  # the negotiated ACP version (1 or 2)


# -- what we sent and wait for: ``rpc_id`` is reserved before the write (``JsonRpcPeer.new_id``),
# so an answer the reader takes while the frame is still being written finds its sender.


@attrs.define
class _Prompt:
    """A ``session/prompt`` of ours."""

    params: dict[str, Any]
    prompt_id: str
    turn_id: str | None = None
    rpc_id: int | None = None
    cancel_requested: bool = False
    denied: bool = False  # the user denied a permission during this prompt
    saw_content: bool = False
    retried: bool = False
    said: str = ""  # the start of its agent text, kept only for the ``wedged_reply`` quirk
    accepted: bool = False  # v2: the agent answered it (acceptance; the turn ends in a state_update)
    echo: translate.PromptEcho | None = None  # v1: its echo, watched for in the user chunks
    ended: anyio.Event | None = None  # set when it ends, for a next prompt that waits for that


@attrs.define
class _Effort:
    """Kiro's hidden ``/effort <level>`` prompt. Info changes wait for its answer (``deferred``):
    kiro announces the new level in its metadata before it answers the prompt, and an
    ``InfoChanged`` showing the level is what lets the engine start the next prompt."""

    level: str
    rpc_id: int | None = None
    deferred: bool = False


@attrs.define
class _Steer:
    """A ``_session/steering`` of ours."""

    rpc_id: int | None = None


_Sent = Union[_Prompt, _Effort, _Steer]


# -- the agent's requests that wait for our answer


@attrs.define
class _Permission:
    request: IncomingRequest
    option_ids: dict[PermissionChoice, str]


@attrs.define
class _Question:
    request: IncomingRequest
    dialect: str
    raw: list[Any]


_Open = Union[_Permission, _Question]


class _Inbox:
    """The loop's frame source: the messages the handshake read early, then the peer's.
    ``drained`` is set once every early message has been handled."""

    def __init__(self, peer: JsonRpcPeer, early: Sequence[Message]) -> None:
        self._peer = peer
        self._early = collections.deque(early)
        self.drained = anyio.Event()
        self._drained = False  # ``drained`` is set (asked without a call per message)

    async def receive(self) -> Message:
        if self._early:
            return self._early.popleft()
        if not self._drained:
            self._drained = True
            self.drained.set()  # the loop asks again only after it handled the last one
        return await self._peer.receive()

    def receive_nowait(self) -> Message:
        """``receive`` without waiting: a message already read, else ``anyio.WouldBlock``. Once
        the early messages are handled this is the peer's own (one call less a message; the
        driver loop looks it up again after every wait)."""
        if self._early:
            return self._early.popleft()
        if not self._drained:
            self._drained = True
            self.drained.set()
        self.receive_nowait = self._peer.receive_nowait  # type: ignore[method-assign]
        return self._peer.receive_nowait()


class AcpDriver(seam.Driver):
    """Serves one ACP session for the engine (see the module docstring)."""

    def __init__(self, setup: Handshaken) -> None:
        self._peer = setup.peer
        self._session_id = setup.session_id
        self._state = setup.state
        self._quirks = setup.quirks
        self._media = setup.media
        self._files = setup.files
        self._terminals = setup.terminals
        self._login = setup.login
        self._v2 = setup.protocol == translate.V2
        self._auth_hints = tuple(h.lower() for h in setup.auth_hints)
        self.info = setup.state.info()
        self._inbox = _Inbox(setup.peer, setup.early)
        self.loop: toolkit.DriverLoop[Message] = toolkit.DriverLoop(
            self._on_message,
            self._on_command,
            recorder=setup.process.recorder,
            cleanup=self._terminals.aclose,
            name=setup.name,
            fast_frame=self._fast_message,  # the flood's text chunks, without ``_on_message``
        )
        self.loop.attach(setup.process, self._inbox)
        self._terminals.bind(self.loop.start_soon, self._terminal_output)
        self._streams = TerminalStreams()
        self._book: toolkit.RequestBook[_Open] = toolkit.RequestBook(self._decline)
        self._display = translate.DisplayTerminals()  # v2's agent-owned display terminals
        terminal_text = self._display.text if self._v2 else self._terminals.text
        self._tools = translate.ToolBook(terminal_text, setup.mcp_servers, v2=self._v2)
        self._messages = translate.MessageBook()  # v2: messages by messageId, for the upserts
        self._parts: list[str] | None = None  # v2: the text the open message's events carry
        self._acks_due = 0  # v2: our prompt's user_message acknowledgement is still to come
        self._plans: dict[str, Any] = {}  # v2: this turn's plans by planId, shown as one list
        self._agent_work: bool | None = None  # v2: work the agent started (None: none; True: with content)
        self._counter = 0
        self._prompt: _Prompt | None = None
        self._effort: _Effort | None = None
        self._steer: _Steer | None = None
        self._late: set[int] = set()  # prompts that ended before their answer came
        self._wedged: str | None = None  # why every prompt fails at once (the ``wedged_reply`` quirk)
        self._message: tuple[type, str] | None = None
        self._frame: Message | None = None
        self._turn_chars = 0
        self._session_chars = 0

    async def run(self, link: seam.DriverLink) -> None:
        """Serve until ``Close`` or the agent's end; the loop always reaps the agent and its terminals."""
        await self.loop.run(link)

    async def aclose(self) -> None:
        """``open`` failed after ``connect``: reap without running."""
        await self.loop.shutdown()

    # -----------------------------------------------------------------------------------------
    # reporting to the engine

    async def _content(self, kind: EventKind, extensions: Mapping[str, Any] | None = None) -> None:
        await self.loop.send(seam.Content(kind, None, extensions))

    async def _report(self, message: str, code: str, level: DiagnosticLevel = DiagnosticLevel.INFO) -> None:
        """A diagnostic about the frame being handled, which rides in ``raw``."""
        raw = toolkit.frame_json(self._frame) if self._frame is not None else None
        await self.loop.diagnostic(message, code, level, raw)

    async def _publish(self) -> None:
        self.info = self._state.info()
        if self._effort is not None:
            self._effort.deferred = True  # told with the effort's answer, which opens the engine's gate
            return
        await self.loop.send(seam.InfoChanged(self.info))

    async def _first_sight(self, capability: Capability) -> None:
        if self._state.add_capability(capability):
            await self._publish()

    # -----------------------------------------------------------------------------------------
    # agent → client

    def _fast_message(self, message: Message) -> TextDelta | None:
        """The loop's ``fast_frame``: a ``session/update`` the text fast path takes (``_next_text``)
        as its ``TextDelta``; None for anything else (then ``_on_message``)."""
        if type(message) is Notification and message.method == "session/update":
            fast = self._next_text(message.params)
            if fast is not None:
                self._frame = message
                return fast
        return None

    async def _on_message(self, message: Message) -> None:
        # only messages the loop's ``fast_frame`` (``_fast_message``) declined come here, in the
        # same step (no state changed since: ``_next_text`` would decline again); ``_on_update``
        # takes a chunk ``_next_text`` takes too, the full path, for a caller that skips it
        self._frame = message
        if isinstance(message, Response):
            await self._on_response(message)
        elif isinstance(message, Notification):
            await self._on_notification(message.method, j.obj(message.params))
        elif isinstance(message, IncomingRequest):
            await self._on_request(message)

    async def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "session/update":
            await self._on_update(j.obj(params.get("update")))
            return
        if method == self._quirks.turn_end_notification:
            await self._on_vendor_turn_end(params)
            return
        hook = self._quirks.notifications.get(method)
        if hook in INFO_HOOKS:
            changed = self._state.apply_vendor(hook, params)
            if changed is None:
                await self._report(f"a {method} notification of an unknown kind", DiagnosticCode.UNKNOWN_FRAME)
            elif changed:
                await self._publish()
            return
        if hook is not None:
            await _NOTIFICATION_HOOKS[hook](self, params)
            return
        await self._report(f"unknown notification {method}", DiagnosticCode.UNKNOWN_FRAME)

    async def _on_request(self, request: IncomingRequest) -> None:
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
            await self.loop.write(request.reply_error(JsonRpcCode.METHOD_NOT_FOUND, f"method not found: {method}"))
            return
        self.loop.start_soon(self._serve, request, handler, params)

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
        """Run one client method as a side task (``wait_for_exit`` may take minutes); always answer."""
        try:
            result = await handler(params)
        except RpcFailure as failure:
            await self.loop.write(request.reply_error(failure.code, failure.message, failure.data))
            return
        except Exception as exc:  # a bug in a handler must still answer the agent
            message = f"internal error: {type(exc).__name__}: {exc}"
            await self.loop.write(request.reply_error(JsonRpcCode.INTERNAL_ERROR, message))
            return
        await self.loop.write(request.reply(result))

    # -- session/update

    async def _on_update(self, update: dict[str, Any]) -> None:
        if self._v2:
            update = translate.update_from_v2(update)
        kind = j.text(update.get("sessionUpdate"), "")
        handler = _UPDATE_HANDLERS.get(kind)
        if handler is None:
            await self._report(f"unknown session update {kind or '(none)'}", DiagnosticCode.UNKNOWN_FRAME)
            return
        prompt = self._prompt
        if kind == "user_message_chunk" and prompt is not None and prompt.echo is not None:
            echoed, held = prompt.echo.offer(update.get("content"))
            if echoed:
                return  # our own prompt sent back (hermes): never a UserMessage, nor the turn's content
            if held:  # it only started like our prompt: what was held back comes first
                await self._chunk({**update, "content": {"type": "text", "text": held}}, UserMessage)
        if prompt is not None and kind in _CONTENT_UPDATES:
            prompt.saw_content = True
        elif self._agent_work is False and kind in _CONTENT_UPDATES:
            self._agent_work = True
        if prompt is not None and self._quirks.wedged_reply and kind == "agent_message_chunk":
            prompt.said = (prompt.said + j.text(j.obj(update.get("content")).get("text"), ""))[:200]
        if prompt is None and self._effort is not None and kind in _MESSAGE_CHUNKS:
            return  # the hidden /effort prompt's acknowledgement is not content
        await handler(self, update)

    async def _state_update(self, update: dict[str, Any]) -> None:
        """v2's ``state_update``: ``idle`` ends the prompt in flight with its ``stopReason`` (v2
        moved the turn's end out of the ``session/prompt`` answer); ``running`` and
        ``requires_action`` change nothing here (the engine tracks its own turn state). Work the
        agent starts itself (``running`` with no prompt of ours) that shows content opens an
        agent-originated turn in the engine; its ``idle`` ends that turn by protocol."""
        prompt = self._prompt
        state = update.get("state")
        if prompt is None:
            if state == "running" and self._agent_work is None:
                self._agent_work = False
            elif state == "idle" and self._agent_work is not None:
                showed, self._agent_work = self._agent_work, None
                if showed:
                    stop = translate.stop_reason(update)
                    await self._finish_turn(Failed(_SELF_CANCELLED) if isinstance(stop, Cancelled) else stop)
            return
        if state != "idle":
            return
        if not prompt.accepted and prompt.rpc_id is not None:
            self._late.add(prompt.rpc_id)  # its acceptance, when it comes, is no longer awaited
        await self._prompt_done(prompt, translate.stop_reason(update))

    async def _tool_content(self, update: dict[str, Any]) -> None:
        """v2's ``tool_call_content_chunk``: one content item appended to the tool."""
        await self._end_message()
        tool = self._tools.append_content(update)
        if tool is None:
            await self._report("a tool update without a toolCallId", DiagnosticCode.BAD_FRAME, DiagnosticLevel.WARNING)
            return
        await self._content(ToolUpdated(tool))

    async def _display_update(self, update: dict[str, Any]) -> None:
        """v2's ``terminal_update``: the tool that embeds the terminal shows its new output."""
        terminal_id = self._display.update(update)
        tool_id = self._tools.embedding(terminal_id) if terminal_id else None
        tool = self._tools.refresh(tool_id) if tool_id else None
        if tool is not None:
            await self._content(ToolUpdated(tool))

    async def _display_chunk(self, update: dict[str, Any]) -> None:
        """v2's ``terminal_output_chunk``: a ``ToolOutputDelta`` for the running tool that embeds
        the terminal (its snapshots carry the whole output)."""
        added = self._display.chunk(update)
        if added is None or not added[1]:
            return
        tool_id = self._tools.embedding(added[0])
        tool = self._tools.refresh(tool_id) if tool_id else None
        if tool is not None and tool.status in (ToolStatus.PENDING, ToolStatus.RUNNING):
            await self._content(ToolOutputDelta(tool.id, added[1]))

    def _next_text(self, params: Any) -> TextDelta | None:
        """The fast path for the flood: the next non-empty ``agent_message_chunk`` text of the
        agent message already open becomes its ``TextDelta`` (exactly what ``_on_update`` makes
        of it); None (nothing done) for anything else, which takes the full path."""
        if type(params) is not dict:
            return None
        try:  # subscripts, not ``get``: no call per key on the flood's path
            update = params["update"]
            if type(update) is not dict or update["sessionUpdate"] != "agent_message_chunk":
                return None
            content = update["content"]
            text = content["text"] if type(content) is dict else None
        except KeyError:
            return None
        current = self._message
        if type(text) is not str or not text or current is None or current[0] is not TextDelta:
            return None
        message_id = update.get("messageId")
        if type(message_id) is str and message_id and message_id != current[1]:
            return None  # a new message starts: the full path ends the open one
        prefix = self._quirks.mode_text_prefix
        prompt = self._prompt
        if (prefix and text.startswith(prefix)) or (prompt is None and self._effort is not None):
            return None
        if prompt is not None:
            prompt.saw_content = True
        parts = self._parts
        if parts is not None:
            parts.append(text)
        self._turn_chars += len(text)
        return TextDelta(current[1], text)

    async def _info(self, update: dict[str, Any]) -> None:
        if self._state.apply_update(j.text(update.get("sessionUpdate"), ""), update):
            await self._publish()

    async def _chunk(
        self, update: dict[str, Any], make: type[TextDelta] | type[ReasoningDelta] | type[UserMessage]
    ) -> None:
        text = translate.block_text(update.get("content"))
        if text is None:
            await self._dropped([update.get("content")], make)
            return
        if not text:
            return  # claude's bridge opens each message with an empty chunk
        message_type = make
        message_id = j.text(update.get("messageId"))
        parts: list[str] | None = None
        if self._v2 and message_id:  # chunks append to the message's current id (``MessageBook``)
            message_id, parts = self._messages.chunk(_V2_MESSAGES[make], message_id)
        current = self._message
        if current is None or current[0] is not message_type or (message_id and message_id != current[1]):
            await self._end_message()
            self._counter += 1
            self._message = (message_type, message_id or f"m{self._counter}")
            self._parts = parts
        elif parts is not None:
            self._parts = parts
        assert self._message is not None
        if self._parts is not None:
            self._parts.append(text)
        self._turn_chars += len(text)
        await self._content(make(self._message[1], text))

    async def _whole_message(self, update: dict[str, Any]) -> None:
        """v2's whole-message upserts (``agent_message``, ``agent_thought``, ``user_message``),
        applied by the ``MessageBook`` rule: the new suffix as a delta, or a replacing message."""
        if not self._v2:
            await self._report(f"unknown session update {update.get('sessionUpdate')}", DiagnosticCode.UNKNOWN_FRAME)
            return
        kind = j.text(update.get("sessionUpdate"), "")
        make = _V2_KINDS[kind]
        message_id = j.text(update.get("messageId"))
        if not message_id:
            await self._report("a whole message without a messageId", DiagnosticCode.BAD_FRAME)
            return
        if make is UserMessage and self._our_prompt(message_id):
            return
        if "content" not in update:
            return  # an upsert of other fields: the text is unchanged
        dropped = translate.dropped_blocks(update.get("content"))
        new = self._messages.dropped(kind, message_id, len(dropped))
        if new:  # each block once, though every upsert repeats the whole message
            await self._dropped(dropped[-new:], make)
        edit = self._messages.upsert(kind, message_id, translate.message_text(update.get("content")))
        if edit is None:
            return
        current = self._message
        if edit.replaces is not None:
            if current is not None and current[0] is make and current[1] == edit.replaces:
                await self._end_message()
            extensions = {translate.REPLACES: edit.replaces}
            if not edit.text:
                await self._content(MessageEnded(edit.message_id), extensions)
                return
        else:
            extensions = None
        if current is None or current[0] is not make or current[1] != edit.message_id:
            await self._end_message()
            self._message = (make, edit.message_id)
        self._parts = self._messages.chunk(kind, message_id)[1]
        self._turn_chars += len(edit.text)
        await self._content(make(edit.message_id, edit.text), extensions)

    async def _dropped(self, blocks: list[Any], make: type) -> None:
        """Report message content no anyagent event carries, saying exactly what it was."""
        where = _WHERE[make]
        for block in blocks:
            what = translate.dropped_description(block)
            message = f"{what} in {where} was dropped: anyagent's message events carry only text"
            await self._report(message, DiagnosticCode.BAD_FRAME, DiagnosticLevel.WARNING)

    def _our_prompt(self, message_id: str | None) -> bool:
        """v2: whether a user message acknowledges our own prompt (the first user message after
        ``session/prompt``, by spec; never shown: ``UserMessage`` is never our prompt replayed)."""
        if message_id and self._messages.ours("user_message", message_id):
            return True
        if self._acks_due <= 0 or (message_id and self._messages.known("user_message", message_id)):
            return False
        self._acks_due -= 1
        if message_id:
            self._messages.mark_ours("user_message", message_id)
        return True

    async def _end_message(self) -> None:
        if self._message is not None:
            message_id = self._message[1]
            self._message = None
            self._parts = None
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
        if self._v2 and self._our_prompt(j.text(update.get("messageId"))):
            return
        await self._chunk(update, UserMessage)

    async def _tool(self, update: dict[str, Any]) -> None:
        await self._end_message()
        tool = self._tools.upsert(update)
        if tool is None:
            await self._report("a tool update without a toolCallId", DiagnosticCode.BAD_FRAME, DiagnosticLevel.WARNING)
            return
        if self._prompt is not None:  # its terminals stream from what this snapshot holds on
            for terminal_id in self._tools.terminals(tool.id):
                self._streams.attach(terminal_id, tool.id, self._terminals.kept(terminal_id))
        await self._content(ToolUpdated(tool))

    async def _terminal_output(self, terminal_id: str, data: bytes, fed: int) -> None:
        """A client terminal's output as it arrives: a ``ToolOutputDelta`` for the running tool
        that embeds it, during a prompt (``TerminalStreams``)."""
        streamed = self._streams.chunk(terminal_id, data, fed)
        if streamed is None or self._prompt is None:
            return
        tool = self._tools.get(streamed[0])
        if tool is not None and tool.status in (ToolStatus.PENDING, ToolStatus.RUNNING):
            await self._content(ToolOutputDelta(*streamed))

    async def _plan(self, update: dict[str, Any]) -> None:
        await self._end_message()
        plan_id = j.text(update.get("planId")) if self._v2 else None
        if plan_id is None:
            await self._content(PlanUpdated(translate.plan_entries(update.get("entries"))))
            return
        # v2: each plan_update replaces its own plan; the turn's plans show as one list, in the
        # order they first came
        self._plans[plan_id] = translate.plan_entries(update.get("entries"))
        await self._content(PlanUpdated(tuple(e for entries in self._plans.values() for e in entries)))

    async def _usage(self, update: dict[str, Any]) -> None:
        usage = translate.usage(update)
        if usage is None:
            await self._report("a usage update without `used`", DiagnosticCode.BAD_FRAME)
            return
        await self._first_sight(Capability.CONTEXT_USAGE)
        await self._content(usage)

    async def _adopt_mode(self, mode: str) -> None:
        if self._state.select("mode", mode):
            await self._publish()

    # -- permissions and questions

    async def _on_permission(self, request: IncomingRequest, params: dict[str, Any]) -> None:
        await self._end_message()
        choices, option_ids = translate.permission_options(params.get("options"))
        tool_call = j.obj(params.get("toolCall"))
        detail = None
        if self._v2 and not tool_call:
            tool_call = translate.permission_subject_v2(params, lambda tool_id: self._tools.get(tool_id) is not None)
            detail = translate.permission_detail_v2(params)
        choice = translate.permission_question(params.get("options"), tool_call)
        tool = self._tools.upsert(tool_call)
        if choice is not None and tool is not None:  # a question asked as a permission: every option is a choice
            if self._prompt is not None:
                self._prompt.saw_content = True
            await self._content(ToolUpdated(tool))
            await self._open_question(_Question(request, "permission", [c.id for c in choice.choices]), [choice])
            return
        if tool is None or not choices:
            await self.loop.write(request.reply(_permission_outcome(None)))
            message = "a permission request without a tool or usable options; declined"
            await self._report(message, DiagnosticCode.BAD_FRAME, DiagnosticLevel.WARNING)
            return
        if self._prompt is not None:
            self._prompt.saw_content = True
        request_id = self._book.add(_Permission(request, option_ids))
        await self._content(ToolUpdated(tool))
        await self._content(RequestOpened(PermissionRequest(request_id, tool, choices, detail)))

    async def _open_question(self, question: _Question, parsed: list[Any]) -> None:
        await self._end_message()
        await self._first_sight(Capability.QUESTIONS)
        request_id = self._book.add(question)
        await self._content(RequestOpened(QuestionRequest(request_id, parsed)))

    async def _cursor_question(self, request: IncomingRequest, params: dict[str, Any]) -> None:
        raw = j.arr(params.get("questions"))
        questions = [q for q in map(translate.question_from_cursor, raw) if q is not None]
        question = _Question(request, "cursor", raw)
        if not questions or len(questions) != len(raw):
            await self.loop.write(request.reply(_question_response(question, None)))
            await self._report("an unreadable cursor/ask_question; declined", DiagnosticCode.BAD_FRAME)
            return
        await self._open_question(question, questions)

    async def _grok_question(self, request: IncomingRequest, params: dict[str, Any]) -> None:
        body = j.obj(params.get("params")) or params
        raw = j.arr(body.get("questions"))
        parsed = [translate.question_from_grok(item, index) for index, item in enumerate(raw)]
        questions = [q for q in parsed if q is not None]
        question = _Question(request, "grok", raw)
        if not questions or len(questions) != len(raw):
            await self.loop.write(request.reply(_question_response(question, None)))
            await self._report("an unreadable ask_user_question; declined", DiagnosticCode.BAD_FRAME)
            return
        await self._open_question(question, questions)

    async def _answer(self, command: seam.AnswerRequest) -> None:
        handle = self._book.take(command.request_id)
        answer = command.answer
        if isinstance(handle, _Permission):
            option = _option_for(answer.choice, handle.option_ids) if isinstance(answer, PermissionAnswer) else None
            denied = option is None or (isinstance(answer, PermissionAnswer) and answer.choice in _DENIALS)
            if self._prompt is not None and denied:
                self._prompt.denied = True
            await self.loop.write(handle.request.reply(_permission_outcome(option)))
        elif isinstance(handle, _Question):
            answers = answer.answers if isinstance(answer, QuestionsAnswer) else None
            await self.loop.write(handle.request.reply(_question_response(handle, answers)))
        # None: the agent withdrew it, or it was declined already

    async def _decline(self, handle: _Open) -> None:
        """The book's "no": ``cancelled`` in the request's own dialect."""
        if isinstance(handle, _Permission):
            await self.loop.write(handle.request.reply(_permission_outcome(None)))
        else:
            await self.loop.write(handle.request.reply(_question_response(handle, None)))

    async def _withdraw(self, params: dict[str, Any]) -> None:
        """The agent withdrew its own request (``$/cancel_request``): answer it and tell the engine."""
        wire_id = params.get("requestId")
        for request_id in self._book.find(lambda handle: handle.request.id == wire_id):
            handle = self._book.take(request_id)
            if handle is not None:
                await self._decline(handle)
                await self.loop.send(seam.RequestWithdrawn(request_id))

    # -- vendor hooks (the info-only ones are ``InfoState.apply_vendor``)

    async def _cursor_todos(self, params: dict[str, Any]) -> None:
        await self._end_message()
        await self._content(PlanUpdated(translate.plan_entries(params.get("todos"))))

    async def _cursor_task(self, params: dict[str, Any]) -> None:
        tool_id = j.text(params.get("toolCallId"))
        if not tool_id:
            await self._report("a cursor/task without toolCallId", DiagnosticCode.BAD_FRAME)
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
        await self.loop.write(request.reply({}))
        await self._cursor_todos(params)

    async def _task_request(self, request: IncomingRequest, params: dict[str, Any]) -> None:
        await self.loop.write(request.reply({}))
        await self._cursor_task(params)

    # -----------------------------------------------------------------------------------------
    # engine → agent

    async def _on_command(self, command: seam.DriverCommand) -> None:
        await self._inbox.drained.wait()  # what the handshake read early is handled first
        if isinstance(command, seam.StartTurn):
            await self._start_turn(command.input, command.turn_id)
        elif isinstance(command, seam.Steer):
            await self._steer_turn(command.input)
        elif isinstance(command, seam.AnswerRequest):
            await self._answer(command)
        elif isinstance(command, seam.Decline):
            await self._book.decline(command.request_id)
        elif isinstance(command, seam.Cancel):
            await self._cancel()
        elif isinstance(command, seam.Configure):
            await self._configure(command.option_id, command.value)
        else:
            await toolkit.refuse(self.loop.link, command, _REFUSALS.get(type(command)))

    async def _send_request(self, sent: _Sent, method: str, params: dict[str, Any]) -> None:
        """Send a request whose answer comes through the reader, its id in ``sent.rpc_id`` before the
        write; ``rpc_id`` None after it when the agent no longer reads (reported once by the loop)."""
        sent.rpc_id = self._peer.new_id()
        if not await self.loop.write(self._peer.send_request(method, params, request_id=sent.rpc_id)):
            sent.rpc_id = None

    async def _start_turn(self, value: Input, turn_id: str) -> None:
        old = self._prompt
        if old is not None and old.cancel_requested and old.rpc_id is not None:
            # the engine ended a prompt we cancelled before the agent did (CANCEL_GRACE): until the
            # agent ends it, what it streams is that prompt's, never the next one's (issue 28 3a/3b)
            old.ended = anyio.Event()
            with anyio.move_on_after(CANCELLED_PROMPT_HOLD):
                await old.ended.wait()
        await self.loop.send(seam.TurnAck())
        if self._wedged is not None:  # the agent would only queue it (hermes 0.19 after a failed cancel)
            await self.loop.send(seam.TurnEnd(Failed(self._wedged), turn_id=turn_id))
            return
        blocks, problems = await prompt_blocks(value, self._media)
        for problem in problems:
            await self.loop.diagnostic(problem, DiagnosticCode.ATTACHMENT)
        self._counter += 1
        prompt_id = f"p{self._counter}"
        params: dict[str, Any] = {"sessionId": self._session_id, "prompt": blocks}
        if self._quirks.turn_end_notification:
            params["_meta"] = {"promptId": prompt_id, "requestId": prompt_id}
        if self._prompt is not None and self._prompt.rpc_id is not None:
            self._late.add(self._prompt.rpc_id)  # the engine ended that turn without the wire
        prompt = self._prompt = _Prompt(params, prompt_id, turn_id)
        self._agent_work = None  # our prompt's turn follows the agent's own work
        if self._v2:
            self._acks_due = 1  # v2: the agent acknowledges it with a user_message first
        else:
            prompt.echo = translate.PromptEcho(blocks)  # v1: some agents echo it (hermes)
        self._turn_chars = sum(len(j.text(block.get("text"), "")) for block in blocks)
        await self._send_request(prompt, _PROMPT, params)
        if prompt.rpc_id is None:
            self._prompt = None
            await self.loop.send(seam.TurnEnd(Failed("the prompt could not be sent: the agent no longer reads")))

    async def _steer_turn(self, value: Input) -> None:
        blocks, _problems = await prompt_blocks(value, self._media)
        steer = self._steer = _Steer()
        await self._send_request(steer, _STEER, {"sessionId": self._session_id, "prompt": blocks})
        if steer.rpc_id is None:
            self._steer = None
            await self.loop.send(seam.SteerResult(False))

    async def _cancel(self) -> None:
        """Stop the turn on the wire and decline its open requests, in the order the agent needs;
        the engine's ``Decline``s that follow find them answered already."""
        prompt = self._prompt
        if prompt is not None:
            prompt.cancel_requested = True
        if self._quirks.cancel_answers_first:
            # hermes 0.19: a declined permission is a denial that ends its turn; a session/cancel
            # beside it (either order) or while idle leaves it wedged (HERMES.md, issue 15 item 4)
            declined = await self._book.decline_all()
            if prompt is not None and not declined:
                await self._notify_cancel()
        else:
            # cancel first: an agent parked on a permission must know the turn is over when it wakes
            await self._notify_cancel()
            await self._book.decline_all()
        if prompt is None:  # an agent-originated turn: nothing on the wire will end it
            self._agent_work = None
            await self._finish_turn(Cancelled())

    async def _notify_cancel(self) -> None:
        await self.loop.write(self._peer.notify("session/cancel", {"sessionId": self._session_id}))

    # -- answers to what we sent

    async def _on_response(self, response: Response) -> None:
        if response.id in self._late:
            self._late.discard(response.id)  # a prompt that already ended (grok's turn end came first)
            return
        sent = _answered(response, (self._prompt, self._effort, self._steer))
        if isinstance(sent, _Prompt):
            await self._prompt_answered(sent, response)
        elif isinstance(sent, _Effort):
            await self._effort_answered(sent, response)
        elif isinstance(sent, _Steer):
            self._steer = None
            accepted = response.ok and j.flag(j.obj(response.result).get("accepted"))
            await self.loop.send(seam.SteerResult(accepted))
        else:
            message = f"an answer to request {response.id} ({response.method}) that nothing waits for"
            await self._report(message, DiagnosticCode.UNKNOWN_FRAME)

    async def _prompt_answered(self, prompt: _Prompt, response: Response) -> None:
        if response.error is not None:
            await self._prompt_failed(prompt, response.error)
            return
        if self._v2:  # v2: the answer only accepts the prompt; an idle state_update ends it
            prompt.accepted = True
            return
        stop = translate.stop_reason(response.result)
        if (
            isinstance(stop, Cancelled)
            and self._quirks.retry_spurious_cancel
            and not prompt.cancel_requested
            and not prompt.saw_content
            and not prompt.retried
        ):
            prompt.retried = True
            prompt.echo = translate.PromptEcho(prompt.params["prompt"])  # sent again: echoed again
            await self._send_request(prompt, _PROMPT, prompt.params)
            if prompt.rpc_id is not None:
                return
            stop = Failed("the prompt could not be sent again: the agent no longer reads")
        await self._prompt_done(prompt, stop)

    async def _prompt_failed(self, prompt: _Prompt, error: JsonRpcError) -> None:
        detail = error.data
        text = f"{error.message}: {detail}" if isinstance(detail, str) and detail else error.message
        lowered = text.lower()
        auth = error.code in _AUTH_CODES or any(hint in lowered for hint in self._auth_hints)
        if auth and not prompt.cancel_requested:
            self._prompt = None
            await self.loop.send(seam.AuthLost(self._login))
            return
        stop: StopReason = Cancelled() if prompt.cancel_requested else Failed(f"{text} ({error.code})")
        await self._prompt_done(prompt, stop)

    async def _prompt_done(self, prompt: _Prompt, stop: StopReason) -> None:
        """``Cancelled`` is the user's cancel only. The agent's own ``cancelled`` stop reason
        without one is ``Completed`` after the user denied a permission in this prompt (the agent
        stopped because it was told no: codex-acp 2.x), and ``Failed`` otherwise."""
        if prompt.cancel_requested:
            stop = Cancelled()
        elif isinstance(stop, Cancelled):
            stop = Completed() if prompt.denied else Failed(_SELF_CANCELLED)
        elif isinstance(stop, Completed) and (wedged := self._wedged_reason(prompt)) is not None:
            self._wedged = wedged
            await self.loop.diagnostic(wedged, DiagnosticCode.AGENT_ERROR, DiagnosticLevel.ERROR)
            stop = Failed(wedged)
        await self._finish_turn(stop, prompt.turn_id)

    def _wedged_reason(self, prompt: _Prompt) -> str | None:
        """Why the agent is wedged when this prompt's reply is the ``wedged_reply`` quirk's text."""
        wedge = self._quirks.wedged_reply
        if wedge is None or not prompt.said.strip().startswith(wedge.prefix):
            return None
        return (
            f"the agent is wedged: it answered {prompt.said.strip()!r} without running the prompt and "
            f"will answer every later prompt so (agent bug: {wedge.bug}); open the session again "
            "(resume) to go on"
        )

    async def _finish_turn(self, stop: StopReason, turn_id: str | None = None) -> None:
        """Close the message being streamed, add cursor's estimate, then report the turn's end."""
        if self._prompt is not None and self._prompt.ended is not None:
            self._prompt.ended.set()
        self._prompt = None
        await self._end_message()
        self._session_chars += self._turn_chars
        if self._quirks.estimate_context_usage and self._session_chars:
            await self._first_sight(Capability.CONTEXT_USAGE)
            estimate = ContextUsage(max(1, self._session_chars // _CHARS_PER_TOKEN))
            await self._content(estimate, {"anyagent/estimated": True})
        self._tools.clear()
        self._streams.clear()
        self._display.clear()
        self._plans.clear()
        self._acks_due = 0
        self._turn_chars = 0
        await self.loop.send(seam.TurnEnd(stop, turn_id=turn_id))  # the engine drops it if that turn is over

    async def _on_vendor_turn_end(self, params: dict[str, Any]) -> None:
        """Grok's authoritative turn end, guarded by session and prompt id; the prompt's own
        answer, when it comes, is dropped."""
        prompt = self._prompt
        if prompt is None or j.text(params.get("sessionId")) != self._session_id:
            return
        echoed = j.text(params.get("promptId"))
        if echoed is not None and echoed != prompt.prompt_id:
            return
        if prompt.rpc_id is not None:
            self._late.add(prompt.rpc_id)
        await self._prompt_done(prompt, translate.stop_reason({"stopReason": params.get("stopReason")}))

    # -- configuration

    async def _configure(self, option_id: str, value: Any) -> None:
        option = self._state.option(option_id)
        value = option.resolve(value) if option is not None else value  # a portable mode name
        setter = self._state.setters.get(option_id)
        if setter is Setter.EFFORT_PROMPT:
            await self._put_effort(str(value))
            return
        if setter is None:
            await self.loop.diagnostic(f"no wire call sets {option_id!r}", DiagnosticCode.CONFIGURE_REFUSED)
            return
        method, params = config_call(self._session_id, setter, option_id, value, self._state)
        self.loop.start_soon(self._configure_call, option_id, value, method, params)

    async def _configure_call(self, option_id: str, value: Any, method: str, params: dict[str, Any]) -> None:
        """One configuration call as a side task; ends in ``InfoChanged`` or ``configure_refused``."""
        try:
            result = await self._peer.request(method, params)
        except JsonRpcError as exc:
            message = f"the agent refused {option_id}={value!r}: {exc.message} ({exc.code})"
            await self.loop.diagnostic(message, DiagnosticCode.CONFIGURE_REFUSED)
            return
        except Exception as exc:  # the agent is gone (its exit is reported by the reader)
            await self.loop.diagnostic(f"configure {option_id} failed: {exc}", DiagnosticCode.CONFIGURE_REFUSED)
            return
        body = j.obj(result)
        if isinstance(body.get("configOptions"), list):
            self._state.adopt_config_options(body["configOptions"])
        self._state.select(option_id, value)
        await self._publish()

    async def _put_effort(self, level: str) -> None:
        """Kiro's ``/effort <level>`` as a hidden prompt. The engine sends this setting only while
        no turn runs and starts no prompt until it is answered: exactly one ``InfoChanged`` or one
        ``configure_refused`` ends it."""
        busy = "a prompt" if self._prompt is not None else None
        if self._effort is not None:
            busy = "another effort switch"
        if busy is not None:
            message = f"effort={level!r} was not sent: {busy} is still running"
            await self.loop.diagnostic(message, DiagnosticCode.CONFIGURE_REFUSED)
            return
        effort = self._effort = _Effort(level)
        prompt = [{"type": "text", "text": f"/effort {level}"}]
        await self._send_request(effort, _PROMPT, {"sessionId": self._session_id, "prompt": prompt})
        if effort.rpc_id is None:
            await self._effort_refused(effort, "the agent no longer reads")

    async def _effort_answered(self, effort: _Effort, response: Response) -> None:
        if response.error is not None:
            await self._effort_refused(effort, f"{response.error.message} ({response.error.code})")
            return
        self._effort = None
        self._state.select("effort", effort.level)
        await self._publish()  # even when nothing changed: this is the answer the engine waits for

    async def _effort_refused(self, effort: _Effort, reason: str) -> None:
        self._effort = None
        message = f"the agent refused effort={effort.level!r}: {reason}"
        await self.loop.diagnostic(message, DiagnosticCode.CONFIGURE_REFUSED)
        if effort.deferred:
            await self._publish()


# ---------------------------------------------------------------------------------------------
# helpers


def _answered(response: Response, waiting: Sequence[_Sent | None]) -> _Sent | None:
    """Which of ``waiting`` ``response`` answers (by id)."""
    return next((sent for sent in waiting if sent is not None and sent.rpc_id == response.id), None)


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


def _permission_outcome(option_id: str | None) -> dict[str, Any]:
    """A ``session/request_permission`` answer: the chosen option, or ``cancelled`` without one."""
    if option_id is None:
        return {"outcome": {"outcome": "cancelled"}}
    return {"outcome": {"outcome": "selected", "optionId": option_id}}


def _question_response(question: _Question, answers: tuple[Any, ...] | None) -> dict[str, Any]:
    """The wire answer to a cursor or grok question, or to a permission request asked as a
    question (``cancelled`` without answers)."""
    if question.dialect == "permission":  # the chosen option's id; anything else is no choice
        chosen = answers[0] if answers else None
        picked = chosen.ids if isinstance(chosen, ChoicesAnswer) else ()
        return _permission_outcome(picked[0] if picked and picked[0] in question.raw else None)
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
        mapped[j.text(q.get("question"), "")] = labels
    return {"outcome": "accepted", "answers": mapped}


_V2_KINDS: dict[str, type[TextDelta] | type[ReasoningDelta] | type[UserMessage]] = {
    "agent_message": TextDelta,
    "agent_thought": ReasoningDelta,
    "user_message": UserMessage,
}
_V2_MESSAGES: dict[type, str] = {make: kind for kind, make in _V2_KINDS.items()}
_WHERE: dict[type, str] = {
    TextDelta: "an agent message",
    ReasoningDelta: "an agent thought",
    UserMessage: "a user message",
}
_Handler = Callable[[AcpDriver, dict[str, Any]], Awaitable[None]]
_RequestHandler = Callable[[AcpDriver, IncomingRequest, dict[str, Any]], Awaitable[None]]

_UPDATE_HANDLERS: dict[str, _Handler] = {
    "agent_message_chunk": AcpDriver._agent_text,
    "agent_thought_chunk": AcpDriver._thought,
    "user_message_chunk": AcpDriver._user_text,
    "agent_message": AcpDriver._whole_message,
    "agent_thought": AcpDriver._whole_message,
    "user_message": AcpDriver._whole_message,
    "tool_call": AcpDriver._tool,
    "tool_call_update": AcpDriver._tool,
    "plan": AcpDriver._plan,
    "state_update": AcpDriver._state_update,
    "tool_call_content_chunk": AcpDriver._tool_content,
    "terminal_update": AcpDriver._display_update,
    "terminal_output_chunk": AcpDriver._display_chunk,
    "usage_update": AcpDriver._usage,
    **{kind: AcpDriver._info for kind in INFO_UPDATES},
}

_NOTIFICATION_HOOKS: dict[str, _Handler] = {
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
