"""The public value types: events and their kinds, tools, requests, answers, details, info.

Every class here is an attrs frozen, slotted value. Collections are tuples (or read-only
mappings) so a value can be shared between tasks and stored without copying.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Union

import attrs

from ._frozen import _EMPTY, _frozen_mapping, _shared_reprs, _slot_setters, _tuple
from .errors import InvalidRequest
from .installation import AgentInstallation
from .values import JSON, DiagnosticInfo, DiagnosticLevel, EnvVarLogin, LoginMethod, TerminalLogin

__all__ = [
    "JSON",
    "Account",
    "AgentDetails",
    "AgentOrigin",
    "Answer",
    "AuthKind",
    "AuthStatus",
    "AuthUnknown",
    "Authenticated",
    "BooleanKind",
    "Cancelled",
    "Capabilities",
    "Capability",
    "ChoicesAnswer",
    "Completed",
    "CompletionSource",
    "ConfigChoice",
    "ConfigKind",
    "ConfigOption",
    "ConfigValue",
    "ContextCompacted",
    "ContextUsage",
    "Delivery",
    "DeliveryKind",
    "Diagnostic",
    "DiagnosticCode",
    "DiagnosticInfo",
    "DiagnosticLevel",
    "EnvVarLogin",
    "Event",
    "EventKind",
    "Failed",
    "FileDiff",
    "HistoryEntry",
    "Input",
    "LoginMethod",
    "McpTool",
    "MessageEnded",
    "PermissionAnswer",
    "PermissionChoice",
    "PermissionRequest",
    "PlanEntry",
    "PlanEntryStatus",
    "PlanUpdated",
    "PlanUsage",
    "PlanUsageEntry",
    "PlanUsageUpdated",
    "PlanUsageWindow",
    "PromptOrigin",
    "Question",
    "QuestionAnswer",
    "QuestionChoice",
    "QuestionRequest",
    "QuestionsAnswer",
    "Queued",
    "ReasoningDelta",
    "Refused",
    "Request",
    "RequestClosed",
    "RequestOpened",
    "SelectKind",
    "SessionInfo",
    "SessionStatus",
    "SessionUpdated",
    "SlashCommand",
    "Started",
    "StatusChanged",
    "Steered",
    "StopReason",
    "TerminalLogin",
    "TextAnswer",
    "TextDelta",
    "ToolInput",
    "ToolKind",
    "ToolKindValue",
    "ToolLocation",
    "ToolOutputDelta",
    "ToolStatus",
    "ToolUpdate",
    "ToolUpdated",
    "TurnEnded",
    "TurnInfo",
    "TurnOrigin",
    "TurnStarted",
    "Unauthenticated",
    "UserMessage",
]

ConfigValue = Union[str, bool]
"""A config option's value: a choice's ``value`` for select options, a bool for boolean ones."""

# ---------------------------------------------------------------------------------------------
# Turns and stop reasons


class CompletionSource(enum.Enum):
    """How the engine learned a turn completed: the wire said so, or silence was inferred."""

    PROTOCOL = "protocol"
    INFERRED = "inferred"


@attrs.frozen(repr=False)
class Completed:
    """The turn completed. ``INFERRED`` means the wire went quiet: show as idle, not a checkmark."""

    source: CompletionSource = CompletionSource.PROTOCOL


@attrs.frozen(repr=False)
class Cancelled:
    """The turn was cancelled (``session.cancel`` or ``close``)."""


@attrs.frozen(repr=False)
class Refused:
    """The agent declined the work."""


@attrs.frozen(repr=False)
class Failed:
    """The turn broke; ``message`` says why."""

    message: str


StopReason = Union[Completed, Cancelled, Refused, Failed]
"""Why a turn ended (`TurnEnded.stop`): `Completed`, `Cancelled`, `Refused` or `Failed` (with its message)."""


@attrs.frozen(repr=False)
class PromptOrigin:
    """The turn was started by the caller's prompt ``prompt_id``."""

    prompt_id: str


@attrs.frozen(repr=False)
class AgentOrigin:
    """The agent started the turn by itself (background work finishing, compaction)."""


