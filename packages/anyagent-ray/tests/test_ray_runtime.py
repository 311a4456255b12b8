"""RayRuntime on a local Ray cluster (2 CPUs) with the scripted mock agent, on asyncio and trio."""

from __future__ import annotations

import functools
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import ray

import anyagent
import anyagent_claude
from anyagent import seam
from anyagent.mock import Script, Step, completed, text
from anyagent_ray import NodeLost, RayRuntime
from anyagent_testkit.replay import write_replayer_sequence

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


# ---------------------------------------------------------------------------------------------
# the testkit's fake claude wire: a real claude-wire subprocess (the replayer playing a recording)
# launched by the real Claude adapter inside the session actor

RECORDINGS = Path(__file__).parents[2] / "anyagent-claude" / "tests" / "recordings"


def _claude(tmp_path: Path, recording: str) -> tuple[dict[str, Any], Path]:
    """The runtime env pointing discovery at a wrapper that notes its pid (the replayer's: each exec keeps it)
    and execs the replayer shim playing ``recording``; and the pids file."""
    shim = write_replayer_sequence(tmp_path / "bin", RECORDINGS / recording, name="claude")
    pids = tmp_path / "pids"
    wrapper = tmp_path / "bin" / "claude-noting-pid"
    wrapper.write_text(f'#!/bin/sh\necho $$ >> {shlex.quote(str(pids))}\nexec {shlex.quote(str(shim))} "$@"\n')
    wrapper.chmod(0o755)
    return {"env_vars": {"ANYAGENT_CLAUDE_BIN": str(wrapper)}}, pids


def _claude_runtime() -> anyagent.Runtime:
    return anyagent.Runtime(plugins=[anyagent_claude])


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def _agent_and_reaper(pids: Path) -> list[int]:
    [agent] = [int(line) for line in pids.read_text().split()]
    parent = int(Path(f"/proc/{agent}/stat").read_text().rsplit(")", 1)[1].split()[1])
    assert "-I" in Path(f"/proc/{parent}/cmdline").read_text().split("\0"), "the agent runs under its reaper"
    return [agent, parent]


async def _gone(pids: list[int], seconds: float = 20) -> list[int]:
    with anyio.move_on_after(seconds):
        while any(_running(pid) for pid in pids):
            await anyio.sleep(0.05)
    return [pid for pid in pids if _running(pid)]


async def _local_turn(tmp_path: Path) -> list[anyagent.Event]:
    """The text-turn recording played by the same adapter in-process: what the remote turn must equal."""
    env, _pids = _claude(tmp_path, "text-turn.jsonl")
    os.environ.update(env["env_vars"])
    try:
        async with _claude_runtime() as runtime:
            session, events = await runtime.open(
                (await runtime.discover()).require("claude"), anyagent.SessionOptions.in_dir(tmp_path)
            )
            async with session:
                await session.prompt("hello there")
                return await _turn(events)
    finally:
        for name in env["env_vars"]:
            os.environ.pop(name, None)


async def _turn(events: Any) -> list[anyagent.Event]:
    seen: list[anyagent.Event] = []
    with anyio.fail_after(60):
        async for event in events:
            seen.append(event)
            if isinstance(event.kind, anyagent.TurnEnded):
                return seen
    raise AssertionError("the events ended before the turn did")


def _shape(events: list[anyagent.Event]) -> tuple[list[str], str]:
    kinds = [type(e.kind).__name__ for e in events if not isinstance(e.kind, anyagent.TextDelta)]
    return kinds, "".join(e.kind.text for e in events if isinstance(e.kind, anyagent.TextDelta))


async def test_a_claude_wire_session_on_ray_streams_its_turn_and_close_reaps_it(tmp_path: Path) -> None:
    local = await _local_turn(tmp_path / "local")
    env, pids = _claude(tmp_path / "ray", "text-turn.jsonl")
    async with RayRuntime(runtime=_claude_runtime, runtime_env=env) as runtime:
        session, events = await runtime.open("claude", anyagent.SessionOptions.in_dir(tmp_path))
        processes = _agent_and_reaper(pids)
        assert all(_running(pid) for pid in processes)
        assert session.info().details.version == "2.1.332"
        await session.prompt("hello there")
        turn = await _turn(events)
        assert [e.sequence for e in turn] == list(range(turn[0].sequence, turn[0].sequence + len(turn)))
        assert _shape(turn) == _shape(local)
        assert _shape(turn)[1] == "Hello from the fake model. You said: hello there"
        assert isinstance(turn[-1].kind, anyagent.TurnEnded) and isinstance(turn[-1].kind.stop, anyagent.Completed)
        await session.close()
        assert await _gone(processes, 10) == []


async def test_a_claude_wire_actor_killed_mid_turn_fails_the_turn_once_and_leaves_no_process(tmp_path: Path) -> None:
    env, pids = _claude(tmp_path, "permission-allow.jsonl")
    async with RayRuntime(runtime=_claude_runtime, runtime_env=env) as runtime:
        session, events = await runtime.open("claude", anyagent.SessionOptions.in_dir(tmp_path))
        processes = _agent_and_reaper(pids)
        await session.prompt(f"WRITE {tmp_path}/allowed.txt ALPHA")
        ends: list[anyagent.TurnEnded] = []
        with anyio.fail_after(60), pytest.raises(NodeLost) as caught:
            async for event in events:
                if isinstance(event.kind, anyagent.RequestOpened):  # mid-turn: the agent waits for the answer
                    ray.kill(session._actor, no_restart=True)
                elif isinstance(event.kind, anyagent.TurnEnded):
                    ends.append(event.kind)
        assert len(ends) == 1 and isinstance(ends[0].stop, anyagent.Failed)
        assert caught.value.node_id == session.node_id and session.node_id in caught.value.message
        assert await _gone(processes) == []
        await session.close()
