"""What one ``claude`` process is for, as Claude Code's own flags. Pure functions.

In: the session options and what this launch is for (a new session, a resume, a fork at a
message, the settings to start with). Out: the flags that follow the protocol arguments
(``toolkit.launch_argv``: the installation's, else the profile's, else ``BASE_ARGS``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from anyagent import ConfigValue, McpHttp, McpSse, McpStdio, SessionOptions

__all__ = ["LaunchSpec", "claude_args", "mcp_config", "remove_private_file", "write_private_file"]


@attrs.frozen
class LaunchSpec:
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


def write_private_file(name: str, text: str) -> Path:
    """``text`` in a new file only this user can read (0600, in a fresh 0700 directory): where the
    MCP servers' env values and header secrets go instead of argv, which every local user can read
    in ``/proc/PID/cmdline``. Blocking: call it in a worker thread."""
    folder = Path(tempfile.mkdtemp(prefix="anyagent-claude-"))
    path = folder / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)
    return path


def remove_private_file(path: Path) -> None:
    """Remove a ``write_private_file`` file and its directory (never raises). Blocking."""
    shutil.rmtree(path.parent, ignore_errors=True)


def claude_args(options: SessionOptions, launch: LaunchSpec, mcp_file: Path | None = None) -> list[str]:
    """The flags of one ``claude`` process after its protocol arguments: what conversation it
    serves, its settings, the app's MCP servers (``--mcp-config`` naming ``mcp_file``, the
    private file holding ``mcp_config``; none without it), and no tools for ``without_tools``."""
    args: list[str] = []
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
    if options.mcp_servers and mcp_file is not None:
        args += ["--mcp-config", str(mcp_file)]
    if options.no_tools:
        args += ["--tools", "", "--no-session-persistence"]
    return args
