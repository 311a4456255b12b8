"""ACP client terminals under faults: close never waits for a running command and leaves no member
of its process group; a killed host takes the commands along; terminals see the session's filtered
environment."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from acpsupport import SCRIPTED, opened

from anyagent import CredentialPolicy, SessionOptions
from anyagent._engine import CLOSE_GRACE
from anyagent_testkit.events import text_of

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]


def group_members(pgid: int) -> list[int]:
    """Living (not zombie) processes in process group ``pgid``."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry))
    return members


async def wait_gone(pgid: int, seconds: float) -> list[int]:
    deadline = anyio.current_time() + seconds
    while (members := group_members(pgid)) and anyio.current_time() < deadline:
        await anyio.sleep(0.05)
    return members


def pid_in(pid_file: Path) -> int | None:
    try:
        text = pid_file.read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text else None


async def read_pid(pid_file: Path) -> int:
    with anyio.fail_after(10):
        while (pid := pid_in(pid_file)) is None:
            await anyio.sleep(0.02)
    return pid


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(entry.decode().split("=", 1) for entry in raw if b"=" in entry)


def start_host(tmp_path: Path, pid_file: Path) -> subprocess.Popen[bytes]:
    """A host process running one ACP session whose agent left a TERMGROUP command running."""
    return subprocess.Popen(
        [sys.executable, "-c", HOST, str(tmp_path), str(pid_file), str(SCRIPTED)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


async def test_close_returns_within_its_bound_and_kills_a_running_commands_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "terminal.pid"
    async with opened(tmp_path) as (session, reader):
        await session.prompt(f"TERMGROUP {pid_file}")
        assert text_of(await reader.turn()) == "left a terminal group running"
        pgid = os.getpgid(await read_pid(pid_file))
        assert pgid != os.getpgrp()  # the command's own group (led by its reaper on Linux), not the host's
        assert len(group_members(pgid)) >= 2  # the shell and its `sleep 60`
        closing = anyio.current_time()
        with anyio.fail_after(CLOSE_GRACE + 5):
            await session.close()
        assert anyio.current_time() - closing < CLOSE_GRACE + 2
        assert await wait_gone(pgid, 3) == []


HOST = textwrap.dedent(
    """
    import sys, anyio, anyagent_acp.plugin
    from anyagent import AgentInstallation, Runtime, SessionOptions, TurnEnded

    async def main(cwd, pid_file, agent_script):
        async with Runtime(plugins=[anyagent_acp.plugin]) as runtime:
            agent = AgentInstallation.acp("scripted", sys.executable, [agent_script])
            session, events = await runtime.open(agent, SessionOptions.in_dir(cwd))
            await session.prompt("TERMGROUP " + pid_file)
            async for event in events:
                if isinstance(event.kind, TurnEnded):
                    break
            print("ready", flush=True)
            await anyio.sleep(3600)

    anyio.run(main, *sys.argv[1:])
    """
)


async def test_a_killed_host_takes_its_terminal_commands_along(tmp_path: Path) -> None:
    pid_file = tmp_path / "terminal.pid"
    host = start_host(tmp_path, pid_file)
    try:
        assert host.stdout is not None
        with anyio.fail_after(30):
            line = await anyio.to_thread.run_sync(host.stdout.readline)
        assert line.strip() == b"ready"
        pgid = os.getpgid(await read_pid(pid_file))
        assert len(group_members(pgid)) >= 2
        host.send_signal(signal.SIGKILL)
        await anyio.to_thread.run_sync(host.wait)
        assert await wait_gone(pgid, 10) == []
    finally:
        if host.poll() is None:
            host.kill()
            await anyio.to_thread.run_sync(host.wait)
        leftover = pid_in(pid_file)
        for pid in group_members(leftover) if leftover is not None else []:
            os.kill(pid, signal.SIGKILL)


async def test_terminals_see_the_sessions_filtered_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "anthropic-key")
    monkeypatch.setenv("GITHUB_TOKEN", "gh-token")
    monkeypatch.setenv("HARMLESS", "1")
    pid_file = tmp_path / "terminal.pid"
    options = SessionOptions.in_dir(tmp_path).credentials(CredentialPolicy.OWN_ONLY).env_allow("GITHUB_TOKEN")
    async with opened(tmp_path, options) as (session, reader):
        await session.prompt(f"TERMLONG {pid_file}")
        assert text_of(await reader.turn()) == "left a terminal running"
        pid = await read_pid(pid_file)
        env = environ_of(pid)
    assert env["GITHUB_TOKEN"] == "gh-token" and env["HARMLESS"] == "1"
    assert "ANTHROPIC_API_KEY" not in env
