"""anyagent.process against real child processes (tests/fakes/stdio_agent.py), on asyncio and trio.

Every test runs inside ``leak_check``: afterwards the process group of every agent it spawned is
gone (``os.killpg(pgid, 0)`` raises ``ProcessLookupError``), no process carrying the test's
environment marker survives (grandchildren included), no child of ours is left (alive or zombie),
no file descriptor was leaked, no drain thread lingers, and nothing took longer than its bound.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from procsupport import group_alive, live_members, pid_alive

from anyagent import ProcessExited, ProtocolFailed, SpawnFailed
from anyagent.process import AgentProcess, exit_status_text, run_command
from anyagent.process import spawn as real_spawn
from anyagent.wire import JsonLines

if sys.platform != "win32":
    from anyagent._process_posix import _GUARD as GUARD
    from anyagent._process_posix import _REACTOR as REACTOR
else:  # pragma: no cover - Windows drains with a thread per pipe
    REACTOR = GUARD = None

pytestmark = pytest.mark.anyio

FAKES = Path(__file__).parent / "fakes"
BOUND = 20.0
MARK = "ANYAGENT_TEST_LEAK_MARK"
SPAWNED: list[int] = []


async def spawn(*args: Any, **kwargs: Any) -> AgentProcess:
    """``anyagent.process.spawn`` that remembers the process group for ``leak_check``."""
    proc = await real_spawn(*args, **kwargs)
    SPAWNED.append(proc.group_id)
    return proc


def agent(*args: str) -> list[str]:
    return [sys.executable, str(FAKES / "stdio_agent.py"), *args]


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def children() -> list[int]:
    """Our child processes, alive or zombie (but the host's one guard, which lives as long as we do)."""
    found = []
    guard = GUARD.pid if GUARD is not None else None
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != guard:
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
                found.append(int(entry))
    return found


def marked(token: str) -> list[int]:
    """Live processes (not zombies) whose environment carries ``MARK=token``."""
    needle = f"{MARK}={token}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if needle in Path(f"/proc/{entry}/environ").read_bytes() and pid_alive(int(entry)):
                    found.append(int(entry))
            except OSError:
                continue
    return found


async def until(condition: object, timeout: float = 5.0) -> None:
    """Poll ``condition()`` until true (fails the test after ``timeout``)."""
    with anyio.fail_after(timeout):
        while not condition():  # type: ignore[operator]
            await anyio.sleep(0.01)


@asynccontextmanager
async def leak_check(bound: float = BOUND) -> AsyncIterator[None]:
    if REACTOR is not None:
        REACTOR.start()  # the host's one reactor thread and its two fds exist before counting
        if GUARD is not None and GUARD.usable():
            GUARD.start()  # and the host's guard, with its socket
        await until(lambda: REACTOR.watched() == 0, 5.0)
    fds = fd_count()
    token = os.urandom(8).hex()
    os.environ[MARK] = token  # inherited by every agent spawned with the default environment
    SPAWNED.clear()
    try:
        with anyio.fail_after(bound):
            yield
    finally:
        del os.environ[MARK]
    await until(lambda: not any(group_alive(pgid) for pgid in SPAWNED), 5.0)
    await until(lambda: not marked(token), 5.0)
    await until(lambda: not children(), 5.0)
    if REACTOR is not None:
        await until(lambda: REACTOR.watched() == 0, 5.0)  # every pipe drained, every pidfd closed
    assert fd_count() == fds


async def first(lines: JsonLines) -> object:
    frame = await lines.receive()
    assert isinstance(frame, dict), frame
    return frame


# ---------------------------------------------------------------------------------------------
# the platform backends


def test_the_child_backend_is_chosen_by_platform_at_import() -> None:
    from anyagent import _process_windows, process

    # the Windows backend imports anywhere (type-checked on every platform, run only on Windows)
    if sys.platform == "win32":
        assert process.start_child is _process_windows.start_child
    else:
        from anyagent import _process_posix

        assert process.start_child is _process_posix.start_child


# ---------------------------------------------------------------------------------------------
# launch failures


async def test_missing_executable_is_spawn_failed(tmp_path: Path) -> None:
    async with leak_check():
        with pytest.raises(SpawnFailed, match=r"/nonexistent/agent.*No such file"):
            await spawn(["/nonexistent/agent"], cwd=tmp_path)
        with pytest.raises(SpawnFailed, match=r"not found on PATH \(/nowhere\)"):
            await spawn(["no-such-agent-here"], cwd=tmp_path, env={"PATH": "/nowhere"})
        with pytest.raises(SpawnFailed, match="empty argv"):
            await spawn([], cwd=tmp_path)


async def test_not_executable_is_spawn_failed(tmp_path: Path) -> None:
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    async with leak_check():
        with pytest.raises(SpawnFailed, match=r"agent\.sh: not executable"):
            await spawn([str(script)], cwd=tmp_path)
        with pytest.raises(SpawnFailed, match="not a regular file"):
            await spawn([str(tmp_path)], cwd=tmp_path)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the exec shim is Linux-only")
@pytest.mark.parametrize("shim", [False, True], ids=["guarded", "shim"])
async def test_exec_errors_are_precise_and_the_shim_fallback_still_launches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shim: bool
) -> None:
    """An exec error names the OS error, whether the agent is exec'd by ``Popen`` (the host's
    guard runs) or by the per-agent shim (where the guard cannot run: no pidfds)."""
    from anyagent import _process_posix

    if shim:
        monkeypatch.setattr(_process_posix._Guard, "usable", staticmethod(lambda: False))
    binary = tmp_path / "broken"
    binary.write_bytes(b"\x00\x01 not a program \x02")
    binary.chmod(0o755)
    async with leak_check():
        with pytest.raises(SpawnFailed, match=r"broken: Exec format error \(errno 8\)"):
            await spawn([str(binary)], cwd=tmp_path)
        proc = await spawn(agent("echo"), cwd=tmp_path)
        lines = JsonLines(proc)
        assert await first(lines) == {"ready": proc.pid}
        assert os.getsid(proc.pid) == proc.group_id
        assert await proc.aclose() == "exit status: 0"


