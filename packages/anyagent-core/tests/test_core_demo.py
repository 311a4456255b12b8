"""``anyagent demo`` runs what plugins registered through ``anyagent_demos``, else the mock.

Core knows no adapter package: a plugin here registers a scripted wire (the mock adapter playing
the demo script) and a ``DemoAgent`` for it, exactly as an adapter package does for its real wire.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

import anyagent
from anyagent import AgentInstallation, AgentProfile, DemoAgent, InvalidConfiguration, Runtime
from anyagent._demo import demo_script, run_demo
from anyagent._render import Renderer
from anyagent.mock import MockAdapter

pytestmark = pytest.mark.anyio


class ScriptedPlugin:
    """An adapter plugin in miniature: a wire, its agent profile, and a demo for it."""

    def __init__(self) -> None:
        self.scratch: list[Path] = []

    def installation(self, directory: Path) -> AgentInstallation:
        self.scratch.append(directory)
        exe = directory / "scripted-agent"
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
        return AgentInstallation.at("scripted", exe)

    @staticmethod
    def project(directory: Path) -> Path:
        (directory / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        return directory

    @staticmethod
    def report(project: Path) -> str:
        return f"files: {sorted(p.name for p in project.iterdir())}"

    @anyagent.hookimpl
    def anyagent_adapters(self, register: anyagent.Register) -> None:
        register.adapter(lambda: MockAdapter(demo_script()), wire="scripted")

    @anyagent.hookimpl
    def anyagent_agents(self) -> list[AgentProfile]:
        return [AgentProfile(id="scripted", name="Scripted", wire="scripted", executables=("scripted-agent",))]

    @anyagent.hookimpl
    def anyagent_demos(self) -> list[DemoAgent]:
        title = "the scripted wire's adapter against its agent"
        return [DemoAgent("scripted", title, "fix add()", self.installation, self.project, self.report)]


async def play(runtime: Runtime, **kwargs: Any) -> tuple[int, str]:
    buffer = io.StringIO()
    async with runtime:
        status = await run_demo(runtime, Renderer(buffer, color=False), auto=True, **kwargs)
    return status, buffer.getvalue()


async def test_a_demo_a_plugin_registered_runs_through_its_adapter() -> None:
    plugin = ScriptedPlugin()
    status, out = await play(Runtime(plugins=[plugin]))
    assert status == 0, out
    assert "anyagent demo — the scripted wire's adapter against its agent" in out
    assert "scripted-agent (a scripted agent process: no model, no account)" in out
    assert "> fix add()" in out
    assert "answered: allow once" in out and "— turn done" in out
    assert out.rstrip().endswith("files: ['calc.py']")  # the report ran on the project, after the turn
    assert "in-process mock" not in out
    assert [p.name for p in plugin.scratch] == ["bin"] and not plugin.scratch[0].exists()  # cleaned up


async def test_without_a_registered_demo_the_mock_plays() -> None:
    status, out = await play(Runtime(plugins=[]))
    assert status == 0, out
    assert "(in-process mock)" in out and "pip install anyagent-claude" in out
    assert "+    return a + b" in out and "— turn done" in out


async def test_a_demo_is_picked_by_name_and_mock_names_the_fallback() -> None:
    status, out = await play(Runtime(plugins=[ScriptedPlugin()]), name="mock")
    assert status == 0 and "(in-process mock)" in out
    status, out = await play(Runtime(plugins=[ScriptedPlugin()]), name="scripted")
    assert status == 0 and "> fix add()" in out


async def test_an_unknown_demo_name_is_invalid_configuration() -> None:
    with pytest.raises(InvalidConfiguration, match=r"no demo 'nope' \(offered: scripted, mock\)"):
        await play(Runtime(plugins=[ScriptedPlugin()]), name="nope")
