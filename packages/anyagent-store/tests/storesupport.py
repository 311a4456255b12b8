"""Scripted agents and helpers the store's tests share."""

from __future__ import annotations

import os
from typing import Any

import pytest

from anyagent import Capability, ContextUsage, Event, Runtime, SessionOptions, ToolStatus, TurnEnded
from anyagent.mock import Script, Step, completed, text, tool
from anyagent_store import Recording, Store


def chatty_script(*capabilities: Capability, turns: int = 3) -> Script:
    """Each turn: two text deltas of message m<N>, a tool, usage, done."""
    script = Script(capabilities=(Capability.RESUME, *capabilities))
    for n in range(1, turns + 1):
        script = script.turn(
            [
                Step.emit(text(f"m{n}", f"answer {n} ")),
                Step.emit(tool(f"tool{n}", ToolStatus.COMPLETED, title=f"read file {n}")),
                Step.emit(text(f"m{n}", "done.")),
                Step.emit(ContextUsage(100 * n, 200_000, 0.01 * n)),
                Step.end(completed()),
            ]
        )
    return script


async def read_turn(recording: Recording) -> list[Event]:
    seen = []
    async for event in recording:
        seen.append(event)
        if isinstance(event.kind, TurnEnded):
            break
    return seen


async def record_turns(store: Store, runtime: Runtime, prompts: list[str], cwd: str = "/tmp", **kw: Any) -> Recording:
    agent = (await runtime.discover()).require("mock")
    session, events = await runtime.open(agent, SessionOptions.in_dir(cwd))
    async with session, store.record(session, events, cwd=cwd, **kw) as recording:
        for prompt in prompts:
            await recording.prompt(prompt)
            await read_turn(recording)
    return recording


DSN_VARIABLE = "ANYAGENT_STORE_TEST_DSN"


def postgres_dsn() -> str:
    """The test server's DSN; skipped locally without one, a failure in CI (CI=true)."""
    dsn = os.environ.get(DSN_VARIABLE)
    if not dsn:
        message = (
            f"PostgreSQL tests need a server: set {DSN_VARIABLE} (`export {DSN_VARIABLE}=$(.ci/postgres.sh start)`"
            " starts one from Debian's postgresql package)"
        )
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)
    return dsn


def drop_schema(dsn: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
