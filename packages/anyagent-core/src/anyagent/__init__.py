"""anyagent: one typed async interface to every coding agent installed on a machine.

::

    async with Runtime() as runtime:
        agent = (await runtime.discover()).require("claude")
        session, events = await runtime.open(agent, SessionOptions.in_dir("."))
        async with session:
            await session.prompt("explain this repo")
            async for event in events:
                ...

The public names live here. Modules: ``anyagent.seam`` (the adapter contract),
``anyagent.toolkit`` (the pieces every adapter shares: the run loop, launch, requests),
``anyagent.jsonread`` (tolerant readers for untrusted JSON),
``anyagent.process`` and ``anyagent.wire`` (process lifecycle, JSON lines, JSON-RPC, HTTP+SSE and
wire recording for adapters), ``anyagent.mock`` (the scripted agent for tests),
``anyagent.serialize`` (the JSON form and its schema), ``anyagent.hookspecs`` (the plugin hooks).

The names exported here are defined in public modules, the paths a type checker shows:
``anyagent.types`` (events, kinds, requests, details), ``anyagent.errors``, ``anyagent.options``,
``anyagent.installation``, ``anyagent.registry``, ``anyagent.commands``, ``anyagent.runtime``,
``anyagent.session`` (``Session``, ``Events``) and ``anyagent.values`` (login methods, diagnostics).
"""

from __future__ import annotations

import typing as _typing

from . import jsonread, seam
from ._engine import EVENT_BUFFER
from .commands import CommandContext
from .errors import (
    AgentError,
    AuthRequired,
    HandshakeTimeout,
    InvalidConfiguration,
    InvalidRequest,
    NotInstalled,
    ProcessExited,
    ProtocolFailed,
    ResumeFailed,
    SessionBusy,
    SessionClosed,
    SpawnFailed,
    UnsupportedFeature,
)
from .installation import AgentInstallation, AgentProfile, DiscoveryReport, InstallationSource, MissingAgent
from .options import (
    CREDENTIAL_ENV_PATTERNS,
    CredentialPolicy,
    McpHttp,
    McpServer,
    McpSse,
    McpStdio,
    PermissionMode,
    RollbackScope,
    SessionOptions,
)
from .registry import CliCommand, DemoAgent, PluginInfo, PluginWarning, Register
from .runtime import Runtime
from .session import Events, Session
from .types import (
    JSON,
    Account,
    AgentDetails,
    AgentOrigin,
    Answer,
    Authenticated,
    AuthKind,
    AuthStatus,
    AuthUnknown,
    BooleanKind,
    Cancelled,
    Capabilities,
    Capability,
    ChoicesAnswer,
    Completed,
    CompletionSource,
    ConfigChoice,
    ConfigKind,
    ConfigOption,
    ConfigValue,
    ContextCompacted,
    ContextUsage,
    Delivery,
    DeliveryKind,
    Diagnostic,
    DiagnosticCode,
    DiagnosticInfo,
    DiagnosticLevel,
    EnvVarLogin,
    Event,
    EventKind,
    Failed,
    FileDiff,
    HistoryEntry,
    Input,
    LoginMethod,
    McpTool,
    MessageEnded,
    PermissionAnswer,
    PermissionChoice,
    PermissionRequest,
    PlanEntry,
    PlanEntryStatus,
    PlanUpdated,
    PlanUsage,
    PlanUsageEntry,
    PlanUsageUpdated,
    PlanUsageWindow,
    PromptOrigin,
    Question,
    QuestionAnswer,
    QuestionChoice,
    QuestionRequest,
    QuestionsAnswer,
    Queued,
    ReasoningDelta,
    Refused,
    Request,
    RequestClosed,
    RequestOpened,
    SelectKind,
    SessionInfo,
    SessionStatus,
    SessionUpdated,
    SlashCommand,
    Started,
    StatusChanged,
    Steered,
    StopReason,
    TerminalLogin,
    TextAnswer,
    TextDelta,
    ToolInput,
    ToolKind,
    ToolKindValue,
    ToolLocation,
    ToolOutputDelta,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
    TurnEnded,
    TurnInfo,
    TurnOrigin,
    TurnStarted,
    Unauthenticated,
    UserMessage,
)

