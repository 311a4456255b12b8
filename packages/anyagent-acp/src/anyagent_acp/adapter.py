"""``AcpAdapter``: launch an ACP agent, run the handshake, hand the session to ``AcpDriver``.

What flows in: a ``ConnectRequest`` (installation, profile or None, options, environment). What
flows out: a connected ``AcpDriver``, or a typed error — ``ProtocolFailed`` (including a protocol
version we do not speak), ``AuthRequired`` (with runnable login methods), ``ResumeFailed``,
``UnsupportedFeature`` (fork, an MCP transport the agent lacks), ``InvalidConfiguration``,
``SpawnFailed`` / ``ProcessExited``. ``toolkit.launching`` reaps the process and closes the wire
recording on every failure and on cancellation.

Launch: argv from ``toolkit.launch_argv``, environment from ``toolkit.launch_env`` (the profile's
``env`` and ``root_env`` quirks are defaults; the caller's environment wins). The profile's
preflight command, the agent and its client terminals all run with that environment.

Handshake: ``initialize`` offering v1 (again in v2 for an agent that lists only v2, see
``_initialize``) → (``authenticate``, v2 ``auth/login``, when the profile says so) → ``session/new``, or
``session/resume`` / ``session/load`` for a resume token → creation-time configuration. History a
load or a resume replays is dropped, never re-emitted; info updates it carries are applied.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import anyio

from anyagent import (
    Authenticated,
    AuthKind,
    AuthRequired,
    AuthStatus,
    AuthUnknown,
    InvalidConfiguration,
    LoginMethod,
    McpHttp,
    McpSse,
    McpStdio,
    ProtocolFailed,
    ResumeFailed,
    SessionOptions,
    Unauthenticated,
    UnsupportedFeature,
    __version__,
    seam,
    toolkit,
)
from anyagent import jsonread as j
from anyagent.process import AgentProcess, run_command
from anyagent.wire import JsonLines, JsonRpcCode, JsonRpcError, JsonRpcPeer, Message, Notification

from . import translate
from ._state import INFO_UPDATES, InfoState, Setter
from .client import FileAccess, Terminals
from .driver import AcpDriver, Handshaken, config_call
from .prompt import PromptMedia
from .quirks import INFO_HOOKS, Quirks
from .translate import AcpCode

__all__ = ["AUTHENTICATE_WAIT", "CLIENT_CAPABILITIES", "PREFLIGHT_WAIT", "AcpAdapter"]

AUTHENTICATE_WAIT = 10.0
"""Seconds an ``authenticate`` on open may take (adopting an existing login is about 2 s; a
browser flow would never return)."""

PREFLIGHT_WAIT = 15.0
"""Seconds the profile's preflight command may take (a timeout proves nothing either way)."""

_SETTINGS_LIMIT = 1 << 20  # bytes of an agent's settings file read for one key

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
        if request.options.fork_token is not None:
            raise UnsupportedFeature("ACP agents cannot fork sessions")
        profile = request.profile
        quirks = Quirks.read(profile.quirks if profile is not None else None)
        async with toolkit.launching(request) as launch:
            authenticated = await _preflight(launch, quirks)
            process = await launch.spawn()
            setup = await _handshake(process, request, quirks, launch.env)
            if authenticated:
                setup.state.auth = Authenticated(AuthKind.OTHER)
            return AcpDriver(setup)

    async def probe_auth(self, request: seam.ConnectRequest) -> AuthStatus | None:
        """The cheapest look that can tell: a profile's preflight command alone when it has one
        (cursor: no agent launched), else ``initialize`` and one ``session/new`` without MCP
        servers or configuration, then the agent is stopped. ``Authenticated`` where the agent
        proves a login (``_auth/status_update`` or ``authStatus``; a session opened by an agent
        whose profile says ``login_proven_by_session``), ``Unauthenticated`` when it refuses the
        session for a login, else ``AuthUnknown``."""
        profile = request.profile
        quirks = Quirks.read(profile.quirks if profile is not None else None)
        async with toolkit.launching(request, record=False) as launch:
            try:
                if await _preflight(launch, quirks):
                    return Authenticated(AuthKind.OTHER)
            except AuthRequired as exc:
                return Unauthenticated(exc.login)
            process = await launch.spawn()
            try:
                return await _probe_session(process, request, quirks)
            finally:
                await launch.abandon()


