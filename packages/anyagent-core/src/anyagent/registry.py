"""What plugins register, and the typed ``register`` their hooks receive.

Kept apart from the loader (``_plugins``) so that ``hookspecs`` can name ``Register`` without
importing the module that imports it: ``hookspecs`` → ``registry`` ← ``_plugins`` → ``hookspecs``
is a chain, not a cycle.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from .installation import AgentInstallation, AgentProfile
from .values import DiagnosticInfo, DiagnosticLevel

if TYPE_CHECKING:
    import argparse

    from .seam import Adapter, AdapterFactory

__all__ = ["CliCommand", "DemoAgent", "PluginInfo", "PluginWarning", "Register", "Registry"]


class PluginWarning(UserWarning):
    """A plugin failed to load or registered something invalid; it was skipped."""


@attrs.frozen
class PluginInfo:
    """One loaded plugin: its name, distribution and version, and what it registered."""

    name: str
    distribution: str | None = None
    version: str | None = None
    wires: tuple[str, ...] = ()
    profiles: tuple[str, ...] = ()
    demos: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()


@attrs.frozen
class CliCommand:
    """A subcommand a plugin adds to the ``anyagent`` command (``anyagent NAME ...``).

    ``arguments(parser)`` adds the command's arguments to its ``argparse`` subparser (called when
    the command line is parsed, so keep imports there cheap); ``run(context)`` runs it with one
    ``anyagent.CommandContext`` and returns the exit status (0 success, 2 bad usage; see
    ``anyagent.cli``). ``help`` is the one-line summary ``anyagent --help`` lists; ``description``
    the longer text of ``anyagent NAME --help``.
    A name the core already uses (``run``, ``chat``, ...) or one registered before is refused with a
    warning; the first registration is kept.
    """

    name: str
    help: str
    # typed loosely here: the context names the Runtime, which loads the plugins that import this module
    run: Callable[..., Awaitable[int]]
    arguments: Callable[[argparse.ArgumentParser], None] | None = None
    description: str | None = None


@attrs.frozen
class DemoAgent:
    """A scripted agent a plugin offers to ``anyagent demo``: its real adapter, a fake agent process.

    ``installation(directory)`` writes what launches the scripted agent into ``directory`` (an
    empty scratch directory) and returns its ``AgentInstallation``, whose wire the same plugin
    registers; ``project(directory)`` writes the project the turn works on and returns its path.
    The demo shows ``title``, sends ``prompt``, streams the turn, then shows ``report(project)``
    when given (say, what is on disk now). The callables run in a worker thread when the demo
    runs, never at registration: a hook only describes.
    """

    name: str
    title: str
    prompt: str
    installation: Callable[[Path], AgentInstallation]
    project: Callable[[Path], Path]
    report: Callable[[Path], str] | None = None


class Register:
    """The typed registry a hook receives: ``register.adapter(cls)``, ``register.profile(p)``,
    ``register.demo(d)``, ``register.command(c)``."""

    def __init__(self, registry: Registry, plugin: str) -> None:
        self._registry = registry
        self._plugin = plugin

    def adapter(self, factory: AdapterFactory | type[Adapter], wire: str | None = None) -> None:
        """Register an adapter class (or a no-argument factory) for ``wire`` (default ``factory.wire``)."""
        name = wire if wire is not None else getattr(factory, "wire", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"adapter {factory!r} names no wire (set a `wire` class attribute)")
        if not callable(factory):
            raise TypeError(f"adapter {factory!r} is not callable")
        self._registry._add_adapter(self._plugin, name, factory)

    def profile(self, profile: AgentProfile) -> None:
        """Register a catalog profile."""
        if not isinstance(profile, AgentProfile):
            raise TypeError(f"expected an AgentProfile, got {type(profile).__name__}")
        self._registry._add_profile(self._plugin, profile)

    def demo(self, demo: DemoAgent) -> None:
        """Register a scripted agent for ``anyagent demo``."""
        if not isinstance(demo, DemoAgent):
            raise TypeError(f"expected a DemoAgent, got {type(demo).__name__}")
        self._registry._add_demo(self._plugin, demo)

    def command(self, command: CliCommand) -> None:
        """Register a subcommand of the ``anyagent`` command."""
        if not isinstance(command, CliCommand):
            raise TypeError(f"expected a CliCommand, got {type(command).__name__}")
        if not command.name or not command.name.replace("-", "").replace("_", "").isalnum():
            raise TypeError(f"command name {command.name!r} is not a word")
        self._registry._add_command(self._plugin, command)


@attrs.define
class Registry:
    """Everything the plugins registered: adapters by wire, profiles by id, demos by name, and
    what went wrong."""

    adapters: dict[str, AdapterFactory] = attrs.Factory(dict)
    profiles: dict[str, AgentProfile] = attrs.Factory(dict)
    demos: dict[str, DemoAgent] = attrs.Factory(dict)
    commands: dict[str, CliCommand] = attrs.Factory(dict)
    plugins: list[PluginInfo] = attrs.Factory(list)
    diagnostics: list[DiagnosticInfo] = attrs.Factory(list)
    explicit: dict[str, object] = attrs.Factory(dict)
    _wires_by: dict[str, list[str]] = attrs.Factory(dict)
    _profiles_by: dict[str, list[str]] = attrs.Factory(dict)
    _demos_by: dict[str, list[str]] = attrs.Factory(dict)
    _commands_by: dict[str, list[str]] = attrs.Factory(dict)
    _offered: set[str] = attrs.Factory(set)

    def _add_adapter(self, plugin: str, wire: str, factory: AdapterFactory) -> None:
        self._offered.add(plugin)
        if wire in self.adapters:
            if self.adapters[wire] is not factory:
                self.warn(f"plugin {plugin!r} registered wire {wire!r} again; the first registration is kept")
            return
        self.adapters[wire] = factory
        self._wires_by.setdefault(plugin, []).append(wire)

    def _add_profile(self, plugin: str, profile: AgentProfile) -> None:
        self._offered.add(plugin)
        if profile.id in self.profiles:
            if self.profiles[profile.id] != profile:
                self.warn(f"plugin {plugin!r} registered agent {profile.id!r} again; the first is kept")
            return
        self.profiles[profile.id] = profile
        self._profiles_by.setdefault(plugin, []).append(profile.id)

    def _add_demo(self, plugin: str, demo: DemoAgent) -> None:
        self._offered.add(plugin)
        if demo.name in self.demos:
            if self.demos[demo.name] != demo:
                self.warn(f"plugin {plugin!r} registered demo {demo.name!r} again; the first is kept")
            return
        self.demos[demo.name] = demo
        self._demos_by.setdefault(plugin, []).append(demo.name)

    def _add_command(self, plugin: str, command: CliCommand) -> None:
        self._offered.add(plugin)
        if command.name in self.commands:
            if self.commands[command.name] != command:
                self.warn(f"plugin {plugin!r} registered command {command.name!r} again; the first is kept")
            return
        self.commands[command.name] = command
        self._commands_by.setdefault(plugin, []).append(command.name)

    def warn(self, message: str) -> None:
        """Record a plugin problem as a warning and a diagnostic."""
        warnings.warn(message, PluginWarning, stacklevel=3)
        self.diagnostics.append(DiagnosticInfo(message, DiagnosticLevel.WARNING, "plugin"))

    def _info(self, name: str, distribution: str | None, version: str | None) -> PluginInfo:
        return PluginInfo(
            name=name,
            distribution=distribution,
            version=version,
            wires=tuple(self._wires_by.get(name, ())),
            profiles=tuple(self._profiles_by.get(name, ())),
            demos=tuple(self._demos_by.get(name, ())),
            commands=tuple(self._commands_by.get(name, ())),
        )
