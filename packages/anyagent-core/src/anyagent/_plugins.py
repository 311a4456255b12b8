"""Plugin loading: entry points (group ``anyagent``) or explicit modules, into one registry.

Loading is lazy (first ``discover``/``open``), isolated per plugin (one broken plugin becomes a
warning and a ``Diagnostic``), and filtered by ``ANYAGENT_LOAD_PLUGINS`` (allow-list, comma
separated entry-point or distribution names; empty means none) and ``ANYAGENT_DISABLE_PLUGINS``
(deny-list).
"""

from __future__ import annotations

import functools
import inspect
import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from importlib import metadata
from typing import Any

import attrs
import pluggy

from . import hookspecs
from ._installation import AgentProfile
from ._types import DiagnosticInfo, DiagnosticLevel
from .seam import Adapter, AdapterFactory

__all__ = ["PluginInfo", "PluginWarning", "Register", "Registry", "load_registry"]

LOAD_ENV = "ANYAGENT_LOAD_PLUGINS"
DISABLE_ENV = "ANYAGENT_DISABLE_PLUGINS"


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


class Register:
    """The typed registry a hook receives: ``register.adapter(cls)``, ``register.profile(p)``."""

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


@attrs.define
class Registry:
    """Everything the plugins registered: adapters by wire, profiles by id, and what went wrong."""

    adapters: dict[str, AdapterFactory] = attrs.Factory(dict)
    profiles: dict[str, AgentProfile] = attrs.Factory(dict)
    plugins: list[PluginInfo] = attrs.Factory(list)
    diagnostics: list[DiagnosticInfo] = attrs.Factory(list)
    explicit: dict[str, object] = attrs.Factory(dict)
    _wires_by: dict[str, list[str]] = attrs.Factory(dict)
    _profiles_by: dict[str, list[str]] = attrs.Factory(dict)

    def _add_adapter(self, plugin: str, wire: str, factory: AdapterFactory) -> None:
        if wire in self.adapters:
            if self.adapters[wire] is not factory:
                self.warn(f"plugin {plugin!r} registered wire {wire!r} again; the first registration is kept")
            return
        self.adapters[wire] = factory
        self._wires_by.setdefault(plugin, []).append(wire)

    def _add_profile(self, plugin: str, profile: AgentProfile) -> None:
        if profile.id in self.profiles:
            if self.profiles[profile.id] != profile:
                self.warn(f"plugin {plugin!r} registered agent {profile.id!r} again; the first is kept")
            return
        self.profiles[profile.id] = profile
        self._profiles_by.setdefault(plugin, []).append(profile.id)

    def warn(self, message: str) -> None:
        """Record a plugin problem as a warning and a diagnostic."""
        warnings.warn(message, PluginWarning, stacklevel=3)
        self.diagnostics.append(DiagnosticInfo(message, DiagnosticLevel.WARNING, "plugin"))


def _names(value: str) -> set[str]:
    return {part.strip().lower() for part in value.split(",") if part.strip()}


def _entry_points() -> list[metadata.EntryPoint]:
    return sorted(metadata.entry_points(group=hookspecs.PROJECT), key=lambda ep: ep.name)


def _allowed(ep: metadata.EntryPoint, allow: set[str] | None, deny: set[str]) -> bool:
    dist = ep.dist.name.lower() if ep.dist is not None else ""
    names = {ep.name.lower(), dist, dist.replace("-", "_")}
    if names & deny:
        return False
    return allow is None or bool(names & allow)


def _call_impl(impl: Any, register: Register) -> Iterable[Any] | None:
    kwargs = {"register": register} if "register" in impl.argnames else {}
    result: Iterable[Any] | None = impl.function(**kwargs)
    return result


