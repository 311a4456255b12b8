"""Plugin loading: entry points (group ``anyagent``) or explicit plugins, into one registry.

Loading is lazy (first ``registry``/``discover``/``open``), isolated per scanned plugin (one
broken entry point becomes a warning and a ``Diagnostic``), and filtered by
``ANYAGENT_LOAD_PLUGINS`` (allow-list, comma separated entry-point or distribution names; empty
means none) and ``ANYAGENT_DISABLE_PLUGINS`` (deny-list).

A plugin (an entry point, or given explicitly: ``Runtime(plugins=[...])``) is a module, an object
or a class (instantiated once, with no arguments) with ``@anyagent.hookimpl`` functions; one given
explicitly may also be an adapter *package* (``anyagent_claude``): a module with no
hookimpls of its own stands for the ``anyagent`` entry points whose module is it or one of its
submodules, else for its conventional ``<package>.plugin`` submodule. Every given plugin must
register something: one that offers no hooks, only unknown ones, or hooks that failed or
returned nothing raises ``InvalidConfiguration`` naming it (with the warnings that explain why).
The app asked for exactly these plugins, so an empty one is a mistake to report, never zero
agents returned silently. Scanned entry points stay isolated: a broken one is only a warning.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
from collections.abc import Callable, Iterable, Sequence
from importlib import metadata
from types import ModuleType
from typing import Any

import attrs
import pluggy

from . import hookspecs
from .errors import InvalidConfiguration
from .registry import CliCommand, DemoAgent, PluginInfo, PluginWarning, Register, Registry

__all__ = ["CliCommand", "DemoAgent", "PluginInfo", "PluginWarning", "Register", "Registry", "load_registry"]

LOAD_ENV = "ANYAGENT_LOAD_PLUGINS"
DISABLE_ENV = "ANYAGENT_DISABLE_PLUGINS"
_HOOKS = ("anyagent_adapters", "anyagent_agents", "anyagent_demos", "anyagent_commands")


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


_Loaded = tuple[str, object, str | None, str | None]  # name, plugin, distribution, version


def _label(plugin: object) -> str:
    name = getattr(plugin, "__name__", None)
    return name if isinstance(name, str) else f"{type(plugin).__module__}.{type(plugin).__qualname__}"


def _instance(plugin: object) -> object:
    """A plugin named as a class (``pkg.plugin:TinyPlugin``, or ``Runtime(plugins=[TinyPlugin])``)
    stands for an instance of it: its hook methods take ``self``. An instance or a module is itself."""
    if isinstance(plugin, type):
        return plugin()
    return plugin


def _has_hookimpls(pm: pluggy.PluginManager, plugin: object) -> bool:
    """True when ``plugin`` has at least one ``@anyagent.hookimpl`` (known hook or not)."""
    try:
        names = dir(plugin)
    except Exception:
        return False
    return any(pm.parse_hookimpl_opts(plugin, name) is not None for name in names)


def _resolve(pm: pluggy.PluginManager, plugin: object) -> list[_Loaded]:
    """What one explicitly given plugin stands for: itself when it has hookimpls, else (a module)
    the entry points that point into it, else (a package) its ``.plugin`` submodule.
    ``InvalidConfiguration`` when none of these offers a hook, or one of them fails to import."""
    try:
        plugin = _instance(plugin)
    except Exception as exc:
        raise InvalidConfiguration(
            f"plugin class {plugin!r} failed to instantiate: {type(exc).__name__}: {exc}"
        ) from exc
    if _has_hookimpls(pm, plugin):
        return [(_label(plugin), plugin, None, None)]
    if not isinstance(plugin, ModuleType):
        raise InvalidConfiguration(f"{plugin!r} is not an anyagent plugin: it has no @anyagent.hookimpl functions")
    package = plugin.__name__
    found: list[_Loaded] = []
    for ep in _entry_points():
        if ep.module != package and not ep.module.startswith(package + "."):
            continue
        try:
            loaded = _instance(ep.load())
        except Exception as exc:
            raise InvalidConfiguration(
                f"plugin {package!r}: its entry point {ep.name!r} ({ep.value}) failed to import: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if _has_hookimpls(pm, loaded):
            dist = ep.dist.name if ep.dist is not None else None
            found.append((_label(loaded), loaded, dist, ep.dist.version if ep.dist is not None else None))
    if not found and hasattr(plugin, "__path__"):
        submodule = f"{package}.plugin"
        try:
            conventional = importlib.import_module(submodule)
        except ModuleNotFoundError as exc:
            if exc.name != submodule:
                raise InvalidConfiguration(f"plugin {submodule!r} failed to import: {exc}") from exc
        except Exception as exc:
            raise InvalidConfiguration(f"plugin {submodule!r} failed to import: {type(exc).__name__}: {exc}") from exc
        else:
            if _has_hookimpls(pm, conventional):
                found.append((submodule, conventional, None, None))
    if not found:
        raise InvalidConfiguration(
            f"{package!r} is not an anyagent plugin: it has no @anyagent.hookimpl functions, no "
            f"anyagent entry point names it or a submodule of it"
            + (f", and it has no {package}.plugin module" if hasattr(plugin, "__path__") else "")
        )
    return found


def load_registry(plugins: Sequence[object] | None = None, builtins: Sequence[object] | None = None) -> Registry:
    """Load core's built-in plugins (default: the mock adapter) then ``plugins`` (or, when None,
    every allowed entry point) into a registry.

    ``InvalidConfiguration`` when a given plugin registers nothing (see the module docstring)."""
    if builtins is None:
        from . import _builtin

        builtins = [_builtin]
    registry = Registry()
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    loaded: list[_Loaded] = []

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
    explicit: set[str] = set()
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
            try:
                module = _instance(module)  # an entry point may name a module, an instance or a class
            except Exception as exc:
                registry.warn(f"plugin {ep.name!r}: its class failed to instantiate: {type(exc).__name__}: {exc}")
                continue
            dist = ep.dist.name if ep.dist is not None else None
            version = ep.dist.version if ep.dist is not None else None
            add(ep.name, module, dist, version)
    else:
        resolved = [entry for plugin in plugins for entry in _resolve(pm, plugin)]
        seen: set[int] = set()
        for name, plugin, dist, version in resolved:
            if id(plugin) in seen:  # the package and its plugin module both given: load it once
                continue
            seen.add(id(plugin))
            add(name, plugin, dist, version)  # a distribution not known yet is looked up only when asked (slow)
            registry.explicit[name] = plugin
            explicit.add(name)

    for name, plugin, dist, version in loaded:
        mark = len(registry.diagnostics)
        for caller in pm.get_hookcallers(plugin) or ():
            if caller.name not in _HOOKS:
                registry.warn(f"plugin {name!r} implements the unknown hook {caller.name!r}; it is ignored")
        register = Register(registry, name)
        methods: dict[str, Callable[[Any], None]] = {
            "anyagent_adapters": register.adapter,
            "anyagent_agents": register.profile,
            "anyagent_demos": register.demo,
            "anyagent_commands": register.command,
        }
        for hook_name in _HOOKS:
            impls = [impl for impl in getattr(pm.hook, hook_name).get_hookimpls() if impl.plugin is plugin]
            for impl in impls:
                _run_hook(registry, name, hook_name, impl, register, methods[hook_name])
        if name in explicit and name not in registry._offered:
            problems = "; ".join(d.message for d in registry.diagnostics[mark:])
            raise InvalidConfiguration(
                f"plugin {name!r} registered nothing (no adapter, agent profile, demo or command)"
                + (f": {problems}" if problems else "")
            )
        if version is None and dist is not None:
            version = _version(dist)
        registry.plugins.append(registry._info(name, dist, version))
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
