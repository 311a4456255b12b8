"""Keeping what adapters hand the engine writable as JSON: every event must round-trip through
``anyagent.serialize``. Agents' frames are untrusted; a translator may copy a 600-deep object or a
non-finite number into an event. The engine passes ``raw`` payloads, extensions and numbers
through here at the adapter boundary."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

MAX_DEPTH = 32
"""Levels of nesting kept in a raw payload; anything deeper becomes a marker string."""

MAX_NODES = 10_000
"""Values kept in one raw payload; the rest becomes a marker string."""

_CUT = "…(cut: deeper or larger than anyagent keeps)"


def unsafe(value: Any, depth: int = 0) -> bool:
    """True when ``value`` is not plain JSON within the bounds (a cheap check before a rebuild)."""
    kind = type(value)
    if value is None or kind is str or kind is bool or kind is int:
        return False
    if kind is float:
        return not math.isfinite(value)
    if depth >= MAX_DEPTH:
        return True
    if kind is list or kind is tuple:
        return len(value) > MAX_NODES or any(unsafe(item, depth + 1) for item in value)
    if isinstance(value, Mapping):
        return len(value) > MAX_NODES or any(
            type(key) is not str or unsafe(item, depth + 1) for key, item in value.items()
        )
    return True


def safe(value: Any) -> Any:
    """``value`` as plain JSON within the bounds: non-finite floats → None, other objects → their
    repr (cut), nesting past ``MAX_DEPTH`` or values past ``MAX_NODES`` → a marker string."""
    if not unsafe(value):
        return value
    budget = [MAX_NODES]
    return _rebuild(value, 0, budget)


def _rebuild(value: Any, depth: int, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        return _CUT
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth >= MAX_DEPTH:
        return _CUT
    if isinstance(value, (list, tuple)):
        return [_rebuild(item, depth + 1, budget) for item in value]
    if isinstance(value, Mapping):
        return {str(key): _rebuild(item, depth + 1, budget) for key, item in value.items()}
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "…"