TurnOrigin = Union[PromptOrigin, AgentOrigin]
"""Who started a turn (`TurnStarted.origin`): a `PromptOrigin` (the app's prompt) or an `AgentOrigin` (the agent)."""


@attrs.frozen(repr=False)
class TurnInfo:
    """Which turn an event belongs to; ``parent_tool_id`` names the subagent tool that produced it."""

    id: str
    parent_tool_id: str | None = None


# ---------------------------------------------------------------------------------------------
# Tools and plans


class ToolKind(enum.Enum):
    """What a tool call does, for picking an icon. MCP tools are ``McpTool`` instead."""

    READ = "read"
    EDIT = "edit"
    DELETE = "delete"
    MOVE = "move"
    SEARCH = "search"
    EXECUTE = "execute"
    FETCH = "fetch"
    THINK = "think"
    SUBAGENT = "subagent"
    OTHER = "other"


@attrs.frozen(repr=False)
class McpTool:
    """A tool served by the MCP server ``server``."""

    server: str
    tool: str


ToolKindValue = Union[ToolKind, McpTool]
"""What a tool call is (`ToolStarted.tool`): a portable `ToolKind`, or an `McpTool` naming its server and tool."""


class ToolStatus(enum.Enum):
    """Lifecycle of one tool call."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def active(self) -> bool:
        """True while the tool has not finished (pending or running)."""
        return self in (ToolStatus.PENDING, ToolStatus.RUNNING)


@attrs.frozen(repr=False)
class ToolInput:
    """The typed parts of a tool's input that a UI shows, plus every argument in ``arguments``."""

    command: str | None = None
    path: str | None = None
    pattern: str | None = None
    url: str | None = None
    description: str | None = None
    arguments: Mapping[str, JSON] = attrs.field(default=_EMPTY, converter=_frozen_mapping)


@attrs.frozen(repr=False)
class FileDiff:
    """One file edit: ``old_text`` None means the file was created."""

    path: str
    new_text: str
    old_text: str | None = None


@attrs.frozen(repr=False)
class ToolLocation:
    """A file (and optionally a line) the tool touched."""

    path: str
    line: int | None = None


@attrs.frozen(repr=False)
class ToolUpdate:
    """A cumulative snapshot of one tool call. Replace by ``id`` on every update; never merge."""

    id: str
    kind: ToolKindValue = ToolKind.OTHER
    title: str = ""
    status: ToolStatus = ToolStatus.PENDING
    input: ToolInput = ToolInput()
    output: str | None = None
    diffs: tuple[FileDiff, ...] = attrs.field(default=(), converter=_tuple)
    locations: tuple[ToolLocation, ...] = attrs.field(default=(), converter=_tuple)
    raw: Mapping[str, JSON] | None = attrs.field(default=None, converter=attrs.converters.optional(_frozen_mapping))


class PlanEntryStatus(enum.Enum):
    """Progress of one plan entry."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"


@attrs.frozen(repr=False)
class PlanEntry:
    """One line of the agent's task list."""

    content: str
    status: PlanEntryStatus = PlanEntryStatus.PENDING
    priority: str | None = None


# ---------------------------------------------------------------------------------------------
# Requests and answers


class PermissionChoice(enum.Enum):
    """What a permission answer says. A request lists the subset its agent offers."""

    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"
    DENY_ONCE = "deny_once"
    DENY_ALWAYS = "deny_always"


@attrs.frozen(repr=False)
class PermissionRequest:
    """The agent asks to run ``tool``. Answer with one of ``options``, exactly once."""

    id: str
    tool: ToolUpdate
    options: tuple[PermissionChoice, ...] = attrs.field(
        default=(PermissionChoice.ALLOW_ONCE, PermissionChoice.DENY_ONCE), converter=_tuple
    )
    detail: str | None = None


@attrs.frozen(repr=False)
class QuestionChoice:
    """One selectable answer to a question."""

    id: str
    label: str
    description: str | None = None


