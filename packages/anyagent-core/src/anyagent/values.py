"""The leaf values every other module builds on: the JSON alias, login methods and diagnostics.

They live apart from ``anyagent.types`` so that ``anyagent.errors`` (``AuthRequired.login``) and
``anyagent.installation`` (profiles, the discovery report) can use them without importing
``anyagent.types``, which itself names ``AgentInstallation``: the modules form a chain, not a cycle
(``values`` ← ``errors`` ← ``installation`` ← ``types``). Everything here is re-exported by
``anyagent.types`` and by ``anyagent``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Union

import attrs

from ._frozen import _EMPTY, _frozen_mapping, _shared_reprs, _tuple

__all__ = ["JSON", "DiagnosticInfo", "DiagnosticLevel", "EnvVarLogin", "LoginMethod", "TerminalLogin"]

JSON = Any
"""A JSON value as ``json.loads`` returns it."""


# ---------------------------------------------------------------------------------------------
# Login methods


@attrs.frozen(repr=False)
class TerminalLogin:
    """Run ``command`` in a terminal to log in (with ``env`` set, e.g. a config home)."""

    command: tuple[str, ...] = attrs.field(converter=_tuple)
    description: str = ""
    env: Mapping[str, str] = attrs.field(default=_EMPTY, converter=_frozen_mapping)


@attrs.frozen(repr=False)
class EnvVarLogin:
    """Set the environment variable ``name`` (an API key) before opening."""

    name: str
    description: str = ""


LoginMethod = Union[TerminalLogin, EnvVarLogin]
"""One way to log an agent in: a `TerminalLogin` (a command a person runs) or an `EnvVarLogin` (a variable to set)."""


# ---------------------------------------------------------------------------------------------
# Diagnostics


class DiagnosticLevel(enum.Enum):
    """How much a diagnostic matters."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@attrs.frozen(repr=False)
class DiagnosticInfo:
    """A non-fatal oddity: ``code`` is a stable machine name, ``raw`` the frame that caused it."""

    message: str
    level: DiagnosticLevel = DiagnosticLevel.WARNING
    code: str | None = None
    raw: JSON = None


_shared_reprs(globals())