def load_registry(plugins: Sequence[object] | None = None, builtins: Sequence[object] | None = None) -> Registry:
    """Load core's built-in plugins (default: the mock adapter) then ``plugins`` (or, when None,
    every allowed entry point) into a registry."""
    if builtins is None:
        from . import _builtin

        builtins = [_builtin]
    registry = Registry()
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    loaded: list[tuple[str, object, str | None, str | None]] = []

    def add(name: str, plugin: object, dist: str | None, version: str | None) -> None:
        try:
            pm.register(plugin, name=name)
        except Exception as exc:  # pluggy validation, duplicate names
            registry.warn(f"plugin {name!r} could not be registered: {exc}")
            return
        loaded.append((name, plugin, dist, version))

    core_version = _version("anyagent-core")
    for index, plugin in enumerate(builtins):
        add("anyagent.builtin" if index == 0 else f"anyagent.builtin.{index}", plugin, "anyagent-core", core_version)
    if plugins is None:
        allow_raw = os.environ.get(LOAD_ENV)
        allow = _names(allow_raw) if allow_raw is not None else None
        deny = _names(os.environ.get(DISABLE_ENV, ""))
        for ep in _entry_points():
            if not _allowed(ep, allow, deny):
                continue
            try:
                module = ep.load()
            except Exception as exc:
                registry.warn(f"plugin {ep.name!r} failed to import: {type(exc).__name__}: {exc}")
                continue
            dist = ep.dist.name if ep.dist is not None else None
            version = ep.dist.version if ep.dist is not None else None
            add(ep.name, module, dist, version)
    else:
        for plugin in plugins:
            name = getattr(plugin, "__name__", None) or f"{type(plugin).__module__}.{type(plugin).__qualname__}"
            add(name, plugin, None, None)  # its distribution is looked up only when asked (slow)
            registry.explicit[name] = plugin

    for name, plugin, dist, version in loaded:
        register = Register(registry, name)
        for hook_name, method in (("anyagent_adapters", register.adapter), ("anyagent_agents", register.profile)):
            impls = [impl for impl in getattr(pm.hook, hook_name).get_hookimpls() if impl.plugin is plugin]
            for impl in impls:
                _run_hook(registry, name, hook_name, impl, register, method)
        if version is None and dist is not None:
            version = _version(dist)
        registry.plugins.append(
            PluginInfo(
                name=name,
                distribution=dist,
                version=version,
                wires=tuple(registry._wires_by.get(name, ())),
                profiles=tuple(registry._profiles_by.get(name, ())),
            )
        )
    unknown = [hook for hook in pm.hook.__dict__ if hook.startswith("anyagent_") and not hasattr(hookspecs, hook)]
    for hook in unknown:
        registry.warn(f"a plugin implements the unknown hook {hook!r}; it is ignored")
    return registry


def _run_hook(
    registry: Registry,
    plugin: str,
    hook_name: str,
    impl: Any,
    register: Register,
    method: Callable[[Any], None],
) -> None:
    try:
        returned = _call_impl(impl, register)
        if returned is None:
            return
        if isinstance(returned, (str, bytes)) or not isinstance(returned, Iterable):
            raise TypeError(f"{hook_name} must return a list or None, not {type(returned).__name__}")
        for item in returned:
            method(item)
    except Exception as exc:
        registry.warn(f"plugin {plugin!r} failed in {hook_name}: {type(exc).__name__}: {exc}")


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def describe(registry: Registry) -> list[PluginInfo]:
    """The registry's plugins, with the distribution of explicitly given plugins looked up."""
    infos = []
    for info in registry.plugins:
        plugin = registry.explicit.get(info.name)
        if plugin is not None and info.distribution is None:
            dist = _distribution_of(plugin)
            info = attrs.evolve(info, distribution=dist, version=_version(dist) if dist else None)
        infos.append(info)
    return infos


def _distribution_of(plugin: object) -> str | None:
    module = inspect.getmodule(plugin)
    top = (module.__name__ if module is not None else type(plugin).__module__).split(".")[0]
    packages = _packages().get(top)
    return packages[0] if packages else None


@functools.lru_cache(maxsize=1)
def _packages() -> Any:
    return metadata.packages_distributions()
