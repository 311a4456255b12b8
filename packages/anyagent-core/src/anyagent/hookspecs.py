"""The plugin hooks (pluggy project ``anyagent``, entry-point group ``anyagent``).

A plugin is a module (or object) with ``@anyagent.hookimpl`` functions, named by an entry point::

    # pyproject.toml of a third-party package
    [project.entry-points.anyagent]
    myagent = "myagent_plugin"

    # myagent_plugin.py
    import anyagent

    @anyagent.hookimpl
    def anyagent_adapters(register):
        register.adapter(MyAdapter)

    @anyagent.hookimpl
    def anyagent_agents(register):
        register.profile(AgentProfile(id="myagent", name="My Agent", wire="mywire",
                                      executables=("myagent",), install_hint="pipx install myagent"))

    @anyagent.hookimpl                         # optional: a scripted agent for `anyagent demo`
    def anyagent_demos(register):
        register.demo(DemoAgent(name="myagent", title="my adapter against a scripted agent",
                                prompt="fix the bug", installation=write_launcher, project=write_project))

Hooks are synchronous and only register: they must not launch processes or do I/O. A hook that
raises or returns something else becomes a warning and a ``Diagnostic``, never a broken runtime.
Built-in adapters (the mock) are registered through these same hooks.

``Runtime(plugins=[myagent_plugin])`` loads exactly the given plugins; an adapter package given
instead of its plugin module (``Runtime(plugins=[myagent])``) stands for the entry points that
point into it (else its ``myagent.plugin`` submodule). A given plugin with no hooks at all raises
``InvalidConfiguration``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from .registry import Register

__all__ = ["hookimpl", "hookspec", "PROJECT"]

PROJECT = "anyagent"
"""The pluggy project name, and the entry-point group plugins are found in: `anyagent`."""
hookspec = pluggy.HookspecMarker(PROJECT)
"""Marks the hook specifications below (for core only; plugins implement them with `hookimpl`)."""
hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marks a plugin's hook implementations (`@anyagent.hookimpl def anyagent_agents(register): ...`)."""


@hookspec
def anyagent_adapters(register: Register) -> Iterable[Any] | None:
    """Register adapters: call ``register.adapter(cls_or_factory)`` or return a list of classes.

    Each adapter names the wire it speaks in its ``wire`` class attribute.
    """


@hookspec
def anyagent_agents(register: Register) -> Iterable[Any] | None:
    """Register catalog profiles: call ``register.profile(AgentProfile(...))`` or return a list."""


@hookspec
def anyagent_demos(register: Register) -> Iterable[Any] | None:
    """Offer scripted agents to ``anyagent demo``: call ``register.demo(DemoAgent(...))`` or return a list.

    A demo drives the plugin's real adapter against a fake agent process, so it needs nothing
    installed and no account. ``anyagent demo`` runs the first one registered (or the one named);
    without any it plays core's in-process mock.
    """


@hookspec
def anyagent_commands(register: Register) -> Iterable[Any] | None:
    """Add subcommands to the ``anyagent`` command: call ``register.command(CliCommand(...))`` or return a list.

    ::

        @anyagent.hookimpl
        def anyagent_commands(register):
            register.command(anyagent.CliCommand(name="hello", help="say hello", run=hello, arguments=args))

        def args(parser):                       # an argparse subparser of `anyagent hello`
            parser.add_argument("--name", default="world")

        async def hello(context):               # an anyagent.CommandContext: runtime, args, out
            context.out.line(f"hello {context.args.name}")
            return 0                            # the exit status

    The command line is parsed once every installed plugin has registered its commands, so a
    command's module is imported with its plugin: keep heavy imports inside ``run``. A name the
    core uses or another plugin took first is refused with a warning.
    """
