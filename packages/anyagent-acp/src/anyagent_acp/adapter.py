"""``AcpAdapter``: launch an ACP agent, run the handshake, hand the session to ``AcpDriver``.

What flows in: a ``ConnectRequest`` (installation, profile or None, options, environment). What
flows out: a connected ``AcpDriver``, or a typed error — ``ProtocolFailed`` (including a protocol
version we do not speak), ``AuthRequired`` (with runnable login methods), ``ResumeFailed``,
``UnsupportedFeature`` (fork, an MCP transport the agent lacks), ``InvalidConfiguration``,
``SpawnFailed`` / ``ProcessExited``. The process is reaped on every failure and on cancellation.

Handshake: ``initialize`` → (``authenticate`` when the profile says so) → ``session/new``, or
``session/resume`` / ``session/load`` for a resume token → creation-time configuration. History a
load replays is dropped, never re-emitted; info updates it carries are applied.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import anyio

from anyagent import (
    AgentProfile,
    Authenticated,
    AuthKind,
    AuthRequired,
    InvalidConfiguration,
    LoginMethod,
    McpHttp,
    McpSse,
    McpStdio,
    ProtocolFailed,
    ResumeFailed,
    SessionOptions,
    UnsupportedFeature,
    __version__,
    seam,
)
from anyagent import jsonread as j
from anyagent.process import AgentProcess, run_command, spawn
from anyagent.wire import JsonLines, JsonRpcError, JsonRpcPeer, Notification, WireRecorder

from . import translate
from ._state import InfoState, Setter
from .client import FileAccess, Terminals
from .driver import INFO_UPDATES, AcpDriver, Handshaken, config_call
from .prompt import PromptMedia
from .quirks import Quirks

__all__ = ["AUTHENTICATE_WAIT", "CLIENT_CAPABILITIES", "AcpAdapter"]

AUTH_REQUIRED = -32000
UNSUPPORTED_VERSION = -32022
METHOD_NOT_FOUND = -32601
AUTHENTICATE_WAIT = 10.0
"""Seconds an ``authenticate`` on open may take (adopting an existing login is about 2 s; a
browser flow would never return)."""

CLIENT_CAPABILITIES: dict[str, Any] = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
"""What we serve: ``fs/*`` inside the session directory and ``terminal/*``."""

_CLIENT_METHODS = frozenset(
    {
        "session/request_permission",
        "fs/read_text_file",
        "fs/write_text_file",
        "terminal/create",
        "terminal/output",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/release",
    }
)


class AcpAdapter(seam.Adapter):
    """One adapter for every Agent Client Protocol agent (wire name ``"acp"``)."""

    wire: ClassVar[str] = "acp"

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        """Spawn the agent, handshake, and return the driver (see the module docstring)."""
        options = request.options
        if options.fork_token is not None:
            raise UnsupportedFeature("ACP agents cannot fork sessions")
        profile = request.profile
        quirks = Quirks.read(profile.quirks if profile is not None else None)
        env = _environment(request, quirks)
        executable = request.installation.executable_path
        authenticated = await _preflight(executable, quirks, profile, env, options)
        recorder = WireRecorder.open(options.record_wire_path) if options.record_wire_path is not None else None
        args = request.installation.args or (profile.args if profile is not None else ())
        process = await spawn([str(executable), *args], cwd=options.cwd, env=env, recorder=recorder)
        try:
            setup = await _handshake(process, request, quirks, env)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await process.aclose()
                if recorder is not None:
                    recorder.close()
            raise
        if authenticated:
            setup.state.auth = Authenticated(AuthKind.OTHER)
        return AcpDriver(setup)


def _environment(request: seam.ConnectRequest, quirks: Quirks) -> dict[str, str]:
    env = dict(request.env) if request.env else dict(os.environ)
    env.update(quirks.env)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.update(quirks.root_env)
    return env


async def _preflight(
    executable: Path, quirks: Quirks, profile: AgentProfile | None, env: dict[str, str], options: SessionOptions
) -> bool:
    """Run the profile's side command before the handshake (cursor's ``about``): a failure means
    logged out (``AuthRequired``). True when it proved a login."""
    if not quirks.preflight_args:
        return False
    result = await run_command([str(executable), *quirks.preflight_args], cwd=options.cwd, env=env, timeout=15.0)
    if result.timed_out:
        return False
    if not result.ok:
        tail = (result.stderr or result.stdout).strip().splitlines()
        detail = tail[-1] if tail else result.status
        login = profile.login if profile is not None else ()
        raise AuthRequired(login, f"{profile.name if profile else executable} is not logged in: {detail}")
    return True


async def _handshake(
    process: AgentProcess, request: seam.ConnectRequest, quirks: Quirks, env: dict[str, str]
) -> Handshaken:
    options = request.options
    accepts = _CLIENT_METHODS | set(quirks.requests)
    peer = JsonRpcPeer(JsonLines(process), accepts=accepts)
    init = j.obj(await _initialize(peer))
    profile = request.profile
    login = translate.login_methods(init, request.installation.executable_path) + (
        profile.login if profile is not None else ()
    )
    hints = profile.auth_error_hints if profile is not None else ()
    if quirks.authenticate_on_open:
        await _authenticate(peer, quirks.authenticate_on_open)
    capabilities = translate.capabilities(init)
    servers = _mcp_servers(options, capabilities.mcp_transports)
    session_id, result, replaying = await _open_session(peer, init, options, servers, login, hints)
    early: list[Any] = []
    state = InfoState(
        capabilities,
        version=j.text(j.path(init, "agentInfo", "version")),
        resume_token=session_id,
        effort_prompt=quirks.effort_prompt,
    )
    state.adopt_session(result)
    await _drain(peer, state, early, replaying)
    hidden = await _configure_at_open(peer, state, session_id, options)
    await _drain(peer, state, early, replaying or hidden)
    return Handshaken(
        peer=peer,
        process=process,
        session_id=session_id,
        state=state,
        quirks=quirks,
        media=PromptMedia.read(init),
        files=FileAccess(options.cwd, missing_as_empty=quirks.read_missing_as_empty),
        terminals=Terminals(options.cwd, env),
        login=login,
        auth_hints=hints,
        early=early,
    )


async def _initialize(peer: JsonRpcPeer) -> Any:
    """``initialize`` with version negotiation: an answer in another version fails typed."""
    params = {
        "protocolVersion": translate.PROTOCOL_VERSION,
        "clientCapabilities": CLIENT_CAPABILITIES,
        "clientInfo": {"name": "anyagent", "title": "anyagent", "version": __version__},
    }
    try:
        result = await peer.request("initialize", params)
    except JsonRpcError as exc:
        if exc.code == UNSUPPORTED_VERSION:
            raise ProtocolFailed(
                f"the agent does not speak ACP version {translate.PROTOCOL_VERSION}: {exc.message} ({exc.data!r})"
            ) from None
        raise ProtocolFailed(f"initialize failed: {exc.message} ({exc.code})") from None
    version = j.obj(result).get("protocolVersion")
    if version != translate.PROTOCOL_VERSION:
        raise ProtocolFailed(
            f"the agent answered ACP protocol version {version!r}; "
            f"anyagent speaks version {translate.PROTOCOL_VERSION} only"
        )
    return result


async def _authenticate(peer: JsonRpcPeer, method_id: str) -> None:
    """One bounded ``authenticate`` (failures are left for ``session/new`` to report)."""
    with anyio.move_on_after(AUTHENTICATE_WAIT):
        try:
            await peer.request("authenticate", {"methodId": method_id})
        except JsonRpcError:
            pass


def _mcp_servers(options: SessionOptions, transports: frozenset[str]) -> list[dict[str, Any]]:
    """The caller's MCP servers as ACP entries; a transport the agent lacks fails typed."""
    entries: list[dict[str, Any]] = []
    for server in options.mcp_servers:
        if server.transport not in transports:
            raise UnsupportedFeature(
                f"this agent does not take {server.transport} MCP servers ({server.name!r}); "
                f"it takes: {', '.join(sorted(transports))}"
            )
        if isinstance(server, McpStdio):
            env = [{"name": k, "value": v} for k, v in server.env.items()]
            entries.append({"name": server.name, "command": server.command, "args": list(server.args), "env": env})
        elif isinstance(server, (McpHttp, McpSse)):
            headers = [{"name": k, "value": v} for k, v in server.headers.items()]
            entries.append({"type": server.transport, "name": server.name, "url": server.url, "headers": headers})
    return entries


async def _open_session(
    peer: JsonRpcPeer,
    init: dict[str, Any],
    options: SessionOptions,
    servers: list[dict[str, Any]],
    login: Sequence[LoginMethod],
    hints: Sequence[str],
) -> tuple[str, dict[str, Any], bool]:
    """``session/new``, or ``session/resume`` (where advertised) falling back to ``session/load``.
    Returns the session id, the result, and whether history may have been replayed."""
    cwd = str(options.cwd)
    token = options.resume_token
    if token is None:
        try:
            result = j.obj(await peer.request("session/new", {"cwd": cwd, "mcpServers": servers}))
        except JsonRpcError as exc:
            raise _open_error(exc, login, hints) from None
        session_id = j.text(result.get("sessionId"))
        if not session_id:
            raise ProtocolFailed("session/new returned no sessionId")
        return session_id, result, False
    agent = j.obj(init.get("agentCapabilities"))
    params = {"sessionId": token, "cwd": cwd, "mcpServers": servers}
    if isinstance(j.path(agent, "sessionCapabilities", "resume"), dict):
        try:
            return token, j.obj(await peer.request("session/resume", params)), False
        except JsonRpcError as exc:
            if exc.code != METHOD_NOT_FOUND or not j.flag(agent.get("loadSession")):
                raise _resume_error(exc, login, hints) from None
    if not j.flag(agent.get("loadSession")):
        raise ResumeFailed("this agent cannot load sessions (no loadSession capability)")
    try:
        return token, j.obj(await peer.request("session/load", params)), True
    except JsonRpcError as exc:
        raise _resume_error(exc, login, hints) from None


def _is_auth(exc: JsonRpcError, hints: Sequence[str]) -> bool:
    text = f"{exc.message} {exc.data if exc.data is not None else ''}".lower()
    return exc.code == AUTH_REQUIRED or any(hint.lower() in text for hint in hints)


def _open_error(exc: JsonRpcError, login: Sequence[LoginMethod], hints: Sequence[str]) -> Exception:
    """A refused ``session/new``: ``AuthRequired`` when it means logged out and a login exists."""
    detail = exc.message if exc.data is None else f"{exc.message}: {str(exc.data)[:500]}"
    if _is_auth(exc, hints) and login:
        return AuthRequired(login, f"the agent needs a login: {detail}")
    return ProtocolFailed(f"the agent refused to open a session: {detail} ({exc.code})")


def _resume_error(exc: JsonRpcError, login: Sequence[LoginMethod], hints: Sequence[str]) -> Exception:
    if _is_auth(exc, hints) and login:
        return AuthRequired(login, f"the agent needs a login: {exc.message}")
    return ResumeFailed(f"the agent could not resume the session: {exc.message} ({exc.code})")


async def _drain(peer: JsonRpcPeer, state: InfoState, early: list[Any], replaying: bool) -> None:
    """Take what arrived during the handshake: apply info updates, drop replayed history, keep
    the rest (vendor notifications, requests) for the driver to handle first."""
    while True:
        with anyio.move_on_after(0) as scope:
            try:
                message = await peer.receive()
            except anyio.EndOfStream:
                return
        if scope.cancelled_caught:
            return
        if isinstance(message, Notification) and message.method == "session/update":
            update = j.obj(j.obj(message.params).get("update"))
            kind = j.text(update.get("sessionUpdate")) or ""
            if kind in INFO_UPDATES:
                _apply_info(state, kind, update)
                continue
            if replaying and kind not in ("usage_update",):
                continue
        early.append(message)


def _apply_info(state: InfoState, kind: str, update: dict[str, Any]) -> None:
    if kind == "available_commands_update":
        state.set_commands(translate.commands(update.get("availableCommands")))
    elif kind == "current_mode_update":
        mode = j.text(update.get("currentModeId"))
        if mode is not None:
            state.select("mode", mode)
    elif kind == "config_option_update":
        state.adopt_config_options(update.get("configOptions"))
    elif kind == "session_info_update" and "title" in update:
        state.title = j.text(update.get("title"))


async def _configure_at_open(peer: JsonRpcPeer, state: InfoState, session_id: str, options: SessionOptions) -> bool:
    """Apply ``SessionOptions.configure`` before the first turn; a refusal fails the open.
    Returns True when a hidden prompt ran (its chunks must be dropped)."""
    hidden = False
    for option_id, value in options.configuration.items():
        option = state.option(option_id)
        if option is None:
            offered = ", ".join(o.id for o in state.options) or "none"
            raise InvalidConfiguration(f"the agent has no config option {option_id!r} (offered: {offered})")
        if not option.accepts(value):
            raise InvalidConfiguration(f"{value!r} is not a valid value for {option_id!r}")
        setter = state.setters[option_id]
        try:
            if setter is Setter.EFFORT_PROMPT:
                prompt = [{"type": "text", "text": f"/effort {value}"}]
                await peer.request("session/prompt", {"sessionId": session_id, "prompt": prompt})
                hidden = True
            else:
                method, params = config_call(session_id, setter, option_id, value, state)
                result = j.obj(await peer.request(method, params))
                if isinstance(result.get("configOptions"), list):
                    state.adopt_config_options(result["configOptions"])
        except JsonRpcError as exc:
            raise InvalidConfiguration(f"the agent rejected {option_id}={value!r}: {exc.message}") from None
        state.select(option_id, value)
    return hidden