@attrs.frozen(repr=False)
class Question:
    """One question of a ``QuestionRequest``."""

    id: str
    text: str
    header: str | None = None
    choices: tuple[QuestionChoice, ...] = attrs.field(default=(), converter=_tuple)
    multi_select: bool = False
    allows_free_text: bool = True


@attrs.frozen(repr=False)
class QuestionRequest:
    """The agent asks the user ``questions``; answer with one ``QuestionAnswer`` each, in order."""

    id: str
    questions: tuple[Question, ...] = attrs.field(converter=_tuple)


Request = Union[PermissionRequest, QuestionRequest]
"""What the agent asks the app, carried by `RequestOpened`: a `PermissionRequest` or a `QuestionRequest`."""


@attrs.frozen(repr=False)
class QuestionAnswer:
    """Base of one question's answer: ``QuestionAnswer.text(...)`` or ``QuestionAnswer.choices([...])``."""

    @staticmethod
    def text(text: str) -> TextAnswer:
        """Free text (the question must allow it)."""
        return TextAnswer(text)

    @staticmethod
    def choices(choice_ids: Iterable[str]) -> ChoicesAnswer:
        """The ids of the chosen ``QuestionChoice``s (one unless the question is multi-select)."""
        return ChoicesAnswer(tuple(choice_ids))


@attrs.frozen(repr=False)
class TextAnswer(QuestionAnswer):
    """A free-text answer to one question."""

    value: str


@attrs.frozen(repr=False)
class ChoicesAnswer(QuestionAnswer):
    """Chosen choice ids for one question."""

    ids: tuple[str, ...] = attrs.field(converter=_tuple)


@attrs.frozen(repr=False)
class Answer:
    """Base of answers: ``Answer.permission(choice)`` or ``Answer.question([...])``."""

    @staticmethod
    def permission(choice: PermissionChoice) -> PermissionAnswer:
        """Answer a ``PermissionRequest``."""
        return PermissionAnswer(choice)

    @staticmethod
    def question(answers: Iterable[QuestionAnswer]) -> QuestionsAnswer:
        """Answer a ``QuestionRequest``: one answer per question, in order."""
        return QuestionsAnswer(tuple(answers))


@attrs.frozen(repr=False)
class PermissionAnswer(Answer):
    """The answer to a permission request."""

    choice: PermissionChoice


@attrs.frozen(repr=False)
class QuestionsAnswer(Answer):
    """The answers to a question request, one per question."""

    answers: tuple[QuestionAnswer, ...] = attrs.field(converter=_tuple)


# ---------------------------------------------------------------------------------------------
# Details, auth, configuration


class Capability(enum.Enum):
    """One optional thing an agent can do on a connection. Check before offering a feature."""

    IMAGES = "images"
    RESUME = "resume"
    STEER = "steer"
    PERMISSIONS = "permissions"
    QUESTIONS = "questions"
    ROLLBACK = "rollback"
    ROLLBACK_FILES = "rollback_files"
    FORK = "fork"
    COMPACT = "compact"
    SLASH_COMMANDS = "slash_commands"
    PLAN = "plan"
    SUBAGENTS = "subagents"
    CONTEXT_USAGE = "context_usage"
    PLAN_USAGE = "plan_usage"


def _capability_set(values: Iterable[Capability]) -> frozenset[Capability]:
    return values if isinstance(values, frozenset) else frozenset(values)


def _string_set(values: Iterable[str]) -> frozenset[str]:
    return values if isinstance(values, frozenset) else frozenset(values)


@attrs.frozen(repr=False)
class Capabilities:
    """The capability set a connection reports, plus the MCP transports it accepts."""

    items: frozenset[Capability] = attrs.field(default=frozenset(), converter=_capability_set)
    mcp_transports: frozenset[str] = attrs.field(default=frozenset(), converter=_string_set)

    @classmethod
    def of(cls, *caps: Capability, mcp_transports: Iterable[str] = ()) -> Capabilities:
        """Build a set from the given capabilities."""
        return cls(_capability_set(caps), _string_set(mcp_transports))

    def supports(self, capability: Capability) -> bool:
        """True when the connection reports ``capability``."""
        return capability in self.items

    def with_(self, *caps: Capability) -> Capabilities:
        """A copy with ``caps`` added."""
        return attrs.evolve(self, items=self.items | _capability_set(caps))

    def without(self, *caps: Capability) -> Capabilities:
        """A copy with ``caps`` removed."""
        return attrs.evolve(self, items=self.items - _capability_set(caps))

    def __iter__(self) -> Any:
        return iter(sorted(self.items, key=lambda c: list(Capability).index(c)))

    def __contains__(self, capability: object) -> bool:
        return capability in self.items


