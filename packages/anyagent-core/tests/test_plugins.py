"""Plugins: entry points, explicit modules, allow/deny env vars, broken plugins become warnings."""

from __future__ import annotations

import importlib
import sys
import textwrap
import types
import warnings
from pathlib import Path
from typing import Any

import attrs
import pytest

import anyagent
from anyagent import (
    AgentInstallation,
    AgentProfile,
    DemoAgent,
    InvalidConfiguration,
    PluginWarning,
    Runtime,
    SessionOptions,
)
from anyagent._builtin import mock_adapter
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


def make_dist(
    site: Path, dist: str, module: str, source: str, version: str = "1.2.3", entry_point: str | None = None
) -> None:
    """Write a real (unpacked) distribution with an `anyagent` entry point onto ``site``
    (``module`` may be dotted: its packages are created; the entry point names ``entry_point``,
    default ``module``)."""
    make_module(site, module, source)
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    target = entry_point or module
    (info / "entry_points.txt").write_text(f"[anyagent]\n{target.split('.')[0]} = {target}\n")


def make_module(site: Path, module: str, source: str) -> None:
    """Write ``module`` (dotted names become packages with an empty ``__init__``) onto ``site``."""
    *packages, leaf = module.split(".")
    folder = site
    for package in packages:
        folder = folder / package
        folder.mkdir(exist_ok=True)
        (folder / "__init__.py").touch()
    (folder / f"{leaf}.py").write_text(source)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    # hermetic: only this test's distributions load, whatever else is installed in the environment
    monkeypatch.setenv("ANYAGENT_LOAD_PLUGINS", "good-plug,broken-plug,hook-plug")
    monkeypatch.delenv("ANYAGENT_DISABLE_PLUGINS", raising=False)
    yield site
    for name in list(sys.modules):
        if name.split(".")[0] in {
            "goodplug",
            "brokenplug",
            "hookplug",
            "pkgplug",
            "convplug",
            "emptypkg",
            "classplug",
            "instplug",
        }:
            del sys.modules[name]


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


CLASS_PLUGIN = """
import anyagent

class EchoPlugin:  # the writing-an-adapter guide's shape: hook methods taking self
    @anyagent.hookimpl
    def anyagent_agents(self, register):
        register.profile(anyagent.AgentProfile(id="echo", name="Echo", wire="echo", executables=("echo-agent",),
                                               install_hint="pip install echo-agent"))

PLUGIN = EchoPlugin()
"""


@pytest.mark.parametrize(("dist", "target"), [("classplug", "EchoPlugin"), ("instplug", "PLUGIN")])
def test_an_entry_point_may_name_a_class_an_instance_or_a_module(
    site: Path, monkeypatch: pytest.MonkeyPatch, dist: str, target: str
) -> None:
    monkeypatch.setenv("ANYAGENT_LOAD_PLUGINS", dist)
    make_dist(site, dist, f"{dist}.plugin", CLASS_PLUGIN, entry_point=f"{dist}.plugin:{target}")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PluginWarning)  # before: "missing 1 required positional argument: 'self'"
        registry = Runtime().registry()
    assert registry.profiles["echo"].name == "Echo"
    assert registry.diagnostics == []


def test_an_explicit_plugin_may_be_a_class_and_a_class_that_fails_is_named(site: Path) -> None:
    make_module(site, "classplug.plugin", CLASS_PLUGIN)
    import classplug.plugin

    assert Runtime(plugins=[classplug.plugin.EchoPlugin]).registry().profiles["echo"].name == "Echo"

    class Broken:
        def __init__(self) -> None:
            raise RuntimeError("no config")

    with pytest.raises(InvalidConfiguration, match="failed to instantiate: RuntimeError: no config"):
        Runtime(plugins=[Broken]).registry()


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
            register.adapter(mock_adapter, wire="mock")  # the builtin's again: no conflict, but something registered
            register.adapter(object)  # names no wire

        @anyagent.hookimpl
        def anyagent_agents(self, register: anyagent.Register) -> None:
            register.profile("not a profile")  # type: ignore[arg-type]

        @anyagent.hookimpl
        def anyagent_demos(self, register: anyagent.Register) -> None:
            register.demo("not a demo")  # type: ignore[arg-type]

    with pytest.warns(PluginWarning) as caught:
        registry = Runtime(plugins=[Plugin()]).registry()
    assert len(caught) == 3
    assert registry.profiles == {} and registry.demos == {}
    assert set(registry.adapters) == {"mock"}


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

        @anyagent.hookimpl
        def anyagent_agents(self) -> list[AgentProfile]:
            return [AgentProfile(id="frob", name="Frob", wire="mock", executables=("frob",))]

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


# ---------------------------------------------------------------------------------------------
# what `Runtime(plugins=[...])` takes: a plugin module, a plugin object, an adapter package


class EchoPlugin:
    """A plugin object: hookimpls as methods."""

    @anyagent.hookimpl
    def anyagent_agents(self) -> list[AgentProfile]:
        return [AgentProfile(id="obj", name="Object", wire="mock", executables=("obj",))]


def test_a_plugin_module_and_a_plugin_object_load_as_given() -> None:
    module = types.ModuleType("inline_plugin")
    exec(textwrap.dedent(GOOD), module.__dict__)
    runtime = Runtime(plugins=[module, EchoPlugin()])
    assert set(runtime.registry().profiles) == {"echo", "obj"}
    names = [p.name for p in runtime.plugins()]
    assert names == ["anyagent.builtin", "inline_plugin", "test_plugins.EchoPlugin"]


