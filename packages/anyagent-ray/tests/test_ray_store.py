"""Events of a session hosted on Ray recorded into anyagent-store (SQLite) through Store.record."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray

import anyagent
from anyagent.mock import Script, Step, completed, text
from anyagent_ray import RayRuntime
from anyagent_store import Store

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


async def test_remote_events_are_recorded(tmp_path: Path) -> None:
    script = Script().turn([Step.repeat(50, Step.emit(text("m1", "z"))), Step.end(completed())])
    store = Store.sqlite(tmp_path / "threads.db")
    await store.open()
    try:
        async with RayRuntime(runtime=functools.partial(anyagent.Runtime.with_mock, script)) as runtime:
            session, events = await runtime.open("mock", anyagent.SessionOptions.in_dir("."))
            async with session:
                seen: list[Any] = []
                recording = store.record(session, events, cwd=".")  # type: ignore[arg-type]
                async with recording:
                    await recording.prompt("go")
                    async for event in recording:
                        seen.append(event)
                        if isinstance(event.kind, anyagent.TurnEnded):
                            break
                thread = recording.thread
        stored = [s.event for s in await store.history(thread)]
        kept = [e for e in stored if e is not None and not isinstance(e.kind, anyagent.UserMessage)]
        # the other events as they were read; the 50 deltas, read back to back, stored merged (the text
        # whole, the sequence of the last)
        assert [e for e in kept if not isinstance(e.kind, anyagent.TextDelta)] == [
            e for e in seen if not isinstance(e.kind, anyagent.TextDelta)
        ]
        said = [e for e in seen if isinstance(e.kind, anyagent.TextDelta)]
        merged = [e for e in kept if isinstance(e.kind, anyagent.TextDelta)]
        assert "".join(e.kind.text for e in merged) == "".join(e.kind.text for e in said) == "z" * 50
        assert merged[-1].sequence == said[-1].sequence and len(merged) < len(said)
    finally:
        await store.aclose()
