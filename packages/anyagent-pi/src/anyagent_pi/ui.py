"""pi's extension UI dialogs (``extension_ui_request``) as anyagent requests, and their answers.

In: an ``extension_ui_request`` frame. Out: a ``Dialog`` — the ``PermissionRequest`` or
``QuestionRequest`` the engine shows, and how each answer (or a decline) is written back:

* ``select`` → one single-choice question (its options as choices); answered with ``value``.
* ``input`` / ``editor`` → one free-text question; answered with ``value``.
* ``confirm`` → a yes/no question, answered with ``confirmed``; when its title carries the
  permission gate's marker (``gate.MARKER``) it is a ``PermissionRequest`` for the tool call the
  message describes instead.
* ``notify`` → a ``Diagnostic``; ``setStatus``, ``setWidget``, ``setTitle``, ``set_editor_text``
  expect no answer and are dropped.
* anything else that carries an ``id`` is refused at once (``cancelled: true``), so pi never waits
  for an answer nobody will give.

Every dialog anyagent closes unanswered (a cancel, the turn's end) is answered
``{"cancelled": true}`` — pi's "dismissed".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from anyagent import (
    Answer,
    ChoicesAnswer,
    DiagnosticCode,
    DiagnosticInfo,
    DiagnosticLevel,
    PermissionAnswer,
    PermissionChoice,
    PermissionRequest,
    Question,
    QuestionChoice,
    QuestionRequest,
    QuestionsAnswer,
    TextAnswer,
    ToolStatus,
)
from anyagent import jsonread as j

from .gate import MARKER
from .translate import tool_update

__all__ = ["FIRE_AND_FORGET", "Dialog", "cancelled", "dialog_of", "notify_info"]

FIRE_AND_FORGET = frozenset({"setStatus", "setWidget", "setTitle", "set_editor_text", "notify"})
"""Methods pi sends without waiting for an answer."""

_YES, _NO = "yes", "no"


def cancelled(wire_id: str) -> dict[str, Any]:
    """The answer that dismisses dialog ``wire_id``."""
    return {"type": "extension_ui_response", "id": wire_id, "cancelled": True}


@attrs.frozen
class Dialog:
    """One open pi dialog: its wire id, method, the request the engine shows, and its options."""

    wire_id: str
    method: str
    request: PermissionRequest | QuestionRequest
    options: tuple[str, ...] = ()

    def answer(self, answer: Answer) -> dict[str, Any] | None:
        """The ``extension_ui_response`` for ``answer`` (None: an answer of the wrong kind)."""
        base: dict[str, Any] = {"type": "extension_ui_response", "id": self.wire_id}
        if isinstance(answer, PermissionAnswer):
            allowed = answer.choice in (PermissionChoice.ALLOW_ONCE, PermissionChoice.ALLOW_ALWAYS)
            return {**base, "confirmed": allowed}
        if not isinstance(answer, QuestionsAnswer) or not answer.answers:
            return None
        first = answer.answers[0]
        if self.method == "confirm":
            if isinstance(first, ChoicesAnswer):
                return {**base, "confirmed": _YES in first.ids}
            return None
        if isinstance(first, TextAnswer):
            return {**base, "value": first.value}
        if isinstance(first, ChoicesAnswer) and first.ids:
            try:
                return {**base, "value": self.options[int(first.ids[0])]}
            except (ValueError, IndexError):
                return None
        return None


def dialog_of(frame: Mapping[str, Any], request_id: str, *, gate: bool) -> Dialog | None:
    """The dialog a request frame opens (None: a method anyagent does not show, or no id)."""
    wire_id = j.nonempty(frame.get("id"))
    method = j.text(frame.get("method"), "")
    if wire_id is None:
        return None
    title = j.text(frame.get("title"), "") or method
    message = j.text(frame.get("message"), "")
    if method == "confirm" and gate and title.startswith(MARKER):
        call = j.obj(_json(message))
        tool = tool_update(
            j.text(call.get("toolCallId"), "") or wire_id,
            j.text(call.get("toolName"), "tool"),
            j.obj(call.get("input")),
            ToolStatus.PENDING,
        )
        allow_deny = (PermissionChoice.ALLOW_ONCE, PermissionChoice.DENY_ONCE)
        return Dialog(wire_id, method, PermissionRequest(request_id, tool, allow_deny, title[len(MARKER) :].strip()))
    if method == "confirm":
        yes_no = (QuestionChoice(_YES, "Yes"), QuestionChoice(_NO, "No"))
        question = Question("q0", _joined(title, message), None, yes_no, allows_free_text=False)
        return Dialog(wire_id, method, QuestionRequest(request_id, (question,)))
    if method == "select":
        options = tuple(str(option) for option in j.arr(frame.get("options")))
        choices = tuple(QuestionChoice(str(index), label) for index, label in enumerate(options))
        question = Question("q0", title, None, choices, allows_free_text=False)
        return Dialog(wire_id, method, QuestionRequest(request_id, (question,)), options)
    if method in ("input", "editor"):
        question = Question("q0", _joined(title, message), None, (), allows_free_text=True)
        return Dialog(wire_id, method, QuestionRequest(request_id, (question,)))
    return None


def notify_info(frame: Mapping[str, Any]) -> DiagnosticInfo:
    """A ``notify`` as a diagnostic (``notifyType`` info / warning / error picks the level)."""
    level = {"error": DiagnosticLevel.ERROR, "warning": DiagnosticLevel.WARNING}.get(
        j.text(frame.get("notifyType"), ""), DiagnosticLevel.INFO
    )
    return DiagnosticInfo(f"pi: {j.text(frame.get('message'), '')}", level, DiagnosticCode.AGENT_ERROR, dict(frame))


def _joined(title: str, message: str) -> str:
    return f"{title}\n{message}" if message and message != title else title


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return {}
