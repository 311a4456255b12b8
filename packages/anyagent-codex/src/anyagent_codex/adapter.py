"""``CodexAdapter``: launch ``codex app-server``, run the handshake, hand the thread to ``CodexDriver``.

What flows in: a ``ConnectRequest``. What flows out: a connected ``CodexDriver``, or a typed error —
``AuthRequired`` (logged out, with the login methods), ``ResumeFailed`` (an unknown thread),
``UnsupportedFeature`` (an SSE MCP server), ``InvalidConfiguration`` (a setting codex does not
offer), ``ProtocolFailed``, ``SpawnFailed`` / ``ProcessExited``. ``toolkit.launching`` reaps the
process and closes the wire recording on every failure and on cancellation.

Handshake (codex 0.171.0): ``initialize`` (opting into the experimental API) → ``initialized`` →
``account/read`` → ``model/list`` → ``thread/start`` | ``thread/resume`` | ``thread/fork`` →
``skills/list`` (the slash commands; answered after ``open`` returns, reported with an info
update, so its ~25 ms are not part of the open). ``SESSION_ARGS`` turn on the plan tool; client
MCP servers (stdio and streamable HTTP) ride as the thread's ``config`` overrides
(``mcp_servers.<name>.…``), never on argv; a wire recording keeps their env and header values
as ``<redacted>``.

Side calls without a session: ``probe_auth`` (``account/read``) and ``plan_usage``
(``account/rateLimits/read``), each on a short-lived app server.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

import anyio

from anyagent import (
    Account,
    AgentInstallation,
    AgentProfile,
    Authenticated,
    AuthKind,
    AuthRequired,
    AuthStatus,
    InvalidConfiguration,
    LoginMethod,
    McpHttp,
    McpSse,
    McpStdio,
    PlanUsage,
    ProtocolFailed,
    ResumeFailed,
    SessionOptions,
    Unauthenticated,
    UnsupportedFeature,
    seam,
    toolkit,
)
from anyagent import jsonread as j
from anyagent.wire import JsonLines, JsonRpcError, JsonRpcPeer

from ._appserver import CLIENT_INFO, call, initialize, side_server
from .driver import ACCEPTED_REQUESTS, MAX_RETRIES, CodexDriver, Handshaken
from .profile import PROFILE
from .settings import PLAN_MODE, SANDBOXES, Settings, own_mode
from .translate import plan_usage

__all__ = ["CLIENT_INFO", "SESSION_ARGS", "SIDE_CALL_WAIT", "CodexAdapter", "mcp_config", "mcp_secrets"]

"""The `clientInfo` sent in codex's `initialize` request (name, title, this package's version)."""
SESSION_ARGS: tuple[str, ...] = ("-c", "tools.update_plan.enabled=true")
"""What a session's app server is launched with besides the profile's args: codex 0.171.0 offers
its ``update_plan`` tool (whose calls are ``turn/plan/updated``, so ``Plan``) only when asked.
Its ``request_user_input`` tool (``Questions``) works in Plan mode (``mode`` = ``plan``); the
subagent tools (``multi_agent_v1``) are on by default."""
SIDE_CALL_WAIT = 5.0
"""Seconds an optional handshake call (``thread/turns/list``) may take before it is skipped."""


class CodexAdapter(seam.Adapter):
    """The native Codex adapter (wire ``"codex"``)."""

    wire: ClassVar[str] = "codex"
    max_retries: int = MAX_RETRIES
    """Model-API retry notices one turn may see before it is interrupted and ends ``Failed``."""

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        """Spawn ``codex app-server``, handshake, bind the thread (see the module docstring)."""
        options = request.options
        mcp = mcp_config(options)
        login = login_methods(request.installation, request.profile, options)
        async with toolkit.launching(request) as launch:
            if launch.recorder is not None:
                launch.recorder.redact(mcp_secrets(options))
            process = await launch.spawn([*launch.argv, *SESSION_ARGS])
            peer = JsonRpcPeer(JsonLines(process), accepts=ACCEPTED_REQUESTS, jsonrpc_field=False)
            init = await initialize(peer)
            account = j.obj(await call(peer, "account/read", {"refreshToken": False}))
            auth = auth_status(account, login)
            if isinstance(auth, Unauthenticated):
                raise AuthRequired(login, "Codex is not logged in: run `codex login`")
            settings = Settings(models=await _models(peer))
            thread = await _bind_thread(peer, options, mcp)
            settings.adopt_thread(thread)
            _configure_at_open(settings, options)
            skills = peer.new_id()  # answered after open: the driver reports the commands (InfoChanged)
            await peer.send_request("skills/list", {"cwds": [str(options.cwd)]}, request_id=skills)
            return CodexDriver(
                Handshaken(
                    launch=launch,
                    process=process,
                    peer=peer,
                    thread_id=j.text(j.obj(thread.get("thread")).get("id"), ""),
                    version=_version(init),
                    auth=auth,
                    settings=settings,
                    skills_request=skills,
                    login=login,
                    history=_turn_ids(thread),
                    max_retries=self.max_retries,
                )
            )

    async def probe_auth(self, request: seam.ConnectRequest) -> AuthStatus | None:
        """``account/read`` on a short-lived app server: the login without opening a thread."""
        login = login_methods(request.installation, request.profile, request.options)
        async with side_server(request) as peer:
            account = j.obj(await call(peer, "account/read", {"refreshToken": False}))
        return auth_status(account, login)

    async def plan_usage(self, installation: AgentInstallation, profile: AgentProfile | None) -> PlanUsage:
        """``account/rateLimits/read``: the ChatGPT plan's windows. Logged out → ``AuthRequired``;
        an account without plan windows (an API key, another provider) → ``UnsupportedFeature``."""
        import os

        options = SessionOptions.in_dir(os.getcwd())
        request = seam.ConnectRequest(installation, profile, options, "plan-usage", dict(os.environ))
        login = login_methods(installation, profile, options)
        async with side_server(request) as peer:
            account = j.obj(await call(peer, "account/read", {"refreshToken": False}))
            if isinstance(auth_status(account, login), Unauthenticated):
                raise AuthRequired(login, "Codex is not logged in: run `codex login`")
            try:
                result = j.obj(await peer.request("account/rateLimits/read", None))
            except JsonRpcError as exc:
                raise UnsupportedFeature(f"codex reports no plan usage for this account: {exc.message}") from None
        found = plan_usage(result.get("rateLimits"), datetime.now(timezone.utc))
        if found is None:
            raise UnsupportedFeature("codex reports no plan usage windows for this account")
        return found

    async def history(self, request: seam.ConnectRequest, cwd: Path | None) -> seam.HistoryListing:
        """``thread/list`` over a short-lived app-server (``anyagent_codex.history``)."""
        from .history import history

        return await history(request, cwd)


# -- launch


def mcp_config(options: SessionOptions) -> dict[str, Any]:
    """The caller's MCP servers as codex config overrides (``mcp_servers.<name>.<key>`` → value),
    sent as the ``config`` of ``thread/start`` | ``thread/resume`` | ``thread/fork`` — over stdin,
    so env values and header secrets never reach argv, where every local user reads them in
    ``/proc/PID/cmdline``. SSE fails typed."""
    config: dict[str, Any] = {}
    for server in options.mcp_servers:
        if isinstance(server, McpSse):
            raise UnsupportedFeature(f"codex takes stdio and HTTP MCP servers, not SSE ({server.name!r})")
        if not _MCP_NAME.match(server.name):
            raise InvalidConfiguration(
                f"codex takes MCP server names of letters, digits, '_' and '-' only, not {server.name!r}"
            )
        prefix = f"mcp_servers.{server.name}"  # a quoted key would name the server with its quotes
        if isinstance(server, McpStdio):
            config[f"{prefix}.command"] = server.command
            config[f"{prefix}.args"] = list(server.args)
            if server.env:
                config[f"{prefix}.env"] = dict(server.env)
        else:
            assert isinstance(server, McpHttp)
            config[f"{prefix}.url"] = server.url
            if server.headers:
                config[f"{prefix}.http_headers"] = dict(server.headers)
    return config


def mcp_secrets(options: SessionOptions) -> list[str]:
    """The values a wire recording must not keep: every MCP env value and header value."""
    secrets: list[str] = []
    for server in options.mcp_servers:
        if isinstance(server, McpStdio):
            secrets += server.env.values()
        elif isinstance(server, (McpHttp, McpSse)):
            secrets += server.headers.values()
    return [secret for secret in secrets if secret]


_MCP_NAME = re.compile(r"[A-Za-z0-9_-]+\Z")


def login_methods(
    installation: AgentInstallation, profile: AgentProfile | None, options: SessionOptions
) -> tuple[LoginMethod, ...]:
    """Codex's logins (``codex login``), run with this executable and this session's config home."""
    return toolkit.login_methods(installation, profile or PROFILE, options)


def auth_status(account_read: dict[str, Any], login: Sequence[LoginMethod]) -> AuthStatus:
    """An ``account/read`` result as an ``AuthStatus``: a ChatGPT account is a subscription, an
    API key is an API key, no account is logged out unless the provider needs no OpenAI login."""
    account = j.obj(account_read.get("account"))
    kind = j.text(account.get("type"))
    if kind == "chatgpt":
        return Authenticated(
            AuthKind.SUBSCRIPTION, Account(j.nonempty(account.get("email")), j.nonempty(account.get("planType")))
        )
    if kind == "apiKey":
        return Authenticated(AuthKind.API_KEY)
    if kind in ("amazonBedrock", "gcp"):
        return Authenticated(AuthKind.CLOUD_PROVIDER)
    if j.flag(account_read.get("requiresOpenaiAuth")):
        return Unauthenticated(tuple(login))
    return Authenticated(AuthKind.OTHER)  # a provider of its own (env_key): no OpenAI login needed


# -- handshake


def _version(init: dict[str, Any]) -> str | None:
    """``anyagent/0.171.0 (Debian …) …`` → ``0.171.0``."""
    agent = j.text(init.get("userAgent"), "")
    first = agent.split(" ", 1)[0]
    return first.split("/", 1)[1] if "/" in first else None


async def _models(peer: JsonRpcPeer) -> list[dict[str, Any]]:
    try:
        result = j.obj(await peer.request("model/list", {}))
    except JsonRpcError:
        return []
    return [model for model in j.arr(result.get("data")) if isinstance(model, dict)]


def _thread_params(options: SessionOptions, mcp: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"cwd": str(options.cwd)}
    if mcp:
        params["config"] = mcp
    sandbox = options.configuration.get("sandbox")
    if isinstance(sandbox, str) and sandbox in SANDBOXES:
        params["sandbox"] = sandbox
    mode = options.configuration.get("mode")
    if isinstance(mode, str) and own_mode(mode) != PLAN_MODE:  # Plan mode rides the first turn
        params["approvalPolicy"] = own_mode(mode)
    model = options.configuration.get("model")
    if isinstance(model, str):
        params["model"] = model
    return params


async def _bind_thread(peer: JsonRpcPeer, options: SessionOptions, mcp: dict[str, Any]) -> dict[str, Any]:
    """``thread/start``, ``thread/resume`` (turns left out: hydrated by ``thread/turns/list``) or
    ``thread/fork`` (up to and including the turn ``fork_at`` names, or the turn holding the
    message it names: ``_fork_turn``)."""
    params = _thread_params(options, mcp)
    try:
        if options.resume_token is not None:
            result = j.obj(
                await peer.request("thread/resume", {**params, "threadId": options.resume_token, "excludeTurns": True})
            )
            turns = await _turns(peer, options.resume_token)
            return {**result, "anyagent/turns": turns}
        if options.fork_token is not None:
            fork: dict[str, Any] = {**params, "threadId": options.fork_token}
            if options.fork_at is not None:
                fork["lastTurnId"] = await _fork_turn(peer, options.fork_token, options.fork_at)
            result = j.obj(await peer.request("thread/fork", fork))
            thread_id = j.text(j.obj(result.get("thread")).get("id"), "")
            return {**result, "anyagent/turns": await _turns(peer, thread_id) if thread_id else []}
        result = j.obj(await peer.request("thread/start", params))
    except JsonRpcError as exc:
        if options.resume_token is not None or options.fork_token is not None:
            raise ResumeFailed(
                f"codex could not open thread {options.resume_token or options.fork_token}: {exc.message}"
            ) from None
        raise ProtocolFailed(f"codex refused thread/start: {exc.message} ({exc.code})") from None
    if not j.nonempty(j.obj(result.get("thread")).get("id")):
        raise ProtocolFailed("codex answered thread/start without a thread id")
    return result


async def _fork_turn(peer: JsonRpcPeer, thread_id: str, at: str) -> str:
    """The turn ``fork_from(token, at)`` ends at: ``at`` itself when it is a turn id (the
    ``codex/fork_point`` of a ``MessageEnded``), else the turn holding the message ``at`` (a
    ``MessageEnded``/``TextDelta``/``ReasoningDelta``/``UserMessage`` id, as the spec and the store
    pass it; codex's ``lastTurnId`` takes turn ids only). The summary view is read first, every
    item only if that misses. Neither → ``ResumeFailed``; codex too slow to say → ``at`` as is."""
    with anyio.move_on_after(SIDE_CALL_WAIT):
        for view in ("summary", "full"):
            cursor: str | None = None
            for _page in range(50):
                params: dict[str, Any] = {
                    "threadId": thread_id,
                    "sortDirection": "asc",
                    "limit": 100,
                    "itemsView": view,
                }
                if cursor:
                    params["cursor"] = cursor
                page = j.obj(await peer.request("thread/turns/list", params))
                for turn in j.arr(page.get("data")):
                    turn_id = j.nonempty(j.obj(turn).get("id"))
                    if turn_id is not None and (
                        turn_id == at or any(j.obj(item).get("id") == at for item in j.arr(j.obj(turn).get("items")))
                    ):
                        return turn_id
                cursor = j.nonempty(page.get("nextCursor"))
                if cursor is None:
                    break
        raise ResumeFailed(f"codex thread {thread_id} has no turn or message {at!r} to fork at")
    return at


async def _turns(peer: JsonRpcPeer, thread_id: str) -> list[str]:
    """The thread's completed turn ids, oldest first (for rollback); empty when codex will not say."""
    ids: list[str] = []
    cursor: str | None = None
    with anyio.move_on_after(SIDE_CALL_WAIT):
        for _page in range(50):
            params: dict[str, Any] = {"threadId": thread_id, "sortDirection": "asc", "limit": 100}
            if cursor:
                params["cursor"] = cursor
            try:
                page = j.obj(await peer.request("thread/turns/list", params))
            except JsonRpcError:
                return ids
            ids += [
                turn_id
                for turn in j.arr(page.get("data"))
                if (turn_id := j.nonempty(j.obj(turn).get("id"))) and j.obj(turn).get("status") == "completed"
            ]
            cursor = j.nonempty(page.get("nextCursor"))
            if cursor is None:
                break
    return ids


def _turn_ids(thread: dict[str, Any]) -> list[str]:
    return [turn for turn in j.arr(thread.get("anyagent/turns")) if isinstance(turn, str)]


def _configure_at_open(settings: Settings, options: SessionOptions) -> None:
    """``SessionOptions.configure`` values: validated against what codex offers, then taken."""
    for option_id, value in options.configuration.items():
        option = settings.option(option_id)
        if option is None:
            offered = ", ".join(o.id for o in settings.options())
            raise InvalidConfiguration(f"codex has no config option {option_id!r} (offered: {offered})")
        if not option.accepts(value):
            raise InvalidConfiguration(option.invalid(value))
        if option.current != value:
            settings.set(option_id, value)