async def test_bad_working_directory_is_spawn_failed(tmp_path: Path) -> None:
    async with leak_check():
        with pytest.raises(SpawnFailed, match=r"working directory .*missing is not a directory"):
            await spawn(agent("echo"), cwd=tmp_path / "missing")


async def test_relative_executable_resolves_against_cwd(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    script = tmp_path / "bin" / "tool"
    script.write_text("#!/bin/sh\necho from-tool\n")
    script.chmod(0o755)
    async with leak_check():
        result = await run_command(["bin/tool"], cwd=tmp_path)
    assert result.stdout == "from-tool\n"
    assert result.ok


# ---------------------------------------------------------------------------------------------
# life and death


async def test_agent_that_exits_immediately(tmp_path: Path) -> None:
    async with leak_check():
        proc = await spawn(agent("exit", "3"), cwd=tmp_path)
        lines = JsonLines(proc)
        with pytest.raises(anyio.EndOfStream):
            await lines.receive()
        error = await proc.exit_error()
        assert isinstance(error, ProcessExited)
        assert error.status == "exit status: 3"
        assert error.stderr == "dying 3"
        assert "dying 3" in str(error)
        assert await proc.aclose() == "exit status: 3"
        assert proc.returncode == 3


async def test_echo_round_trip_and_cooperative_close(tmp_path: Path) -> None:
    async with leak_check():
        proc = await spawn(agent("echo"), cwd=tmp_path)
        lines = JsonLines(proc)
        assert await first(lines) == {"ready": proc.pid}
        await lines.send({"hello": "wörld", "n": [1, 2]})
        assert await first(lines) == {"echo": {"hello": "wörld", "n": [1, 2]}}
        started = time.monotonic()
        assert await proc.aclose() == "exit status: 0"
        assert time.monotonic() - started < 1.5  # stdin EOF was enough
        await until(lambda: not group_alive(proc.group_id), 2.0)  # the whole group is gone, not just the leader
        assert proc.status == "exit status: 0"


async def test_stdin_false_gives_dev_null(tmp_path: Path) -> None:
    async with leak_check():
        proc = await spawn(agent("echo"), cwd=tmp_path, stdin=False)
        assert await proc.wait() == "exit status: 0"
        with pytest.raises(anyio.ClosedResourceError):
            await proc.stdin.send(b"x\n")
        await proc.aclose()


async def test_stderr_flood_never_deadlocks_and_keeps_a_bounded_tail(tmp_path: Path) -> None:
    async with leak_check():
        proc = await spawn(agent("stderrflood", str(10 * 1024 * 1024)), cwd=tmp_path, stderr_tail_lines=5)
        lines = JsonLines(proc)
        await first(lines)
        done = await first(lines)
        assert isinstance(done, dict) and done["done"] is True
        await proc.aclose()
        tail = proc.stderr_tail.splitlines()
        assert len(tail) == 5
        assert tail[-1].startswith(f"stderr line {done['lines'] - 1} ")


async def test_stderr_lines_are_capped(tmp_path: Path) -> None:
    async with leak_check():
        code = "import sys; sys.stderr.write('a' * 100000 + '\\nshort\\n')"
        proc = await spawn([sys.executable, "-c", code], cwd=tmp_path)
        await proc.wait()
        await proc.aclose()
    long, short = proc.stderr_tail.splitlines()
    assert long.endswith(" …") and len(long) < 3000
    assert short == "short"


async def test_stubborn_agent_reaches_sigkill_within_the_bound(tmp_path: Path) -> None:
    async with leak_check():
        proc = await spawn(agent("stubborn"), cwd=tmp_path)
        await first(JsonLines(proc))
        started = time.monotonic()
        assert await proc.aclose(grace=0.3) == "signal: 9 (SIGKILL)"
        assert time.monotonic() - started < 2.0
        await until(lambda: not group_alive(proc.group_id), 2.0)  # the whole group is gone, not just the leader


async def test_sigterm_step_is_used_when_it_works(tmp_path: Path) -> None:
    async with leak_check():
        proc = await spawn([sys.executable, "-c", "import time; time.sleep(60)"], cwd=tmp_path)
        assert await proc.aclose(grace=0.2) == "signal: 15 (SIGTERM)"


async def test_eof_grace_zero_goes_straight_to_sigterm_for_an_agent_that_ignores_eof(tmp_path: Path) -> None:
    async with leak_check():
        proc = await spawn([sys.executable, "-c", "import time; time.sleep(60)"], cwd=tmp_path)
        started = time.monotonic()
        assert await proc.aclose(grace=3.0, eof_grace=0.0) == "signal: 15 (SIGTERM)"
        assert time.monotonic() - started < 2.5, "waited for an EOF the agent ignores"


async def test_grandchild_holding_the_pipes_cannot_wedge_the_reader(tmp_path: Path) -> None:
    """The leader exits; its grandchild still holds stdout. The group dies, so the reader ends."""
    async with leak_check():
        proc = await spawn(agent("grandchild"), cwd=tmp_path)
        lines = JsonLines(proc)
        info = await first(lines)
        assert isinstance(info, dict)
        with anyio.fail_after(5):
            with pytest.raises(anyio.EndOfStream):
                await lines.receive()
        await until(lambda: not pid_alive(info["grandchild"]))
        assert await proc.aclose() == "exit status: 0"
        await until(lambda: not group_alive(proc.group_id))  # init reaps the orphaned grandchild


async def test_aclose_kills_the_whole_group(tmp_path: Path) -> None:
    async with leak_check():
        proc = await spawn(agent("grandchild", "stay"), cwd=tmp_path)
        info = await first(JsonLines(proc))
        assert isinstance(info, dict)
        assert pid_alive(info["grandchild"])
        assert await proc.aclose(grace=0.2) == "signal: 9 (SIGKILL)"
        await until(lambda: not group_alive(proc.group_id))


async def test_aclose_is_idempotent_concurrent_and_shielded(tmp_path: Path) -> None:
    async with leak_check():
        proc = await spawn(agent("stubborn"), cwd=tmp_path)
        statuses: list[str] = []

        async def close() -> None:
            statuses.append(await proc.aclose(grace=0.2))

        async with anyio.create_task_group() as tg:
            tg.start_soon(close)
            tg.start_soon(close)
        with anyio.CancelScope() as scope:
            scope.cancel()
            statuses.append(await proc.aclose())  # cancelled scope: still answers, shielded
        assert statuses == ["signal: 9 (SIGKILL)"] * 3

        proc2 = await spawn(agent("stubborn"), cwd=tmp_path)
        with anyio.CancelScope() as scope:
            scope.cancel()
            await proc2.aclose(grace=0.1)  # the ladder runs to the end under a cancelled scope
        await until(lambda: not group_alive(proc2.group_id), 2.0)  # the whole group is gone, not just the leader


async def test_context_manager_closes(tmp_path: Path) -> None:
    async with leak_check():
        async with await spawn(agent("echo"), cwd=tmp_path) as proc:
            assert proc.status is None
            assert "running" in repr(proc)
        assert proc.status is not None


# ---------------------------------------------------------------------------------------------
# cancellation


async def test_cancel_mid_read_then_close(tmp_path: Path) -> None:
    async with leak_check():
        proc = await spawn(agent("echo"), cwd=tmp_path)
        lines = JsonLines(proc)
        await first(lines)
        with anyio.move_on_after(0.1) as scope:
            await lines.receive()  # nothing comes
        assert scope.cancelled_caught
        await lines.send({"still": "works"})  # the cancelled read lost nothing and broke nothing
        assert await first(lines) == {"echo": {"still": "works"}}
        await proc.aclose()


@pytest.mark.parametrize("delay", [0.0, 0.001, 0.003, 0.006, 0.012])
async def test_cancel_mid_spawn_leaves_nothing(tmp_path: Path, delay: float) -> None:
    async with leak_check():
        with anyio.move_on_after(delay):
            proc = await spawn(agent("stubborn"), cwd=tmp_path)
            await proc.aclose(grace=0.1)


async def test_task_cancelled_while_process_runs_then_cleanup(tmp_path: Path) -> None:
    async with leak_check():
        proc: AgentProcess | None = None

        async def drive() -> None:
            nonlocal proc
            proc = await spawn(agent("stubborn"), cwd=tmp_path)
            try:
                await JsonLines(proc).receive()
                await anyio.sleep_forever()
            finally:
                await proc.aclose(grace=0.1)

        async with anyio.create_task_group() as tg:
            tg.start_soon(drive)
            await anyio.sleep(0.3)
            tg.cancel_scope.cancel()
        assert proc is not None and proc.status == "signal: 9 (SIGKILL)"


# ---------------------------------------------------------------------------------------------
# environment


async def test_path_puts_the_executable_directory_first(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "tool"
    tool.write_text('#!/bin/sh\necho "$PATH"\n')
    tool.chmod(0o755)
    async with leak_check():
        by_name = await run_command(["tool"], cwd=tmp_path, env={"PATH": f"/usr/bin:{bindir}:/bin"})
        by_path = await run_command([str(tool)], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert by_name.stdout.strip() == f"{bindir}:/usr/bin:/bin"
    assert by_path.stdout.strip() == f"{bindir}:/usr/bin:/bin"


def _ignored_by_this_process() -> int:
    """The SigIgn mask of the test process itself."""
    return int(Path("/proc/self/status").read_text().split("SigIgn:")[1].split()[0], 16)


async def test_environment_and_signals_reach_the_agent_untouched(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "LANG": "C", "ANYAGENT_TEST": "x y"}
    async with leak_check():
        printed = await run_command(["env"], cwd=tmp_path, env=env)
        ignored = await run_command(["sh", "-c", "grep SigIgn /proc/self/status"], cwd=tmp_path, env=env)
    seen = dict(line.split("=", 1) for line in printed.stdout.splitlines())
    assert seen == {**env, "PATH": "/usr/bin:/bin"}  # no LC_CTYPE from Python's locale coercion
    # SIGPIPE/SIGXFSZ, which Python ignores, are restored; what the host itself inherited (SIGHUP under
    # nohup, SIGINT/SIGQUIT in a background job) passes through as it would to any child
    host = _ignored_by_this_process()
    python_own = (1 << (signal.SIGPIPE - 1)) | (1 << (signal.SIGXFSZ - 1))
    assert ignored.stdout.split() == ["SigIgn:", f"{host & ~python_own:016x}"]


async def test_agent_runs_in_cwd_and_its_own_session(tmp_path: Path) -> None:
    async with leak_check():
        proc = await spawn(agent("env"), cwd=tmp_path)
        frame = await first(JsonLines(proc))
        assert isinstance(frame, dict)
        assert frame["cwd"] == str(tmp_path)
        assert os.getpgid(proc.pid) == proc.group_id
        assert os.getsid(proc.pid) == proc.group_id
        assert os.getsid(proc.group_id) == proc.group_id
        await proc.aclose()


async def test_drained_stdout_goes_to_a_tail(tmp_path: Path) -> None:
    async with leak_check():
        code = "import sys\nfor i in range(50000): print('out', i)\nsys.stdin.read()"
        proc = await spawn([sys.executable, "-c", code], cwd=tmp_path, drain_stdout=True, stderr_tail_lines=3)
        await until(lambda: proc.stdout_tail.endswith("out 49999"))
        assert proc.stdout_tail.splitlines() == ["out 49997", "out 49998", "out 49999"]
        with pytest.raises(anyio.ClosedResourceError):
            await proc.stdout.receive()
        assert await proc.aclose() == "exit status: 0"


# ---------------------------------------------------------------------------------------------
# side commands


async def test_run_command_output_and_status(tmp_path: Path) -> None:
    async with leak_check():
        result = await run_command(["sh", "-c", "echo out; echo err >&2; exit 4"], cwd=tmp_path)
    assert (result.stdout, result.stderr, result.status, result.returncode) == ("out\n", "err", "exit status: 4", 4)
    assert not result.ok and not result.timed_out and not result.truncated


async def test_run_command_caps_output(tmp_path: Path) -> None:
    async with leak_check():
        result = await run_command(["sh", "-c", "head -c 300000 /dev/zero | tr '\\0' a"], max_output=1000)
    assert result.stdout == "a" * 1000
    assert result.truncated and result.ok


async def test_run_command_timeout_kills_the_group(tmp_path: Path) -> None:
    async with leak_check(bound=5):
        started = time.monotonic()
        result = await run_command(["sh", "-c", "sleep 30 & echo $!; wait"], cwd=tmp_path, timeout=0.5)
        assert time.monotonic() - started < 3
    assert result.timed_out and not result.ok
    assert result.status.startswith("signal:")
    assert not pid_alive(int(result.stdout))


async def test_run_command_spawn_failure_raises(tmp_path: Path) -> None:
    async with leak_check():
        with pytest.raises(SpawnFailed):
            await run_command(["/nonexistent/tool", "--version"], cwd=tmp_path)


# ---------------------------------------------------------------------------------------------
# the host going away

HOST = textwrap.dedent(
    """
    import json, os, sys, anyio
    from anyagent.process import spawn
    from anyagent._process_posix import _GUARD

    async def main():
        mode = sys.argv[3:] or ["grandchild", "stay"]
        proc = await spawn([sys.executable, {agent!r}, *mode], cwd=".")
        line = await proc.stdout.receive()
        info = json.loads(line)
        info["guard"] = _GUARD.pid
        if sys.argv[2] == "killguard":  # the guard dies: another one takes over every live agent
            os.kill(info["guard"], 9)
            with anyio.fail_after(5):
                while _GUARD.pid in (None, info["guard"]):
                    await anyio.sleep(0.01)
            info["guard"] = _GUARD.pid
        sys.stdout.write(json.dumps(info) + "\\n")
        sys.stdout.flush()
        if sys.argv[2] != "exit":
            await anyio.sleep_forever()

    anyio.run(main, backend=sys.argv[1])
    """
).format(agent=str(FAKES / "stdio_agent.py"))


def run_host(backend: str, how: str, *mode: str, contain: str = "1") -> tuple[subprocess.Popen[bytes], dict[str, int]]:
    """A host process running ``HOST``; ``contain="0"``: with ``ANYAGENT_CONTAIN=0`` (no reaper)."""
    env = {**os.environ, "ANYAGENT_CONTAIN": contain}
    host = subprocess.Popen([sys.executable, "-c", HOST, backend, how, *mode], stdout=subprocess.PIPE, env=env)
    assert host.stdout is not None
    with host.stdout:
        info = json.loads(host.stdout.readline())
    return host, info


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the host's guard needs pidfds (Linux-only)")
@pytest.mark.parametrize(
    ("sig", "how"), [(signal.SIGKILL, "hang"), (signal.SIGTERM, "hang"), (signal.SIGKILL, "killguard")]
)
async def test_agent_and_its_group_die_when_the_host_is_killed(
    anyio_backend: str, sig: signal.Signals, how: str
) -> None:
    """The host's guard SIGKILLs the agent's whole group (leader and grandchild) once the host is
    gone; ``killguard``: the host's first guard was killed, the one that replaced it does it."""
    async with leak_check():
        host, info = run_host(anyio_backend, how)
        assert pid_alive(info["pid"]) and pid_alive(info["grandchild"]) and pid_alive(info["guard"])
        assert os.getsid(info["guard"]) == info["guard"] != os.getpgid(info["pid"])  # not in the agent's group
        host.send_signal(sig)
        host.wait()
        try:
            await until(lambda: not pid_alive(info["pid"]))
            await until(lambda: not pid_alive(info["grandchild"]), 3.0)
            await until(lambda: not group_alive(info["pid"]), 3.0)
            await until(lambda: not pid_alive(info["guard"]), 3.0)  # and the guard exits after
        finally:
            if pid_alive(info["grandchild"]):
                os.kill(info["grandchild"], signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the host's guard needs pidfds (Linux-only)")
async def test_a_guard_the_host_replaced_exits_without_touching_the_agents(tmp_path: Path) -> None:
    """The host drops its guard (as when a registration fails) and starts another: the old one
    sees EOF while the host lives, and leaves quietly."""
    assert GUARD is not None
    async with leak_check(bound=30):
        proc = await spawn(agent("echo"), cwd=tmp_path)
        old = GUARD.pid
        with GUARD._lock:
            GUARD._close_locked()
        GUARD.start()
        assert old is not None and GUARD.pid not in (None, old)
        await until(lambda: not pid_alive(old), 10.0)
        assert pid_alive(proc.pid) and proc.status is None
        assert await proc.aclose() == "exit status: 0"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the host's guard needs pidfds (Linux-only)")
async def test_one_guard_per_host_and_nothing_extra_in_the_agent_group(tmp_path: Path) -> None:
    """No guard process per agent: the agent's group holds the agent alone, and every spawn hands
    its leader to the same guard (a child of ours in a session of its own)."""
    assert GUARD is not None
    async with leak_check():
        guard = GUARD.pid
        procs = [await spawn(agent("echo"), cwd=tmp_path) for _ in range(4)]
        try:
            await anyio.sleep(0.1)
            for proc in procs:
                assert sorted(live_members(proc.group_id)) == sorted({proc.group_id, proc.pid})
            assert guard is not None and GUARD.pid == guard and os.getsid(guard) == guard
        finally:
            for proc in procs:
                await proc.aclose()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
async def test_parent_death_signal_is_tied_to_the_loop_thread_not_a_worker(anyio_backend: str) -> None:
    """trio forks ``open_process`` children from a worker thread that retires after 10 idle
    seconds, and PDEATHSIG fires when the forking *thread* exits; our agents must outlive that."""
    if anyio_backend != "trio":
        pytest.skip("the worker-thread fork is trio's")
    async with leak_check(bound=30):
        proc = await spawn(agent("stubborn"), cwd=".")
        await anyio.to_thread.run_sync(lambda: None)  # make sure trio has a worker thread to retire
        await anyio.sleep(11)
        assert pid_alive(proc.pid) and proc.status is None
        await proc.aclose(grace=0.1)


async def test_atexit_reaper_kills_the_group_at_interpreter_exit(anyio_backend: str) -> None:
    async with leak_check():
        host, info = run_host(anyio_backend, "exit")
        assert host.wait(timeout=10) == 0
        await until(lambda: not pid_alive(info["pid"]) and not pid_alive(info["grandchild"]))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="found through /proc")
@pytest.mark.parametrize("contain", ["1", "0"])
@pytest.mark.parametrize("agent_mode", ["ignores-sigterm", "dies-of-sigterm"])
async def test_atexit_reaper_kills_a_setsid_grandchild_of_an_agent(
    anyio_backend: str, contain: str, agent_mode: str
) -> None:
    """At interpreter exit the group is SIGTERMed, then SIGKILLed if the leader ignores that: the
    grandchild that called setsid is outside the group and must be found (and killed) whether the
    leader ignored SIGTERM or died of it, with the reaper (``contain="1"``) or without it (found by
    the ``/proc`` walk before the SIGTERM: an agent that dies of it orphans the grandchild)."""
    mode = ("escapee",) if agent_mode == "ignores-sigterm" else ("escapee", "mortal")
    async with leak_check():
        host, info = run_host(anyio_backend, "exit", *mode, contain=contain)
        try:
            assert host.wait(timeout=10) == 0
            await until(lambda: not pid_alive(info["pid"]) and not pid_alive(info["grandchild"]), 3.0)
        finally:
            if pid_alive(info["grandchild"]):
                os.kill(info["grandchild"], signal.SIGKILL)


# ---------------------------------------------------------------------------------------------
# units


def test_exit_status_text() -> None:
    assert exit_status_text(0) == "exit status: 0"
    assert exit_status_text(2) == "exit status: 2"
    assert exit_status_text(-9) == "signal: 9 (SIGKILL)"
    assert exit_status_text(-15) == "signal: 15 (SIGTERM)"
    assert exit_status_text(-200) == "signal: 200"
    assert exit_status_text(None) == "exit status: unknown"


async def test_exit_error_for_an_agent_that_closes_stdout_but_lives(tmp_path: Path) -> None:
    async with leak_check():
        code = "import os, sys, time; os.close(1); time.sleep(60)"
        proc = await spawn([sys.executable, "-c", code], cwd=tmp_path)
        with pytest.raises(anyio.EndOfStream):
            await JsonLines(proc).receive()
        error = await proc.exit_error(wait=0.2)
        assert isinstance(error, ProtocolFailed)
        await proc.aclose(grace=0.1)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX drains every agent in one reactor thread")
async def test_agents_share_one_thread_and_exits_wake_without_polling(tmp_path: Path) -> None:
    """Many live agents cost no thread each (one reactor drains and reaps them all), each
    stderr tail is complete, and an exit is seen through the agent's pidfd, not a timer."""
    async with leak_check():
        before = threading.active_count()
        script = "import sys; sys.stderr.write('hello from %d' % len(sys.argv)); sys.stderr.flush(); sys.stdin.read()"
        procs = [await spawn([sys.executable, "-c", script, *["x"] * k], cwd=tmp_path) for k in range(12)]
        try:
            assert threading.active_count() <= before + 1  # at most the reactor itself
            async with anyio.create_task_group() as tg:
                for proc in procs:
                    tg.start_soon(proc.exited)  # several waiters per agent share one pidfd wait
                    tg.start_soon(proc.exited)
                await anyio.sleep(0.2)
                for proc in procs:
                    await proc.stdin.aclose()  # EOF: each agent exits by itself
            assert all(proc.status == "exit status: 0" for proc in procs)
        finally:
            for proc in procs:
                await proc.aclose()
        assert [proc.stderr_tail for proc in procs] == [f"hello from {k + 1}" for k in range(12)]
        assert threading.active_count() <= before + 1


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX drains every agent in one reactor thread")
async def test_a_drain_stopped_while_its_pipe_is_readable_keeps_the_reactor_alive(tmp_path: Path) -> None:
    """The reactor handles one batch of ready fds at a time: when a call early in the batch
    stops a drain (``stop_drain``: its pipes closed) whose pipe is also in the batch, that stale
    event is skipped — it used to raise ``KeyError`` in the reactor thread and end every drain."""
    import fcntl
    import termios

    assert REACTOR is not None
    async with leak_check():
        script = "import sys; sys.stdin.readline(); print('late', flush=True); sys.stdin.read()"
        proc = await spawn([sys.executable, "-c", script], cwd=tmp_path, drain_stdout=True)
        try:
            job = proc._child._job  # type: ignore[attr-defined]
            stdout_fd = next(fd for fd, tail in job._fds.items() if tail is proc._tails["stdout"])
            held, release = threading.Event(), threading.Event()

            def hold() -> None:
                held.set()
                release.wait(10)

            REACTOR.call(hold)
            await until(held.is_set)
            proc._child.stop_drain()  # queued first: the reactor's wake-up pipe is ready first
            await proc.stdin.send(b"go\n")
            pending = bytearray(4)
            await until(lambda: fcntl.ioctl(stdout_fd, termios.FIONREAD, pending) == 0 and pending != bytes(4))
            release.set()  # one batch: the wake-up (stop the drain), then the stale stdout event
            await until(lambda: not job.is_alive())
            other = await spawn([sys.executable, "-c", "import sys; sys.stderr.write('still drained')"], cwd=tmp_path)
            await other.wait()
            await other.aclose()
            assert other.stderr_tail == "still drained"
            assert REACTOR._thread is not None and REACTOR._thread.is_alive()
        finally:
            await proc.aclose(grace=0.2)
