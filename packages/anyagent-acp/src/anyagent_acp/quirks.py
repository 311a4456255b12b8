"""Per-agent quirks as data: what a profile's ``quirks`` mapping may say, read into one typed value.

A profile never names code. It names *hooks* (small functions in the driver, listed in
``NOTIFICATION_HOOKS`` / ``REQUEST_HOOKS``) per vendor method, and flags the adapter checks. An
agent without a profile (``AgentInstallation.acp``) gets ``Quirks()``: plain ACP, no extensions.

Keys a profile's ``quirks`` may hold (all optional):

- ``notifications``: ``{method: hook}`` for vendor notifications (e.g. qwen's mode update).
- ``requests``: ``{method: hook}`` for vendor agent→client requests (e.g. cursor's questions).
- ``turn_end_notification``: a vendor notification that ends the running prompt (grok).
- ``mode_text_prefix``: an ``agent_message_chunk`` starting with it reports a mode change (gemini).
- ``read_missing_as_empty``: answer ``fs/read_text_file`` on a missing file with ``""`` (gemini 0.61).
- ``authenticate_on_open``: the ``authenticate`` method id run once per open (Antigravity's server).
- ``authenticate_unless_setting``: ``{"file": "~/...json", "key": "a.b"}`` — skip that
  ``authenticate`` when the agent's own settings file sets ``key`` (a dotted path, or the literal
  key); the file is read (bounded), never written. ``~`` is the launch environment's home.
- ``preflight``: ``{"args": [...]}`` — a side command run before the handshake; a non-zero exit
  means logged out (cursor's ``about``).
- ``estimate_context_usage``: end each turn with an estimated ``ContextUsage`` (cursor).
- ``effort_prompt``: ``{"levels": [...], "without": [models]}`` — ``effort`` is switched by a hidden
  ``/effort <level>`` prompt between turns (kiro).
- ``retry_spurious_cancel``: re-send a prompt once when it comes back ``cancelled`` with nothing
  said and no cancel of ours (kiro's cancel racing the next prompt).
- ``cancel_answers_first``: a cancel with permissions pending answers them ``cancelled`` and sends
  no ``session/cancel`` (the agent takes the answer as a denial and ends its turn); without one
  pending it sends ``session/cancel``, never while idle. Hermes 0.19 wedges when a
  ``session/cancel`` lands anywhere but inside a model call: beside a pending permission (either
  order) or while idle.
- ``wedged_reply``: ``{"prefix": ..., "bug": ...}`` — a prompt answered ``end_turn`` whose agent
  text starts with ``prefix`` means the agent is wedged (``bug`` names its bug): that turn and
  every later one fail (``Failed`` plus an ``agent_error`` diagnostic) instead of reading as
  completed; later prompts are not sent (hermes 0.19's "Queued for the next turn.").
- ``login_proven_by_session``: a session the agent opens proves it is logged in (it refuses
  ``session/new`` when logged out): ``open`` reports ``Authenticated`` and ``probe_auth`` stops
  after ``session/new``.
- ``env``: environment variables for the launch (strings), as defaults the caller's environment
  overrides; read by ``anyagent.toolkit.launch_env``, like every wire's profiles.
- ``root_env``: the same, only when running as root (claude bridge: IS_SANDBOX).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from anyagent import jsonread as j

__all__ = ["INFO_HOOKS", "NOTIFICATION_HOOKS", "REQUEST_HOOKS", "EffortPrompt", "Quirks", "WedgedReply"]

NOTIFICATION_HOOKS = frozenset(
    {
        "mode_update",  # {currentModeId} → the `mode` option
        "model_update",  # {currentModelId} → the `model` option
        "models_update",  # a first-class `models` state again (grok, after a switch)
        "model_changed",  # grok's session_notification {update: {sessionUpdate: model_changed, ...}}
        "commands",  # {commands: [{name, description, meta.hint}]} (kiro)
        "effort_metadata",  # {effort} (kiro's per-turn metadata)
        "cursor_todos",  # {todos: [{content|title, status}]} → PlanUpdated
        "cursor_task",  # {toolCallId, description, ...} → a subagent tool header
        "withdraw_request",  # {requestId} → the agent withdrew its own request ($/cancel_request)
        "auth_status",  # {authStatus: {kind, label, detail}} → the login (codex-acp 2.x)
    }
)
"""Named hooks a profile may bind to vendor notifications."""

INFO_HOOKS = frozenset(
    {"mode_update", "model_update", "models_update", "model_changed", "commands", "effort_metadata", "auth_status"}
)
"""The notification hooks that only change session info (``InfoState.apply_vendor``): applied
during the handshake too, so what an agent announces right after ``session/new`` is in ``open``'s
info."""

REQUEST_HOOKS = frozenset(
    {
        "cursor_question",  # cursor/ask_question → QuestionRequest
        "grok_question",  # _x.ai/ask_user_question → QuestionRequest
        "cursor_todos",  # cursor/update_todos sent as a request → PlanUpdated, answered {}
        "cursor_task",  # cursor/task sent as a request → tool header, answered {}
    }
)
"""Named hooks a profile may bind to vendor agent→client requests."""

_BUILTIN_NOTIFICATIONS = {"$/cancel_request": "withdraw_request", "_auth/status_update": "auth_status"}
"""Extensions every agent gets (codex-acp 2.6 withdraws its own requests and reports its login)."""


@attrs.frozen
class EffortPrompt:
    """Kiro's effort: levels offered, and the models that have none."""

    levels: tuple[str, ...] = ()
    without: frozenset[str] = frozenset()


