"""``Runtime``: the catalog, discovery, one adapter per wire, and the task group that runs sessions."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import attrs
from anyio.abc import TaskGroup

from . import _log, seam
from ._engine import CLOSE_GRACE, _Engine
from .errors import (
    AgentError,
    AuthRequired,
    HandshakeTimeout,
    InvalidConfiguration,
    InvalidRequest,
    ProtocolFailed,
    ResumeFailed,
    UnsupportedFeature,
)
from .installation import AgentInstallation, AgentProfile, DiscoveryReport
from .options import PermissionMode, SessionOptions, session_env
from .session import Events, Session
from .types import (
    AgentDetails,
    Answer,
    AuthStatus,
    Capability,
    DiagnosticInfo,
    Failed,
    HistoryEntry,
    PermissionChoice,
    PermissionRequest,
    PlanUsage,
    PlanUsageEntry,
    QuestionRequest,
    Refused,
    RequestOpened,
    TextDelta,
    ToolStatus,
    ToolUpdated,
    TurnEnded,
    Unauthenticated,
)

if TYPE_CHECKING:
    from ._discovery import Discovery
    from ._plugins import PluginInfo, Registry

__all__ = ["Runtime"]


LAUNCH_QUEUED_NOTE = 0.5
"""Seconds a session may wait for a launch slot before its ``launch_queued`` diagnostic says so."""


def default_launch_limit() -> int:
    """Agents a ``Runtime`` launches at once by default: twice the CPUs this process may use, at least 2."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(2, 2 * cpus)


