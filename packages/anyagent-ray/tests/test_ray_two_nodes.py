"""Two Ray nodes on one machine (ray.cluster_utils.Cluster): 100 sessions spread over both, every event once and
in order; a node process removed mid-turn ends the turn Failed once and raises NodeLost naming that node."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
import ray
from ray.cluster_utils import Cluster

import anyagent
from anyagent.mock import Script, Step, completed, text
from anyagent_ray import NodeLost, RayRuntime

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    yield cluster
    ray.shutdown()
    cluster.shutdown()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # one backend here (a Ray worker process per session is the cost); trio runs in the other files


SCRIPT = Script().turn([Step.repeat(20, Step.emit(text("m1", "y"))), Step.end(completed())])


async def test_hundred_sessions_over_two_nodes(cluster: Cluster) -> None:
    nodes: dict[str, int] = {}
    limiter = anyio.CapacityLimiter(10)

    async def one(runtime: RayRuntime, index: int) -> None:
        async with limiter:
            session, events = await runtime.open("mock", anyagent.SessionOptions.in_dir("."))
            async with session:
                nodes[session.node_id] = nodes.get(session.node_id, 0) + 1
                await session.prompt(f"go {index}")
                sequences, chars = [], 0
                async for event in events:
                    sequences.append(event.sequence)
                    if isinstance(event.kind, anyagent.TextDelta):
                        chars += len(event.kind.text)
                    if isinstance(event.kind, anyagent.TurnEnded):
                        break
                assert chars == 20
                assert sequences == list(range(sequences[0], sequences[0] + len(sequences)))

    async with RayRuntime(runtime=functools.partial(anyagent.Runtime.with_mock, SCRIPT)) as runtime:
        assert len(await runtime.discover()) == 2
        async with anyio.create_task_group() as tg:
            for index in range(100):
                tg.start_soon(one, runtime, index)
    assert sum(nodes.values()) == 100 and len(nodes) == 2 and min(nodes.values()) >= 30, nodes


async def test_node_removed_mid_turn(cluster: Cluster) -> None:
    extra = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    script = Script().turn([Step.emit(text("m1", "a")), Step.sleep(60), Step.end(completed())])
    async with RayRuntime(runtime=functools.partial(anyagent.Runtime.with_mock, script)) as runtime:
        session, events = await runtime.open("mock", anyagent.SessionOptions.in_dir("."), node=extra.node_id)
        assert session.node_id == extra.node_id
        await session.prompt("go")
        seen: list[Any] = []
        with pytest.raises(NodeLost) as caught:
            async for event in events:
                seen.append(event.kind)
                if isinstance(event.kind, anyagent.TextDelta):
                    cluster.remove_node(extra)
        ended = [k for k in seen if isinstance(k, anyagent.TurnEnded)]
        assert len(ended) == 1 and isinstance(ended[0].stop, anyagent.Failed)
        assert caught.value.node_id == extra.node_id and extra.node_id in caught.value.message
