"""The seam between the engine and an adapter: the whole contract a third-party adapter meets.

An adapter translates one wire; it never decides turn rules. The flow is::

    Runtime.open ──► Adapter.connect(ConnectRequest) ──► Driver      (launch + handshake)
    engine       ──► Driver.run(link)                                 (one task per session)
                      link.commands   DriverCommand, engine → adapter (StartTurn, Steer, …)
                      link.send(...)  DriverEvent, adapter → engine   (Content, TurnAck, …)

Commands the engine sends (``DriverCommand``):
    ``StartTurn(input, turn_id)`` – begin a turn; answer ``TurnAck`` before any of its content,
    and end it with ``TurnEnd`` (a wire rejection is ``TurnEnd(Failed(...))``).
    ``Steer(input)`` – fold text into the running turn; always answer ``SteerResult(accepted)``.
    ``AnswerRequest(request_id, answer)`` – already validated against what the request offered.
    ``Configure(option_id, value)`` – already validated; confirm with ``InfoChanged``.
    ``Rollback(turns, scope)`` / ``Compact()`` – confirm with ``InfoChanged`` / ``ContextCompacted``
    content and a ``TurnEnd``; refuse with a diagnostic.
    ``Cancel()`` – stop the turn, end it with ``TurnEnd(Cancelled())``; the engine has already
    closed its open requests and follows with a ``Decline`` for each.
    ``Decline(request_id)`` – the engine closed a request without an answer (cancel, turn end,
    close): if the wire waits for an answer, say no (``toolkit.RequestBook`` does this once).
    ``Close()`` – shut the agent down and return from ``run``.
    A setting whose ``ConfigOption.between_turns`` is set only arrives while no turn runs, and the
    engine starts no prompt until it is confirmed (an ``InfoChanged`` whose ``configuration``
    holds the new value) or refused (a diagnostic ``configure_refused``).

What an adapter sends back (``DriverEvent``):
    ``Content(kind, parent_tool_id, extensions)`` – text, tools, requests, usage, diagnostics.
    Never an engine-owned kind (``TurnStarted``, ``TurnEnded``, ``RequestClosed``,
    ``SessionUpdated``, ``StatusChanged``): the engine drops those with a ``Diagnostic``.
    ``TurnAck()``, ``TurnEnd(stop, parent_tool_id)``, ``SteerResult(accepted)``,
    ``RequestWithdrawn(request_id)``, ``ToolBackgrounded(tool_id)``, ``InfoChanged(info)``,
    ``AuthLost(login)``, ``Exited(status, stderr)`` (once, just before ``run`` returns because the
    agent died).

Rules the engine keeps so adapters do not: a tool still active when its turn ends gets a final
``ToolUpdated`` from the engine (``CANCELLED`` for a cancelled turn, else ``FAILED``) unless the
adapter said ``ToolBackgrounded`` (then it is listed in ``TurnEnded.background``); prompts queue
in the engine; requests open and close in the engine.

Optional hooks besides ``connect``: ``probe_auth``, ``plan_usage`` and ``history`` (the
conversations the agent keeps itself, as a ``HistoryListing``; the runtime sorts and stamps them).

``anyagent.toolkit`` holds the parts every adapter needs (the run loop, launch, requests).

``Driver.run`` returning means the connection is over. Everything it started must be cleaned
up in its own ``finally`` (shielded and bounded), because the engine cancels it after the close
grace.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Union

import anyio
import attrs
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ._frozen import _EMPTY, _frozen_mapping, _shared_reprs, _slot_setters, _tuple
from .errors import UnsupportedFeature
from .options import RollbackScope, SessionOptions
from .types import (
    JSON,
    AgentDetails,
    Answer,
    AuthStatus,
    ConfigValue,
    Diagnostic,
    DiagnosticInfo,
    DiagnosticLevel,
    EventKind,
    HistoryEntry,
    Input,
    LoginMethod,
    PlanUsage,
    StopReason,
    TextDelta,
)

if TYPE_CHECKING:
    from .installation import AgentInstallation, AgentProfile

__all__ = [
    "HANDSHAKE_TIMEOUT",
    "OUTPUT_CAP",
    "Adapter",
    "AdapterFactory",
    "AnswerRequest",
    "AuthLost",
    "Cancel",
    "Close",
    "Compact",
    "Configure",
    "ConnectRequest",
    "Content",
    "Decline",
    "Driver",
    "DriverCommand",
    "DriverEvent",
    "DriverInfo",
    "DriverLink",
    "Exited",
    "HistoryListing",
    "InfoChanged",
    "RequestWithdrawn",
    "Rollback",
    "StartTurn",
    "Steer",
    "SteerResult",
    "ToolBackgrounded",
    "TurnAck",
    "lazy_exports",
    "TurnEnd",
]

HANDSHAKE_TIMEOUT = 30.0
"""Seconds ``Runtime.open`` allows for launch plus handshake before ``HandshakeTimeout``."""

OUTPUT_CAP = 16 * 1024
"""Characters of tool output an adapter keeps in a ``ToolUpdate`` (the rest is cut)."""

_YIELD_EVERY = 64


# ---------------------------------------------------------------------------------------------
# engine → adapter


@attrs.frozen(repr=False)
class StartTurn:
    """Start turn ``turn_id`` with ``input``. Answer ``TurnAck`` first, end with ``TurnEnd``."""

    input: Input
    turn_id: str


@attrs.frozen(repr=False)
class Steer:
    """Fold ``input`` into the running turn. Answer ``SteerResult``."""

    input: Input


@attrs.frozen(repr=False)
class AnswerRequest:
    """Send the (validated) ``answer`` to request ``request_id``."""

    request_id: str
    answer: Answer


@attrs.frozen(repr=False)
class Configure:
    """Apply a (validated) config change; confirm with ``InfoChanged``, refuse with a diagnostic."""

    option_id: str
    value: ConfigValue


@attrs.frozen(repr=False)
class Rollback:
    """Rewind ``turns`` completed turns in ``scope``; confirm with ``InfoChanged``."""

    turns: int
    scope: RollbackScope


@attrs.frozen(repr=False)
class Compact:
    """Ask the agent to compact; it runs as an agent turn that the adapter ends with ``TurnEnd``."""


@attrs.frozen(repr=False)
class Cancel:
    """Stop the running turn; end it with ``TurnEnd(Cancelled())``."""


@attrs.frozen(repr=False)
class Decline:
    """The engine closed request ``request_id`` unanswered: tell the wire no if it is waiting."""

    request_id: str


@attrs.frozen(repr=False)
class Close:
    """Shut the agent down and return from ``Driver.run``."""


DriverCommand = Union[StartTurn, Steer, AnswerRequest, Configure, Rollback, Compact, Cancel, Decline, Close]
"""What the engine sends a `Driver` (through `DriverLink`): start or steer a turn, answer, configure, roll back,
compact, cancel, decline, close."""


# ---------------------------------------------------------------------------------------------
# adapter → engine


@attrs.frozen(repr=False)
class Content:
    """The agent produced ``kind``; ``parent_tool_id`` names the subagent tool it came from."""

    kind: EventKind
    parent_tool_id: str | None = None
    extensions: Mapping[str, JSON] = attrs.field(default=None, converter=_frozen_mapping)


_content_kind, _content_parent_tool_id, _content_extensions = _slot_setters(
    Content, "kind", "parent_tool_id", "extensions"
)


def _content_init(
    self: Content, kind: EventKind, parent_tool_id: str | None = None, extensions: Mapping[str, JSON] | None = None
) -> None:  # see ``_frozen._slot_setters``: one per streamed delta
    _content_kind(self, kind)
    _content_parent_tool_id(self, parent_tool_id)
    _content_extensions(self, _EMPTY if not extensions else _frozen_mapping(extensions))


Content.__init__ = _content_init  # type: ignore[method-assign]


@attrs.frozen(repr=False)
class TurnAck:
    """The turn the engine asked for has started; what follows belongs to it."""


@attrs.frozen(repr=False)
class TurnEnd:
    """The wire says the turn is over. With ``parent_tool_id`` it is a subagent's end: consumed,
    except when the running turn is one the engine opened for that subagent's output alone (it
    spoke after its parent's turn ended, and nobody else spoke since) — that turn ends with it.

    ``turn_id``: the ``StartTurn.turn_id`` this end belongs to, when the adapter knows it. An end
    stamped with a turn that is already over (the agent answered a cancel after the engine gave
    up on it) is dropped with a ``late_turn_end`` diagnostic instead of ending the running turn."""

    stop: StopReason
    parent_tool_id: str | None = None
    turn_id: str | None = None


@attrs.frozen(repr=False)
class SteerResult:
    """The answer to ``Steer``: accepted, or rejected (the engine re-queues the prompt at the head)."""

    accepted: bool


@attrs.frozen(repr=False)
class RequestWithdrawn:
    """The agent withdrew request ``request_id`` before it was answered."""

    request_id: str


@attrs.frozen(repr=False)
class ToolBackgrounded:
    """Tool ``tool_id`` keeps running after its turn (a background shell, an async subagent): the
    engine leaves it active and lists it in ``TurnEnded.background`` instead of ending it."""

    tool_id: str


@attrs.frozen(repr=False)
class DriverInfo:
    """What a connection reports: details, settings, resume token, and how its wire behaves.

    ``ends_turns``: the wire ends prompted turns with its own frame (else the engine infers
    completion after the quiet window); ``ends_agent_turns``: the same for agent-originated turns.
    ``refuses_prompt_while_busy``: the agent refuses a prompt while it still runs a turn (codex's
    "still running a turn", pi's "already processing"). When the engine ended a cancelled turn the
    agent never confirmed (``CANCEL_GRACE``), it then holds the next prompt until the agent's own
    ``TurnEnd`` of that turn arrives (at most ``CANCEL_SETTLE`` seconds). Needs ``ends_turns``.
    ``tools_disabled``: the adapter honoured ``SessionOptions.no_tools``.
    ``event_buffer``: how many ``DriverEvent``s may wait for the engine before ``send`` blocks.
    """

    details: AgentDetails = AgentDetails()
    configuration: Mapping[str, ConfigValue] = attrs.field(default=None, converter=_frozen_mapping)
    resume_token: str | None = None
    title: str | None = None
    ends_turns: bool = True
    ends_agent_turns: bool = True
    refuses_prompt_while_busy: bool = False
    tools_disabled: bool = False
    event_buffer: int = 64


@attrs.frozen(repr=False)
class InfoChanged:
    """The agent's settings, capabilities, token or title changed; the engine emits ``SessionUpdated``."""

    info: DriverInfo


@attrs.frozen(repr=False)
class AuthLost:
    """Credentials stopped working mid-session: the engine fails the turn and raises ``AuthRequired``."""

    login: tuple[LoginMethod, ...] = attrs.field(default=(), converter=_tuple)


@attrs.frozen(repr=False)
class Exited:
    """The process died: exit ``status`` and the tail of its stderr (sent once, before ``run`` returns)."""

    status: str
    stderr: str = ""


DriverEvent = Union[
    Content,
    TextDelta,
    TurnAck,
    TurnEnd,
    SteerResult,
    RequestWithdrawn,
    ToolBackgrounded,
    InfoChanged,
    AuthLost,
    Exited,
]
"""What a `Driver` reports to the engine (through `DriverLink`): content, acks, turn ends, steer results,
withdrawals, info, auth loss, exit. A bare `TextDelta` is ``Content(TextDelta(...))`` (no subagent,
no extensions), one object less for the most common event: the engine takes it as that."""


# ---------------------------------------------------------------------------------------------
# the adapter side


class DriverLink:
    """The adapter's end of one session: ``commands`` to read, ``send`` and helpers to report.

    ``send`` waits while the engine is behind by ``DriverInfo.event_buffer`` events (back-pressure
    on the wire reader, never lost events). ``send`` on a session that is gone returns silently.
    A text delta of the running turn, with nothing sent before it still waiting, the engine takes
    in place (in the sender's task, no channel hop); the order the adapter sent in always holds.
    ``send`` takes a bare ``TextDelta`` as ``Content(TextDelta(...))`` (the flood's one object less;
    whoever reads the channel of a link the engine did not make gets it wrapped), and ``offer``
    is the synchronous try of the in-place path a frame loop calls before it awaits ``send``.
    """

    def __init__(
        self,
        commands: MemoryObjectReceiveStream[DriverCommand],
        events: MemoryObjectSendStream[DriverEvent],
    ) -> None:
        self.commands = commands
        self._events = events
        self._unyielded = 0
        # the engine that made this link takes a text delta of its running turn in place, in the
        # sender's task (``_Engine._fast_text``: True when taken), while nothing sent before it
        # still waits in the channel: then ``events`` is a ``_CountedEvents`` (which counts it)
        self._direct: Callable[[DriverEvent], bool] | None = None

    async def send(self, event: DriverEvent) -> None:
        """Hand one ``DriverEvent`` to the engine (waits only while its buffer is full)."""
        direct = self._direct
        if direct is not None and not self._events.queued and direct(event):  # type: ignore[attr-defined]
            pass  # taken in place: no channel hop
        else:
            if type(event) is TextDelta:
                event = Content(event)  # the channel carries it as what it stands for
            try:
                self._events.send_nowait(event)
            except anyio.WouldBlock:
                self._unyielded = 0
                try:
                    await self._events.send(event)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass
                return
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                await anyio.lowlevel.checkpoint()
                return
        # a fast producer still yields now and then, so it stays cancellable and fair
        self._unyielded += 1
        if self._unyielded >= _YIELD_EVERY:
            self._unyielded = 0
            await anyio.lowlevel.checkpoint()

    def offer(self, event: DriverEvent) -> bool:
        """``send`` without a wait, for a frame loop's synchronous fast path: True when the engine
        took ``event`` in place (a text delta of the running turn, nothing sent before it still
        waiting, no yield due); False when nothing was done — then ``await send(event)``."""
        direct = self._direct
        if direct is None or self._events.queued or self._unyielded >= _YIELD_EVERY - 1:  # type: ignore[attr-defined]
            return False  # the channel, or the yield that is due: ``send`` does it
        if direct(event):
            self._unyielded += 1
            return True
        return False

    async def content(
        self, kind: EventKind, parent_tool_id: str | None = None, extensions: Mapping[str, JSON] | None = None
    ) -> None:
        """Report content the agent produced."""
        await self.send(Content(kind, parent_tool_id, extensions))

    async def diagnostic(
        self,
        message: str,
        level: DiagnosticLevel = DiagnosticLevel.WARNING,
        code: str | None = None,
        raw: JSON = None,
    ) -> None:
        """Report a non-fatal oddity (an unknown frame: put it in ``raw``)."""
        await self.send(Content(Diagnostic(DiagnosticInfo(message, level, code, raw))))

    async def turn_ack(self) -> None:
        """Acknowledge ``StartTurn``."""
        await self.send(TurnAck())

    async def turn_end(self, stop: StopReason, parent_tool_id: str | None = None, turn_id: str | None = None) -> None:
        """Report the wire's end of a turn (``turn_id``: the turn it ends, when known)."""
        await self.send(TurnEnd(stop, parent_tool_id, turn_id))

    async def steered(self, accepted: bool) -> None:
        """Answer ``Steer``."""
        await self.send(SteerResult(accepted))

    async def info_changed(self, info: DriverInfo) -> None:
        """Report new details, settings, token or title."""
        await self.send(InfoChanged(info))

    async def exited(self, status: str, stderr: str = "") -> None:
        """Report that the agent process died."""
        await self.send(Exited(status, stderr))


class _CountedEvents:
    """The engine's end of its driver channel as its ``DriverLink`` holds it: counts what was
    sent and not yet taken (``queued``; the engine's pump takes it down), whichever link sends —
    a wrapper that builds its own ``DriverLink`` over ``link._events`` counts too."""

    __slots__ = ("_stream", "queued")

    def __init__(self, stream: MemoryObjectSendStream[DriverEvent]) -> None:
        self._stream = stream
        self.queued = 0

    def send_nowait(self, event: DriverEvent) -> None:
        self._stream.send_nowait(event)
        self.queued += 1

    async def send(self, event: DriverEvent) -> None:
        self.queued += 1
        try:
            await self._stream.send(event)
        except BaseException:
            self.queued -= 1
            raise

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


@attrs.frozen(repr=False)
class ConnectRequest:
    """What ``Adapter.connect`` gets: the installation, its catalog profile (None for a custom
    agent), the caller's options, the session id the engine minted, and the environment to
    launch with (the parent's plus the profile's config-home variable when asked)."""

    installation: AgentInstallation
    profile: AgentProfile | None
    options: SessionOptions
    session_id: str
    env: Mapping[str, str] = attrs.field(default=None, converter=_frozen_mapping)


@attrs.frozen(repr=False)
class HistoryListing:
    """What ``Adapter.history`` returns: the conversations found (any order; the runtime sorts
    them newest first) and a diagnostic for each one it had to skip (a corrupt or foreign file)."""

    entries: tuple[HistoryEntry, ...] = attrs.field(default=(), converter=_tuple)
    diagnostics: tuple[DiagnosticInfo, ...] = attrs.field(default=(), converter=_tuple)


class Driver(abc.ABC):
    """One live connection to an agent, returned by ``Adapter.connect`` after the handshake."""

    info: DriverInfo

    @abc.abstractmethod
    async def run(self, link: DriverLink) -> None:
        """Serve the session: read ``link.commands``, translate wire frames into ``link.send``.

        Return when the agent is gone (after ``Close`` or death). Clean up in ``finally``.
        """

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release the connection without running it (``open`` failed after ``connect``)."""


class Adapter(abc.ABC):
    """Speaks one wire. Subclasses set ``wire`` and implement ``connect``.

    Register it from a plugin: ``@anyagent.hookimpl def anyagent_adapters(register): register.adapter(MyAdapter)``.
    """

    wire: ClassVar[str]

    @abc.abstractmethod
    async def connect(self, request: ConnectRequest) -> Driver:
        """Launch the agent, handshake, and return a ``Driver`` (typed errors on failure).

        The engine bounds this call with ``HANDSHAKE_TIMEOUT`` and may cancel it: clean up
        any process started here when cancelled.
        """

    async def probe_auth(self, request: ConnectRequest) -> AuthStatus | None:
        """A login check cheaper than a session; None means "open a throwaway session instead"."""
        return None

    async def plan_usage(self, installation: AgentInstallation, profile: AgentProfile | None) -> PlanUsage:
        """The account's subscription quota, from the agent itself."""
        raise UnsupportedFeature(f"the {self.wire} wire does not report plan usage")

    async def history(self, request: ConnectRequest, cwd: Path | None) -> HistoryListing:
        """The conversations the agent keeps itself (``Runtime.history``), read from its files or
        asked over its wire; ``cwd`` (absolute, resolved) limits them to that directory, None
        lists every directory. ``request`` is what ``connect`` would get for a tool-less session
        in ``cwd`` (the environment says where the agent's config home is); a wire that must
        launch the agent to ask may do so, but never starts a turn, and cleans up before it
        returns. Blocking file reads go to a worker thread (``toolkit.sample_json_lines``).
        Raise ``UnsupportedFeature`` when the agent keeps no history it exposes (the default)."""
        raise UnsupportedFeature(f"the {self.wire} wire does not expose the agent's own history")


AdapterFactory = Callable[[], Adapter]
"""What plugins register: an ``Adapter`` subclass (called with no arguments) or any factory."""


def unbounded_commands() -> tuple[MemoryObjectSendStream[DriverCommand], MemoryObjectReceiveStream[DriverCommand]]:
    """The engine's command channel: unbounded on purpose (commands are small and app-driven)."""
    return anyio.create_memory_object_stream[DriverCommand](math.inf)


def event_channel(size: int) -> tuple[MemoryObjectSendStream[DriverEvent], MemoryObjectReceiveStream[DriverEvent]]:
    """The adapter → engine channel, bounded to ``size`` for back-pressure."""
    return anyio.create_memory_object_stream[DriverEvent](max(1, size))


def lazy_exports(package: str, names: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for an adapter package's ``__init__``: each public name in ``names``
    (name → the submodule that defines it, relative: ``".adapter"``) is imported on first access,
    so the entry point loading ``package.plugin`` does not import the adapter, its wire and its
    driver. Keep the real imports under ``if typing.TYPE_CHECKING:`` for type checkers::

        if typing.TYPE_CHECKING:
            from .adapter import MyAdapter
        else:
            __getattr__ = seam.lazy_exports(__name__, {"MyAdapter": ".adapter"})
    """
    import importlib
    import sys

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


_shared_reprs(globals())  # the value classes above say repr=False: one shared __repr__
