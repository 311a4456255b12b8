"""The pure half of the adapter: one echo-agent frame in, one ``anyagent.seam`` event out.

No I/O, no state, never raises: a frame it does not understand (unknown ``type``, a missing or
mistyped field) becomes a ``Diagnostic`` carrying the raw frame, so nothing is lost and nothing
crashes. The driver sends whatever comes out to the engine as is.

========================  ===============================================================
echo-agent frame          seam event
========================  ===============================================================
``ack``                   ``TurnAck()``
``text``                  ``Content(TextDelta(message, text))``
``message_end``           ``Content(MessageEnded(message))``
``tool``                  ``Content(ToolUpdated(ToolUpdate))``: the whole snapshot
``permission``            ``Content(RequestOpened(PermissionRequest))``
``done``                  ``TurnEnd(Completed() | Cancelled() | Failed(error) | Refused())``
``error``                 ``Content(Diagnostic)`` code ``agent_error``
anything else             ``Content(Diagnostic)`` code ``unknown_frame`` / ``bad_frame``
========================  ===============================================================

A permission answer goes back as ``decision``: ``"allow"`` for ``ALLOW_*``, ``"deny"`` for
``DENY_*`` (``wire_decision``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from anyagent import (
    Cancelled,
    Completed,
    Diagnostic,
    DiagnosticInfo,
    DiagnosticLevel,
    Failed,
    MessageEnded,
    PermissionChoice,
    PermissionRequest,
    Refused,
    RequestOpened,
    StopReason,
    TextDelta,
    ToolInput,
    ToolKind,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
    seam,
)

__all__ = ["OPTIONS", "translate", "tool_update", "wire_decision"]

OPTIONS: Mapping[str, PermissionChoice] = {"allow": PermissionChoice.ALLOW_ONCE, "deny": PermissionChoice.DENY_ONCE}
"""The wire's permission options and the choice each one is."""

_STATUSES = {status.value: status for status in ToolStatus}
_KINDS = {kind.value: kind for kind in ToolKind}


class _Malformed(Exception):
    """A known frame type with a missing or mistyped field."""


def translate(frame: Mapping[str, Any]) -> seam.DriverEvent:
    """The seam event for one frame the agent wrote (a ``Diagnostic`` for anything unexpected)."""
    kind = frame.get("type")
    handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
    if handler is None:
        return _diagnostic(f"echo-agent sent an unknown frame type {kind!r}", "unknown_frame", frame)
    try:
        return handler(frame)
    except _Malformed as exc:
        return _diagnostic(f"echo-agent sent a malformed {kind} frame: {exc}", "bad_frame", frame)


def wire_decision(choice: PermissionChoice) -> str:
    """The echo-agent ``decision`` for an answer the engine already validated."""
    return "allow" if choice in (PermissionChoice.ALLOW_ONCE, PermissionChoice.ALLOW_ALWAYS) else "deny"


def tool_update(value: Any) -> ToolUpdate:
    """A wire tool object as a whole ``ToolUpdate`` snapshot (``_Malformed`` if it is not one)."""
    tool = _object(value, "tool")
    command = _optional_text(tool, "command")
    output = _optional_text(tool, "output")
    title = _optional_text(tool, "title") or (f"Run `{command}`" if command else None)
    return ToolUpdate(
        id=_text(tool, "id"),
        kind=_kind(tool),
        title=title or _optional_text(tool, "name") or "tool",
        status=_status(tool),
        input=ToolInput(command=command, arguments={"command": command} if command is not None else None),
        output=output[: seam.OUTPUT_CAP] if output is not None else None,
        raw=tool,
    )


# ---------------------------------------------------------------------------------------------
# one handler per frame type


def _ack(frame: Mapping[str, Any]) -> seam.DriverEvent:
    return seam.TurnAck()


def _text_delta(frame: Mapping[str, Any]) -> seam.DriverEvent:
    return seam.Content(TextDelta(_text(frame, "message"), _text(frame, "text", empty=True)))


def _message_end(frame: Mapping[str, Any]) -> seam.DriverEvent:
    return seam.Content(MessageEnded(_text(frame, "message")))


def _tool(frame: Mapping[str, Any]) -> seam.DriverEvent:
    return seam.Content(ToolUpdated(tool_update(frame.get("tool"))))


def _permission(frame: Mapping[str, Any]) -> seam.DriverEvent:
    offered = frame.get("options")
    if not isinstance(offered, list):
        raise _Malformed("'options' is not a list")
    choices = tuple(dict.fromkeys(OPTIONS[o] for o in offered if isinstance(o, str) and o in OPTIONS))
    if not choices:
        raise _Malformed(f"no option it offers is one of {sorted(OPTIONS)}")
    request = PermissionRequest(_text(frame, "request"), tool_update(frame.get("tool")), choices)
    return seam.Content(RequestOpened(request))


def _done(frame: Mapping[str, Any]) -> seam.DriverEvent:
    return seam.TurnEnd(_stop(frame))


def _error(frame: Mapping[str, Any]) -> seam.DriverEvent:
    message = frame.get("message")
    text = message if isinstance(message, str) and message else "an unnamed error"
    return _diagnostic(f"echo-agent refused a frame: {text}", "agent_error", frame)


def _hello(frame: Mapping[str, Any]) -> seam.DriverEvent:
    return _diagnostic("echo-agent said hello again mid-session", "unexpected_hello", frame, DiagnosticLevel.INFO)


_HANDLERS: Mapping[str, Callable[[Mapping[str, Any]], seam.DriverEvent]] = {
    "ack": _ack,
    "text": _text_delta,
    "message_end": _message_end,
    "tool": _tool,
    "permission": _permission,
    "done": _done,
    "error": _error,
    "hello": _hello,
}


# ---------------------------------------------------------------------------------------------
# field readers: each raises _Malformed instead of KeyError/TypeError


def _stop(frame: Mapping[str, Any]) -> StopReason:
    stop = frame.get("stop")
    if stop == "completed":
        return Completed()
    if stop == "cancelled":
        return Cancelled()
    if stop == "refused":
        return Refused()
    if stop == "failed":
        error = frame.get("error")
        return Failed(error if isinstance(error, str) and error else "echo-agent failed the turn")
    raise _Malformed(f"unknown stop {stop!r}")


def _kind(tool: Mapping[str, Any]) -> ToolKind:
    kind = tool.get("kind")
    return _KINDS.get(kind, ToolKind.OTHER) if isinstance(kind, str) else ToolKind.OTHER


def _status(tool: Mapping[str, Any]) -> ToolStatus:
    status = tool.get("status")
    found = _STATUSES.get(status) if isinstance(status, str) else None
    if found is None:
        raise _Malformed(f"unknown tool status {status!r}")
    return found


def _object(value: Any, name: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _Malformed(f"'{name}' is not an object")
    return value


def _text(frame: Mapping[str, Any], key: str, *, empty: bool = False) -> str:
    value = frame.get(key)
    if not isinstance(value, str) or (not value and not empty):
        raise _Malformed(f"'{key}' is not a {'' if empty else 'non-empty '}string")
    return value


def _optional_text(frame: Mapping[str, Any], key: str) -> str | None:
    value = frame.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Malformed(f"'{key}' is not a string")
    return value


def _diagnostic(
    message: str, code: str, frame: Mapping[str, Any], level: DiagnosticLevel = DiagnosticLevel.WARNING
) -> seam.DriverEvent:
    return seam.Content(Diagnostic(DiagnosticInfo(message, level, code, raw=dict(frame))))
