"""RayRuntime on a local Ray cluster (2 CPUs) with the scripted mock agent, on asyncio and trio."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator

import pytest
import ray

import anyagent
from anyagent.mock import Script, Step, completed, text
from anyagent_ray import NodeLost, RayRuntime

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
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
