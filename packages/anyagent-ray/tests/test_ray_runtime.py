"""RayRuntime on a local Ray cluster (2 CPUs) with the scripted mock agent, on asyncio and trio."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import ray

import anyagent
from anyagent import seam
from anyagent.mock import Script, Step, completed, text
from anyagent_ray import NodeLost, RayRuntime

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this test module
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _script(n: int) -> Script:
    return Script().turn([Step.repeat(n, Step.emit(text("m1", "x"))), Step.end(completed())])


async def test_a_turn_streams_every_event_once_in_order() -> None:
    factory = functools.partial(anyagent.Runtime.with_mock, _script(500))
    async with RayRuntime(runtime=factory) as runtime:
        reports = await runtime.discover()
        assert reports and all(any(a.id == "mock" for a in r.agents) for r in reports.values())
        session, events = await runtime.open("mock", anyagent.SessionOptions.in_dir("."))
        async with session:
            assert session.node_id in reports
            await session.prompt("go")
            texts = 0
            sequences = []
            async for event in events:
                sequences.append(event.sequence)
                if isinstance(event.kind, anyagent.TextDelta):
                    texts += len(event.kind.text)  # a lagging reader gets deltas of one message merged
                if isinstance(event.kind, anyagent.TurnEnded):
                    assert isinstance(event.kind.stop, anyagent.Completed)
                    break
            assert texts == 500
            assert sequences == list(range(sequences[0], sequences[0] + len(sequences)))


async def test_unknown_agent_is_not_installed() -> None:
    async with RayRuntime(runtime=anyagent.Runtime.with_mock) as runtime:
        with pytest.raises(anyagent.NotInstalled):
            await runtime.open("nobody", anyagent.SessionOptions.in_dir("."))


async def test_killed_actor_mid_turn_ends_the_turn_failed_once_and_raises_node_lost() -> None:
    script = Script().turn([Step.emit(text("m1", "a")), Step.sleep(30), Step.end(completed())])
    async with RayRuntime(runtime=functools.partial(anyagent.Runtime.with_mock, script)) as runtime:
        session, events = await runtime.open("mock", anyagent.SessionOptions.in_dir("."))
        await session.prompt("go")
        seen = []
        with pytest.raises(NodeLost) as caught:
            async for event in events:
                seen.append(event.kind)
                if isinstance(event.kind, anyagent.TextDelta):
                    ray.kill(session._actor, no_restart=True)
        failed = [k for k in seen if isinstance(k, anyagent.TurnEnded)]
        assert len(failed) == 1 and isinstance(failed[0].stop, anyagent.Failed)
        assert caught.value.node_id == session.node_id and session.node_id in caught.value.message
        await session.close()


async def test_close_ends_the_actor() -> None:
    async with RayRuntime(runtime=anyagent.Runtime.with_mock) as runtime:
        session, _events = await runtime.open("mock", anyagent.SessionOptions.in_dir("."))
        actor = session._actor
        await session.close()
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(actor.node.remote(), timeout=30)
    assert os.getpid()


# ---------------------------------------------------------------------------------------------
# typed errors keep their class and every field across Ray (open, a command, the events)

ERRORS: dict[str, Callable[[], anyagent.AgentError]] = {
    "not-installed": lambda: anyagent.NotInstalled("ghost", "ghost is not on this node"),
    "auth": lambda: anyagent.AuthRequired((anyagent.EnvVarLogin("GHOST_KEY", "the key"),), "log in first"),
    "exited": lambda: anyagent.ProcessExited("exit status: 7", "line one\nlast words\n"),
    "unsupported": lambda: anyagent.UnsupportedFeature("no steering here"),
    "node-lost": lambda: NodeLost("node-abc", "the inner node went away"),
}


class _Refusing(seam.Adapter):
    wire = "refusing"

    def __init__(self, error: Callable[[], anyagent.AgentError]) -> None:
        self.error = error

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        raise self.error()


class _RefusingPlugin:
    """One in-process agent per entry of ``ERRORS`` whose launch raises that error."""

    @anyagent.hookimpl
    def anyagent_adapters(self, register: Any) -> None:
        for key, error in ERRORS.items():
            register.adapter(functools.partial(_Refusing, error), wire=f"refusing-{key}")

    @anyagent.hookimpl
    def anyagent_agents(self, register: Any) -> None:
        for key in ERRORS:
            register.profile(anyagent.AgentProfile(id=key, name=key, wire=f"refusing-{key}", executables=()))


def _refusing_runtime() -> anyagent.Runtime:
    return anyagent.Runtime(plugins=[_RefusingPlugin()])


async def test_an_error_at_open_keeps_its_class_and_fields() -> None:
    async with RayRuntime(runtime=_refusing_runtime) as runtime:
        for key, make in ERRORS.items():
            expected = make()
            with pytest.raises(anyagent.AgentError) as caught:
                await runtime.open(key, anyagent.SessionOptions.in_dir("."))
            assert type(caught.value) is type(expected), key
            assert vars(caught.value) == vars(expected) and str(caught.value) == str(expected), key
    assert caught.value.node_id == "node-abc"  # type: ignore[attr-defined]


async def _local_failures(script: Script) -> tuple[anyagent.AgentError, anyagent.AgentError]:
    """The same calls in-process: what the remote errors must equal."""
    async with anyagent.Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, anyagent.SessionOptions.in_dir("."))
        async with session:
            with pytest.raises(anyagent.UnsupportedFeature) as command:
                await session.rollback(1, anyagent.RollbackScope.CONVERSATION)
            await session.prompt("go")
            with pytest.raises(anyagent.ProcessExited) as stream:
                async for _event in events:
                    pass
    return command.value, stream.value


async def test_an_error_from_the_events_and_from_a_command_keeps_its_fields() -> None:
    script = Script().turn([Step.emit(text("m1", "a")), Step.die("exit status: 5")])
    local_command, local_stream = await _local_failures(script)
    async with RayRuntime(runtime=functools.partial(anyagent.Runtime.with_mock, script)) as runtime:
        session, events = await runtime.open("mock", anyagent.SessionOptions.in_dir("."))
        async with session:
            with pytest.raises(anyagent.UnsupportedFeature) as command:
                await session.rollback(1, anyagent.RollbackScope.CONVERSATION)
            await session.prompt("go")
            with pytest.raises(anyagent.ProcessExited) as stream:
                async for _event in events:
                    pass
    assert vars(command.value) == vars(local_command)
    assert vars(stream.value) == vars(local_stream) and stream.value.status == "exit status: 5"