class AuthKind(enum.Enum):
    """Which kind of credential an authenticated agent is using."""

    SUBSCRIPTION = "subscription"
    API_KEY = "api_key"
    CLOUD_PROVIDER = "cloud_provider"
    OTHER = "other"


@attrs.frozen(repr=False)
class Account:
    """What the agent said about the logged-in account."""

    email: str | None = None
    plan: str | None = None


@attrs.frozen(repr=False)
class Authenticated:
    """The agent is logged in."""

    kind: AuthKind = AuthKind.OTHER
    account: Account | None = None


@attrs.frozen(repr=False)
class Unauthenticated:
    """The agent is logged out; ``login`` lists what the user can do about it."""

    login: tuple[LoginMethod, ...] = attrs.field(default=(), converter=_tuple)


@attrs.frozen(repr=False)
class AuthUnknown:
    """The agent did not say whether it is logged in."""


AuthStatus = Union[Authenticated, Unauthenticated, AuthUnknown]
"""What a login probe found: `Authenticated`, `Unauthenticated` (with the login methods) or `AuthUnknown`."""


@attrs.frozen(repr=False)
class ConfigChoice:
    """One value a select option offers. ``aliases`` are other spellings ``configure`` takes for it
    (the portable mode names, e.g. ``accept-edits`` for Claude Code's ``acceptEdits``); the
    agent's own ``value`` is what the configuration reports."""

    value: str
    label: str = ""
    description: str | None = None
    aliases: tuple[str, ...] = attrs.field(default=(), converter=_tuple)


@attrs.frozen(repr=False)
class SelectKind:
    """A dropdown: exactly one of ``choices``."""

    choices: tuple[ConfigChoice, ...] = attrs.field(converter=_tuple)

    def offers(self, value: object) -> bool:
        """True when ``value`` is one of the choices' values or aliases."""
        return self.resolve(value) is not None

    def resolve(self, value: object) -> str | None:
        """The value of the choice ``value`` names (its own value first, then an alias), or None."""
        for choice in self.choices:
            if choice.value == value:
                return choice.value
        for choice in self.choices:
            if value in choice.aliases:
                return choice.value
        return None


@attrs.frozen(repr=False)
class BooleanKind:
    """A toggle."""


ConfigKind = Union[SelectKind, BooleanKind]
"""The kind of a `ConfigOption`: `SelectKind` (one of its choices) or `BooleanKind` (on/off)."""


@attrs.frozen(repr=False)
class ConfigOption:
    """One setting the agent exposes. ``live`` options can change mid-session via ``configure``;
    ``between_turns`` ones only while idle (the engine holds a mid-turn change until the turn ends)."""

    id: str
    name: str
    kind: ConfigKind
    current: ConfigValue | None = None
    live: bool = True
    category: str | None = None
    between_turns: bool = False
    """A live option the agent can only change while no turn runs (it relaunches the agent or
    sends a hidden prompt): ``configure`` mid-turn is held by the engine until the turn ends."""

    def invalid(self, value: object) -> str:
        """Why ``value`` is refused, naming the values this option takes (for ``InvalidConfiguration``)."""
        if isinstance(self.kind, BooleanKind):
            valid = "True or False"
        else:
            values = [repr(choice.value) for choice in self.kind.choices]
            valid = "one of " + ", ".join(values) if values else "no value (it offers none)"
        return f"{value!r} is not a valid value for {self.id!r}; it takes {valid}"

    def accepts(self, value: object) -> bool:
        """True when ``value`` is a valid value of this option."""
        if isinstance(self.kind, BooleanKind):
            return isinstance(value, bool)
        return isinstance(value, str) and self.kind.offers(value)

    def resolve(self, value: ConfigValue) -> ConfigValue:
        """The agent's own spelling of ``value`` (a choice's value for one of its aliases);
        ``value`` itself when it is no alias."""
        if isinstance(self.kind, SelectKind):
            return self.kind.resolve(value) or value
        return value


