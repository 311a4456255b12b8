"""The testkit's adapter conformance suite against anyagent-echo as a user installs it: the adapter
comes from the ``anyagent`` entry point and ``echo-agent`` from ``PATH`` (the console script)."""

from __future__ import annotations

import functools
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest

from anyagent import AgentInstallation, DiscoveryReport, InstallationSource, PermissionMode, Runtime, SessionOptions
from anyagent_echo.translate import translate
from anyagent_testkit.conformance import Launch, Scenario, pytest_suite

PROMPTS = {
    Scenario.TEXT: "hello there",
    Scenario.TOOL: "RUN echo from-the-tool-scenario",
    Scenario.PERMISSION: "RUN echo permitted",
    Scenario.CANCEL: "SLOW 200",
}

SAMPLE_FRAMES: list[dict[str, Any]] = [
    {"type": "hello", "protocol": 1, "version": "0.1.0", "tools": True},
    {"type": "ack", "turn": "t1"},
    {"type": "text", "turn": "t1", "message": "msg-1", "text": "You "},
    {"type": "message_end", "turn": "t1", "message": "msg-1"},
    {
        "type": "tool",
        "turn": "t1",
        "tool": {"id": "tool-2", "name": "shell", "kind": "execute", "title": "Run `ls`", "status": "completed"}
        | {"command": "ls", "output": "a\nb\n", "exit_code": 0},
    },
    {
        "type": "permission",
        "turn": "t1",
        "request": "perm-3",
        "tool": {"id": "tool-2", "name": "shell", "kind": "execute", "title": "Run `ls`", "status": "pending"},
        "options": ["allow", "deny"],
    },
    {"type": "done", "turn": "t1", "stop": "completed"},
    {"type": "done", "turn": "t1", "stop": "failed", "error": "boom"},
    {"type": "error", "message": "unknown frame type 'x'", "frame": {"type": "x"}},
]
"""Real echo-agent frames: the fuzzer mutates these into near misses."""


@functools.cache
def installed_echo_agent() -> AgentInstallation:
    """echo-agent found the way an app finds it: ``Runtime()`` loads this package's plugin through
    its entry point, and discovery looks for the profile's executable on ``PATH``.

    ``Subject.launch`` is synchronous, so the (async) scan runs on its own loop in a worker thread.
    """

    def scan() -> DiscoveryReport:
        return anyio.run(Runtime().discover)

    with ThreadPoolExecutor(1) as pool:
        report = pool.submit(scan).result(timeout=60)
    agent = report.require("echo")
    assert agent.source is InstallationSource.PATH, agent
    return agent


class EchoSubject:
    """How the conformance suite reaches echo-agent for each scenario."""

    name = "anyagent-echo"
    sample_frames = SAMPLE_FRAMES

    def translate(self, frame: dict[str, Any]) -> object:
        return translate(frame)

    def launch(self, scenario: Scenario, workdir: Path) -> Launch | None:
        options = SessionOptions.in_dir(workdir)
        if scenario is Scenario.TOOL:
            options = options.permission_mode(PermissionMode.AUTO_APPROVE)  # tools without asking
        # the turn after a cancel (CANCEL, and PERMISSION's cancel_mid_request) and after a setting
        follow_up = "hello again" if scenario in (Scenario.CANCEL, Scenario.PERMISSION, Scenario.TEXT) else None
        return Launch(Runtime(), installed_echo_agent(), options, PROMPTS.get(scenario, "hello"), follow_up)


test_conformance = pytest_suite(EchoSubject)


@pytest.mark.anyio
async def test_the_adapter_comes_from_the_entry_point_and_the_agent_from_path() -> None:
    runtime = Runtime()
    plugin = next(p for p in runtime.plugins() if p.name == "echo")
    assert (plugin.distribution, plugin.wires, plugin.profiles) == ("anyagent-echo", ("echo",), ("echo",))
    agent = (await runtime.discover()).require("echo")
    assert agent.source is InstallationSource.PATH
    assert agent.wire == "echo"
    assert agent.executable_path == Path(str(shutil.which("echo-agent")))


@pytest.mark.anyio
async def test_without_echo_agent_on_path_it_is_missing_with_the_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    report = await Runtime().discover()
    assert report.get("echo") is None
    missing = next(m for m in report.missing if m.id == "echo")
    assert missing.install_hint == "pip install anyagent-echo"