class Runtime:
    """The entry point: discover agents, open sessions, one-off calls.

    ``async with Runtime() as runtime:`` owns the task group that runs the session engines;
    leaving it closes every open session (bounded). ``Runtime(plugins=[...])`` loads exactly those
    plugins instead of scanning the ``anyagent`` entry points: plugin modules or objects, or
    adapter packages (``Runtime(plugins=[anyagent_claude])`` loads the package's plugin). A given
    plugin that registers nothing raises ``InvalidConfiguration`` naming it, from the first call
    that needs the plugins (``registry``, ``discover``, ``open``, ...).

    ``launch_limit``: at most this many agents launch (spawn and handshake) at once; the other
    ``open`` calls wait their turn, and the ``HANDSHAKE_TIMEOUT`` clock starts only when a session's
    launch does (a burst of opens is paced instead of timing out while the CPU is the queue). A
    session that waited gets a ``launch_queued`` diagnostic as its first event. None (the default):
    twice the CPUs this process may use, at least 2 (``Runtime.launch_limit`` says which).
    """

    def __init__(
        self,
        plugins: Sequence[object] | None = None,
        *,
        launch_limit: int | None = None,
        _builtins: Sequence[object] | None = None,
    ) -> None:
        if plugins is not None and (isinstance(plugins, (str, bytes)) or not isinstance(plugins, Sequence)):
            raise InvalidRequest("plugins must be a list of plugin modules or objects")
        if launch_limit is not None and (
            isinstance(launch_limit, bool) or not isinstance(launch_limit, int) or launch_limit < 1
        ):
            raise InvalidRequest(f"launch_limit must be a positive int or None, got {launch_limit!r}")
        self.launch_limit = launch_limit if launch_limit is not None else default_launch_limit()
        self._launches: anyio.CapacityLimiter | None = None
        self._plugin_list = list(plugins) if plugins is not None else None
        self._builtins = _builtins
        self._registry: Registry | None = None
        self._scanner: Discovery | None = None
        self._tg: TaskGroup | None = None
        self._engines: set[_Engine] = set()
        self._session_counter = 0
        self._entered = False

    @classmethod
    def with_mock(cls, script: Any = None) -> Runtime:
        """A runtime whose only agent is ``"mock"``, playing ``script`` (an ``anyagent.mock.Script``)."""
        from ._builtin import MockPlugin
        from .mock import Script

        return cls(plugins=[], _builtins=[MockPlugin(script if script is not None else Script())])

    # -----------------------------------------------------------------------------------------
    # lifecycle

    async def __aenter__(self) -> Runtime:
        if self._entered:
            raise InvalidRequest("this Runtime is already running")
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        self._launches = anyio.CapacityLimiter(self.launch_limit)
        self._entered = True
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        tg = self._tg
        assert tg is not None
        with anyio.CancelScope(shield=True):
            await self._close_all()
        self._tg = None
        # every engine has finished (or is cancelled here); the caller's own exception, if any,
        # propagates as itself rather than wrapped in an exception group
        tg.cancel_scope.cancel()
        await tg.__aexit__(None, None, None)
        return None

    async def _close_all(self) -> None:
        with anyio.move_on_after(CLOSE_GRACE + 2):
            async with anyio.create_task_group() as tg:
                for engine in list(self._engines):
                    tg.start_soon(engine.close)

    # -----------------------------------------------------------------------------------------
    # catalog

    def registry(self) -> Registry:
        """Every adapter and profile the plugins registered (loaded on first use)."""
        if self._registry is None:
            from ._plugins import load_registry  # pluggy and importlib.metadata: only when plugins load

            self._registry = load_registry(self._plugin_list, self._builtins)
        return self._registry

    @property
    def _discovery(self) -> Discovery:
        if self._scanner is None:
            from ._discovery import Discovery  # subprocess, secrets, selectors: only when discovering

            self._scanner = Discovery()
        return self._scanner

    def plugins(self) -> list[PluginInfo]:
        """The loaded plugins, their distributions, versions, wires and profiles."""
        from ._plugins import describe

        return describe(self.registry())

    def profiles(self) -> list[AgentProfile]:
        """The catalog: every registered agent profile, in registration order."""
        return list(self.registry().profiles.values())

    def prewarm(self) -> None:
        """Start the slow parts of discovery early (never launches an agent)."""
        self.registry()
        self._discovery.prewarm()

    async def discover(self) -> DiscoveryReport:
        """Instant, read-only scan: installed agents plus missing ones with install hints.

        Native adapters are listed before ACP bridges (a native ``codex`` before ``codex-acp``), so
        the first entry for an agent is the richer wire; otherwise in registration order."""
        registry = self.registry()
        profiles = sorted(registry.profiles.values(), key=lambda profile: profile.wire == "acp")
        report = await self._discovery.scan(profiles)
        if registry.diagnostics:
            report = attrs.evolve(report, diagnostics=(*registry.diagnostics, *report.diagnostics))
        return report

    # -----------------------------------------------------------------------------------------
    # sessions

    def _resolve(self, agent: AgentInstallation) -> tuple[AgentProfile | None, seam.AdapterFactory]:
        if not isinstance(agent, AgentInstallation):
            raise InvalidRequest(f"expected an AgentInstallation, got {type(agent).__name__}")
        registry = self.registry()
        profile = registry.profiles.get(agent.id)
        wire = agent.wire or (profile.wire if profile is not None else None)
        if profile is not None and agent.wire is not None and profile.wire != agent.wire:
            upgrade = profile.upgrade
            profile = upgrade if upgrade is not None and upgrade.wire == agent.wire else None
        if wire is None:
            raise InvalidConfiguration(
                f"no catalog profile for agent {agent.id!r}; use AgentInstallation.acp(...) for a custom ACP agent"
            )
        factory = registry.adapters.get(wire)
        if factory is None:
            raise InvalidConfiguration(
                f"no adapter speaks the {wire!r} wire; install the package that provides it (anyagent-{wire})"
            )
        return profile, factory

    def _env(self, profile: AgentProfile | None, options: SessionOptions) -> dict[str, str]:
        """The agent's environment: the host's, filtered by the options' credential policy and
        ``env_allow``/``env_deny``, then ``set_env`` and the config-home variable. The adapter launches
        the agent with it, ACP terminals run with it, and so everything the agent spawns inherits it."""
        others: list[str] = []
        for catalog in self.registry().profiles.values():
            for entry in (catalog, catalog.upgrade):
                if entry is not None:
                    others.extend(entry.own_credential_env)
                    if entry.config_home_env:
                        others.append(entry.config_home_env)
        env = session_env(
            os.environ,
            options,
            own=profile.own_credential_env if profile is not None else (),
            home=profile.config_home_env if profile is not None else None,
            others=others,
        )
        if options.config_home_dir is not None:
            var = profile.config_home_env if profile is not None else None
            if var is None:
                raise InvalidConfiguration(
                    "this agent has no config-home variable, so config_home cannot keep its login apart"
                )
            env[var] = str(options.config_home_dir)
        return env

    async def open(self, agent: AgentInstallation, options: SessionOptions) -> tuple[Session, Events]:
        """Spawn the agent, handshake, and return the two halves of a session.

        Raises ``AuthRequired`` when logged out, ``HandshakeTimeout`` after 30 s,
        ``ResumeFailed`` for a bad token, ``InvalidConfiguration`` for options it cannot honour.
        """
        if self._tg is None:
            raise InvalidRequest("open needs a running runtime: `async with Runtime() as runtime:`")
        log = _log.enabled("anyagent.runtime", _log.INFO)
        if log is not None:
            log.info("opening %s (%s) in %s", agent.id, agent.executable_path, options.cwd)
        try:
            engine = await self._connect(agent, options)
        except AgentError as exc:
            if log is not None:
                log.info("opening %s failed: %s: %s", agent.id, type(exc).__name__, _log.redact_text(exc.message))
            raise
        self._engines.add(engine)
        try:
            await self._tg.start(self._run_engine, engine)
        except BaseException:
            self._engines.discard(engine)
            raise
        session = Session(engine)
        if log is not None:
            info = session.info()
            log.info("opened session %s on %s %s", info.session_id, agent.id, info.details.version or "")
        return session, Events(engine)

    async def _run_engine(self, engine: _Engine, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        try:
            await engine.run(task_status=task_status)
        finally:
            self._engines.discard(engine)
            log = _log.enabled("anyagent.runtime", _log.INFO)
            if log is not None:
                log.info("session %s closed", engine.session_id)

    async def _connect(self, agent: AgentInstallation, options: SessionOptions) -> _Engine:
        if not isinstance(options, SessionOptions):
            raise InvalidRequest(f"expected SessionOptions, got {type(options).__name__}")
        profile, factory = self._resolve(agent)
        env = self._env(profile, options)
        self._session_counter += 1
        session_id = f"s{self._session_counter}"
        request = seam.ConnectRequest(agent, profile, options, session_id, env)
        adapter = factory()
        launches = self._launches
        if launches is None:  # outside ``async with`` (probe from a bare loop): paced by a limiter of its own
            launches = self._launches = anyio.CapacityLimiter(self.launch_limit)
        queued_at = anyio.current_time()
        async with launches:
            waited = anyio.current_time() - queued_at  # the handshake clock starts with the launch
            try:
                with anyio.fail_after(seam.HANDSHAKE_TIMEOUT):
                    driver = await adapter.connect(request)
            except TimeoutError:
                raise HandshakeTimeout(
                    f"{agent.name} did not finish launching and its handshake within {seam.HANDSHAKE_TIMEOUT:g} s"
                ) from None
        try:
            _check_connected(driver.info, options)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await driver.aclose()
            raise
        engine = _Engine(session_id, agent, options, driver)
        if waited >= LAUNCH_QUEUED_NOTE:
            engine.note_launch_wait(waited, self.launch_limit)
        return engine

    @asynccontextmanager
    async def _throwaway(
        self, agent: AgentInstallation, options: SessionOptions
    ) -> AsyncIterator[tuple[Session, Events]]:
        engine = await self._connect(agent, options)
        async with _owned_task_group() as tg:
            await tg.start(engine.run)
            session, events = Session(engine), Events(engine)
            try:
                yield session, events
            finally:
                await session.close()

    async def probe(self, agent: AgentInstallation) -> AgentDetails:
        """Open a throwaway session (tools off) to learn version, login, capabilities, options, commands.

        A logged-out agent is not an error here: its details say ``Unauthenticated(login)``.
        """
        options = SessionOptions.in_dir(os.getcwd()).without_tools()
        try:
            async with self._throwaway(agent, options) as (session, _events):
                return session.info().details
        except AuthRequired as exc:
            return AgentDetails(auth=Unauthenticated(exc.login))

    async def probe_auth(self, agent: AgentInstallation) -> AuthStatus:
        """The login state, by the adapter's cheaper check when it has one, else by ``probe``."""
        profile, factory = self._resolve(agent)
        options = SessionOptions.in_dir(os.getcwd()).without_tools()
        request = seam.ConnectRequest(agent, profile, options, "probe", self._env(profile, options))
        with anyio.fail_after(seam.HANDSHAKE_TIMEOUT):
            status = await factory().probe_auth(request)
        if status is not None:
            return status
        return (await self.probe(agent)).auth

    async def generate(self, agent: AgentInstallation, options: SessionOptions, prompt: str) -> str:
        """One-shot text: open, prompt, decline tools, collect the text, close.

        Needs a new session (``resume``/``fork_from`` are rejected) and either a wire that can
        launch without tools or ``Capability.PERMISSIONS`` (every permission is declined).
        A tool that runs or a question that needs a choice cancels generation with ``UnsupportedFeature``.
        """
        if not isinstance(options, SessionOptions):
            raise InvalidRequest(f"expected SessionOptions, got {type(options).__name__}")
        if not isinstance(prompt, str):
            raise InvalidRequest("generate takes a str prompt")
        if options.resume_token is not None or options.fork_token is not None:
            raise InvalidConfiguration("generate needs a new session; drop resume/fork_from")
        options = attrs.evolve(options.without_tools(), permissions=PermissionMode.ASK)
        async with self._throwaway(agent, options) as (session, events):
            info = session.info()
            if (
                not info.details.capabilities.supports(Capability.PERMISSIONS)
                and not session._engine.driver_info.tools_disabled
            ):
                raise UnsupportedFeature(f"{agent.name} can neither launch without tools nor ask permission")
            await session.prompt(prompt)
            parts: list[str] = []
            async for event in events:
                kind = event.kind
                nested = event.turn_info is not None and event.turn_info.parent_tool_id is not None
                if isinstance(kind, TextDelta) and not nested:
                    parts.append(kind.text)
                elif isinstance(kind, RequestOpened):
                    request = kind.request
                    if isinstance(request, PermissionRequest):
                        deny = next(
                            (
                                c
                                for c in (PermissionChoice.DENY_ONCE, PermissionChoice.DENY_ALWAYS)
                                if c in request.options
                            ),
                            None,
                        )
                        if deny is not None:
                            await session.answer(request.id, Answer.permission(deny))
                            continue
                    assert isinstance(request, (PermissionRequest, QuestionRequest))
                    await session.cancel(clear_queue=True)
                    raise UnsupportedFeature(
                        "generation stopped: the agent asked for something only a person can answer"
                    )
                elif isinstance(kind, ToolUpdated) and kind.tool.status in (ToolStatus.RUNNING, ToolStatus.COMPLETED):
                    await session.cancel(clear_queue=True)
                    raise UnsupportedFeature("generation stopped: the agent started a tool")
                elif isinstance(kind, TurnEnded):
                    if isinstance(kind.stop, Failed):
                        raise ProtocolFailed(f"generation failed: {kind.stop.message}")
                    if isinstance(kind.stop, Refused):
                        raise ProtocolFailed("generation failed: the agent refused")
                    break
            return "".join(parts)

    async def plan_usage(self, agent: AgentInstallation) -> PlanUsage:
        """The account's subscription quota, from the agent itself (``UnsupportedFeature`` if it has none)."""
        profile, factory = self._resolve(agent)
        with anyio.fail_after(seam.HANDSHAKE_TIMEOUT):
            return await factory().plan_usage(agent, profile)

    async def history(
        self,
        agent: AgentInstallation | str,
        cwd: str | os.PathLike[str] | None = None,
        *,
        on_diagnostic: Callable[[DiagnosticInfo], object] | None = None,
    ) -> list[HistoryEntry]:
        """The conversations ``agent`` keeps itself, newest first: title, times, resume token.

        ``agent`` is an installation or a catalog id (found by ``discover``; ``NotInstalled`` when
        absent). ``cwd`` limits the list to conversations run in that directory; None lists every
        directory the agent keeps. Each entry's ``resume_token`` continues it through
        ``SessionOptions.resume``. Raises ``UnsupportedFeature`` when the agent keeps no history it
        exposes. Never starts a turn; an agent whose history is asked over its wire is launched
        and shut down again (bounded by ``HANDSHAKE_TIMEOUT``, else ``HandshakeTimeout``). A
        conversation that cannot be read (a corrupt or foreign file) is skipped and reported to
        ``on_diagnostic``.
        """
        if isinstance(agent, str):
            agent = (await self.discover()).require(agent)
        if cwd is not None and not isinstance(cwd, (str, os.PathLike)):
            raise InvalidRequest(f"cwd must be a path, got {type(cwd).__name__}")
        where = Path(await anyio.to_thread.run_sync(os.path.realpath, os.fspath(cwd))) if cwd is not None else None
        profile, factory = self._resolve(agent)
        options = SessionOptions.in_dir(where if where is not None else os.getcwd()).without_tools()
        request = seam.ConnectRequest(agent, profile, options, "history", self._env(profile, options))
        try:
            with anyio.fail_after(seam.HANDSHAKE_TIMEOUT):
                listing = await factory().history(request, where)
        except TimeoutError:
            raise HandshakeTimeout(
                f"{agent.name} did not list its history within {seam.HANDSHAKE_TIMEOUT:g} s"
            ) from None
        if on_diagnostic is not None:
            for diagnostic in listing.diagnostics:
                on_diagnostic(diagnostic)
        entries = [
            attrs.evolve(entry, agent_id=agent.id) if entry.agent_id != agent.id else entry for entry in listing.entries
        ]
        entries.sort(key=_last_activity, reverse=True)  # stable: ties keep the adapter's order
        return entries

    async def plan_usage_all(self) -> list[PlanUsageEntry]:
        """``plan_usage`` for every installed agent, concurrently; failures become ``error`` entries."""
        report = await self.discover()
        results: dict[int, PlanUsageEntry] = {}

        async def one(index: int, agent: AgentInstallation) -> None:
            try:
                results[index] = PlanUsageEntry(agent, await self.plan_usage(agent))
            except AgentError as exc:
                results[index] = PlanUsageEntry(agent, error=f"{type(exc).__name__}: {exc.message}")
            except TimeoutError:
                results[index] = PlanUsageEntry(agent, error="HandshakeTimeout: no answer in time")

        async with anyio.create_task_group() as tg:
            for index, agent in enumerate(report.agents):
                tg.start_soon(one, index, agent)
        return [results[i] for i in sorted(results)]


@asynccontextmanager
async def _owned_task_group() -> AsyncIterator[TaskGroup]:
    """A task group whose children belong to the caller: cancelled at exit, and the body's own
    exception propagates as itself instead of wrapped in an exception group."""
    tg = anyio.create_task_group()
    await tg.__aenter__()
    try:
        yield tg
    finally:
        tg.cancel_scope.cancel()
        await tg.__aexit__(None, None, None)


_OLDEST = datetime.min.replace(tzinfo=timezone.utc)


def _last_activity(entry: HistoryEntry) -> datetime:
    return entry.last_activity or _OLDEST


def _check_connected(info: seam.DriverInfo, options: SessionOptions) -> None:
    """Refuse options the connection cannot honour, before the session starts."""
    details = info.details
    caps = details.capabilities
    if options.resume_token is not None and not caps.supports(Capability.RESUME):
        raise ResumeFailed("this agent cannot resume sessions")
    if options.fork_token is not None and not caps.supports(Capability.FORK):
        raise UnsupportedFeature("this agent cannot fork sessions")
    for server in options.mcp_servers:
        if server.transport not in caps.mcp_transports:
            raise UnsupportedFeature(f"this agent does not take {server.transport} MCP servers ({server.name!r})")
    for option_id, value in options.configuration.items():
        option = details.option(option_id)
        if option is None:
            offered = ", ".join(o.id for o in details.config_options) or "none"
            raise InvalidConfiguration(f"the agent has no config option {option_id!r} (offered: {offered})")
        if not option.accepts(value):
            raise InvalidConfiguration(option.invalid(value))
