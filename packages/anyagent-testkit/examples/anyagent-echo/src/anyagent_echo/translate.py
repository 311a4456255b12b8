"""The pure half of the adapter: one echo-agent frame in, one ``anyagent.seam`` event out.

No I/O, no state, never raises: fields are read with ``anyagent.jsonread`` (a missing or mistyped
field is a default, never a ``KeyError``), and a frame it cannot use becomes a ``Diagnostic`` with a
``DiagnosticCode`` and the raw frame, so nothing is lost and nothing crashes.

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
a known type, malformed   ``Content(Diagnostic)`` code ``bad_frame``
anything else             ``Content(Diagnostic)`` code ``unknown_frame``
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
    DiagnosticCode,
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
from anyagent import jsonread as j

__all__ = ["OPTIONS", "tool_update", "translate", "wire_decision"]

OPTIONS: Mapping[str, PermissionChoice] = {"allow": PermissionChoice.ALLOW_ONCE, "deny": PermissionChoice.DENY_ONCE}
"""The wire's permission options and the choice each one is."""

_STATUSES = {status.value: status for status in ToolStatus}
_KINDS = {kind.value: kind for kind in ToolKind}
_STOPS: Mapping[str, StopReason] = {"completed": Completed(), "cancelled": Cancelled(), "refused": Refused()}

Frame = Mapping[str, Any]


def translate(frame: Frame) -> seam.DriverEvent:
    """The seam event for one frame the agent wrote (a ``Diagnostic`` for anything unexpected)."""
    kind = j.text(frame.get("type"))
    handler = _HANDLERS.get(kind) if kind is not None else None
    if handler is None:
        return _diagnostic(
            f"echo-agent sent an unknown frame type {frame.get('type')!r}", DiagnosticCode.UNKNOWN_FRAME, frame
        )
    event = handler(frame)
    if event is None:
        return _diagnostic(f"echo-agent sent a {kind} frame without what it needs", DiagnosticCode.BAD_FRAME, frame)
    return event


def wire_decision(choice: PermissionChoice) -> str:
    """The echo-agent ``decision`` for an answer the engine already validated."""
    return "allow" if choice in (PermissionChoice.ALLOW_ONCE, PermissionChoice.ALLOW_ALWAYS) else "deny"


def tool_update(value: object) -> ToolUpdate | None:
    """A wire tool object as a whole ``ToolUpdate`` snapshot (None without an id or a known status)."""
    tool = j.obj(value)
    tool_id = j.nonempty(tool.get("id"))
    status = _STATUSES.get(j.text(tool.get("status"), ""))
    if tool_id is None or status is None:
        return None
    command = j.text(tool.get("command"))
    output = j.text(tool.get("output"))
    return ToolUpdate(
        id=tool_id,
        kind=_KINDS.get(j.text(tool.get("kind"), ""), ToolKind.OTHER),
        title=j.nonempty(tool.get("title"))
        or (f"Run `{command}`" if command else j.nonempty(tool.get("name")) or "tool"),
        status=status,
        input=ToolInput(command=command, arguments={"command": command} if command is not None else None),
        output=output[: seam.OUTPUT_CAP] if output is not None else None,
        raw=tool,
    )


# ---------------------------------------------------------------------------------------------
# one handler per frame type; None means the frame lacks what it needs


def _ack(frame: Frame) -> seam.DriverEvent | None:
    return seam.TurnAck()


def _text(frame: Frame) -> seam.DriverEvent | None:
    message, text = j.nonempty(frame.get("message")), j.text(frame.get("text"))
    return seam.Content(TextDelta(message, text)) if message is not None and text is not None else None


def _message_end(frame: Frame) -> seam.DriverEvent | None:
    message = j.nonempty(frame.get("message"))
    return seam.Content(MessageEnded(message)) if message is not None else None


def _tool(frame: Frame) -> seam.DriverEvent | None:
    tool = tool_update(frame.get("tool"))
    return seam.Content(ToolUpdated(tool)) if tool is not None else None


def _permission(frame: Frame) -> seam.DriverEvent | None:
    offered = [OPTIONS[o] for o in j.arr(frame.get("options")) if isinstance(o, str) and o in OPTIONS]
    request_id, tool = j.nonempty(frame.get("request")), tool_update(frame.get("tool"))
    if not offered or request_id is None or tool is None:
        return None
    return seam.Content(RequestOpened(PermissionRequest(request_id, tool, tuple(dict.fromkeys(offered)))))


def _done(frame: Frame) -> seam.DriverEvent | None:
    stop = j.text(frame.get("stop"), "")
    if stop == "failed":
        return seam.TurnEnd(Failed(j.nonempty(frame.get("error")) or "echo-agent failed the turn"))
    return seam.TurnEnd(_STOPS[stop]) if stop in _STOPS else None


def _error(frame: Frame) -> seam.DriverEvent | None:
    message = j.nonempty(frame.get("message")) or "an unnamed error"
    return _diagnostic(f"echo-agent refused a frame: {message}", DiagnosticCode.AGENT_ERROR, frame)


def _hello(frame: Frame) -> seam.DriverEvent | None:
    message = "echo-agent said hello again mid-session"
    return _diagnostic(message, DiagnosticCode.UNKNOWN_FRAME, frame, DiagnosticLevel.INFO)


_HANDLERS: Mapping[str, Callable[[Frame], seam.DriverEvent | None]] = {
    "ack": _ack,
    "text": _text,
    "message_end": _message_end,
    "tool": _tool,
    "permission": _permission,
    "done": _done,
    "error": _error,
    "hello": _hello,
}


def _diagnostic(
    message: str, code: str, frame: Frame, level: DiagnosticLevel = DiagnosticLevel.WARNING
) -> seam.DriverEvent:
    return seam.Content(Diagnostic(DiagnosticInfo(message, level, code, raw=dict(frame))))