@attrs.frozen
class WedgedReply:
    """The reply text that shows the agent is wedged, and the agent bug behind it."""

    prefix: str
    bug: str = "unknown"


def _str_map(value: Any) -> dict[str, str]:
    return {str(k): v for k, v in j.obj(value).items() if isinstance(v, str)}


def _hooks(value: Any, allowed: frozenset[str], builtin: Mapping[str, str]) -> dict[str, str]:
    hooks = dict(builtin)
    hooks.update({method: hook for method, hook in _str_map(value).items() if hook in allowed})
    return hooks


@attrs.frozen
class Quirks:
    """Everything the adapter reads from a profile's ``quirks`` (defaults: plain ACP)."""

    notifications: Mapping[str, str] = attrs.field(factory=lambda: dict(_BUILTIN_NOTIFICATIONS))
    requests: Mapping[str, str] = attrs.field(factory=dict)
    turn_end_notification: str | None = None
    mode_text_prefix: str | None = None
    read_missing_as_empty: bool = False
    authenticate_on_open: str | None = None
    authenticate_unless_setting: tuple[str, str] | None = None
    preflight_args: tuple[str, ...] = ()
    estimate_context_usage: bool = False
    effort_prompt: EffortPrompt | None = None
    retry_spurious_cancel: bool = False
    cancel_answers_first: bool = False
    login_proven_by_session: bool = False
    wedged_reply: WedgedReply | None = None

    @classmethod
    def read(cls, quirks: Mapping[str, Any] | None) -> Quirks:
        """Parse a profile's ``quirks`` mapping; unknown keys and wrong shapes are ignored."""
        data = dict(quirks or {})
        effort = j.obj(data.get("effort_prompt"))
        preflight = j.obj(data.get("preflight"))
        wedged = j.obj(data.get("wedged_reply"))
        wedged_prefix = j.text(wedged.get("prefix"))
        return cls(
            notifications=_hooks(data.get("notifications"), NOTIFICATION_HOOKS, _BUILTIN_NOTIFICATIONS),
            requests=_hooks(data.get("requests"), REQUEST_HOOKS, {}),
            turn_end_notification=j.text(data.get("turn_end_notification")),
            mode_text_prefix=j.text(data.get("mode_text_prefix")),
            read_missing_as_empty=j.flag(data.get("read_missing_as_empty")),
            authenticate_on_open=j.text(data.get("authenticate_on_open")),
            authenticate_unless_setting=_setting(data.get("authenticate_unless_setting")),
            preflight_args=tuple(a for a in j.arr(preflight.get("args")) if isinstance(a, str)),
            estimate_context_usage=j.flag(data.get("estimate_context_usage")),
            effort_prompt=(
                EffortPrompt(
                    tuple(v for v in j.arr(effort.get("levels")) if isinstance(v, str)),
                    frozenset(v for v in j.arr(effort.get("without")) if isinstance(v, str)),
                )
                if effort
                else None
            ),
            retry_spurious_cancel=j.flag(data.get("retry_spurious_cancel")),
            cancel_answers_first=j.flag(data.get("cancel_answers_first")),
            login_proven_by_session=j.flag(data.get("login_proven_by_session")),
            wedged_reply=(WedgedReply(wedged_prefix, j.text(wedged.get("bug"), "unknown")) if wedged_prefix else None),
        )


def _setting(value: object) -> tuple[str, str] | None:
    """``{"file": path, "key": dotted}`` -> ``(path, dotted)``; anything else None."""
    data = j.obj(value)
    file, key = j.nonempty(data.get("file")), j.nonempty(data.get("key"))
    return (file, key) if file is not None and key is not None else None
