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
import threading
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


_repring = threading.local()


def _attrs_repr(self: object) -> str:
    """``Name(field=value!r, ...)`` as attrs writes it (``...`` for a value inside itself, a field's
    own ``repr=`` callable honoured), written once here instead of compiled for every class: the
    value classes are declared ``repr=False`` and get this from ``_shared_reprs``, which halves the
    source attrs compiles at import (measured: ~40% less CPU in class creation)."""
    active: set[int] = _repring.__dict__.setdefault("active", set())
    if id(self) in active:
        return "..."
    active.add(id(self))
    try:
        cls = type(self)
        fields = ", ".join(
            f"{field.name}={(field.repr if callable(field.repr) else repr)(getattr(self, field.name))}"
            for field in attrs.fields(cls)  # type: ignore[arg-type]
            if field.repr
        )
        return f"{cls.__qualname__.rsplit('>.', 1)[-1]}({fields})"
    finally:
        active.discard(id(self))


def _shared_reprs(namespace: Mapping[str, Any]) -> None:
    """Give every attrs class defined in the module ``namespace`` that has no ``__repr__`` of its
    own the shared ``_attrs_repr`` (call it at the end of a module whose classes say ``repr=False``)."""
    for value in list(namespace.values()):
        if (
            isinstance(value, type)
            and value.__module__ == namespace["__name__"]
            and attrs.has(value)
            and "__repr__" not in vars(value)
        ):
            value.__repr__ = _attrs_repr  # type: ignore[method-assign]


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
