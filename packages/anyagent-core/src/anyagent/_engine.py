"""The engine: one per session, owning every rule (turns, queue, steer, requests, status, cleanup).

All state changes happen in synchronous handlers (``_on_driver_event``, the ``Session`` calls,
the deadline timer), so they never interleave. Nothing in a handler waits: commands go to the
adapter over an unbounded channel and events to the consumer with ``send_nowait``. The only
waits are the caller's own (a steer's answer, ``close``), and those are bounded or cancellable.
"""

from __future__ import annotations

import enum
import math
import threading
from collections import deque
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Final, cast

import anyio
import attrs

from . import _log, _safejson, seam
from ._frozen import _EMPTY
from ._outbox import Outbox
from .errors import (
    AgentError,
    AuthRequired,
    InvalidConfiguration,
    InvalidRequest,
    ProcessExited,
    SessionBusy,
    SessionClosed,
    UnsupportedFeature,
)
from .installation import AgentInstallation
from .options import PermissionMode, RollbackScope, SessionOptions
from .types import (
    JSON,
    AgentOrigin,
    Answer,
    Cancelled,
    Capability,
    ChoicesAnswer,
    Completed,
    CompletionSource,
    ConfigValue,
    ContextUsage,
    Delivery,
    Diagnostic,
    DiagnosticCode,
    DiagnosticInfo,
    DiagnosticLevel,
    Event,
    EventKind,
    Failed,
    Input,
    MessageEnded,
    PermissionAnswer,
    PermissionChoice,
    PermissionRequest,
    PromptOrigin,
    QuestionRequest,
    QuestionsAnswer,
    Queued,
    ReasoningDelta,
    Request,
    RequestClosed,
    RequestOpened,
    SessionInfo,
    SessionStatus,
    SessionUpdated,
    Started,
    StatusChanged,
    Steered,
    StopReason,
    TextAnswer,
    TextDelta,
    ToolOutputDelta,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
    TurnEnded,
    TurnInfo,
    TurnOrigin,
    TurnStarted,
    UserMessage,
    _event_extensions,
    _event_kind,
    _event_occurred_at,
    _event_sequence,
    _event_session_id,
    _event_turn_info,
)

__all__ = ["EVENT_BUFFER"]

_new_event = object.__new__  # with the slot setters: ``Event(...)`` without its ``__init__`` call

EVENT_BUFFER = 1024
"""Events a consumer may fall behind before it is treated as gone and the session closes."""

EVENT_BUFFER_BYTES = 64 * 1024 * 1024
"""Bytes of event payload (text, tool output) a consumer may fall behind before it is treated as gone."""

COALESCE_AFTER = 256
"""Once a consumer lags this many events, a text delta joins the queued delta of its message."""

CLOSE_GRACE = 5.0
"""Seconds ``close`` waits for the adapter to shut down before cancelling it."""

CANCEL_GRACE = 10.0
"""Seconds after ``cancel`` before the engine ends a turn the adapter never ended."""

CANCEL_SETTLE = 60.0
"""Seconds after the engine ended a cancelled turn the agent never confirmed (``CANCEL_GRACE``)
during which that turn's late output is dropped and, for an agent that refuses a prompt while it
runs a turn (``DriverInfo.refuses_prompt_while_busy``), the next prompt waits for the agent's own
end of it. After that the engine goes ahead as if the agent were idle."""

CONFIGURE_GRACE = 30.0
"""Seconds the engine holds queued prompts for a between-turns setting to be confirmed."""

QUIET_USER_TURN = 120.0
QUIET_AGENT_TURN = 20.0

_ENGINE_OWNED = (TurnStarted, TurnEnded, RequestClosed, SessionUpdated, StatusChanged)
_TURN_CONTENT = (TextDelta, ReasoningDelta, UserMessage, RequestOpened, ToolOutputDelta)
_MESSAGE_DELTAS = (TextDelta, ReasoningDelta, UserMessage)
_CONFIG_REFUSALS = frozenset(
    {DiagnosticCode.CONFIGURE_REFUSED, DiagnosticCode.UNSUPPORTED, DiagnosticCode.COMMAND_FAILED}
)


class _State(enum.Enum):
    IDLE = "idle"
    RUNNING = "running"
    CLOSING = "closing"
    CLOSED = "closed"


@attrs.define
class _Prompt:
    id: str
    input: Input


@attrs.define
class _Turn:
    id: str
    origin: TurnOrigin
    info: TurnInfo
    requests: dict[str, Request] = attrs.Factory(dict)
    running_tools: dict[str, tuple[ToolUpdate, str | None]] = attrs.Factory(dict)
    background: set[str] = attrs.Factory(set)
    open_messages: dict[str, None] = attrs.Factory(dict)
    awaiting_ack: bool = False
    cancel_requested: bool = False
    subagent: str | None = None
    """For an agent-originated turn opened by a subagent's output: that subagent's tool id, while
    everything in the turn came from it (its end then ends the turn). None otherwise."""


@attrs.define
class _PendingSteer:
    prompt: _Prompt
    turn_id: str
    done: anyio.Event = attrs.Factory(anyio.Event)
    result: Delivery | AgentError | None = None


_WAKE: Final = object()
"""What the engine puts in its own driver channel after a text delta ``DriverLink.send`` handed it
in place (``_Engine._fast_text``): the pump wakes, and its drain re-arms the deadlines."""


def _is_turn_content(kind: EventKind) -> bool:
    if isinstance(kind, _TURN_CONTENT):
        return True
    return isinstance(kind, ToolUpdated) and kind.tool.status.active


