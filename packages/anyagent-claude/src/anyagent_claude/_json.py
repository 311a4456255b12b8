"""Defensive readers for JSON frames: a frame of the wrong shape yields defaults, never an exception."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["as_bool", "as_dict", "as_int", "as_list", "as_str", "opt_str"]

_EMPTY: Mapping[str, Any] = {}


def as_dict(value: object) -> Mapping[str, Any]:
    """``value`` when it is a JSON object, else an empty mapping."""
    return value if isinstance(value, Mapping) else _EMPTY


def as_list(value: object) -> list[Any]:
    """``value`` when it is a JSON array, else an empty list."""
    return value if isinstance(value, list) else []


def as_str(value: object, default: str = "") -> str:
    """``value`` when it is a string, else ``default``."""
    return value if isinstance(value, str) else default


def opt_str(value: object) -> str | None:
    """``value`` when it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def as_int(value: object, default: int = 0) -> int:
    """``value`` as an int when it is a JSON number (not a bool), else ``default``."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value == value and abs(value) < 2**63:
        return int(value)
    return default


def as_bool(value: object) -> bool:
    """True only for the JSON ``true``."""
    return value is True