async def _preflight(launch: toolkit.Launch, quirks: Quirks) -> bool:
    """Run the profile's side command before the handshake (cursor's ``about``) with the launch's
    environment: a failure means logged out (``AuthRequired``). True when it proved a login."""
    if not quirks.preflight_args:
        return False
    executable, profile = launch.argv[0], launch.request.profile
    argv = [executable, *quirks.preflight_args]
    result = await run_command(argv, cwd=launch.request.options.cwd, env=launch.env, timeout=PREFLIGHT_WAIT)
    if result.timed_out:
        return False
    if not result.ok:
        tail = (result.stderr or result.stdout).strip().splitlines()
        detail = tail[-1] if tail else result.status
        login = profile.login if profile is not None else ()
        raise AuthRequired(login, f"{profile.name if profile else executable} is not logged in: {detail}")
    return True


async def _probe_session(process: AgentProcess, request: seam.ConnectRequest, quirks: Quirks) -> AuthStatus:
    """``initialize`` and a bare ``session/new``: the login state they prove (``probe_auth``)."""
    peer = JsonRpcPeer(JsonLines(process), accepts=_CLIENT_METHODS | set(quirks.requests))
    init = await _initialize(peer)
    profile = request.profile
    login = translate.login_methods(init, request.installation.executable_path) + (
        profile.login if profile is not None else ()
    )
    if quirks.authenticate_on_open:
        await _authenticate(peer, quirks.authenticate_on_open, _version(init))
    state = InfoState(translate.capabilities(init), auth=_init_auth(init))
    try:
        await _open_session(
            peer,
            init,
            SessionOptions.in_dir(request.options.cwd),
            [],
            login,
            profile.auth_error_hints if profile else (),
        )
    except AuthRequired as exc:
        return Unauthenticated(exc.login)
    await _drain(peer, state, quirks, [], False)
    _session_proves(state, quirks)
    return state.auth


def _init_auth(init: dict[str, Any]) -> AuthStatus:
    """What ``initialize`` proves about the login (codex-acp 2.x: ``agentCapabilities._meta.authStatus``)."""
    return translate.auth_status(j.path(init, "agentCapabilities", "_meta", "authStatus")) or AuthUnknown()


def _session_proves(state: InfoState, quirks: Quirks) -> None:
    """An opened session proves the login of an agent that refuses sessions when logged out."""
    if quirks.login_proven_by_session and isinstance(state.auth, AuthUnknown):
        state.auth = Authenticated(AuthKind.OTHER)


async def _handshake(
    process: AgentProcess, request: seam.ConnectRequest, quirks: Quirks, env: dict[str, str]
) -> Handshaken:
    options = request.options
    accepts = _CLIENT_METHODS | set(quirks.requests)
    peer = JsonRpcPeer(JsonLines(process), accepts=accepts)
    init = await _initialize(peer)
    peer.lines.batches = _version(init) == translate.V2  # v2 allows JSON-RPC batches on stdio
    profile = request.profile
    login = translate.login_methods(init, request.installation.executable_path) + (
        profile.login if profile is not None else ()
    )
    hints = profile.auth_error_hints if profile is not None else ()
    if quirks.authenticate_on_open and not await anyio.to_thread.run_sync(
        _setting_set, quirks.authenticate_unless_setting, env
    ):
        await _authenticate(peer, quirks.authenticate_on_open, _version(init))
    capabilities = translate.capabilities(init)
    servers = _mcp_servers(options, capabilities.mcp_transports, _version(init))
    session_id, result, replaying = await _open_session(peer, init, options, servers, login, hints)
    early: list[Message] = []
    state = InfoState(
        capabilities,
        version=j.text(j.path(init, "agentInfo", "version")),
        auth=_init_auth(init),
        resume_token=session_id,
        effort_prompt=quirks.effort_prompt,
        mode_names=dict(profile.modes) if profile is not None else {},
    )
    state.adopt_session(result)
    await _drain(peer, state, quirks, early, replaying)
    _session_proves(state, quirks)
    hidden = await _configure_at_open(peer, state, session_id, options)
    await _drain(peer, state, quirks, early, replaying or hidden)
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
        name=profile.name if profile is not None else request.installation.name,
        mcp_servers=tuple(server.name for server in options.mcp_servers),
        protocol=_version(init),
    )


