"""RayRuntime: anyagent sessions hosted in Ray actors, driven from an anyio program."""

from __future__ import annotations

import functools
import math
import os
import pickle
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import anyio
import anyio.to_thread
import attrs
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

import anyagent

__all__ = [
    "ACTOR_PREFIX",
    "BATCH",
    "LOAD_TTL",
    "MEMORY_FULL",
    "NodeLoad",
    "NodeLost",
    "RayEvents",
    "RayRuntime",
    "RaySession",
    "pick",
]

ACTOR_PREFIX = "anyagent-session-"
"""Every session actor is a named Ray actor, ``ACTOR_PREFIX`` + a random hex id (``RaySession.actor_name``), so
``ray.util.list_named_actors(all_namespaces=True)`` or ``ray list actors`` shows which sessions are alive."""

BATCH = 256
"""The most events one pull from an actor carries (the actor's own buffer is the in-process bound)."""

_COMMANDS = frozenset({"prompt", "dequeue", "answer", "configure", "rollback", "compact", "cancel"})
_QUEUE = 1024  # the same lag bound as in-process: past it the pump stops reading and the session's own bound applies


class NodeLost(anyagent.AgentError):
    """The Ray actor hosting a session, or its node, died; ``node_id`` names the node."""

    def __init__(self, node_id: str, message: str) -> None:
        super().__init__(message)
        self.node_id = node_id


def _default_factory() -> anyagent.Runtime:
    return anyagent.Runtime()


_Wire = tuple[tuple[tuple[str, str], ...], str, dict[str, Any]]
"""An ``AgentError`` as it crosses Ray: its class and its ``AgentError`` bases as (module, qualname), most
specific first; its message; its fields (the instance attributes that pickle)."""


def _encode(exc: anyagent.AgentError) -> _Wire:
    classes = tuple(
        (c.__module__, c.__qualname__)
        for c in type(exc).__mro__
        if isinstance(c, type) and issubclass(c, anyagent.AgentError)
    )
    fields: dict[str, Any] = {}
    for name, value in vars(exc).items():
        try:
            pickle.dumps(value)
        except Exception:  # a field that cannot cross is dropped, the error still does
            continue
        fields[name] = value
    return classes, exc.message, fields


def _class(module: str, qualname: str) -> type[anyagent.AgentError] | None:
    found: Any = sys.modules.get(module)  # only a class the driver has imported: never an import by name
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if isinstance(found, type) and issubclass(found, anyagent.AgentError):
        return found
    return None


def _decode(wire: _Wire) -> anyagent.AgentError:
    """The error back, as the most specific of its classes the driver knows, with every field it carried."""
    classes, message, fields = wire
    cls: type[anyagent.AgentError] = anyagent.AgentError
    for module, qualname in classes:
        known = _class(module, qualname)
        if known is not None:
            cls = known
            break
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    exc.__dict__.update(fields)
    exc.message = message
    return exc


def _failure(message: str) -> _Wire:
    return _encode(anyagent.AgentError(message))


LOAD_TTL = 5.0
"""Seconds placement reuses the nodes' measured load before it measures again."""

MEMORY_FULL = 0.9
"""A node using this fraction of its memory or more gets no session while another node has room."""


@attrs.frozen
class _Measure:
    resources: Mapping[str, float]
    cpu_busy: float
    memory_used: float


@attrs.frozen
class NodeLoad:
    """One node as placement sees it: this runtime's ``sessions`` there; the node's Ray ``cpus``, ``memory``
    (bytes) and all its Ray ``resources`` (``ray.nodes()``); its ``cpu_busy`` (1-minute load average per CPU)
    and ``memory_used`` (fraction) measured on the node when placement last looked (``LOAD_TTL``)."""

    node_id: str
    sessions: int
    cpus: float
    memory: float
    cpu_busy: float
    memory_used: float
    resources: Mapping[str, float]

    @property
    def pressure(self) -> float:
        """Sessions per Ray CPU, plus the CPU load per CPU, plus the memory fraction in use: lower is emptier."""
        return self.sessions / max(self.cpus, 1.0) + self.cpu_busy + self.memory_used

    def fits(self, wanted: Mapping[str, float]) -> bool:
        """The node declares at least ``wanted`` of each Ray resource (its total, not what is free now)."""
        return all(self.resources.get(name, 0.0) >= amount for name, amount in wanted.items())