@attrs.frozen(repr=False)
class SlashCommand:
    """A slash command the agent accepts as a plain prompt (``/name args``)."""

    name: str
    description: str = ""
    input_hint: str | None = None


@attrs.frozen(repr=False)
class AgentDetails:
    """What the agent told anyagent about itself: version, login, capabilities, settings, commands."""

    version: str | None = None
    auth: AuthStatus = AuthUnknown()
    capabilities: Capabilities = Capabilities()
    config_options: tuple[ConfigOption, ...] = attrs.field(default=(), converter=_tuple)
    commands: tuple[SlashCommand, ...] = attrs.field(default=(), converter=_tuple)

    def option(self, option_id: str) -> ConfigOption | None:
        """The config option ``option_id``, or None."""
        for option in self.config_options:
            if option.id == option_id:
                return option
        return None


class SessionStatus(enum.Enum):
    """What a thread list shows: idle, working, or waiting for the user."""

    IDLE = "idle"
    WORKING = "working"
    NEEDS_INPUT = "needs_input"


@attrs.frozen(repr=False)
class SessionInfo:
    """A snapshot of one session: its agent, details, settings, resume token, title and status."""

    session_id: str
    agent: AgentInstallation
    details: AgentDetails = AgentDetails()
    configuration: Mapping[str, ConfigValue] = attrs.field(default=_EMPTY, converter=_frozen_mapping)
    resume_token: str | None = None
    title: str | None = None
    status: SessionStatus = SessionStatus.IDLE


@attrs.frozen(repr=False)
class PlanUsageWindow:
    """One quota window (e.g. five hours, a week) and how much of it is used."""

    label: str
    used_percent: float
    resets_at: datetime | None = None


@attrs.frozen(repr=False)
class PlanUsage:
    """The account's subscription quota, as the agent reported it."""

    plan: str | None = None
    windows: tuple[PlanUsageWindow, ...] = attrs.field(default=(), converter=_tuple)
    fetched_at: datetime | None = None