def test_a_package_stands_for_the_entry_points_that_point_into_it(site: Path) -> None:
    # the entry point names a submodule that is not the conventional `.plugin`
    make_dist(site, "pkg-plug", "pkgplug.hooks", GOOD, version="4.5.6")
    make_dist(site, "broken-plug", "brokenplug", BROKEN_IMPORT)  # never scanned: no warning
    package = importlib.import_module("pkgplug")
    runtime = Runtime(plugins=[package])
    assert set(runtime.registry().profiles) == {"echo"}
    info = next(p for p in runtime.plugins() if p.name == "pkgplug.hooks")
    assert (info.distribution, info.version, info.wires) == ("pkg-plug", "4.5.6", ("echo",))


def test_a_package_without_an_entry_point_falls_back_to_its_plugin_module(site: Path) -> None:
    make_module(site, "convplug.plugin", GOOD)
    package = importlib.import_module("convplug")
    registry = Runtime(plugins=[package]).registry()
    assert set(registry.profiles) == {"echo"}
    assert [p.name for p in registry.plugins] == ["anyagent.builtin", "convplug.plugin"]


def test_a_package_and_its_plugin_module_given_together_load_once(site: Path) -> None:
    make_module(site, "convplug.plugin", GOOD)
    package = importlib.import_module("convplug")
    registry = Runtime(plugins=[package, importlib.import_module("convplug.plugin")]).registry()
    assert [p.name for p in registry.plugins] == ["anyagent.builtin", "convplug.plugin"]


def test_the_claude_package_loads_its_plugin_as_the_api_page_writes_it() -> None:
    anyagent_claude = pytest.importorskip("anyagent_claude")
    registry = Runtime(plugins=[anyagent_claude]).registry()
    assert "claude" in registry.adapters
    assert "claude" in registry.profiles


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda site: types.ModuleType("notaplugin"), "'notaplugin' is not an anyagent plugin"),
        (lambda site: object(), "is not an anyagent plugin"),
        (
            lambda site: (make_module(site, "emptypkg.tools", "X = 1\n"), importlib.import_module("emptypkg"))[1],
            "no emptypkg.plugin module",
        ),
    ],
    ids=["module", "object", "package"],
)
def test_a_module_with_no_plugin_is_invalid_configuration(site: Path, make: Any, named: str) -> None:
    runtime = Runtime(plugins=[make(site)])
    with pytest.raises(InvalidConfiguration, match=named):
        runtime.registry()
    with pytest.raises(InvalidConfiguration):  # every use says so, not only the first
        runtime.profiles()


def test_a_given_plugin_that_registers_nothing_is_invalid_configuration() -> None:
    class Empty:
        @anyagent.hookimpl
        def anyagent_agents(self) -> list[AgentProfile]:
            return []

    class Misspelled:
        @anyagent.hookimpl
        def anyagent_agent(self) -> list[AgentProfile]:
            return [AgentProfile(id="typo", name="Typo", wire="mock", executables=("typo",))]

    with pytest.raises(InvalidConfiguration, match=r"'test_plugins\..*Empty' registered nothing"):
        Runtime(plugins=[Empty()]).registry()
    with (
        pytest.warns(PluginWarning, match="unknown hook 'anyagent_agent'"),
        pytest.raises(InvalidConfiguration, match=r"registered nothing.*unknown hook 'anyagent_agent'"),
    ):
        Runtime(plugins=[Misspelled()]).registry()
    module = types.ModuleType("hookplug")
    exec(textwrap.dedent(BROKEN_HOOK), module.__dict__)
    with pytest.warns(PluginWarning), pytest.raises(InvalidConfiguration, match=r"'hookplug' registered nothing.*boom"):
        Runtime(plugins=[module]).registry()


def test_a_scanned_plugin_that_registers_nothing_is_no_error(site: Path) -> None:
    make_dist(
        site, "good-plug", "goodplug", "import anyagent\n\n@anyagent.hookimpl\ndef anyagent_agents():\n    return []\n"
    )
    assert "goodplug" in [p.name for p in Runtime().plugins()]


# ---------------------------------------------------------------------------------------------
# demos


def _echo_installation(directory: Path) -> AgentInstallation:
    return AgentInstallation.at("echo", directory / "echo-agent")


def _echo_project(directory: Path) -> Path:
    return directory


def _demo(name: str = "echo") -> DemoAgent:
    return DemoAgent(
        name=name,
        title="echo against a scripted agent",
        prompt="hi",
        installation=_echo_installation,
        project=_echo_project,
    )


def test_plugins_register_demos_through_a_hook() -> None:
    demo = _demo()

    class Plugin:
        @anyagent.hookimpl
        def anyagent_demos(self, register: anyagent.Register) -> None:
            register.demo(demo)

    class Returns:
        @anyagent.hookimpl
        def anyagent_demos(self) -> list[DemoAgent]:
            return [_demo("other"), demo]  # the same demo again is no conflict

    runtime = Runtime(plugins=[Plugin(), Returns()])
    assert runtime.registry().demos == {"echo": demo, "other": _demo("other")}
    assert [p.demos for p in runtime.plugins()] == [(), ("echo",), ("other",)]


def test_a_second_demo_with_the_same_name_keeps_the_first() -> None:
    class First:
        @anyagent.hookimpl
        def anyagent_demos(self) -> list[DemoAgent]:
            return [_demo()]

    class Second:
        @anyagent.hookimpl
        def anyagent_demos(self) -> list[DemoAgent]:
            return [attrs.evolve(_demo(), title="another")]

    with pytest.warns(PluginWarning, match="registered demo 'echo' again"):
        registry = Runtime(plugins=[First(), Second()]).registry()
    assert registry.demos["echo"].title == "echo against a scripted agent"
