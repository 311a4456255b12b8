"""Small readers for untrusted JSON values: every accessor returns a typed value or a default.

ACP frames come from other programs; nothing here raises on a wrong shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

JSONObject = dict[str, Any]


def obj(value: Any) -> JSONObject:
    """``value`` if it is a JSON object, else an empty dict."""
    return value if isinstance(value, dict) else {}


def arr(value: Any) -> list[Any]:
    """``value`` if it is a JSON array, else an empty list."""
    return value if isinstance(value, list) else []


def text(value: Any) -> str | None:
    """``value`` if it is a string, else None."""
    return value if isinstance(value, str) else None


def flag(value: Any) -> bool:
    """True only for the JSON ``true``."""
    return value is True


def integer(value: Any) -> int | None:
    """``value`` if it is an integer (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def number(value: Any) -> float | None:
    """``value`` as a float if it is a number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def path(value: Mapping[str, Any], *keys: str) -> Any:
    """``value[k1][k2]…`` or None when any step is missing or not an object."""
    current: Any = value
    for key in keys:
        if not isinstance(current, dict):
            return None
        current = current.get(key)
    return current