def pick(loads: Sequence[NodeLoad]) -> str:
    """The node placement takes among ``loads``: the lowest ``pressure``, skipping nodes at ``MEMORY_FULL``
    or more while another is below it; ties go to the first."""
    if not loads:
        raise anyagent.InvalidRequest("no node to pick from")
    roomy = [load for load in loads if load.memory_used < MEMORY_FULL] or list(loads)
    return min(roomy, key=lambda load: load.pressure).node_id


class _Host:
    """The actor: one anyagent Runtime and one session, held open by ``run`` for the session's life."""

    def __init__(self, factory: Callable[[], anyagent.Runtime]) -> None:
        self._factory = factory
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._session: anyagent.Session | None = None
        self._failure: _Wire | None = None
        self._send, self._receive = anyio.create_memory_object_stream[Any](_QUEUE)

    def node(self) -> str:
        return str(ray.get_runtime_context().get_node_id())

    async def run(self, agent_id: str, options: anyagent.SessionOptions) -> None:
        try:
            async with self._factory() as runtime:
                report = await runtime.discover()
                session, events = await runtime.open(report.require(agent_id), options)
                self._session = session
                self._ready.set()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._pump, events)
                    await self._stop.wait()
                    await session.close()
                    tg.cancel_scope.cancel()
        except anyagent.AgentError as exc:
            self._failure = _encode(exc)
        finally:
            self._ready.set()
            self._send.close()

    async def _pump(self, events: anyagent.Events) -> None:
        try:
            async for event in events:
                await self._send.send(event)
        except anyagent.AgentError as exc:
            await self._send.send(_encode(exc))
        finally:
            self._send.close()

    async def opened(self) -> tuple[anyagent.SessionInfo | None, _Wire | None, str]:
        await self._ready.wait()
        info = self._session.info() if self._session is not None else None
        return info, self._failure, self.node()

    async def command(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[bool, Any]:
        if name not in _COMMANDS or self._session is None:
            return False, _encode(anyagent.InvalidRequest(f"no such session command {name!r}"))
        try:
            return True, await getattr(self._session, name)(*args, **kwargs)
        except anyagent.AgentError as exc:
            return False, _encode(exc)

    async def pull(self, most: int) -> list[Any] | None:
        """Up to ``most`` events (waits for the first); None at the end of the stream."""
        try:
            batch = [await self._receive.receive()]
        except anyio.EndOfStream:
            return None
        while len(batch) < most:
            try:
                batch.append(self._receive.receive_nowait())
            except (anyio.WouldBlock, anyio.EndOfStream):
                break
        return batch

    async def close(self) -> None:
        self._stop.set()


_RemoteHost: Any = ray.remote(num_cpus=0, max_restarts=0)(_Host)
_GONE = 10.0  # seconds close waits for the GCS to report the killed actor gone


def _wait_gone(name: str) -> None:
    while True:
        try:
            ray.get_actor(name)
        except ValueError:
            return
        time.sleep(0.1)


@attrs.define(eq=False)
class RaySession:
    """The driver's handle on a session hosted in a Ray actor; the methods of ``anyagent.Session``."""

    _runtime: RayRuntime
    _actor: Any
    _run: Any
    node_id: str
    """The Ray node the session runs on."""
    _info: anyagent.SessionInfo
    actor_name: str
    """The session actor's Ray name (``ACTOR_PREFIX`` + a hex id)."""

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        ok, value = await self._runtime._get(self._actor.command.remote(name, args, kwargs), self.node_id)
        if not ok:
            raise _decode(value)
        return value

    async def prompt(self, prompt: Any) -> anyagent.Delivery:
        """Send a prompt (text or ``Input``); see ``Session.prompt``."""
        delivery: anyagent.Delivery = await self._call("prompt", prompt)
        return delivery

    async def dequeue(self, prompt_id: str) -> Any:
        """Withdraw a queued prompt; see ``Session.dequeue``."""
        return await self._call("dequeue", prompt_id)

    async def answer(self, request_id: str, answer: anyagent.Answer) -> Any:
        """Answer a permission or question request; see ``Session.answer``."""
        return await self._call("answer", request_id, answer)

    async def configure(self, option_id: str, value: Any) -> Any:
        """Change a config option; see ``Session.configure``."""
        return await self._call("configure", option_id, value)

    async def rollback(self, turns: int, scope: anyagent.RollbackScope) -> Any:
        """Roll back turns; see ``Session.rollback``."""
        return await self._call("rollback", turns, scope)

    async def compact(self) -> Any:
        """Compact the context; see ``Session.compact``."""
        return await self._call("compact")

    async def cancel(self, clear_queue: bool = False) -> Any:
        """Cancel the running turn; see ``Session.cancel``."""
        return await self._call("cancel", clear_queue=clear_queue)

    def info(self) -> anyagent.SessionInfo:
        """The session's info as of open."""
        return self._info

    async def close(self) -> None:
        """Close the session on its node, reap the agent and end the actor."""
        try:
            await self._runtime._get(self._actor.close.remote(), self.node_id)
            await self._runtime._get(self._run, self.node_id)
        except NodeLost:
            pass
        finally:
            ray.kill(self._actor, no_restart=True)
            with anyio.move_on_after(_GONE):  # ray.kill only asks the GCS: wait until it says the actor is gone
                await anyio.to_thread.run_sync(_wait_gone, self.actor_name, abandon_on_cancel=True)
            if self in self._runtime._sessions:
                self._runtime._sessions.discard(self)
                self._runtime._release(self.node_id)

    async def __aenter__(self) -> RaySession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        with anyio.CancelScope(shield=True):
            await self.close()


class RayEvents:
    """The ordered events of a remote session, pulled in batches of at most ``BATCH``; one consumer.

    If the actor or its node dies, a running turn ends with ``TurnEnded(Failed)`` and iteration then
    raises ``NodeLost`` naming the node.
    """

    def __init__(self, runtime: RayRuntime, actor: Any, node_id: str, session_id: str) -> None:
        self._runtime = runtime
        self._actor = actor
        self._node_id = node_id
        self._session_id = session_id
        self._batch: list[Any] = []
        self._at = 0
        self._done = False
        self._pending: BaseException | None = None
        self._sequence = 0
        self._turn: anyagent.TurnInfo | None = None

    def __aiter__(self) -> RayEvents:
        return self

    async def __anext__(self) -> anyagent.Event:
        while self._at >= len(self._batch):
            if self._pending is not None:
                exc, self._pending = self._pending, None
                raise exc
            if self._done:
                raise StopAsyncIteration
            try:
                batch = await self._runtime._get(self._actor.pull.remote(BATCH), self._node_id)
            except NodeLost as exc:
                self._done = True
                if self._turn is None:
                    raise
                self._pending = exc
                failed = anyagent.Event(
                    sequence=self._sequence + 1,
                    occurred_at=datetime.now(timezone.utc),
                    session_id=self._session_id,
                    kind=anyagent.TurnEnded(anyagent.Failed(exc.message)),
                    turn_info=self._turn,
                )
                batch = [failed]
            if batch is None:
                self._done = True
                raise StopAsyncIteration
            self._batch, self._at = batch, 0
        item = self._batch[self._at]
        self._at += 1
        if isinstance(item, tuple):
            self._done = True
            self._batch = []
            raise _decode(item)
        event: anyagent.Event = item
        self._sequence = event.sequence
        if isinstance(event.kind, anyagent.TurnEnded):
            self._turn = None
        elif event.turn_info is not None:
            self._turn = event.turn_info
        return event


class RayRuntime:
    """The ``Runtime`` API over a Ray cluster: each session lives in a Ray actor on a node that has its agent.

    ``address`` is passed to ``ray.init`` (None: the cluster in ``RAY_ADDRESS`` or a local one) unless Ray is
    already initialised. ``runtime`` builds the ``anyagent.Runtime`` inside each actor (a picklable callable;
    default ``anyagent.Runtime()``, e.g. ``functools.partial(anyagent.Runtime.with_mock, script)``).
    ``runtime_env`` is the Ray runtime environment of the session actors and the discovery tasks (e.g.
    ``{"env_vars": {"ANYAGENT_CLAUDE_BIN": "/opt/claude/bin/claude"}}`` to point every node at one binary).
    ``per_node``: at most this many of this runtime's sessions on one node (None: no limit); an ``open`` that
    finds every node having the agent full waits for a session to close.

    Placement: among the nodes that have the agent (and the ``resources`` asked for, and room under
    ``per_node``), the one with the lowest ``NodeLoad.pressure`` - this runtime's sessions there per Ray CPU of
    the node, plus the node's measured CPU load and memory use; a node using ``MEMORY_FULL`` of its memory or
    more is skipped while another has room. ``loads()`` shows what placement sees.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        runtime: Callable[[], anyagent.Runtime] = _default_factory,
        init: dict[str, Any] | None = None,
        runtime_env: dict[str, Any] | None = None,
        per_node: int | None = None,
    ) -> None:
        _check_limit(per_node)
        self._address = address
        self._factory = runtime
        self._init = dict(init or {})
        self._env: dict[str, Any] = {"runtime_env": dict(runtime_env)} if runtime_env else {}
        self._sessions: set[RaySession] = set()
        self._owns_ray = False
        self._per_node = per_node
        self._load: dict[str, int] = {}
        self._reports: dict[str, anyagent.DiscoveryReport] | None = None
        self._measured: dict[str, _Measure] = {}
        self._measured_at = -math.inf
        self._discovering = anyio.Lock()
        self._left: anyio.Event | None = None

    async def __aenter__(self) -> RayRuntime:
        if not ray.is_initialized():
            init = functools.partial(ray.init, address=self._address, **self._init)
            await anyio.to_thread.run_sync(init)
            self._owns_ray = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        with anyio.CancelScope(shield=True):
            for session in list(self._sessions):
                await session.close()
            if self._owns_ray:
                await anyio.to_thread.run_sync(ray.shutdown)

    async def _get(self, ref: Any, node_id: str) -> Any:
        try:
            return await anyio.to_thread.run_sync(ray.get, ref, abandon_on_cancel=True)
        except (ray.exceptions.RayActorError, ray.exceptions.ActorDiedError) as exc:
            raise NodeLost(node_id, f"the Ray actor on node {node_id} died: {type(exc).__name__}") from None
        except ray.exceptions.NodeDiedError:
            raise NodeLost(node_id, f"the Ray node {node_id} died") from None

    def nodes(self) -> list[str]:
        """The ids of the cluster's alive nodes."""
        return list(_ray_nodes())

    async def _probe(self, discover: bool) -> dict[str, anyagent.DiscoveryReport | None]:
        """One task on each alive node: its measured load, and its ``DiscoveryReport`` if ``discover``."""
        nodes = await anyio.to_thread.run_sync(_ray_nodes)
        task = ray.remote(num_cpus=0)(_probe_node)
        refs = [
            task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False), **self._env).remote(
                self._factory if discover else None
            )
            for node in nodes
        ]
        answers: list[tuple[anyagent.DiscoveryReport | None, tuple[float, float]]] = await anyio.to_thread.run_sync(
            ray.get, refs, abandon_on_cancel=True
        )
        self._measured = {
            node: _Measure(ray_node.get("Resources", {}), *load)
            for (node, ray_node), (_report, load) in zip(nodes.items(), answers, strict=True)
        }
        self._measured_at = time.monotonic()
        return {node: report for node, (report, _load) in zip(nodes, answers, strict=True)}

    async def discover(self) -> dict[str, anyagent.DiscoveryReport]:
        """Each alive node's ``DiscoveryReport`` (which agents it has), by node id."""
        reports = await self._probe(discover=True)
        self._reports = {node: report for node, report in reports.items() if report is not None}
        return self._reports

    async def loads(self) -> dict[str, NodeLoad]:
        """What placement sees of each alive node, measured now."""
        await self._probe(discover=False)
        return self._loads()

    def _loads(self) -> dict[str, NodeLoad]:
        return {
            node: NodeLoad(
                node_id=node,
                sessions=self._load.get(node, 0),
                cpus=float(m.resources.get("CPU", 0.0)),
                memory=float(m.resources.get("memory", 0.0)),
                cpu_busy=m.cpu_busy,
                memory_used=m.memory_used,
                resources=m.resources,
            )
            for node, m in self._measured.items()
        }

    async def open(
        self,
        agent: str | anyagent.AgentInstallation,
        options: anyagent.SessionOptions,
        *,
        node: str | None = None,
        resources: Mapping[str, float] | None = None,
        per_node: int | None = None,
    ) -> tuple[RaySession, RayEvents]:
        """Host a session of ``agent`` in an actor: on ``node`` if given, else on the node placement picks.

        ``resources`` (Ray custom resources, e.g. ``{"claude_slot": 1}``) limits placement to the nodes
        declaring them and holds them for the session's life (Ray queues the open while they are taken).
        ``per_node`` overrides the runtime's limit of sessions per node for this open.
        """
        _check_limit(per_node)
        agent_id = agent if isinstance(agent, str) else agent.id
        wanted = {str(k): float(v) for k, v in (resources or {}).items()}
        limit = per_node if per_node is not None else self._per_node
        node = await self._place(agent_id, node, wanted, limit)  # counted there now, so a burst of opens spreads
        try:
            name = ACTOR_PREFIX + uuid.uuid4().hex
            extra: dict[str, Any] = {"resources": wanted} if wanted else {}
            actor: Any = _RemoteHost.options(
                name=name,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
                **self._env,
                **extra,
            ).remote(self._factory)
            run = actor.run.remote(agent_id, options)
            try:
                info, failure, _node = await self._get(actor.opened.remote(), node)
            except BaseException:
                ray.kill(actor, no_restart=True)
                raise
            if failure is not None or info is None:
                ray.kill(actor, no_restart=True)
                raise _decode(failure or _failure("the session did not open"))
        except BaseException:
            self._release(node)
            raise
        session = RaySession(self, actor, run, node, info, name)
        self._sessions.add(session)
        return session, RayEvents(self, actor, node, info.session_id)

    def _release(self, node: str) -> None:
        self._load[node] -= 1
        if self._left is not None:
            self._left.set()
            self._left = None

    async def _place(self, agent_id: str, node: str | None, wanted: dict[str, float], limit: int | None) -> str:
        while True:
            async with self._discovering:  # placement reuses the last discovery (discover() refreshes it)
                if self._reports is None or (node is not None and node not in self._reports):
                    await self.discover()
                elif time.monotonic() - self._measured_at > LOAD_TTL:
                    await self._probe(discover=False)
            assert self._reports is not None
            loads = self._loads()
            having = [
                n
                for n, r in self._reports.items()
                if any(a.id == agent_id for a in r.agents) and (node is None or n == node)
            ]
            if not having:
                where = f"node {node}" if node is not None else "no node of the cluster"
                raise anyagent.NotInstalled(agent_id, f"agent {agent_id!r} is installed on {where}")
            fitting = [n for n in having if n in loads and loads[n].fits(wanted)] if wanted else having
            if not fitting:
                raise anyagent.InvalidConfiguration(
                    f"no node having {agent_id!r} declares the Ray resources {wanted}"
                    + (f" (node {node})" if node is not None else "")
                )
            room = [n for n in fitting if limit is None or self._load.get(n, 0) < limit]
            if room:
                unmeasured = NodeLoad("", 0, 0.0, 0.0, 0.0, 0.0, {})  # a node that joined since the last probe
                chosen = node or pick([loads.get(n) or attrs.evolve(unmeasured, node_id=n) for n in room])
                self._load[chosen] = self._load.get(chosen, 0) + 1
                return chosen
            if self._left is None:
                self._left = anyio.Event()
            await self._left.wait()  # every node having the agent is full: wait for a session to leave


def _ray_nodes() -> dict[str, dict[str, Any]]:
    nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
    return {str(n["NodeID"]): n for n in nodes if n.get("Alive")}


def _check_limit(limit: int | None) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise anyagent.InvalidRequest(f"per_node must be a positive int or None, got {limit!r}")


async def _discover_async(factory: Callable[[], anyagent.Runtime]) -> anyagent.DiscoveryReport:
    async with factory() as runtime:
        return await runtime.discover()


def _measure() -> tuple[float, float]:
    """This node's 1-minute load average per CPU, and the fraction of its memory in use (0 where unknown)."""
    try:
        cpu_busy = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        cpu_busy = 0.0
    memory_used = 0.0
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            info = {line.split(":")[0]: float(line.split()[1]) for line in f if len(line.split()) >= 2}
        if info.get("MemTotal"):
            memory_used = 1.0 - info.get("MemAvailable", info["MemTotal"]) / info["MemTotal"]
    except (OSError, ValueError):
        pass
    return cpu_busy, memory_used


def _probe_node(
    factory: Callable[[], anyagent.Runtime] | None,
) -> tuple[anyagent.DiscoveryReport | None, tuple[float, float]]:
    report = anyio.run(_discover_async, factory) if factory is not None else None
    return report, _measure()