class DiagnosticCode:
    """The table of ``DiagnosticInfo.code`` values anyagent and its adapters emit; apps match on
    these (``info.code == DiagnosticCode.STALL``). A code names the situation, not the agent: the
    same oddity has the same code on every wire. ``raw`` carries the frame when there is one."""

    # the engine
    STALL = "stall"
    """No frame from the agent for ``stall_after`` seconds; the turn is still open."""
    CANCEL_UNCONFIRMED = "cancel_unconfirmed"
    """The agent never confirmed a cancel; the engine ended the turn itself."""
    CONFIGURE_UNCONFIRMED = "configure_unconfirmed"
    """A between-turns setting got no answer in time; queued prompts go ahead."""
    LATE_TURN_END = "late_turn_end"
    """The wire ended a turn that was already over."""
    LATE_STEER_RESULT = "late_steer_result"
    """A steer answer arrived with no steer pending."""
    DUPLICATE_REQUEST = "duplicate_request"
    """A request id was opened twice; the first is kept."""
    ENGINE_OWNED_EVENT = "engine_owned_event"
    """An adapter sent an event kind only the engine may emit; dropped."""
    # reading the wire
    BAD_LINE = "bad_line"
    """A line on the agent's output that is not a JSON object (``raw``: its text)."""
    UNKNOWN_FRAME = "unknown_frame"
    """A well-formed frame of a type or method the adapter does not know (``raw``: the frame)."""
    BAD_FRAME = "bad_frame"
    """A known frame missing what it needs (``raw``: the frame); skipped or declined."""
    FRAME_ERROR = "frame_error"
    """Translating a frame raised (an adapter bug); the frame is skipped, the session goes on."""
    WIRE_FAILED = "wire_failed"
    """Reading the wire failed mid-frame; the session ends as if the agent exited."""
    WRITE_FAILED = "write_failed"
    """A frame could not be written: the agent no longer reads."""
    RECORD_WIRE = "record_wire"
    """Wire recording (``SessionOptions.record_wire``) stopped; the session goes on."""
    # commands the agent could not carry out
    UNSUPPORTED = "unsupported"
    """The agent cannot do what was asked; nothing was sent."""
    COMMAND_FAILED = "command_failed"
    """Carrying out a command raised (an adapter bug); it was refused."""
    CONFIGURE_REFUSED = "configure_refused"
    """The agent refused a setting; the configuration is unchanged."""
    ROLLBACK_REFUSED = "rollback_refused"
    """The agent could not roll back; nothing changed."""
    COMPACT_FAILED = "compact_failed"
    """The agent could not compact its context."""
    RESPAWN_FAILED = "respawn_failed"
    """Relaunching the agent (a fork, a setting that needs a new process) failed."""
    ATTACHMENT = "attachment"
    """An attachment could not be sent as it is (unreadable, a type the agent does not take)."""
    UNEXPECTED_ANSWER = "unexpected_answer"
    """An answer of a kind the request's wire cannot carry was dropped."""
    # what the agent reported
    AGENT_ERROR = "agent_error"
    """The agent reported an error that did not end the turn."""
    API_RETRY = "api_retry"
    """The agent is retrying its model API."""
    AGENT_WARNING = "agent_warning"
    """The agent reported a warning; nothing failed and the turn goes on."""
    LAUNCH_QUEUED = "launch_queued"
    """The session waited for a launch slot (``Runtime(launch_limit=...)``) before its agent started."""

    @classmethod
    def all(cls) -> dict[str, str]:
        """Every code and its one-line meaning."""
        docs = _attribute_docs(cls)
        return {value: docs.get(name, "") for name, value in vars(cls).items() if name.isupper()}


def _attribute_docs(cls: type) -> dict[str, str]:
    """The docstrings written under class attributes (read from the source, for the docs table)."""
    import ast
    import inspect
    import itertools
    import textwrap

    try:  # this module's source: ``cls.__module__`` names the package it is exported from
        tree = ast.parse(textwrap.dedent(inspect.getsource(sys.modules[__name__])))
    except (OSError, TypeError, SyntaxError):
        return {}
    docs: dict[str, str] = {}
    found = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == cls.__name__]
    body = found[0].body if found else []
    for node, following in itertools.pairwise(body):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.targets[0].id] = following.value.value
    return docs


# ---------------------------------------------------------------------------------------------
# Event kinds


@attrs.frozen(repr=False)
class TurnStarted:
    """A turn began: by a prompt (``PromptOrigin``) or by the agent itself (``AgentOrigin``)."""

    origin: TurnOrigin


@attrs.frozen(repr=False)
class TurnEnded:
    """The turn is over, exactly once per turn. ``background`` lists tools still running."""

    stop: StopReason
    background: tuple[str, ...] = attrs.field(default=(), converter=_tuple)


@attrs.frozen(repr=False)
class TextDelta:
    """Assistant output; append to message ``message_id``."""

    message_id: str
    text: str


_text_message_id, _text_text = _slot_setters(TextDelta, "message_id", "text")


def _text_delta_init(self: TextDelta, message_id: str, text: str) -> None:  # see ``_slot_setters``
    _text_message_id(self, message_id)
    _text_text(self, text)


TextDelta.__init__ = _text_delta_init  # type: ignore[method-assign]


@attrs.frozen(repr=False)
class ReasoningDelta:
    """The agent's thinking; append to message ``message_id``."""

    message_id: str
    text: str


_reasoning_message_id, _reasoning_text = _slot_setters(ReasoningDelta, "message_id", "text")


def _reasoning_delta_init(self: ReasoningDelta, message_id: str, text: str) -> None:  # see ``_slot_setters``
    _reasoning_message_id(self, message_id)
    _reasoning_text(self, text)


