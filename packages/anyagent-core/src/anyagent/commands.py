"""What a plugin's subcommand receives: ``CommandContext`` (kept apart from ``registry``, whose
``CliCommand`` the plugin loader imports: the context names the ``Runtime``, which imports the loader)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    import argparse

    from ._render import Renderer
    from .runtime import Runtime

__all__ = ["CommandContext"]


@attrs.frozen
class CommandContext:
    """What a plugin's subcommand receives when it runs.

    ``runtime`` is the ``Runtime`` the command line asked for (every installed plugin, or the
    scripted mock with ``anyagent --mock SCRIPT``), already entered; ``args`` the parsed command
    line (the command's own arguments and the global ones: ``no_color``, ``mock``); ``out`` the
    renderer the built-in commands print with (``out.line(text)``, ``out.dim/bold/red/green/
    yellow(text)``; colour only on a terminal).
    """

    runtime: Runtime
    args: argparse.Namespace
    out: Renderer