def _init_params(version: int) -> dict[str, Any]:
    """``initialize``'s params in ``version``'s shape (v2: role-agnostic ``info`` and
    ``capabilities``, and no client file system or terminals: v2 removed them)."""
    info = {"name": "anyagent", "title": "anyagent", "version": __version__}
    if version == translate.V2:
        return {"protocolVersion": version, "info": info, "capabilities": {}}
    return {"protocolVersion": version, "clientCapabilities": CLIENT_CAPABILITIES, "clientInfo": info}


def _no_common_version(listed: Sequence[int] | None) -> ProtocolFailed:
    theirs = ", ".join(str(v) for v in listed) if listed else "none it would name"
    ours = " and ".join(str(v) for v in translate.SPOKEN)
    return ProtocolFailed(f"the agent speaks ACP protocol versions {theirs}; anyagent speaks versions {ours}")


async def _initialize(peer: JsonRpcPeer) -> dict[str, Any]:
    """``initialize`` with version negotiation. Offer v1; an agent that answers -32022 listing v2
    (an ACP SDK agent built for v2 only), or that answers v1's ``initialize`` with version 2, is
    initialized again with v2 (the protocol lets a client repeat ``initialize`` before any other
    request). The result comes back in the v1 shape (``translate.init_from_v2``) with its
    ``protocolVersion``; no version in common fails ``ProtocolFailed`` naming both sides'."""
    try:
        result = j.obj(await peer.request("initialize", _init_params(translate.PROTOCOL_VERSION)))
    except JsonRpcError as exc:
        if exc.code != AcpCode.UNSUPPORTED_VERSION:
            raise ProtocolFailed(f"initialize failed: {exc.message} ({exc.code})") from None
        listed = translate.listed_versions(exc.data)
        if translate.V2 not in listed:
            raise _no_common_version(listed) from None
        return await _initialize_v2(peer)
    version = result.get("protocolVersion")
    if version == translate.PROTOCOL_VERSION:
        return result
    if version == translate.V2:
        return await _initialize_v2(peer)
    raise _no_common_version([version] if isinstance(version, int) and not isinstance(version, bool) else None)


async def _initialize_v2(peer: JsonRpcPeer) -> dict[str, Any]:
    try:
        result = j.obj(await peer.request("initialize", _init_params(translate.V2)))
    except JsonRpcError as exc:
        if exc.code == AcpCode.UNSUPPORTED_VERSION:
            raise _no_common_version(translate.listed_versions(exc.data)) from None
        raise ProtocolFailed(f"initialize (ACP v2) failed: {exc.message} ({exc.code})") from None
    version = result.get("protocolVersion")
    if version != translate.V2:
        raise ProtocolFailed(f"the agent listed ACP version 2 but answered a v2 initialize with version {version!r}")
    if not isinstance(result.get("info"), dict):  # required in v2: a v1 body under version 2
        raise ProtocolFailed("the agent answered ACP version 2 without v2's required `info`: not a v2 initialize")
    return translate.init_from_v2(result)


def _version(init: Mapping[str, Any]) -> int:
    return translate.V2 if init.get("protocolVersion") == translate.V2 else translate.PROTOCOL_VERSION


async def _authenticate(peer: JsonRpcPeer, method_id: str, version: int = translate.PROTOCOL_VERSION) -> None:
    """One bounded ``authenticate`` (v2: ``auth/login``); failures are left for ``session/new``."""
    method = "auth/login" if version == translate.V2 else "authenticate"
    with anyio.move_on_after(AUTHENTICATE_WAIT):
        try:
            await peer.request(method, {"methodId": method_id})
        except JsonRpcError:
            pass


