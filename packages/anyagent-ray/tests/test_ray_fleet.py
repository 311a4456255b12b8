"""The fleet helper on a local Ray cluster: 50 cards, the first opens fail, retries complete every card."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray

import anyagent
from anyagent.mock import Script, Step, completed, failed, text
from anyagent_ray import Card, RayRuntime, load_cards, run_fleet

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this test module
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


class Flaky:
    """Builds the mock runtime in each session's actor; the first ``failures`` sessions fail their turn."""

    def __init__(self, tokens: Path, failures: int) -> None:
        self.tokens = tokens
        self.failures = failures

    def __call__(self) -> anyagent.Runtime:
        good = Script().turn([Step.emit(text("m1", "done")), Step.end(completed())])
        bad = Script().turn([Step.emit(text("m1", "oops")), Step.end(failed("boom"))])
        if ray.get_runtime_context().get_actor_id() is not None:  # a session, not a discovery task
            for i in range(self.failures):
                try:
                    os.close(os.open(self.tokens / str(i), os.O_CREAT | os.O_EXCL))
                except FileExistsError:
                    continue
                return anyagent.Runtime.with_mock(bad)
        return anyagent.Runtime.with_mock(good)


async def test_fifty_cards_with_retries(tmp_path: Path) -> None:
    cards = [Card(id=f"c{i}", prompt=f"card {i}") for i in range(50)]
    seen: list[str] = []
    async with RayRuntime(runtime=Flaky(tmp_path, 10)) as runtime:
        results = await run_fleet(
            runtime, cards, agent="mock", concurrency=8, retries=2, on_result=lambda r: seen.append(r.card.id)
        )
    assert [r.card.id for r in results] == [c.id for c in cards]
    assert sorted(seen) == sorted(c.id for c in cards)
    assert all(r.ok and r.text == "done" and r.error is None for r in results)
    assert sum(r.attempts for r in results) == 60  # ten failed first attempts, each retried once
    assert all(any(isinstance(e.kind, anyagent.TurnEnded) for e in r.transcript) for r in results)


async def test_without_retries_failures_are_reported(tmp_path: Path) -> None:
    cards = [Card(id=f"c{i}", prompt="x") for i in range(4)]
    async with RayRuntime(runtime=Flaky(tmp_path, 4)) as runtime:
        results = await run_fleet(runtime, cards, agent="mock", concurrency=2, retries=0)
    assert all(not r.ok and r.error == "boom" and r.attempts == 1 for r in results)


def test_load_cards(tmp_path: Path) -> None:
    path = tmp_path / "cards.jsonl"
    path.write_text('{"id": "a", "prompt": "p"}\n\n{"prompt": "q", "agent": "mock"}\n', encoding="utf-8")
    assert load_cards(path) == [Card("a", "p"), Card("3", "q", "mock")]
    path.write_text('{"id": "a"}\n', encoding="utf-8")
    with pytest.raises(anyagent.InvalidRequest, match=r"cards\.jsonl:1"):
        load_cards(path)
