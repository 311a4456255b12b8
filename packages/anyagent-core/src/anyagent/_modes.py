"""Portable ``mode`` names: one spelling of the common permission modes across agents.

Every agent names its modes its own way (Claude Code ``acceptEdits``, gemini ``autoEdit``, qwen
``auto-edit``, hermes ``accept_edits``). A profile maps its agent's own ids to the portable names
(``AgentProfile.modes``); ``mode_aliases`` adds those names to the ``mode`` option's choices as
``ConfigChoice.aliases``, so ``configure("mode", "accept-edits")`` is accepted wherever the agent
has such a mode, and the agent's own ids keep working. The configuration reports the agent's id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from .types import ConfigChoice

__all__ = ["PORTABLE_MODES", "describe_modes", "mode_aliases"]

PORTABLE_MODES: dict[str, str] = {
    "default": "the agent's normal mode: it asks before edits and commands it does not trust",
    "ask": "another spelling of `default`, unless the agent has an `ask` mode of its own",
    "accept-edits": "file edits go ahead without asking; commands still ask",
    "plan": "read and plan only, no edits",
    "bypass-permissions": "everything runs without asking (where the agent has such a mode)",
}
"""The portable names, with what each means."""


def _names(portable: str) -> tuple[str, ...]:
    return (portable, "ask") if portable == "default" else (portable,)


def mode_aliases(choices: Iterable[ConfigChoice], modes: Mapping[str, str]) -> tuple[ConfigChoice, ...]:
    """``choices`` of a ``mode`` option with the portable names of ``modes`` (own id → portable
    name) added as aliases. The agent's own ids win: a portable name that is also one of the
    choices' values (cursor's own ``ask``) stays that choice's; the first choice to claim a name
    keeps it."""
    offered = tuple(choices)
    taken = {choice.value for choice in offered}
    result = []
    for choice in offered:
        portable = modes.get(choice.value)
        names = [name for name in _names(portable) if name not in taken] if portable else []
        taken.update(names)
        extra = tuple(name for name in names if name not in choice.aliases)
        result.append(attrs.evolve(choice, aliases=(*choice.aliases, *extra)) if extra else choice)
    return tuple(result)


def describe_modes(modes: Mapping[str, str]) -> str:
    """``modes`` for a table: each portable name with the agent's own ids when they differ
    (```default`/`ask`, `accept-edits` (`autoEdit`), `plan```), in the portable names' order. An
    agent with an ``ask`` mode of its own (listed as ``"ask": "ask"``) keeps ``ask`` for it."""
    parts = []
    for portable in PORTABLE_MODES:
        if portable == "ask":
            continue  # a spelling of default, or the agent's own mode
        owns = [own for own, name in modes.items() if name == portable]
        if not owns:
            continue
        names = "/".join(f"`{name}`" for name in _names(portable) if name == portable or name not in modes)
        others = " or ".join(f"`{own}`" for own in owns if own != portable)
        parts.append(f"{names} ({others})" if others else names)
    return ", ".join(parts)
