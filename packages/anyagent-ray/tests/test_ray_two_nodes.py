"""Two Ray nodes on one machine (ray.cluster_utils.Cluster): 100 sessions spread over both, every event once and
in order; a node process removed mid-turn ends the turn Failed once and raises NodeLost naming that node;
placement by Ray CPUs and custom resources on two more nodes; the fleet's per-node limit."""

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
from anyagent_ray import MEMORY_FULL, Card, NodeLoad, NodeLost, RayRuntime, pick, run_fleet

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


async def test_fleet_keeps_to_its_per_node_limit(cluster: Cluster) -> None:
    slow = Script().turn([Step.emit(text("m1", "ok")), Step.sleep(3), Step.end(completed())])
    cards = [Card(id=f"c{i}", prompt="go") for i in range(6)]
    async with RayRuntime(runtime=functools.partial(anyagent.Runtime.with_mock, slow)) as runtime:
        nodes = await runtime.discover()
        results = await run_fleet(runtime, cards, agent="mock", concurrency=6, per_node=2)
    assert all(r.ok for r in results) and {r.node_id for r in results} <= set(nodes)
    spans: dict[str, list[tuple[float, float]]] = {}
    for r in results:
        assert r.node_id is not None
        spans.setdefault(r.node_id, []).append(
            (r.transcript[0].occurred_at.timestamp(), r.transcript[-1].occurred_at.timestamp())
        )
    most = max(sum(1 for s, e in runs if s <= start < e) for runs in spans.values() for start, _ in runs)
    assert most <= 2, spans  # 6 cards at once on 2 nodes would be 3 a node without the limit
    waited = [s for runs in spans.values() for s, _ in runs if any(s >= e for _, e in runs)]
    assert waited, spans  # a card started only once another on its node had finished


async def test_placement_weighs_ray_cpus_and_keeps_to_the_resources_asked_for(cluster: Cluster) -> None:
    small = cluster.add_node(num_cpus=1, resources={"pool": 100})
    big = cluster.add_node(num_cpus=3, resources={"pool": 100})
    cluster.wait_for_nodes()
    hold = Script().turn([Step.sleep(60), Step.end(completed())])
    counts: dict[str, int] = {}
    async with RayRuntime(runtime=functools.partial(anyagent.Runtime.with_mock, hold)) as runtime:
        loads = await runtime.loads()
        assert loads[big.node_id].cpus == 3 and loads[small.node_id].resources["pool"] == 100
        for load in loads.values():  # measured on the node (one machine here: the same as this process sees)
            assert 0 <= load.memory_used < 1 and load.cpu_busy >= 0 and load.memory > 0
        sessions = []
        for _ in range(8):
            session, _events = await runtime.open("mock", anyagent.SessionOptions.in_dir("."), resources={"pool": 1})
            sessions.append(session)
            counts[session.node_id] = counts.get(session.node_id, 0) + 1
        assert set(counts) == {small.node_id, big.node_id}, counts  # never a node without the resource
        assert counts[big.node_id] in (5, 6, 7), counts  # 3 CPUs against 1: about three times the sessions
        loads = runtime._loads()
        assert loads[big.node_id].sessions == counts[big.node_id]
        with pytest.raises(anyagent.InvalidConfiguration, match="gpu_box"):
            await runtime.open("mock", anyagent.SessionOptions.in_dir("."), resources={"gpu_box": 1})
        with pytest.raises(anyagent.InvalidConfiguration, match="pool"):
            await runtime.open(
                "mock", anyagent.SessionOptions.in_dir("."), node=cluster.head_node.node_id, resources={"pool": 1}
            )
        for session in sessions:
            await session.close()
        assert all(load.sessions == 0 for load in runtime._loads().values())


def _load(node: str, sessions: int, cpus: float = 1, cpu_busy: float = 0.0, memory_used: float = 0.2) -> NodeLoad:
    return NodeLoad(node, sessions, cpus, 8e9, cpu_busy, memory_used, {"CPU": cpus})


def test_pick_weighs_sessions_per_cpu_cpu_load_and_memory() -> None:
    assert pick([_load("a", 2), _load("b", 1)]) == "b"
    assert pick([_load("a", 4, cpus=4), _load("b", 2, cpus=1)]) == "a"  # 1 per CPU against 2
    assert pick([_load("a", 1, cpu_busy=1.5), _load("b", 2)]) == "b"  # a's CPUs are busy with other work
    assert pick([_load("a", 0, memory_used=MEMORY_FULL), _load("b", 5)]) == "b"  # a is out of memory
    assert pick([_load("a", 0, memory_used=0.99), _load("b", 1, memory_used=0.95)]) == "a"  # all full: least loaded
    with pytest.raises(anyagent.InvalidRequest):
        pick([])


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
