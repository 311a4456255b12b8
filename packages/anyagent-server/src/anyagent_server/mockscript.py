"""anyagent-rs's mock-script format, played by ``anyagent.mock`` (``anyagent serve --mock FILE``).

The format is the rs mock's ``Script`` as JSON; every field is optional and an unknown one is
refused::

    {"turns": [[{"Emit": <EventKind>}, "AwaitAnswer", {"Sleep": 10},
                {"Repeat": {"times": 3, "steps": [...]}}, "Die", {"End": <StopReason>}]],
     "options": [<ConfigOption>], "steer": false, "steer_rejects": false, "steer_ack": true,
     "ignore_close": false, "stale_before_ack": false, "compact": false, "permissions": true,
     "buffer": 64, "deterministic": true, "deterministic_agent": true}

Event kinds, stop reasons and options are in the wire's JSON shape (``anyagent_server.wire``).
``Sleep`` is in milliseconds. ``Die`` ends the agent with exit status ``"9"`` and stderr
``mock died``. ``deterministic`` and ``deterministic_agent`` are accepted and have no effect
(anyagent's mock always plays deterministically).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from anyagent import InvalidConfiguration
from anyagent.mock import Script, Step

from . import wire

__all__ = ["load", "parse"]

_FLAGS = ("steer", "steer_rejects", "steer_ack", "ignore_close", "stale_before_ack", "compact", "permissions")
_IGNORED = ("deterministic", "deterministic_agent")
_KNOWN = {*_FLAGS, *_IGNORED, "turns", "options", "buffer"}


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
        script = Script(**flags, options=options, buffer=buffer)
        for i, turn in enumerate(wire._list(obj.get("turns", []), "$.turns")):
            here = f"$.turns[{i}]"
            script = script.turn([_step(s, f"{here}[{j}]") for j, s in enumerate(wire._list(turn, here))])
        return script
    except wire.WireError as exc:
        raise InvalidConfiguration(f"malformed mock script {name}: {exc.message}") from None


def _step(data: Any, path: str) -> Step:
    tag, body = wire._variant(data, path, ("AwaitAnswer", "Die"), ("Emit", "End", "Sleep", "Repeat"))
    if tag == "AwaitAnswer":
        return Step.await_answer()
    if tag == "Die":
        return Step.die("9")
    if tag == "Emit":
        return Step.emit(wire.decode_event_kind(body, f"{path}.Emit"))
    if tag == "End":
        return Step.end(wire.decode_stop(body, f"{path}.End"))
    if tag == "Sleep":
        return Step.sleep(wire._int(body, f"{path}.Sleep") / 1000)
    spec = wire._obj(body, f"{path}.Repeat")
    times = wire._int(spec.get("times"), f"{path}.Repeat.times")
    steps = [
        _step(s, f"{path}.Repeat.steps[{i}]")
        for i, s in enumerate(wire._list(spec.get("steps"), f"{path}.Repeat.steps"))
    ]
    return Step.repeat(times, steps)