class _Engine:
    """The rules of one session. Created by ``Runtime.open`` after the adapter connected."""

    def __init__(
        self,
        session_id: str,
        agent: AgentInstallation,
        options: SessionOptions,
        driver: seam.Driver,
    ) -> None:
        self.session_id = session_id
        self.agent = agent
        self.options = options
        self.driver = driver
        self.driver_info = driver.info
        self._info = SessionInfo(
            session_id=session_id,
            agent=agent,
            details=driver.info.details,
            configuration=driver.info.configuration,
            resume_token=driver.info.resume_token,
            title=driver.info.title,
            status=SessionStatus.IDLE,
        )
        self._state = _State.IDLE
        self._status = SessionStatus.IDLE
        self._sequence = 0
        self._turn: _Turn | None = None
        self._queue: deque[_Prompt] = deque()
        self._steer: _PendingSteer | None = None
        self._turn_counter = 0
        self._prompt_counter = 0
        self._promotion_pending = False
        self._late_end_noted = False
        # a cancelled turn the engine ended at CANCEL_GRACE without the agent's end: its id until the
        # agent ends it itself (or CANCEL_SETTLE passes); its output is dropped meanwhile
        self._abandoned: str | None = None
        self._abandoned_deadline: float | None = None
        self._abandoned_output_noted = False
        # between-turns settings: held while a turn runs, then awaited before the next prompt
        self._held_config: dict[str, ConfigValue] = {}
        self._config_waits: list[tuple[str, ConfigValue]] = []  # sent, not yet confirmed or refused
        self._config_deadline: float | None = None
        # handles: the session ends when its Events or its last Session handle is dropped
        self._handles = 0
        self._loop_thread = threading.get_ident()
        self._dropped: str | None = None  # "events" or "sessions" once those handles are gone
        # deadlines (anyio clock seconds); the timer task sleeps until the earliest
        self._quiet_deadline: float | None = None
        self._stall_deadline: float | None = None
        self._cancel_deadline: float | None = None
        self._close_deadline: float | None = None
        self._stall_reported = False
        self._activity = False
        # the time of the batch of text deltas being taken in place (``_fast_text``): events of one
        # batch (taken between two drains of the pump) share the time of its first; any event the
        # engine stamps meanwhile moves it on, so the times of a session never go back
        self._stamp: datetime | None = None
        self._timer_wake = anyio.Event()
        self._timer_target = math.inf
        # channels
        self._commands_tx, self._commands_rx = seam.unbounded_commands()
        self._driver_tx, self._driver_rx = seam.event_channel(driver.info.event_buffer)
        self._sent = seam._CountedEvents(self._driver_tx)
        self._link = seam.DriverLink(self._commands_rx, cast(Any, self._sent))
        self._link._direct = self._fast_text  # a text delta of the running turn skips the channel
        self._wake_sent = False  # a ``_WAKE`` waits in the channel: the pump will re-arm the deadlines
        self._outbox = Outbox(EVENT_BUFFER, EVENT_BUFFER_BYTES)
        self._terminal_error: AgentError | None = None
        self._consumer_lost = False
        self._exited: seam.Exited | None = None
        self._finished = anyio.Event()
        self._driver_scope: anyio.CancelScope | None = None
        quiet = options.quiet_window_seconds
        self._quiet_user = quiet if quiet is not None else QUIET_USER_TURN
        self._quiet_agent = quiet if quiet is not None else QUIET_AGENT_TURN
        self._auto_approve = options.permissions is PermissionMode.AUTO_APPROVE

    # -----------------------------------------------------------------------------------------
    # the session task

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The session's task: drive the adapter, pump its events, keep the deadlines."""
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._run_driver)
                tg.start_soon(self._pump)
                tg.start_soon(self._timer)
                task_status.started()
                self._sync_status()
                await self._finished.wait()
                tg.cancel_scope.cancel()
        finally:
            self._finish()

    async def _run_driver(self) -> None:
        link = self._link
        with anyio.CancelScope() as scope:
            self._driver_scope = scope
            try:
                await self.driver.run(link)
            except Exception as exc:  # an adapter bug must not take the runtime down
                self._exited = self._exited or seam.Exited("adapter error", f"{type(exc).__name__}: {exc}")
        self._driver_tx.close()

    async def _pump(self) -> None:
        receive = self._driver_rx
        sent = self._sent
        while True:
            try:
                event = receive.receive_nowait()
            except anyio.WouldBlock:
                # the batch is drained: re-arm the deadlines once for all of it, then wait
                self._flush_activity()
                try:
                    event = await receive.receive()
                except anyio.EndOfStream:
                    break
            except anyio.EndOfStream:
                break
            if event is _WAKE:
                self._wake_sent = False  # deltas were taken in place: the drain below re-arms the deadlines
                continue
            sent.queued -= 1  # taken (and handled before the next wait: the adapter sees it done)
            if self._fast_text(event):
                continue  # a text delta of the running turn changes no status
            self._on_driver_event(event)
            if self._promotion_pending:
                await self._settle_and_promote()
            self._sync_status()
        self._flush_activity()
        self._on_driver_gone()

    def _flush_activity(self) -> None:
        self._stamp = None  # the batch is over: the next event takes the time anew
        if self._activity:
            self._activity = False
            self._stall_reported = False
            self._arm_stall()
            self._arm_quiet()

    async def _settle_and_promote(self) -> None:
        # let the adapter flush frames it already produced: trailing frames of the ended turn
        # must be seen (and may open an agent turn) before the next queued prompt starts
        self._flush_activity()
        await anyio.lowlevel.checkpoint()
        if self._promotion_pending and not self._sent.queued:
            self._promote()
            self._sync_status()

    async def _timer(self) -> None:
        while True:
            if self._promotion_pending:
                await self._settle_and_promote()
            target = self._next_deadline()
            self._timer_target = target
            # a wake set before this wait (a handle dropped right after open, before this task
            # first ran) is kept: the event is replaced only after it was seen
            if target == math.inf:
                await self._timer_wake.wait()  # a new deadline, a promotion or a dropped handle
            else:
                delay = target - anyio.current_time()
                if delay > 0:
                    with anyio.move_on_after(delay):
                        await self._timer_wake.wait()
            self._timer_wake = anyio.Event()
            # always, deadline or not: a wake with no deadline pending may be a drop of every handle
            self._on_deadlines(anyio.current_time())
            self._sync_status()

    def _next_deadline(self) -> float:
        deadlines = [
            d
            for d in (
                self._quiet_deadline,
                self._stall_deadline,
                self._cancel_deadline,
                self._close_deadline,
                self._config_deadline,
                self._abandoned_deadline,
            )
            if d is not None
        ]
        return min(deadlines, default=math.inf)

    def _set_deadline(self, name: str, value: float | None) -> None:
        setattr(self, name, value)
        if value is not None and value < self._timer_target:
            self._timer_wake.set()

    # -----------------------------------------------------------------------------------------
    # emitting

    def _emit(
        self,
        kind: EventKind,
        turn_info: TurnInfo | None = None,
        extensions: Mapping[str, JSON] | None = None,
    ) -> None:
        if self._consumer_lost or self._state is _State.CLOSED:
            return
        outbox = self._outbox
        if outbox.reader_gone:
            self._consumer_gone(None)
            return
        size = _payload_size(kind)
        if len(outbox) >= COALESCE_AFTER and isinstance(kind, _MESSAGE_DELTAS) and not extensions:
            last = outbox.last()
            if (
                last is not None
                and type(last.kind) is type(kind)
                and last.kind.message_id == kind.message_id
                and last.turn_info == turn_info
                and not last.extensions
                and outbox.bytes + size <= outbox.max_bytes
            ):
                # the consumer lags: this delta joins its message's queued one (no text is lost)
                merged = attrs.evolve(last.kind, text=last.kind.text + kind.text)
                outbox.replace_last(attrs.evolve(last, kind=merged), size)
                return
        if not outbox.fits(size):
            over_count = len(outbox) >= outbox.max_events
            behind = f"{len(outbox)} events" if over_count else f"{outbox.bytes // (1024 * 1024)} MiB of events"
            self._consumer_gone(SessionClosed(f"the events consumer fell {behind} behind; the session was closed"))
            return
        self._sequence += 1
        now = datetime.now(timezone.utc)
        if self._stamp is not None:
            self._stamp = now  # a batch is running: its later events are never stamped before this one
        event = Event(
            sequence=self._sequence,
            occurred_at=now,
            session_id=self.session_id,
            kind=kind,
            turn_info=turn_info,
            extensions=extensions,
        )
        outbox.put(event, size)

    def _consumer_gone(self, error: AgentError | None) -> None:
        self._consumer_lost = True
        self._outbox.close()
        if error is not None and self._terminal_error is None:
            self._terminal_error = error
        self._begin_close()

    def _diagnostic(
        self,
        message: str,
        code: str,
        level: DiagnosticLevel = DiagnosticLevel.WARNING,
        raw: JSON = None,
        turn_info: TurnInfo | None = None,
    ) -> None:
        self._emit(Diagnostic(DiagnosticInfo(message, level, code, raw)), turn_info)

    def _turn_info(self, parent_tool_id: str | None = None) -> TurnInfo | None:
        if self._turn is None:
            return None
        return TurnInfo(self._turn.id, parent_tool_id)

    # -----------------------------------------------------------------------------------------
    # status

    def _compute_status(self) -> SessionStatus:
        if self._state is _State.RUNNING and self._turn is not None:
            return SessionStatus.NEEDS_INPUT if self._turn.requests else SessionStatus.WORKING
        if self._state is _State.IDLE and (self._queue or self._config_pending):
            return SessionStatus.WORKING
        return SessionStatus.IDLE

    def _sync_status(self) -> None:
        status = self._compute_status()
        if status is not self._status:
            self._status = status
            self._info = attrs.evolve(self._info, status=status)
            self._emit(StatusChanged(status))

    # -----------------------------------------------------------------------------------------
    # turns

    def _next_turn_id(self) -> str:
        self._turn_counter += 1
        return f"t{self._turn_counter}"

    def _begin_turn(self, origin: TurnOrigin) -> _Turn:
        turn_id = self._next_turn_id()
        turn = _Turn(turn_id, origin, TurnInfo(turn_id))
        self._turn = turn
        self._state = _State.RUNNING
        self._late_end_noted = False
        self._stall_reported = False
        self._emit(TurnStarted(origin), turn.info)
        log = _log.enabled("anyagent.engine", _log.INFO)
        if log is not None:
            log.info("session %s: turn %s started (%s)", self.session_id, turn_id, type(origin).__name__)
        self._arm_stall()
        return turn

    def _start_prompt(self, prompt: _Prompt) -> str:
        turn = self._begin_turn(PromptOrigin(prompt.id))
        turn.awaiting_ack = True
        self._send(seam.StartTurn(prompt.input, turn.id))
        self._arm_quiet()
        return turn.id

    def _end_turn(self, stop: StopReason) -> None:
        turn = self._turn
        if turn is None:
            return
        info = turn.info
        for message_id in list(turn.open_messages):
            self._emit(MessageEnded(message_id), info)
        self._close_requests(turn)
        # one policy for every wire: a tool still active at the turn's end did not finish
        final = ToolStatus.CANCELLED if isinstance(stop, Cancelled) else ToolStatus.FAILED
        background: list[str] = []
        for tool_id, (tool, parent) in list(turn.running_tools.items()):
            if tool_id in turn.background:
                background.append(tool_id)
                continue
            self._emit(ToolUpdated(attrs.evolve(tool, status=final)), TurnInfo(turn.id, parent))
        self._emit(TurnEnded(stop, tuple(background)), info)
        log = _log.enabled("anyagent.engine", _log.INFO)
        if log is not None:
            log.info("session %s: turn %s ended %s", self.session_id, turn.id, type(stop).__name__)
        self._turn = None
        if self._state is _State.RUNNING:
            self._state = _State.IDLE
        self._quiet_deadline = None
        self._stall_deadline = None
        self._cancel_deadline = None
        steer = self._steer
        if steer is not None:
            # the turn ended before the agent answered the steer: it runs next instead
            self._steer = None
            self._queue.appendleft(steer.prompt)
            self._resolve_steer(steer, Delivery(steer.prompt.id, Queued(0)))
        if self._state is _State.IDLE:
            self._send_held_config()
        if self._state is _State.IDLE and self._queue:
            self._promotion_pending = True
            self._timer_wake.set()

    def _close_requests(self, turn: _Turn) -> None:
        """Close every open request of ``turn`` unanswered; the adapter declines them on its wire."""
        declined = list(turn.requests)
        turn.requests.clear()
        for request_id in declined:
            self._emit(RequestClosed(request_id), turn.info)
            self._send(seam.Decline(request_id))

    @property
    def _held_for_idle(self) -> bool:
        """The agent still runs a turn the engine gave up on, and would refuse a prompt now."""
        return self._abandoned is not None and self.driver_info.refuses_prompt_while_busy

    def _abandon(self, turn_id: str) -> None:
        self._abandoned = turn_id
        self._abandoned_output_noted = False
        self._set_deadline("_abandoned_deadline", anyio.current_time() + CANCEL_SETTLE)

    def _settle_abandoned(self) -> None:
        """The agent is done with the turn the engine gave up on: held prompts go ahead."""
        self._abandoned = None
        self._abandoned_deadline = None
        if self._state is _State.IDLE and self._turn is None and self._queue:
            self._promotion_pending = True
            self._timer_wake.set()

    def _promote(self) -> None:
        self._promotion_pending = False
        if self._state is not _State.IDLE or not self._queue or self._config_pending or self._held_for_idle:
            return
        self._start_prompt(self._queue.popleft())

    # -----------------------------------------------------------------------------------------
    # between-turns settings

    @property
    def _config_pending(self) -> bool:
        return bool(self._config_waits)

    def _send_config(self, option_id: str, value: ConfigValue) -> None:
        self._config_waits.append((option_id, value))
        self._set_deadline("_config_deadline", anyio.current_time() + CONFIGURE_GRACE)
        self._send(seam.Configure(option_id, value))

    def _send_held_config(self) -> None:
        held, self._held_config = self._held_config, {}
        for option_id, value in held.items():
            self._send_config(option_id, value)

    def _config_settled(self, info: seam.DriverInfo | None) -> None:
        """An ``InfoChanged`` (``info``) settles the between-turns settings it shows applied; a
        refusal (None) settles the oldest one. When none is left, queued prompts go ahead."""
        if not self._config_waits:
            return
        if info is None:
            self._config_waits.pop(0)
        else:
            applied = info.configuration
            self._config_waits = [(o, v) for o, v in self._config_waits if o not in applied or applied[o] != v]
        if self._config_waits:
            return
        self._config_released()

    def _config_released(self) -> None:
        self._config_deadline = None
        if self._state is _State.IDLE and self._turn is None and self._queue:
            self._promotion_pending = True
            self._timer_wake.set()

    def _resolve_steer(self, steer: _PendingSteer, result: Delivery | AgentError) -> None:
        steer.result = result
        steer.done.set()

    # -----------------------------------------------------------------------------------------
    # deadlines

    def _quiet_applies(self) -> bool:
        turn = self._turn
        if turn is None or turn.requests or turn.running_tools or turn.cancel_requested:
            return False
        if isinstance(turn.origin, PromptOrigin):
            return not self.driver_info.ends_turns
        return not self.driver_info.ends_agent_turns

    def _arm_quiet(self) -> None:
        if not self._quiet_applies():
            self._quiet_deadline = None
            return
        assert self._turn is not None
        window = self._quiet_user if isinstance(self._turn.origin, PromptOrigin) else self._quiet_agent
        self._set_deadline("_quiet_deadline", anyio.current_time() + window)

    def _arm_stall(self) -> None:
        if self._turn is None or self._turn.requests:
            self._stall_deadline = None
            return
        self._set_deadline("_stall_deadline", anyio.current_time() + self.options.stall_after_seconds)

    def _release(self, events: bool) -> None:
        """A handle was garbage-collected: the ``Events`` (``events``) or a ``Session``. Dropping
        the events or the last session handle ends the session. Called from ``__del__``, so it
        only flags the drop and wakes the timer task, which closes in a task of its own."""
        if not events:
            self._handles -= 1
            if self._handles > 0:
                return
        if self._state in (_State.CLOSING, _State.CLOSED):
            return
        if self._dropped != "events":
            self._dropped = "events" if events else "sessions"
        if threading.get_ident() == self._loop_thread:  # another thread: the next wake sees the flag
            try:
                self._timer_wake.set()
            except Exception:  # the event loop is already gone (interpreter shutdown)
                pass

    def _on_deadlines(self, now: float) -> None:
        dropped, self._dropped = self._dropped, None
        if dropped is not None and self._state not in (_State.CLOSING, _State.CLOSED):
            if dropped == "events":
                self._consumer_gone(None)  # nobody reads: stop emitting, then close
            else:
                self._begin_close()  # the events still reach whoever reads them
        if self._config_deadline is not None and now >= self._config_deadline:
            self._config_deadline = None
            if self._config_waits:
                self._config_waits.clear()
                self._diagnostic(
                    "the agent did not confirm a between-turns setting; queued prompts go ahead",
                    DiagnosticCode.CONFIGURE_UNCONFIRMED,
                )
                self._config_released()
        if self._close_deadline is not None and now >= self._close_deadline:
            self._close_deadline = None
            if self._driver_scope is not None:
                self._driver_scope.cancel()
        if self._cancel_deadline is not None and now >= self._cancel_deadline:
            self._cancel_deadline = None
            if self._turn is not None:
                self._diagnostic(
                    "the agent did not confirm the cancel; the turn was ended without it",
                    "cancel_unconfirmed",
                    turn_info=self._turn_info(),
                )
                if self.driver_info.ends_turns:  # its own end will come: until then it is not idle
                    self._abandon(self._turn.id)
                self._end_turn(Cancelled())
        if self._abandoned_deadline is not None and now >= self._abandoned_deadline:
            self._abandoned_deadline = None
            if self._abandoned is not None:
                if self._held_for_idle and self._queue:
                    self._diagnostic(
                        f"the agent never ended the cancelled turn {self._abandoned}; the next prompt goes ahead",
                        DiagnosticCode.CANCEL_UNCONFIRMED,
                    )
                self._settle_abandoned()
        if self._quiet_deadline is not None and now >= self._quiet_deadline:
            self._quiet_deadline = None
            if self._quiet_applies():
                self._end_turn(Completed(CompletionSource.INFERRED))
        if self._stall_deadline is not None and now >= self._stall_deadline:
            self._stall_deadline = None
            if self._turn is not None and not self._turn.requests and not self._stall_reported:
                self._stall_reported = True
                seconds = self.options.stall_after_seconds
                self._diagnostic(
                    f"no frame from the agent for {seconds:g} s; the turn is still open",
                    "stall",
                    turn_info=self._turn_info(),
                )

    # -----------------------------------------------------------------------------------------
    # driver events

    def _fast_text(self, event: seam.DriverEvent) -> bool:
        """The fast path for the flood: what ``_on_driver_event`` does with a text delta of the
        running turn (no queue to promote), without the checks that cannot apply to one. False
        (nothing done) for anything else. ``event`` is a bare ``TextDelta`` (what the fast
        translators send) or its ``Content``."""
        if type(event) is TextDelta:
            kind = event
        elif type(event) is seam.Content and event.parent_tool_id is None and not event.extensions:
            inner = event.kind
            if type(inner) is not TextDelta:
                return False
            kind = inner
        else:
            return False
        turn = self._turn
        if turn is None or turn.awaiting_ack or turn.subagent is not None or self._state is not _State.RUNNING:
            return False
        if self._promotion_pending:
            return False
        if not self._activity:
            self._activity = True
            if not self._wake_sent:
                # taken in the adapter's task (``DriverLink.send``) while the pump may sleep: wake it
                # once, so the stall and quiet deadlines are re-armed for this activity, as for a batch
                self._wake_sent = True
                try:
                    self._driver_tx.send_nowait(_WAKE)  # type: ignore[arg-type]  # the pump's own marker
                except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    self._wake_sent = False
        turn.open_messages[kind.message_id] = None
        outbox = self._outbox
        size = len(kind.text) + 64
        items = outbox._items
        if (
            self._consumer_lost
            or outbox._reader_closed
            or len(items) >= COALESCE_AFTER
            or outbox.bytes + size > outbox.max_bytes
        ):
            self._emit(kind, turn.info)  # the consumer lags or left: the full rules
            return True
        stamp = self._stamp
        if stamp is None:  # the first event of this batch: the batch's time (see ``_stamp``)
            stamp = self._stamp = datetime.now(timezone.utc)
        self._sequence += 1
        # ``Event(...)`` and ``outbox.put`` inlined (the flood's path: two calls less per delta)
        built = _new_event(Event)
        _event_sequence(built, self._sequence)
        _event_occurred_at(built, stamp)
        _event_session_id(built, self.session_id)
        _event_kind(built, kind)
        _event_turn_info(built, turn.info)
        _event_extensions(built, _EMPTY)
        items.append((built, size))
        outbox.bytes += size
        if outbox._waiter is not None:
            outbox._wake()
        return True

    def _on_driver_event(self, event: seam.DriverEvent) -> None:
        if self._state is _State.CLOSED:
            return
        self._activity = True
        if isinstance(event, seam.Content):
            self._on_content(event)
        elif isinstance(event, seam.TurnAck):
            if self._turn is not None:
                self._turn.awaiting_ack = False
            if self._abandoned is not None and not self._held_for_idle:
                self._abandoned = None  # the agent took a new prompt: the old turn is over for it
                self._abandoned_deadline = None
        elif isinstance(event, seam.TurnEnd):
            self._on_turn_end(event)
        elif isinstance(event, seam.SteerResult):
            self._on_steer_result(event.accepted)
        elif isinstance(event, seam.ToolBackgrounded):
            if self._turn is not None:
                self._turn.background.add(event.tool_id)
        elif isinstance(event, seam.RequestWithdrawn):
            turn = self._turn
            if turn is not None and turn.requests.pop(event.request_id, None) is not None:
                self._emit(RequestClosed(event.request_id), turn.info)
        elif isinstance(event, seam.InfoChanged):
            self._on_info_changed(event.info)
            self._config_settled(event.info)
        elif isinstance(event, seam.AuthLost):
            if self._turn is not None:
                self._end_turn(Failed("the agent needs a login"))
            if self._terminal_error is None:
                self._terminal_error = AuthRequired(event.login, "the agent lost its login mid-session")
            self._begin_close()
        elif isinstance(event, seam.Exited):
            self._exited = event

    def _on_content(self, event: seam.Content) -> None:
        event = _json_safe(event)
        kind = event.kind
        if self._state is _State.CLOSING and not isinstance(kind, Diagnostic):
            return  # the last turn already ended Cancelled: what the agent still says is moot
        if self._config_waits and isinstance(kind, Diagnostic) and kind.diagnostic.code in _CONFIG_REFUSALS:
            self._config_settled(None)
        if isinstance(kind, _ENGINE_OWNED):
            self._diagnostic(
                f"the adapter sent the engine-owned event {type(kind).__name__}; dropped",
                "engine_owned_event",
                raw=type(kind).__name__,
            )
            return
        turn = self._turn
        content = _is_turn_content(kind)
        if turn is not None and turn.awaiting_ack:
            if content or isinstance(kind, (MessageEnded, ToolUpdated)):
                return  # belongs to the turn that already ended: drop, never re-attribute
            self._emit(kind, None, event.extensions)
            return
        if turn is None:
            if self._state is not _State.IDLE or not content:
                self._emit(kind, None, event.extensions)
                return
            if self._abandoned is not None:
                # the cancelled turn streams on after the engine ended it: never a new turn
                if not self._abandoned_output_noted:
                    self._abandoned_output_noted = True
                    self._diagnostic(
                        f"the agent kept streaming the cancelled turn {self._abandoned} after it was ended; "
                        "dropped until the agent ends it",
                        DiagnosticCode.CANCEL_UNCONFIRMED,
                    )
                return
            turn = self._begin_turn(AgentOrigin())
            turn.subagent = event.parent_tool_id
        elif turn.subagent is not None and event.parent_tool_id != turn.subagent and content:
            turn.subagent = None  # someone else speaks in it: the subagent's end no longer ends it
        if isinstance(kind, RequestOpened):
            self._on_request(kind.request, event)
            return
        parent = event.parent_tool_id
        self._track(turn, kind, parent)
        self._emit(kind, turn.info if parent is None else TurnInfo(turn.id, parent), event.extensions)

    def _track(self, turn: _Turn, kind: EventKind, parent: str | None) -> None:
        if isinstance(kind, _MESSAGE_DELTAS):
            turn.open_messages[kind.message_id] = None
        elif isinstance(kind, MessageEnded):
            turn.open_messages.pop(kind.message_id, None)
        elif isinstance(kind, ToolUpdated):
            if kind.tool.status.active:
                turn.running_tools[kind.tool.id] = (kind.tool, parent)
            else:
                turn.running_tools.pop(kind.tool.id, None)

    def _on_request(self, request: Request, event: seam.Content) -> None:
        turn = self._turn
        assert turn is not None
        if request.id in turn.requests:
            self._diagnostic(f"request {request.id!r} was opened twice; kept the first", "duplicate_request")
            return
        if self._auto_approve and isinstance(request, PermissionRequest):
            choice = next(
                (c for c in (PermissionChoice.ALLOW_ONCE, PermissionChoice.ALLOW_ALWAYS) if c in request.options),
                None,
            )
            if choice is not None:
                self._send(seam.AnswerRequest(request.id, Answer.permission(choice)))
                return
        turn.requests[request.id] = request
        self._quiet_deadline = None
        self._stall_deadline = None
        self._emit(RequestOpened(request), TurnInfo(turn.id, event.parent_tool_id), event.extensions)

    def _on_turn_end(self, event: seam.TurnEnd) -> None:
        turn = self._turn
        if event.parent_tool_id is not None and (turn is None or turn.subagent != event.parent_tool_id):
            return  # a subagent's end is its parent's bookkeeping, never the parent's turn end
        # (unless the turn is one the engine opened for that subagent's lone output: it ends with it)
        if turn is None and self._abandoned is not None and event.turn_id in (None, self._abandoned):
            # the agent's own end of the turn the engine gave up on: it is idle now
            self._diagnostic(
                f"the end of turn {self._abandoned} arrived after it was over; ignored", DiagnosticCode.LATE_TURN_END
            )
            self._late_end_noted = True
            self._settle_abandoned()
            return
        if turn is None:
            if self._state is _State.IDLE and not self._late_end_noted:
                self._late_end_noted = True
                self._diagnostic("a turn end arrived with no turn running; ignored", "late_turn_end")
            return
        if event.turn_id is not None and event.turn_id != turn.id:
            # the end of a turn the engine already ended (a late answer to a cancel): never this one's
            self._diagnostic(
                f"the end of turn {event.turn_id} arrived after it was over; ignored",
                DiagnosticCode.LATE_TURN_END,
                turn_info=turn.info,
            )
            return
        stop = event.stop
        if turn.awaiting_ack:
            if not turn.cancel_requested:
                return  # the previous turn's end, racing the new turn's ack
            stop = Cancelled()
        self._end_turn(stop)

    def _on_steer_result(self, accepted: bool) -> None:
        steer = self._steer
        if steer is None:
            self._diagnostic("a steer answer arrived with no steer pending; ignored", "late_steer_result")
            return
        self._steer = None
        if accepted:
            self._resolve_steer(steer, Delivery(steer.prompt.id, Steered(steer.turn_id)))
        else:
            self._queue.appendleft(steer.prompt)
            self._resolve_steer(steer, Delivery(steer.prompt.id, Queued(0)))

    def _on_info_changed(self, info: seam.DriverInfo) -> None:
        self.driver_info = info
        self._info = attrs.evolve(
            self._info,
            details=info.details,
            configuration=info.configuration,
            resume_token=info.resume_token,
            title=info.title,
        )
        if self._state is not _State.CLOSING:  # what the agent reports while shutting down is moot
            self._emit(SessionUpdated(self._info), self._turn_info())

    def _on_driver_gone(self) -> None:
        if self._state in (_State.CLOSING, _State.CLOSED):
            self._finished.set()
            return
        if self._turn is not None:
            self._end_turn(Failed("the agent exited during the turn"))
        if self._terminal_error is None:
            exited = self._exited or seam.Exited("unknown", "")
            self._terminal_error = ProcessExited(exited.status, exited.stderr)
        self._state = _State.CLOSING
        self._finished.set()

    # -----------------------------------------------------------------------------------------
    # commands from Session handles

    def _send(self, command: seam.DriverCommand) -> None:
        try:
            self._commands_tx.send_nowait(command)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    def _check_open(self) -> None:
        if self._state in (_State.CLOSING, _State.CLOSED):
            raise self._closed_error()

    def _closed_error(self) -> AgentError:
        if self._terminal_error is not None and not isinstance(self._terminal_error, SessionClosed):
            return SessionClosed(f"the session is closed ({self._terminal_error.message})")
        return SessionClosed("the session is closed")

    def prompt(self, value: str | Input) -> Delivery | _PendingSteer:
        self._check_open()
        prompt_input = Input.coerce(value)
        self._prompt_counter += 1
        prompt = _Prompt(f"p{self._prompt_counter}", prompt_input)
        if (
            self._state is _State.IDLE
            and not self._queue
            and self._turn is None
            and not self._config_pending
            and not self._held_for_idle
        ):
            turn_id = self._start_prompt(prompt)
            self._sync_status()
            return Delivery(prompt.id, Started(turn_id))
        turn = self._turn
        if (
            turn is not None
            and isinstance(turn.origin, PromptOrigin)
            and not turn.awaiting_ack
            and not turn.cancel_requested
            and self._steer is None
            and not self._queue
            and self.driver_info.details.capabilities.supports(Capability.STEER)
        ):
            steer = _PendingSteer(prompt, turn.id)
            self._steer = steer
            self._send(seam.Steer(prompt_input))
            return steer
        self._queue.append(prompt)
        self._sync_status()
        return Delivery(prompt.id, Queued(len(self._queue) - 1))

    def dequeue(self, prompt_id: str) -> None:
        self._check_open()
        for prompt in self._queue:
            if prompt.id == prompt_id:
                self._queue.remove(prompt)
                self._sync_status()
                return
        raise InvalidRequest(f"prompt {prompt_id!r} is not queued (unknown, started, or already dequeued)")

    def answer(self, request_id: str, answer: Answer) -> None:
        self._check_open()
        turn = self._turn
        request = turn.requests.get(request_id) if turn is not None else None
        if turn is None or request is None:
            raise InvalidRequest(f"request {request_id!r} is not open")
        _validate_answer(request, answer)
        del turn.requests[request_id]
        self._send(seam.AnswerRequest(request_id, answer))
        self._emit(RequestClosed(request_id), turn.info)
        self._arm_quiet()
        self._arm_stall()
        self._sync_status()

    def configure(self, option_id: str, value: ConfigValue) -> None:
        self._check_open()
        if not isinstance(option_id, str):
            raise InvalidConfiguration("config option id must be a str")
        option = self._info.details.option(option_id)
        if option is None:
            offered = ", ".join(o.id for o in self._info.details.config_options) or "none"
            raise InvalidConfiguration(f"the agent has no config option {option_id!r} (offered: {offered})")
        if not option.live:
            raise InvalidConfiguration(
                f"{option_id!r} is creation-only; set it with SessionOptions.configure before open "
                "(to change it in this conversation, reopen with SessionOptions.resume(resume_token))"
            )
        if not option.accepts(value):
            raise InvalidConfiguration(option.invalid(value))
        value = option.resolve(value)  # a portable name (``accept-edits``) goes out as the agent's own id
        if not option.between_turns:
            self._send(seam.Configure(option_id, value))
        elif self._state is _State.IDLE and self._turn is None:
            self._send_config(option_id, value)
            self._sync_status()
        else:
            self._held_config[option_id] = value  # applied when the turn ends, before the next prompt

    def rollback(self, turns: int, scope: RollbackScope) -> None:
        self._check_open()
        if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
            raise InvalidRequest(f"rollback needs a positive number of turns, got {turns!r}")
        if not isinstance(scope, RollbackScope):
            raise InvalidRequest("rollback scope must be a RollbackScope")
        caps = self._info.details.capabilities
        if not caps.supports(Capability.ROLLBACK):
            raise UnsupportedFeature("this agent cannot roll back")
        if scope is RollbackScope.CONVERSATION_AND_FILES and not caps.supports(Capability.ROLLBACK_FILES):
            raise UnsupportedFeature("this agent cannot roll back files")
        if self._state is not _State.IDLE or self._turn is not None or self._config_pending:
            raise SessionBusy("rollback needs an idle session")
        self._send(seam.Rollback(turns, scope))

    def compact(self) -> None:
        self._check_open()
        if not self._info.details.capabilities.supports(Capability.COMPACT):
            raise UnsupportedFeature("this agent cannot compact its context")
        if self._state is not _State.IDLE or self._turn is not None or self._config_pending:
            raise SessionBusy("compact needs an idle session")
        turn = self._begin_turn(AgentOrigin())
        turn.awaiting_ack = False
        self._send(seam.Compact())
        self._arm_quiet()
        self._sync_status()

    def cancel(self, clear_queue: bool) -> None:
        self._check_open()
        if clear_queue:
            self._queue.clear()
            self._promotion_pending = False
        turn = self._turn
        if turn is not None and not turn.cancel_requested:
            turn.cancel_requested = True
            self._quiet_deadline = None
            self._send(seam.Cancel())  # first: the Declines that follow find the turn stopping
            self._close_requests(turn)
            self._set_deadline("_cancel_deadline", anyio.current_time() + CANCEL_GRACE)
        self._sync_status()

    def _begin_close(self) -> None:
        if self._state in (_State.CLOSING, _State.CLOSED):
            return
        steer = self._steer
        if steer is not None:
            self._steer = None
            self._resolve_steer(steer, SessionClosed("the session closed before the steer was answered"))
        if self._turn is not None:
            self._end_turn(Cancelled())
        self._queue.clear()
        self._state = _State.CLOSING
        self._sync_status()
        self._send(seam.Close())
        self._commands_tx.close()
        self._set_deadline("_close_deadline", anyio.current_time() + CLOSE_GRACE)

    async def close(self) -> None:
        self._begin_close()
        await self._finished.wait()

    def _finish(self) -> None:
        if self._state is _State.CLOSED:
            return
        self._sync_status()
        self._state = _State.CLOSED
        self._finished.set()
        steer = self._steer
        if steer is not None:
            self._steer = None
            self._resolve_steer(steer, SessionClosed("the session closed"))
        self._outbox.close()
        for stream in (self._driver_rx, self._driver_tx, self._commands_tx, self._commands_rx):
            stream.close()

    def note_launch_wait(self, seconds: float, limit: int) -> None:
        """Before ``run``: the session waited ``seconds`` for one of ``limit`` launch slots."""
        self._diagnostic(
            f"waited {seconds:.1f} s for a launch slot ({limit} agents launch at once); the handshake "
            "clock started with the launch",
            DiagnosticCode.LAUNCH_QUEUED,
            DiagnosticLevel.INFO,
        )

    def _take_output(self) -> Outbox:
        return self._outbox

    @property
    def info(self) -> SessionInfo:
        return self._info

    @property
    def status(self) -> SessionStatus:
        return self._status