if _typing.TYPE_CHECKING:  # imported on first use (``__getattr__``): pluggy is needed only when plugins load
    from .hookspecs import hookimpl

from ._version import __version__

__all__ = [
    "Account",
    "AgentDetails",
    "AgentError",
    "AgentInstallation",
    "AgentOrigin",
    "AgentProfile",
    "Answer",
    "AuthKind",
    "AuthRequired",
    "AuthStatus",
    "AuthUnknown",
    "Authenticated",
    "BooleanKind",
    "CREDENTIAL_ENV_PATTERNS",
    "Cancelled",
    "Capabilities",
    "Capability",
    "ChoicesAnswer",
    "CliCommand",
    "CommandContext",
    "Completed",
    "CompletionSource",
    "ConfigChoice",
    "ConfigKind",
    "ConfigOption",
    "ConfigValue",
    "ContextCompacted",
    "ContextUsage",
    "CredentialPolicy",
    "Delivery",
    "DeliveryKind",
    "DemoAgent",
    "Diagnostic",
    "DiagnosticCode",
    "DiagnosticInfo",
    "DiagnosticLevel",
    "DiscoveryReport",
    "EVENT_BUFFER",
    "EnvVarLogin",
    "Event",
    "EventKind",
    "Events",
    "Failed",
    "FileDiff",
    "HandshakeTimeout",
    "HistoryEntry",
    "Input",
    "InstallationSource",
    "InvalidConfiguration",
    "InvalidRequest",
    "JSON",
    "LoginMethod",
    "McpHttp",
    "McpServer",
    "McpSse",
    "McpStdio",
    "McpTool",
    "MessageEnded",
    "MissingAgent",
    "NotInstalled",
    "PermissionAnswer",
    "PermissionChoice",
    "PermissionMode",
    "PermissionRequest",
    "PlanEntry",
    "PlanEntryStatus",
    "PlanUpdated",
    "PlanUsage",
    "PlanUsageEntry",
    "PlanUsageUpdated",
    "PlanUsageWindow",
    "PluginInfo",
    "PluginWarning",
    "ProcessExited",
    "PromptOrigin",
    "ProtocolFailed",
    "Question",
    "QuestionAnswer",
    "QuestionChoice",
    "QuestionRequest",
    "QuestionsAnswer",
    "Queued",
    "ReasoningDelta",
    "Refused",
    "Register",
    "Request",
    "RequestClosed",
    "RequestOpened",
    "ResumeFailed",
    "RollbackScope",
    "Runtime",
    "SelectKind",
    "Session",
    "SessionBusy",
    "SessionClosed",
    "SessionInfo",
    "SessionOptions",
    "SessionStatus",
    "SessionUpdated",
    "SlashCommand",
    "SpawnFailed",
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
    "UnsupportedFeature",
    "UserMessage",
    "__version__",
    "hookimpl",
    "jsonread",
    "seam",
]


_LAZY = {"hookimpl": ".hookspecs"}  # imported on first access (and by ``from anyagent import *``)
if not _typing.TYPE_CHECKING:  # type checkers see the import above
    __getattr__ = seam.lazy_exports(__name__, _LAZY)


def _present_as_public() -> None:
    """Tracebacks and reprs name ``anyagent.NotInstalled``, not ``anyagent.errors.NotInstalled``:
    errors, enumerations, ``Runtime``, ``Session``, ``Events`` and the other plain classes say
    they live here.

    attrs value classes keep their defining module: ``typing.get_type_hints`` (which cattrs calls)
    resolves their string annotations in the module ``__module__`` names, so moving them would mean
    resolving all of them at import (measured: +16 ms on ``import anyagent``); their reprs do not
    show the module anyway."""
    import attrs

    for name in __all__:
        if name in _LAZY:
            continue
        value = globals()[name]
        if not isinstance(value, type) or value.__module__ == __name__ or attrs.has(value):
            continue
        subclasses: list[type] = value.__subclasses__()
        if any(attrs.has(sub) for sub in subclasses):
            continue  # a base of attrs values (McpServer): serialize finds its members by module
        value.__module__ = __name__


_present_as_public()
