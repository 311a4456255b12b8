"""anyagent-rs's mock-script format, played by ``anyagent.mock`` (``anyagent serve --mock FILE``).

The format is the rs mock's ``Script`` as JSON; every field is optional and an unknown one is
refused::

    {"turns": [[{"Emit": <EventKind>}, "AwaitAnswer", {"Sleep": 10},
                {"Repeat": {"times": 3, "steps": [...]}}, "Die", {"End": <StopReason>}]],
     "options": [<ConfigOption>], "steer": false, "steer_rejects": false, "steer_ack": true,
     "ignore_close": false, "stale_before_ack": false, "compact": false, "permissions": true,
     "buffer": 64, "deterministic": true, "deterministic_agent": true,
     "capabilities": ["Rollback"], "plan_usage": <PlanUsage>}

Event kinds, stop reasons and options are in the wire's JSON shape (``anyagent_server.wire``).
``Sleep`` is in milliseconds. ``Die`` ends the agent with exit status ``"9"`` and stderr
``mock died``. ``deterministic`` and ``deterministic_agent`` are accepted and have no effect
(anyagent's mock always plays deterministically).

Beyond the rs format (anyagent's mock has them): ``capabilities`` adds features the agent reports
(their wire names, ``"Rollback"``, ``"Subagents"``…); ``plan_usage`` is what ``plan_usage`` answers
for the agent (the wire's ``PlanUsage`` shape, ``fetched_at`` optional; without it the agent has no
plan usage); ``{"Child": {"parent_tool_id": "t1", "steps": [...]}}`` plays ``Emit`` and ``End`` steps
as the subagent of tool ``t1`` (its events carry ``turn_info.parent_tool_id``).
"""

from __future__ import annotations

import json
import math
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from anyagent import Capability, InvalidConfiguration, PlanUsage, PlanUsageWindow
from anyagent.mock import Script, Step

from . import wire

__all__ = ["load", "parse"]

_FLAGS = ("steer", "steer_rejects", "steer_ack", "ignore_close", "stale_before_ack", "compact", "permissions")
_IGNORED = ("deterministic", "deterministic_agent")
_KNOWN = {*_FLAGS, *_IGNORED, "turns", "options", "buffer", "capabilities", "plan_usage"}


def load(path: str | os.PathLike[str]) -> Script:
    """Read a mock script file; ``InvalidConfiguration`` naming the problem when it is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidConfiguration(f"cannot read mock script {path}: {exc}") from None
    return parse(data, str(path))


def parse(data: Any, name: str = "mock script") -> Script:
    """A mock script from its JSON data."""
    try:
        obj = wire._obj(data, "$")
        unknown = sorted(set(obj) - _KNOWN)
        if unknown:
            raise wire.WireError(f"unknown field(s) {', '.join(unknown)}", "$")
        flags: dict[str, Any] = {k: wire._bool(obj[k], f"$.{k}") for k in _FLAGS if k in obj}
        for k in _IGNORED:
            if k in obj:
                wire._bool(obj[k], f"$.{k}")
        options = tuple(
            wire.decode_config_option(o, f"$.options[{i}]")
            for i, o in enumerate(wire._list(obj.get("options", []), "$.options"))
        )
        buffer = wire._int(obj.get("buffer", 64), "$.buffer", minimum=1)
        capabilities = tuple(
            wire._enum_of(Capability, c, f"$.capabilities[{i}]")
            for i, c in enumerate(wire._list(obj.get("capabilities", []), "$.capabilities"))
        )
        plan = obj.get("plan_usage")
        plan_usage = None if plan is None else _plan_usage(plan, "$.plan_usage")
        script = Script(**flags, options=options, buffer=buffer, capabilities=capabilities, plan_usage=plan_usage)
        for i, turn in enumerate(wire._list(obj.get("turns", []), "$.turns")):
            here = f"$.turns[{i}]"
            script = script.turn([_step(s, f"{here}[{j}]") for j, s in enumerate(wire._list(turn, here))])
        return script
    except wire.WireError as exc:
        raise InvalidConfiguration(f"malformed mock script {name}: {exc.message}") from None


def _time(data: Any, path: str) -> datetime:
    obj = wire._obj(data, path)
    secs = wire._int(obj.get("secs_since_epoch"), f"{path}.secs_since_epoch")
    nanos = wire._int(obj.get("nanos_since_epoch", 0), f"{path}.nanos_since_epoch")
    return datetime.fromtimestamp(secs + nanos / 1e9, tz=timezone.utc)


def _plan_usage(data: Any, path: str) -> PlanUsage:
    obj = wire._obj(data, path)
    windows = []
    for i, w in enumerate(wire._list(obj.get("windows", []), f"{path}.windows")):
        here = f"{path}.windows[{i}]"
        item = wire._obj(w, here)
        used = item.get("used_percent_exact", item.get("used_percent"))
        if isinstance(used, bool) or not isinstance(used, (int, float)) or not math.isfinite(used):
            raise wire.WireError("expected a number", f"{here}.used_percent")
        resets = item.get("resets_at")
        windows.append(
            PlanUsageWindow(
                wire._str(item.get("label"), f"{here}.label"),
                float(used),
                None if resets is None else _time(resets, f"{here}.resets_at"),
            )
        )
    fetched = obj.get("fetched_at")
    return PlanUsage(
        plan=wire._opt_str(obj.get("plan"), f"{path}.plan"),
        windows=tuple(windows),
        fetched_at=None if fetched is None else _time(fetched, f"{path}.fetched_at"),
    )


def _step(data: Any, path: str, parent: str | None = None) -> Step:
    tagged = ("Emit", "End") if parent is not None else ("Emit", "End", "Sleep", "Repeat", "Child")
    units = () if parent is not None else ("AwaitAnswer", "Die")
    tag, body = wire._variant(data, path, units, tagged)
    if tag == "AwaitAnswer":
        return Step.await_answer()
    if tag == "Die":
        return Step.die("9")
    if tag == "Emit":
        return Step.emit(wire.decode_event_kind(body, f"{path}.Emit"), parent)
    if tag == "End":
        return Step.end(wire.decode_stop(body, f"{path}.End"), parent)
    if tag == "Child":
        child = wire._obj(body, f"{path}.Child")
        tool = wire._str(child.get("parent_tool_id"), f"{path}.Child.parent_tool_id")
        steps = wire._list(child.get("steps"), f"{path}.Child.steps")
        return Step.repeat(1, [_step(s, f"{path}.Child.steps[{i}]", tool) for i, s in enumerate(steps)])
    if tag == "Sleep":
        return Step.sleep(wire._int(body, f"{path}.Sleep") / 1000)
    spec = wire._obj(body, f"{path}.Repeat")
    times = wire._int(spec.get("times"), f"{path}.Repeat.times")
    steps = [
        _step(s, f"{path}.Repeat.steps[{i}]")
        for i, s in enumerate(wire._list(spec.get("steps"), f"{path}.Repeat.steps"))
    ]
    return Step.repeat(times, steps)