def _payload_size(kind: EventKind) -> int:
    """What an event weighs in the consumer's byte budget: its text, or a flat 256."""
    if isinstance(kind, (TextDelta, ReasoningDelta, UserMessage, ToolOutputDelta)):
        return len(kind.text) + 64
    if isinstance(kind, ToolUpdated):
        return len(kind.tool.output or "") + 256
    return 256


def _json_safe(event: seam.Content) -> seam.Content:
    """``event`` with what an adapter copied from the wire made writable as JSON (bounded raw
    payloads, no non-finite numbers), so every emitted event round-trips through ``serialize``.
    Text deltas pass untouched; only kinds that carry raw JSON or floats are looked at."""
    kind = event.kind
    fixed: EventKind | None = None
    if isinstance(kind, ToolUpdated):
        tool = kind.tool
        if _safejson.unsafe(tool.raw) or _safejson.unsafe(tool.input.arguments):
            tool_input = attrs.evolve(tool.input, arguments=_safejson.safe(tool.input.arguments))
            fixed = ToolUpdated(attrs.evolve(tool, input=tool_input, raw=_safejson.safe(tool.raw)))
    elif isinstance(kind, Diagnostic):
        if _safejson.unsafe(kind.diagnostic.raw):
            fixed = Diagnostic(attrs.evolve(kind.diagnostic, raw=_safejson.safe(kind.diagnostic.raw)))
    elif isinstance(kind, ContextUsage):
        numbers = [kind.used_tokens, kind.window_tokens, kind.cost_usd]
        if _safejson.unsafe(numbers):
            used, window, cost = _safejson.safe(numbers)
            fixed = ContextUsage(int(used or 0), None if window is None else int(window), cost)
    extensions = event.extensions
    unsafe_extensions = bool(extensions) and _safejson.unsafe(extensions)
    if fixed is None and not unsafe_extensions:
        return event
    return attrs.evolve(
        event,
        kind=fixed if fixed is not None else kind,
        extensions=_safejson.safe(extensions) if unsafe_extensions else extensions,
    )


