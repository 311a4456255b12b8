"""Plugins: entry points, explicit modules, allow/deny env vars, broken plugins become warnings."""

from __future__ import annotations

import sys
import textwrap
import types
from pathlib import Path

import pytest

import anyagent
from anyagent import AgentProfile, PluginWarning, Runtime, SessionOptions
from anyagent.mock import MockAdapter

pytestmark = pytest.mark.anyio

GOOD = """
import anyagent
from anyagent.mock import MockAdapter

class EchoAdapter(MockAdapter):
    wire = "echo"

@anyagent.hookimpl
def anyagent_adapters(register):
    register.adapter(EchoAdapter)

@anyagent.hookimpl
def anyagent_agents():
    return [anyagent.AgentProfile(id="echo", name="Echo", wire="echo", executables=("echo-agent",),
                                  install_hint="pip install echo-agent")]
"""

BROKEN_IMPORT = "raise ImportError('this plugin is broken')\n"

BROKEN_HOOK = """
import anyagent

@anyagent.hookimpl
def anyagent_agents(register):
    raise RuntimeError("boom")

@anyagent.hookimpl
def anyagent_adapters():
    return 42
"""


def make_dist(site: Path, dist: str, module: str, source: str, version: str = "1.2.3") -> None:
    """Write a real (unpacked) distribution with an `anyagent` entry point onto ``site``."""
    (site / f"{module}.py").write_text(source)
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[anyagent]\n{module} = {module}\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    # hermetic: only this test's distributions load, whatever else is installed in the environment
    monkeypatch.setenv("ANYAGENT_LOAD_PLUGINS", "good-plug,broken-plug,hook-plug")
    monkeypatch.delenv("ANYAGENT_DISABLE_PLUGINS", raising=False)
    yield site
    for name in ("goodplug", "brokenplug", "hookplug"):
        sys.modules.pop(name, None)


def test_entry_point_plugins_register_adapters_and_profiles(site: Path) -> None:
    make_dist(site, "good-plug", "goodplug", GOOD)
    runtime = Runtime()
    registry = runtime.registry()
    assert "echo" in registry.adapters
    assert registry.profiles["echo"].name == "Echo"
    info = next(p for p in runtime.plugins() if p.name == "goodplug")
    assert (info.distribution, info.version, info.wires, info.profiles) == ("good-plug", "1.2.3", ("echo",), ("echo",))
    builtin = next(p for p in runtime.plugins() if p.name == "anyagent.builtin")
    assert builtin.wires == ("mock",)


def test_loading_is_lazy(site: Path) -> None:
    make_dist(site, "broken-plug", "brokenplug", BROKEN_IMPORT)
    runtime = Runtime()  # no warning yet: nothing is scanned at construction
    with pytest.warns(PluginWarning, match="brokenplug"):
        runtime.registry()


async def test_a_broken_plugin_is_a_warning_and_a_diagnostic_not_a_failure(site: Path) -> None:
    make_dist(site, "broken-plug", "brokenplug", BROKEN_IMPORT)
    make_dist(site, "hook-plug", "hookplug", BROKEN_HOOK)
    make_dist(site, "good-plug", "goodplug", GOOD)
    runtime = Runtime()
    with pytest.warns(PluginWarning) as caught:
        report = await runtime.discover()
    messages = [str(w.message) for w in caught]
    assert any("brokenplug" in m and "failed to import" in m for m in messages)
    assert any("hookplug" in m and "boom" in m for m in messages)
    assert any("hookplug" in m and "must return a list" in m for m in messages)
    assert [d.code for d in report.diagnostics].count("plugin") == 3
    assert "echo" in [m.id for m in report.missing]


def test_explicit_plugins_scan_nothing(site: Path) -> None:
    make_dist(site, "broken-plug", "brokenplug", BROKEN_IMPORT)
    module = types.ModuleType("inline_plugin")
    exec(textwrap.dedent(GOOD), module.__dict__)
    runtime = Runtime(plugins=[module])
    registry = runtime.registry()  # the broken entry point is never imported: no warning
    assert set(registry.profiles) == {"echo"}
    assert set(registry.adapters) == {"mock", "echo"}


def test_load_allow_list_and_deny_list(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_dist(site, "good-plug", "goodplug", GOOD)
    make_dist(site, "broken-plug", "brokenplug", BROKEN_IMPORT)
    monkeypatch.setenv("ANYAGENT_LOAD_PLUGINS", "good-plug")
    assert "echo" in Runtime().registry().profiles  # broken one not loaded: no warning raised
    monkeypatch.setenv("ANYAGENT_LOAD_PLUGINS", "")
    assert Runtime().registry().profiles == {}
    monkeypatch.setenv("ANYAGENT_LOAD_PLUGINS", "good-plug,broken-plug")
    monkeypatch.setenv("ANYAGENT_DISABLE_PLUGINS", "brokenplug, goodplug")
    names = [p.name for p in Runtime().plugins()]
    assert "goodplug" not in names and "brokenplug" not in names


def test_register_rejects_bad_values_as_warnings() -> None:
    class Plugin:
        @anyagent.hookimpl
        def anyagent_adapters(self, register: anyagent.Register) -> None:
            register.adapter(object)  # names no wire

        @anyagent.hookimpl
        def anyagent_agents(self, register: anyagent.Register) -> None:
            register.profile("not a profile")  # type: ignore[arg-type]

    with pytest.warns(PluginWarning) as caught:
        registry = Runtime(plugins=[Plugin()]).registry()
    assert len(caught) == 2
    assert registry.profiles == {}


def test_duplicate_registrations_keep_the_first() -> None:
    profile = AgentProfile(id="dup", name="Dup", wire="mock", executables=("dup",))

    class First:
        @anyagent.hookimpl
        def anyagent_agents(self) -> list[AgentProfile]:
            return [profile]

    class Second:
        @anyagent.hookimpl
        def anyagent_agents(self) -> list[AgentProfile]:
            return [AgentProfile(id="dup", name="Other", wire="mock", executables=("other",))]

    with pytest.warns(PluginWarning, match="registered agent 'dup' again"):
        registry = Runtime(plugins=[First(), Second()]).registry()
    assert registry.profiles["dup"].name == "Dup"


def test_unknown_hooks_are_warned_about() -> None:
    class Plugin:
        @anyagent.hookimpl
        def anyagent_frobnicate(self) -> None:
            return None

    with pytest.warns(PluginWarning, match="anyagent_frobnicate"):
        Runtime(plugins=[Plugin()]).registry()


async def test_a_third_party_wire_opens_sessions_through_the_engine(tmp_path: Path) -> None:
    module = types.ModuleType("inline_plugin")
    exec(textwrap.dedent(GOOD), module.__dict__)
    exe = tmp_path / "echo-agent"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    async with Runtime(plugins=[module]) as runtime:
        agent = anyagent.AgentInstallation.at("echo", exe)
        session, _events = await runtime.open(agent, SessionOptions.in_dir(tmp_path))
        async with session:
            assert session.info().details.version == "mock"
            assert isinstance(runtime.registry().adapters["echo"](), MockAdapter)