ReasoningDelta.__init__ = _reasoning_delta_init  # type: ignore[method-assign]


@attrs.frozen(repr=False)
class UserMessage:
    """User content the provider originated (a parent steering a subagent), never your own prompt."""

    message_id: str
    text: str


@attrs.frozen(repr=False)
class MessageEnded:
    """No more deltas will arrive for ``message_id``."""

    message_id: str


@attrs.frozen(repr=False)
class ToolUpdated:
    """A tool call changed; ``tool`` is the whole new snapshot."""

    tool: ToolUpdate


@attrs.frozen(repr=False)
class ToolOutputDelta:
    """Streamed output of the running tool ``tool_id``."""

    tool_id: str
    text: str


@attrs.frozen(repr=False)
class PlanUpdated:
    """The agent's whole task list, replacing the previous one."""

    entries: tuple[PlanEntry, ...] = attrs.field(converter=_tuple)


@attrs.frozen(repr=False)
class RequestOpened:
    """The agent waits for an answer to ``request``."""

    request: Request


@attrs.frozen(repr=False)
class RequestClosed:
    """``request_id`` is resolved: answered, withdrawn, or its turn ended. Clear the UI here."""

    request_id: str


@attrs.frozen(repr=False)
class SessionUpdated:
    """New session snapshot after configure, rollback, a rename or a capability seen first."""

    info: SessionInfo


@attrs.frozen(repr=False)
class StatusChanged:
    """The session's status flipped; emitted only on change."""

    status: SessionStatus


@attrs.frozen(repr=False)
class ContextUsage:
    """How full this session's context window is."""

    used_tokens: int
    window_tokens: int | None = None
    cost_usd: float | None = None


@attrs.frozen(repr=False)
class ContextCompacted:
    """The agent compacted its context; the next ``ContextUsage`` drops."""


@attrs.frozen(repr=False)
class PlanUsageUpdated:
    """The account's quota, pushed without asking."""

    usage: PlanUsage


@attrs.frozen(repr=False)
class Diagnostic:
    """Non-fatal but worth logging: a stall, a rejected rollback, an unknown frame."""

    diagnostic: DiagnosticInfo


EventKind = Union[
    TurnStarted,
    TurnEnded,
    TextDelta,
    ReasoningDelta,
    UserMessage,
    MessageEnded,
    ToolUpdated,
    ToolOutputDelta,
    PlanUpdated,
    RequestOpened,
    RequestClosed,
    SessionUpdated,
    StatusChanged,
    ContextUsage,
    ContextCompacted,
    PlanUsageUpdated,
    Diagnostic,
]
"""Every kind an `Event` carries (`Event.kind`); match on these classes to read a session's stream."""


@attrs.frozen(repr=False)
class Event:
    """One thing that happened in a session, in order.

    ``sequence`` counts 1, 2, 3 … per session; ``turn_info`` is None outside a turn;
    ``extensions`` carries provider data keyed ``"provider/name"``. ``occurred_at`` is aware (UTC)
    and never earlier than the previous event's; text deltas read in one batch share one time.
    """

    sequence: int
    occurred_at: datetime
    session_id: str
    kind: EventKind
    turn_info: TurnInfo | None = None
    extensions: Mapping[str, JSON] = attrs.field(default=_EMPTY, converter=_frozen_mapping)


_event_sequence, _event_occurred_at, _event_session_id, _event_kind, _event_turn_info, _event_extensions = (
    _slot_setters(Event, "sequence", "occurred_at", "session_id", "kind", "turn_info", "extensions")
)


def _event_init(
    self: Event,
    sequence: int,
    occurred_at: datetime,
    session_id: str,
    kind: EventKind,
    turn_info: TurnInfo | None = None,
    extensions: Mapping[str, JSON] | None = _EMPTY,
) -> None:  # see ``_slot_setters``
    _event_sequence(self, sequence)
    _event_occurred_at(self, occurred_at)
    _event_session_id(self, session_id)
    _event_kind(self, kind)
    _event_turn_info(self, turn_info)
    _event_extensions(self, _EMPTY if not extensions else _frozen_mapping(extensions))