def _validate_answer(request: Request, answer: Answer) -> None:
    """Raise ``InvalidRequest`` unless ``answer`` is one that ``request`` offered."""
    if isinstance(request, PermissionRequest):
        if not isinstance(answer, PermissionAnswer):
            raise InvalidRequest(f"request {request.id!r} is a permission request; answer with Answer.permission")
        if answer.choice not in request.options:
            offered = ", ".join(o.name for o in request.options)
            raise InvalidRequest(f"{answer.choice.name} was not offered for {request.id!r} (offered: {offered})")
        return
    assert isinstance(request, QuestionRequest)
    if not isinstance(answer, QuestionsAnswer):
        raise InvalidRequest(f"request {request.id!r} is a question; answer with Answer.question")
    if len(answer.answers) != len(request.questions):
        raise InvalidRequest(
            f"request {request.id!r} has {len(request.questions)} question(s); got {len(answer.answers)} answer(s)"
        )
    for question, given in zip(request.questions, answer.answers, strict=True):
        if isinstance(given, TextAnswer):
            if not question.allows_free_text:
                raise InvalidRequest(f"question {question.id!r} does not take free text")
            if not isinstance(given.value, str):
                raise InvalidRequest(f"the answer to {question.id!r} must be text")
        elif isinstance(given, ChoicesAnswer):
            choice_ids = {choice.id for choice in question.choices}
            if not given.ids:
                raise InvalidRequest(f"the answer to {question.id!r} chooses nothing")
            if len(set(given.ids)) != len(given.ids):
                raise InvalidRequest(f"the answer to {question.id!r} repeats a choice")
            if len(given.ids) > 1 and not question.multi_select:
                raise InvalidRequest(f"question {question.id!r} takes one choice")
            unknown = [choice for choice in given.ids if choice not in choice_ids]
            if unknown:
                raise InvalidRequest(f"{unknown!r} not offered for question {question.id!r}")
        else:
            raise InvalidRequest("each answer must be QuestionAnswer.text(...) or QuestionAnswer.choices([...])")
