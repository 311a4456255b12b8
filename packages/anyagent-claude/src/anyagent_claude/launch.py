"""How one ``claude`` process is launched: its argv and environment. Pure functions.

In: the installation, the profile, the session options and what this launch is for (a new
session, a resume, a fork at a message). Out: the argv and environment for ``anyagent.process``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from anyagent import AgentInstallation, AgentProfile, ConfigValue, McpHttp, McpSse, McpStdio, SessionOptions

from .profile import BASE_ARGS, PROFILE

__all__ = ["Launch", "argv", "child_env", "mcp_config"]


@attrs.frozen
class Launch:
    """What one process is for.

    ``session_id``: the id to give a new conversation (``--session-id``; also the fork's new id).
    ``resume``: the conversation to continue (``--resume``); with ``fork`` a copy is made, cut
    after the assistant message ``fork_at`` when given. ``configuration``: model, effort, fast, mode.
    """

    session_id: str | None = None
    resume: str | None = None
    fork: bool = False
    fork_at: str | None = None
    configuration: Mapping[str, ConfigValue] = attrs.field(factory=dict)


def mcp_config(servers: Sequence[McpStdio | McpHttp | McpSse]) -> str:
    """``--mcp-config`` JSON for the app's MCP servers (stdio, http and sse all supported)."""
    config: dict[str, Any] = {}
    for server in servers:
        if isinstance(server, McpStdio):
            entry: dict[str, Any] = {"type": "stdio", "command": server.command, "args": list(server.args)}
            if server.env:
                entry["env"] = dict(server.env)
        else:
            entry = {"type": server.transport, "url": server.url}
            if server.headers:
                entry["headers"] = dict(server.headers)
        config[server.name] = entry
    return json.dumps({"mcpServers": config}, separators=(",", ":"))


def _protocol_args(installation: AgentInstallation, profile: AgentProfile | None) -> tuple[str, ...]:
    if installation.args:
        return installation.args
    if profile is not None and profile.args:
        return profile.args
    return BASE_ARGS


def argv(
    installation: AgentInstallation, profile: AgentProfile | None, options: SessionOptions, launch: Launch
) -> list[str]:
    """The full command line for one ``claude`` process."""
    args = [str(installation.executable_path), *_protocol_args(installation, profile)]
    if launch.resume is not None:
        args += ["--resume", launch.resume]
        if launch.fork:
            args.append("--fork-session")
            if launch.fork_at is not None:
                args += ["--resume-session-at", launch.fork_at]
    if launch.session_id is not None and (launch.resume is None or launch.fork):
        args += ["--session-id", launch.session_id]
    config = launch.configuration
    model = config.get("model")
    if isinstance(model, str) and model:
        args += ["--model", model]
    effort = config.get("effort")
    if isinstance(effort, str) and effort:
        args += ["--effort", effort]
    mode = config.get("mode")
    if isinstance(mode, str) and mode and mode != "default":
        args += ["--permission-mode", mode]
    if config.get("fast") is True:
        args += ["--settings", json.dumps({"fastMode": True})]
    if options.mcp_servers:
        args += ["--mcp-config", mcp_config(options.mcp_servers)]
    if options.no_tools:
        args += ["--tools", "", "--no-session-persistence"]
    return args


def child_env(env: Mapping[str, str], profile: AgentProfile | None) -> dict[str, str]:
    """The launch environment: the session's, plus the profile's verified quirk variables."""
    quirks = (profile or PROFILE).quirks
    result = dict(env)
    for name, value in dict(quirks.get("env", {})).items():
        result.setdefault(name, value)
    return result
