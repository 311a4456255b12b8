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
"""

from __future__ import annotations

from . import jsonread, seam
from ._engine import EVENT_BUFFER, Events, Session
from ._errors import (
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
from ._installation import AgentInstallation, AgentProfile, DiscoveryReport, InstallationSource, MissingAgent
from ._options import (
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
from ._registry import DemoAgent, PluginInfo, PluginWarning, Register
from ._runtime import Runtime
from ._types import *  # noqa: F403 - the curated list is _types.__all__
from ._types import __all__ as _types_all
from .hookspecs import hookimpl

__version__ = "0.1.0"

__all__ = [
    "CREDENTIAL_ENV_PATTERNS",
    "EVENT_BUFFER",
    "AgentError",
    "AgentInstallation",
    "AgentProfile",
    "AuthRequired",
    "CredentialPolicy",
    "DemoAgent",
    "DiscoveryReport",
    "Events",
    "HandshakeTimeout",
    "InstallationSource",
    "InvalidConfiguration",
    "InvalidRequest",
    "McpHttp",
    "McpServer",
    "McpSse",
    "McpStdio",
    "MissingAgent",
    "NotInstalled",
    "PermissionMode",
    "PluginInfo",
    "PluginWarning",
    "ProcessExited",
    "ProtocolFailed",
    "Register",
    "ResumeFailed",
    "RollbackScope",
    "Runtime",
    "Session",
    "SessionBusy",
    "SessionClosed",
    "SessionOptions",
    "SpawnFailed",
    "UnsupportedFeature",
    "__version__",
    "hookimpl",
    "jsonread",
    "seam",
    *_types_all,
]
