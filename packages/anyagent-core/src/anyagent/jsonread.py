"""Tolerant readers for JSON that other programs wrote (``anyagent.jsonread``).

An agent's frames are untrusted: a field may be missing, ``null`` or of another type. Every
reader here takes any value and returns a value of the type it names, or a default; none raises.
Translators use them instead of ``frame["key"]`` so that a frame of an unexpected shape becomes
defaults (and, where it matters, a ``Diagnostic``), never an exception::

    from anyagent import jsonread as j

    update = j.obj(frame.get("update"))            # {} unless a JSON object
    text = j.text(update.get("text"))              # str or None
    title = j.text(update.get("title"), "")        # str, "" when absent
    name = j.nonempty(update.get("name"))          # str or None; "" counts as absent
    code = j.integer(error.get("code"))            # int or None (never a bool)
    tokens = j.integer(usage.get("input"), 0)      # int, 0 when absent
    model = j.path(init, "agentInfo", "version")   # nested lookup, None when any step is missing
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, overload

__all__ = ["arr", "flag", "integer", "nonempty", "number", "obj", "path", "text"]


def obj(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object (a dict), else an empty dict (a fresh one)."""
    if type(value) is dict:
        return value
    if isinstance(value, Mapping):
        return dict(value)
    return {}


def arr(value: object) -> list[Any]:
    """``value`` when it is a JSON array (a list), else an empty list."""
    return value if isinstance(value, list) else []


@overload
def text(value: object) -> str | None: ...
@overload
def text(value: object, default: str) -> str: ...
def text(value: object, default: str | None = None) -> str | None:
    """``value`` when it is a string (empty included), else ``default``."""
    return value if isinstance(value, str) else default


def nonempty(value: object) -> str | None:
    """``value`` when it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def flag(value: object) -> bool:
    """True only for the JSON ``true``."""
    return value is True


@overload
def integer(value: object) -> int | None: ...
@overload
def integer(value: object, default: int) -> int: ...
def integer(value: object, default: int | None = None) -> int | None:
    """``value`` as an int when it is a JSON number (not a bool; a finite float is truncated),
    else ``default``."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value == value and abs(value) < 2**63:
        return int(value)
    return default


def number(value: object) -> float | None:
    """``value`` as a float when it is a JSON number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def path(value: object, *keys: str) -> Any:
    """``value[k1][k2]…``, or None when a step is missing or not a JSON object."""
    current: Any = value
    for key in keys:
        if not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current
