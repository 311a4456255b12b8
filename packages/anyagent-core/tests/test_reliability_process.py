"""Reliability of processes under faults (issue 18): an agent whose leader exits while an escaped
grandchild holds its output, the host dying, and launches no OS can carry out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from linessupport import SPAWNED, Plugin, agent
from procsupport import pid_alive

from anyagent import (
    Failed,
    InvalidConfiguration,
    ProcessExited,
    Runtime,
    SessionOptions,
    TurnEnded,
)
from anyagent.process import spawn

pytestmark = pytest.mark.anyio


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


# ---------------------------------------------------------------------------------------------
# item 7: the leader's exit ends the session, whoever still holds the pipe


@pytest.mark.skipif(sys.platform == "win32", reason="setsid is POSIX")
async def test_leader_exit_ends_the_turn_while_an_escaped_grandchild_holds_stdout(tmp_path: Path) -> None:
    async with Runtime(plugins=[Plugin()]) as runtime:
        session, events = await runtime.open(agent("escape"), SessionOptions.in_dir(tmp_path))
        pid = SPAWNED[-1]
        try:
            await session.prompt("hello")
            ends = []
            started = anyio.current_time()
            with anyio.fail_after(8), pytest.raises(ProcessExited) as info:
                async for event in events:
                    if isinstance(event.kind, TurnEnded):
                        ends.append(event.kind.stop)
            took = anyio.current_time() - started
            assert ends == [Failed("the agent exited during the turn")]
            assert info.value.status == "exit status: 3"
            assert took < 4.0, took
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
        finally:
            escaped = int((tmp_path / "escaped.pid").read_text()) if (tmp_path / "escaped.pid").exists() else 0
            if escaped and pid_alive(escaped):
                os.kill(escaped, signal.SIGKILL)


# ---------------------------------------------------------------------------------------------
# issue 28 item 2: nothing the agent started survives the session, even after the agent died first


def _read_if_there(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


async def _wait_file(path: Path) -> str:
    with anyio.fail_after(8):
        while (text := _read_if_there(path)) is None:
            await anyio.sleep(0.01)
    return text


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="contained on Linux (a process group elsewhere)")
@pytest.mark.parametrize("how", ["exits", "sigkilled"])
async def test_nothing_the_agent_started_survives_after_the_agent_died_first(tmp_path: Path, how: str) -> None:
    """A setsid grandchild and a double-fork daemon, then the agent exits on its own mid-turn (or
    is SIGKILLed): once the session has ended, none of them runs (the reaper held them)."""
    detached: list[int] = []
    try:
        async with Runtime(plugins=[Plugin()]) as runtime:
            session, events = await runtime.open(
                agent("detach" if how == "exits" else "detachstay"), SessionOptions.in_dir(tmp_path)
            )
            await session.prompt("hello")
            detached = [int(pid) for pid in (await _wait_file(tmp_path / "detached.pids")).split()]
            if how == "sigkilled":
                agent_pid = int(await _wait_file(tmp_path / "agent.pid"))
                os.kill(agent_pid, signal.SIGKILL)
            ends = []
            with anyio.fail_after(8), pytest.raises(ProcessExited) as info:
                async for event in events:
                    if isinstance(event.kind, TurnEnded):
                        ends.append(event.kind.stop)
            assert ends == [Failed("the agent exited during the turn")]
            assert info.value.status == ("exit status: 3" if how == "exits" else "signal: 9 (SIGKILL)"), info.value
            await session.close()
        alive = [pid for pid in detached if pid_alive(pid)]
        assert not alive, f"still running after the session ended: {alive}"
    finally:
        for pid in detached:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)


HOST = textwrap.dedent(
    """
    import sys, anyio
    sys.path.insert(0, {tests!r})
    from linessupport import Plugin, agent
    from anyagent import Runtime, SessionOptions

    async def main():
        async with Runtime(plugins=[Plugin()]) as runtime:
            session, events = await runtime.open(agent("detachstay"), SessionOptions.in_dir(sys.argv[2]))
            await session.prompt("hello")
            await anyio.sleep_forever()

    anyio.run(main, backend=sys.argv[1])
    """
).format(tests=str(Path(__file__).parent))


def _start_host(backend: str, cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", HOST, backend, str(cwd)], stdin=subprocess.DEVNULL)


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="contained on Linux (a process group elsewhere)")
async def test_nothing_the_agent_started_survives_the_host_killed(tmp_path: Path, anyio_backend: str) -> None:
    """A host process (a real anyagent runtime) whose agent started a setsid grandchild and a
    double-fork daemon is SIGKILLed mid-turn: the agent, both detached processes and the agent's
    reaper all end (the reaper sees the host's death and kills its whole tree; the host's guard,
    which kills the group, must not kill the reaper before it has)."""
    host = _start_host(anyio_backend, tmp_path)
    tree: list[int] = []
    try:
        detached = [int(pid) for pid in (await _wait_file(tmp_path / "detached.pids")).split()]
        agent_pid = int(await _wait_file(tmp_path / "agent.pid"))
        tree = [agent_pid, *detached]
        reaper = _parent(agent_pid)
        if reaper != host.pid:  # contained (ANYAGENT_CONTAIN=0 leaves the agent a child of the host)
            tree.append(reaper)
        assert all(pid_alive(pid) for pid in tree), tree
        host.kill()
        host.wait()
        with anyio.move_on_after(5):
            while any(pid_alive(pid) for pid in tree):
                await anyio.sleep(0.02)
        alive = [pid for pid in tree if pid_alive(pid)]
        assert not alive, f"still running 5 s after the host was SIGKILLed: {alive} of {tree}"
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
        for pid in tree:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------------------------------------
# item 12: what no OS can pass to a process is InvalidConfiguration, before any pipe is opened


@pytest.mark.parametrize(
    "where",
    ["argv", "env value", "env name", "cwd", "huge argv", "huge env", "huge total"],
)
async def test_an_impossible_launch_is_invalid_configuration_without_leaking_fds(tmp_path: Path, where: str) -> None:
    argv = [sys.executable, "-c", "pass"]
    env = dict(os.environ)
    cwd: str = str(tmp_path)
    if where == "argv":
        argv.append("--resume=abc\0def")
    elif where == "env value":
        env["CLAUDE_CONFIG_DIR"] = "/tmp/x\0y"
    elif where == "env name":
        env["A=B"] = "1"
    elif where == "cwd":
        cwd = str(tmp_path) + "\0x"
    elif where == "huge argv":
        argv += ["--system-prompt", "x" * 300_000]
    elif where == "huge env":
        env["BIG"] = "x" * 300_000
    else:
        argv += ["y" * 100_000] * 40  # each fits, together they exceed ARG_MAX
    before = fd_count()
    for _ in range(3):
        with pytest.raises(InvalidConfiguration) as info:
            await spawn(argv, cwd=cwd, env=env)
        assert len(str(info.value)) < 400  # a huge value is never quoted whole
    assert fd_count() == before


def test_session_options_refuse_a_nul_byte() -> None:
    options = SessionOptions.in_dir(".")
    with pytest.raises(InvalidConfiguration):
        options.resume("abc\0def")
    with pytest.raises(InvalidConfiguration):
        options.fork_from("abc\0def")
    with pytest.raises(InvalidConfiguration):
        options.configure("model", "son\0net")
    with pytest.raises(InvalidConfiguration):
        options.config_home("/tmp/a\0b")
    with pytest.raises(InvalidConfiguration):
        SessionOptions.in_dir("/tmp/a\0b")
    assert options.configure("model", "x" * 300_000).configuration["model"] == "x" * 300_000


# ---------------------------------------------------------------------------------------------
# item 11: close() reaches the descendants that left the group


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="found through /proc")
@pytest.mark.parametrize("grace", [0.2, 2.0])
async def test_close_kills_a_grandchild_that_called_setsid(tmp_path: Path, grace: float) -> None:
    """``grace=2``: the leader ignores SIGTERM; also right after EOF (the leader exits at once
    in the ``grandchild`` mode without ``stay``, covered by the first listing)."""
    agent_script = Path(__file__).parent / "fakes" / "stdio_agent.py"
    proc = await spawn([sys.executable, str(agent_script), "escapee"], cwd=tmp_path)
    line = await proc.stdout.receive()
    info = json.loads(line)
    try:
        assert pid_alive(info["grandchild"])
        assert os.getpgid(info["grandchild"]) != proc.group_id
        await proc.aclose(grace=grace)
        with anyio.fail_after(3):
            while pid_alive(info["grandchild"]):
                await anyio.sleep(0.01)
    finally:
        if pid_alive(info["grandchild"]):
            os.kill(info["grandchild"], signal.SIGKILL)