Event.__init__ = _event_init  # type: ignore[method-assign]


# ---------------------------------------------------------------------------------------------
# Prompts and deliveries


@attrs.frozen(repr=False)
class Started:
    """The session was idle; the prompt began turn ``turn_id``."""

    turn_id: str


@attrs.frozen(repr=False)
class Steered:
    """The prompt went into the running turn ``turn_id``."""

    turn_id: str


@attrs.frozen(repr=False)
class Queued:
    """The prompt waits behind ``position`` others (0 = next)."""

    position: int


DeliveryKind = Union[Started, Steered, Queued]
"""How a prompt was delivered (`Delivery.kind`): `Started` a turn, `Steered` the running one, or `Queued` behind it."""


@attrs.frozen(repr=False)
class Delivery:
    """What happened to a prompt: ``kind`` is ``Started``, ``Steered`` or ``Queued``."""

    prompt_id: str
    kind: DeliveryKind


@attrs.frozen(repr=False)
class Input:
    """A prompt: text plus file attachments. ``Input.text("…").attach("shot.png")``."""

    content: str
    attachments: tuple[Path, ...] = attrs.field(default=(), converter=_tuple)

    @classmethod
    def text(cls, text: str) -> Input:
        """A prompt of plain text (``InvalidRequest`` for anything that is not a str)."""
        value: object = text
        if not isinstance(value, str):
            raise InvalidRequest(f"prompt text must be a str, not {type(value).__name__}")
        return cls(value)

    def attach(self, path: str | Path) -> Input:
        """A copy with one more attachment (resolved to an absolute path)."""
        return attrs.evolve(self, attachments=(*self.attachments, Path(path).expanduser().absolute()))

    @classmethod
    def coerce(cls, value: str | Input) -> Input:
        """Turn ``str | Input`` into an ``Input``; anything else is an ``InvalidRequest``."""
        if isinstance(value, Input):
            return value
        return cls.text(value)


def freeze_json(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A read-only view of a JSON object (shared by adapters for ``raw`` and extensions)."""
    return _frozen_mapping(value)


def as_tuple(values: Sequence[Any] | Iterable[Any]) -> tuple[Any, ...]:
    """A tuple of ``values`` (no copy when already one)."""
    return _tuple(values)


@attrs.frozen(repr=False)
class PlanUsageEntry:
    """One agent's quota for a dashboard: ``usage``, or ``error`` when it could not be read."""

    agent: AgentInstallation
    usage: PlanUsage | None = None
    error: str | None = None


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidRequest(f"expected a datetime, got {type(value).__name__}")
    if value.utcoffset() is None:
        raise InvalidRequest(f"the naive datetime {value.isoformat()} needs a UTC offset")
    return value.astimezone(timezone.utc)


@attrs.frozen(repr=False)
class HistoryEntry:
    """One conversation an agent keeps itself, as ``Runtime.history`` lists it.

    ``agent_id`` is the profile id (``"claude"``); ``resume_token`` is what
    ``SessionOptions.resume(...)`` takes to continue it on that agent. ``title`` is the agent's
    own title or, where it keeps none, the conversation's first prompt (cut to one line).
    ``cwd`` is the directory the conversation ran in. The times are aware and in UTC (an aware
    datetime given in another offset is converted; a naive one is refused). ``message_count``
    counts the user and assistant messages when the agent's store says it cheaply, else None.
    """

    agent_id: str
    resume_token: str
    title: str | None = None
    cwd: str | None = None
    created_at: datetime | None = attrs.field(default=None, converter=_utc)
    updated_at: datetime | None = attrs.field(default=None, converter=_utc)
    message_count: int | None = None

    @property
    def last_activity(self) -> datetime | None:
        """``updated_at``, else ``created_at``: the time a list sorts by (newest first)."""
        return self.updated_at or self.created_at


_shared_reprs(globals())  # the value classes above say repr=False: one shared __repr__
