"""The plugin registers the adapter and the profile; discovery finds ``claude`` by the profile."""

from __future__ import annotations

from pathlib import Path

import pytest

import anyagent_claude.plugin
from anyagent import EnvVarLogin, InstallationSource, Runtime, TerminalLogin
from anyagent._plugins import load_registry
from anyagent_claude.adapter import ClaudeAdapter
from anyagent_claude.profile import PROFILE

pytestmark = pytest.mark.anyio


def test_the_entry_point_registers_the_wire_and_the_profile() -> None:
    registry = load_registry()  # scans the installed entry points, as Runtime() does
    assert isinstance(registry.adapters["claude"](), ClaudeAdapter)  # a factory: the module loads on use
    assert registry.profiles["claude"] == PROFILE
    assert any(plugin.distribution == "anyagent-claude" for plugin in registry.plugins)


def test_the_profile() -> None:
    assert (PROFILE.id, PROFILE.name, PROFILE.wire, PROFILE.executables) == (
        "claude",
        "Claude Code",
        "claude",
        ("claude",),
    )
    assert PROFILE.config_home_env == "CLAUDE_CONFIG_DIR"
    assert PROFILE.env_override == "ANYAGENT_CLAUDE_BIN"
    assert TerminalLogin(("claude", "auth", "login"), PROFILE.login[0].description) in PROFILE.login
    assert EnvVarLogin("ANTHROPIC_API_KEY", PROFILE.login[1].description) in PROFILE.login
    assert "--permission-prompt-tool" in PROFILE.args and "stdio" in PROFILE.args
    assert "~/.local/bin" in PROFILE.extra_dirs["any"] and "~/.claude/local" in PROFILE.extra_dirs["any"]
    assert PROFILE.install_hint == "npm install -g @anthropic-ai/claude-code"


async def test_discovery_finds_claude_in_a_known_install_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    local = tmp_path / ".local" / "bin"
    local.mkdir(parents=True)
    exe = local / "claude"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("ANYAGENT_CLAUDE_BIN", raising=False)
    monkeypatch.setenv("ANYAGENT_NO_LOGIN_SHELL", "1")
    async with Runtime(plugins=[anyagent_claude.plugin]) as runtime:
        agent = (await runtime.discover()).require("claude")
    assert agent.executable_path == exe and agent.source is InstallationSource.KNOWN_LOCATION
    assert agent.wire == "claude"


async def test_a_missing_claude_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("ANYAGENT_CLAUDE_BIN", raising=False)
    monkeypatch.setenv("ANYAGENT_NO_LOGIN_SHELL", "1")
    async with Runtime(plugins=[anyagent_claude.plugin]) as runtime:
        report = await runtime.discover()
    [missing] = [m for m in report.missing if m.id == "claude"]
    assert missing.install_hint == PROFILE.install_hint
    assert str(tmp_path / ".local" / "bin") in missing.searched
