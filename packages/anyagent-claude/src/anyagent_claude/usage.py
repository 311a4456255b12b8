"""Claude's ``get_usage`` answer as ``PlanUsage``: the plan and its quota windows.

Two shapes are read: the newer ``rate_limits.limits[]`` list (``kind``, ``group``, ``percent``,
``resets_at``, model ``scope``) and the older ``rate_limits.five_hour`` / ``seven_day`` objects
(``utilization``, ``resets_at``). An API-key login answers ``rate_limits_available: false``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from anyagent import PlanUsage, PlanUsageWindow
from anyagent import jsonread as j

__all__ = ["plan_usage"]

_KIND_LABELS = {"session": "5-hour", "weekly_all": "weekly"}
_OLD_WINDOWS = (
    ("five_hour", "5-hour"),
    ("seven_day", "weekly"),
    ("seven_day_opus", "weekly (Opus)"),
    ("seven_day_sonnet", "weekly (Sonnet)"),
)


def _when(value: object) -> datetime | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        try:
            return datetime.fromtimestamp(float(value), timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    text = j.nonempty(value)
    if text is None:
        return None
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def _percent(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
        return float(value)
    return None


def _limit_label(limit: Mapping[str, Any]) -> str:
    kind = j.text(limit.get("kind"), "")
    label = _KIND_LABELS.get(kind) or j.text(limit.get("group"), "") or kind or "limit"
    model = j.obj(j.obj(limit.get("scope")).get("model"))
    name = j.nonempty(model.get("display_name")) or j.nonempty(model.get("id"))
    return f"{label} ({name})" if name else label


def _windows(rate_limits: Mapping[str, Any]) -> list[PlanUsageWindow]:
    windows: list[PlanUsageWindow] = []
    for limit in j.arr(rate_limits.get("limits")):
        limit = j.obj(limit)
        percent = _percent(limit.get("percent"))
        if percent is not None:
            windows.append(PlanUsageWindow(_limit_label(limit), percent, _when(limit.get("resets_at"))))
    if windows:
        return windows
    for key, label in _OLD_WINDOWS:
        window = j.obj(rate_limits.get(key))
        percent = _percent(window.get("utilization"))
        if percent is not None:
            windows.append(PlanUsageWindow(label, percent, _when(window.get("resets_at"))))
    return windows


def plan_usage(body: Mapping[str, Any], now: datetime | None = None) -> PlanUsage | None:
    """The plan usage in a ``get_usage`` response body, or None when it reports no quota windows."""
    windows = _windows(j.obj(body.get("rate_limits")))
    if not windows:
        return None
    return PlanUsage(
        plan=j.nonempty(body.get("subscription_type")),
        windows=tuple(windows),
        fetched_at=now or datetime.now(timezone.utc),
    )