def _setting_set(setting: tuple[str, str] | None, env: Mapping[str, str]) -> bool:
    """Whether the agent's settings file (``~`` = the launch's home) sets the dotted ``key``. Read
    (at most 1 MiB), never written; a missing or unreadable file sets nothing."""
    if setting is None:
        return False
    file, key = setting
    home = env.get("HOME") or env.get("USERPROFILE") or str(Path.home())
    path = Path(home, file[2:]) if file.startswith("~/") else Path(file)
    try:
        with path.open("rb") as handle:
            data = json.loads(handle.read(_SETTINGS_LIMIT))
    except (OSError, ValueError):
        return False
    value: Any = j.obj(data).get(key)
    if value is None:
        value = j.path(data, *key.split("."))
    return value not in (None, "")


def _mcp_servers(
    options: SessionOptions, transports: frozenset[str], version: int = translate.PROTOCOL_VERSION
) -> list[dict[str, Any]]:
    """The caller's MCP servers as ACP entries (v2: stdio ones typed too); a transport the agent
    lacks fails typed."""
    entries: list[dict[str, Any]] = []
    for server in options.mcp_servers:
        if server.transport not in transports:
            raise UnsupportedFeature(
                f"this agent does not take {server.transport} MCP servers ({server.name!r}); "
                f"it takes: {', '.join(sorted(transports))}"
            )
        if isinstance(server, McpStdio):
            env = [{"name": k, "value": v} for k, v in server.env.items()]
            entry = {"name": server.name, "command": server.command, "args": list(server.args), "env": env}
            entries.append({"type": "stdio", **entry} if version == translate.V2 else entry)
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
    Returns the session id, the result, and whether history may have been replayed: content that
    arrives while ``session/load`` or ``session/resume`` is in flight is history, never a live turn."""
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
            # history too: an agent may replay the conversation before it answers (hermes 0.19.0)
            return token, j.obj(await peer.request("session/resume", params)), True
        except JsonRpcError as exc:
            if exc.code != JsonRpcCode.METHOD_NOT_FOUND or not j.flag(agent.get("loadSession")):
                raise _resume_error(exc, login, hints) from None
    if not j.flag(agent.get("loadSession")):
        raise ResumeFailed("this agent cannot load sessions (no loadSession capability)")
    try:
        return token, j.obj(await peer.request("session/load", params)), True
    except JsonRpcError as exc:
        raise _resume_error(exc, login, hints) from None


def _is_auth(exc: JsonRpcError, hints: Sequence[str]) -> bool:
    text = f"{exc.message} {exc.data if exc.data is not None else ''}".lower()
    return exc.code == AcpCode.AUTH_REQUIRED or any(hint.lower() in text for hint in hints)


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


async def _drain(peer: JsonRpcPeer, state: InfoState, quirks: Quirks, early: list[Message], replaying: bool) -> None:
    """Take what arrived during the handshake: apply what only changes session info (so ``open``
    reports it), drop replayed history, keep the rest (content, requests, vendor notifications
    that are not info) for the driver to handle first."""
    while True:
        with anyio.move_on_after(0) as scope:
            try:
                message = await peer.receive()
            except anyio.EndOfStream:
                return
        if scope.cancelled_caught:
            return
        if isinstance(message, Notification):
            params = j.obj(message.params)
            if message.method == "session/update":
                update = j.obj(params.get("update"))
                kind = j.text(update.get("sessionUpdate"), "")
                if kind in INFO_UPDATES:
                    state.apply_update(kind, update)
                    continue
                if replaying and kind != "usage_update":
                    continue
            else:
                hook = quirks.notifications.get(message.method)
                if hook in INFO_HOOKS and state.apply_vendor(hook, params) is not None:
                    continue
        early.append(message)


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
            raise InvalidConfiguration(option.invalid(value))
        value = option.resolve(value)  # a portable mode name as the agent's own id
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
