"""The leaf values every other module builds on: the JSON alias, the freezing helpers, login
methods and diagnostics.

They live apart from ``_types`` so that ``_errors`` (``AuthRequired.login``) and
``_installation`` (profiles, the discovery report) can use them without importing ``_types``,
which itself names ``AgentInstallation``: the modules form a chain, not a cycle
(``_values`` ← ``_errors`` ← ``_installation`` ← ``_types``). Everything here is re-exported by
``_types`` and, where public, by ``anyagent``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Union

import attrs

__all__ = ["JSON", "DiagnosticInfo", "DiagnosticLevel", "EnvVarLogin", "LoginMethod", "TerminalLogin"]

JSON = Any
"""A JSON value as ``json.loads`` returns it."""

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not value:
        return _EMPTY
    if isinstance(value, MappingProxyType):
        return value
    return MappingProxyType(dict(value))


def _tuple(value: Iterable[Any]) -> tuple[Any, ...]:
    return value if isinstance(value, tuple) else tuple(value)


# ---------------------------------------------------------------------------------------------
# Login methods


@attrs.frozen
class TerminalLogin:
    """Run ``command`` in a terminal to log in (with ``env`` set, e.g. a config home)."""

    command: tuple[str, ...] = attrs.field(converter=_tuple)
    description: str = ""
    env: Mapping[str, str] = attrs.field(default=_EMPTY, converter=_frozen_mapping)


@attrs.frozen
class EnvVarLogin:
    """Set the environment variable ``name`` (an API key) before opening."""

    name: str
    description: str = ""


LoginMethod = Union[TerminalLogin, EnvVarLogin]


# ---------------------------------------------------------------------------------------------
# Diagnostics


class DiagnosticLevel(enum.Enum):
    """How much a diagnostic matters."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@attrs.frozen
class DiagnosticInfo:
    """A non-fatal oddity: ``code`` is a stable machine name, ``raw`` the frame that caused it."""

    message: str
    level: DiagnosticLevel = DiagnosticLevel.WARNING
    code: str | None = None
    raw: JSON = None
