"""Codex's settings as ``ConfigOption``s: ``model`` and ``effort`` from the catalog codex reports
(``model/list``), ``fast`` where the model lists codex's fast service tier (id ``priority``, named
"Fast"; the model request carries it as ``service_tier``; null turns it off), ``sandbox`` and
``mode`` (the approval policy, or ``plan``: codex's Plan collaboration mode). All are live: codex
takes them per turn (``turn/start`` overrides that stick for the turns after), so ``configure`` only
changes what the next ``turn/start`` carries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from anyagent import BooleanKind, ConfigChoice, ConfigOption, ConfigValue, SelectKind
from anyagent import jsonread as j
from anyagent.toolkit import mode_aliases

from .profile import PROFILE

__all__ = ["FAST_TIERS", "MODES", "PLAN_MODE", "SANDBOXES", "Settings"]

SANDBOXES: Mapping[str, str] = {
    "read-only": "readOnly",
    "workspace-write": "workspaceWrite",
    "danger-full-access": "dangerFullAccess",
}
"""Our ``sandbox`` values (codex's ``SandboxMode`` spelling) → the ``SandboxPolicy`` type."""

MODES: tuple[tuple[str, str], ...] = (
    ("untrusted", "Ask before anything but trusted reads"),
    ("on-request", "The model asks when it needs to leave the sandbox"),
    ("never", "Never ask; failures go back to the model"),
    ("plan", "Plan mode: explore read-only, ask questions, propose a plan; no edits"),
)
"""The approval policies codex takes per thread and per turn (``AskForApproval``), and Plan mode."""

PLAN_MODE = "plan"
"""The ``mode`` that is codex's Plan collaboration mode (``collaborationMode`` on ``turn/start``;
its ``request_user_input`` tool asks questions), not an approval policy: the policy stays."""

FAST_TIERS = ("priority", "fast")
"""Ids of codex's fast service tier: catalog models list ``priority`` (named "Fast"); ``fast`` is the
legacy id (the deprecated ``additionalSpeedTiers``), which codex 0.171.0 still maps to ``priority``."""


def mode_choices() -> tuple[ConfigChoice, ...]:
    """The ``mode`` choices, with the portable names of ``PROFILE.modes`` as aliases
    (``default``/``ask`` → ``on-request``, ``bypass-permissions`` → ``never``)."""
    return mode_aliases((ConfigChoice(value, value, description) for value, description in MODES), PROFILE.modes)


def own_mode(value: str) -> str:
    """Codex's own approval policy for a portable mode name; any other value as it is."""
    return SelectKind(mode_choices()).resolve(value) or value


@attrs.define
class Settings:
    """What the session runs with, and what the next ``turn/start`` must change."""

    models: list[dict[str, Any]] = attrs.Factory(list)
    model: str | None = None
    effort: str | None = None
    fast: bool = False
    sandbox: str | None = None
    mode: str | None = None
    planning: bool = False  # whether codex runs the thread in Plan mode
    pending: dict[str, ConfigValue] = attrs.Factory(dict)

    def adopt_thread(self, result: Mapping[str, Any]) -> None:
        """Take the model, effort, sandbox and approval policy a ``thread/*`` result reports."""
        self.model = j.nonempty(result.get("model")) or self.model
        self.effort = j.nonempty(result.get("reasoningEffort")) or self.effort
        self.fast = j.text(result.get("serviceTier")) in FAST_TIERS
        policy = j.obj(result.get("sandbox")).get("type")
        for mode, kind in SANDBOXES.items():
            if policy == kind:
                self.sandbox = mode
        approval = result.get("approvalPolicy")
        if isinstance(approval, str):
            self.mode = approval
        if j.text(j.obj(result.get("collaborationMode")).get("mode")) == PLAN_MODE:
            self.planning = True
            self.mode = PLAN_MODE

    def _model(self) -> dict[str, Any]:
        for model in self.models:
            if self.model in (model.get("model"), model.get("id")):
                return model
        return {}

    def efforts(self) -> list[ConfigChoice]:
        """The reasoning efforts the current model offers."""
        choices = []
        for option in j.arr(self._model().get("supportedReasoningEfforts")):
            value = j.nonempty(j.obj(option).get("reasoningEffort"))
            if value is not None:
                choices.append(ConfigChoice(value, value, j.nonempty(j.obj(option).get("description"))))
        return choices

    def fast_tier(self) -> str | None:
        """The id of the current model's fast service tier (None: it has none)."""
        model = self._model()
        for tier in j.arr(model.get("serviceTiers")):
            tier_id = j.nonempty(j.obj(tier).get("id"))
            if tier_id in FAST_TIERS or (tier_id and j.text(j.obj(tier).get("name"), "").lower() == "fast"):
                return tier_id
        return "fast" if "fast" in j.arr(model.get("additionalSpeedTiers")) else None

    def offers_fast(self) -> bool:
        """True when the current model lists a fast service tier."""
        return self.fast_tier() is not None

    def options(self) -> tuple[ConfigOption, ...]:
        """The options to report, rebuilt for the current model."""
        models = [
            ConfigChoice(value, j.text(model.get("displayName"), value), j.nonempty(model.get("description")))
            for model in self.models
            if (value := j.nonempty(model.get("model")) or j.nonempty(model.get("id")))
            and not j.flag(model.get("hidden"))
        ]
        if self.model and not any(choice.value == self.model for choice in models):
            models.insert(0, ConfigChoice(self.model, self.model))
        options = [ConfigOption("model", "Model", SelectKind(models), self.model, category="model")]
        efforts = self.efforts()
        if efforts:
            current = self.effort or j.nonempty(self._model().get("defaultReasoningEffort"))
            options.append(
                ConfigOption("effort", "Reasoning effort", SelectKind(efforts), current, category="thought_level")
            )
        if self.offers_fast():
            options.append(ConfigOption("fast", "Fast mode", BooleanKind(), self.fast))
        sandboxes = [ConfigChoice(value, value) for value in SANDBOXES]
        options.append(ConfigOption("sandbox", "Sandbox", SelectKind(sandboxes), self.sandbox))
        options.append(
            ConfigOption(
                "mode", "Mode (approval policy, or Plan)", SelectKind(mode_choices()), self.mode, category="mode"
            )
        )
        return tuple(options)

    def configuration(self) -> dict[str, ConfigValue]:
        """The current values, by option id (options without a value left out)."""
        values: dict[str, ConfigValue] = {}
        for option in self.options():
            if option.current is not None:
                values[option.id] = option.current
        return values

    def option(self, option_id: str) -> ConfigOption | None:
        """The option ``option_id`` as reported now."""
        return next((option for option in self.options() if option.id == option_id), None)

    def set(self, option_id: str, value: ConfigValue) -> None:
        """Take a (validated) value; the next ``turn/start`` carries it."""
        if option_id == "model" and isinstance(value, str):
            self.model = value
            offered = {choice.value for choice in self.efforts()}
            if self.effort is not None and self.effort not in offered:
                self.effort = None
                self.pending.pop("effort", None)
        elif option_id == "effort" and isinstance(value, str):
            self.effort = value
        elif option_id == "fast" and isinstance(value, bool):
            self.fast = value
        elif option_id == "sandbox" and isinstance(value, str):
            self.sandbox = value
        elif option_id == "mode" and isinstance(value, str):
            value = self.mode = own_mode(value)
        self.pending[option_id] = value

    def turn_overrides(self) -> dict[str, Any]:
        """The ``turn/start`` fields for settings changed since the last turn (then forgotten:
        codex keeps a turn's overrides for the turns after it)."""
        fields: dict[str, Any] = {}
        for option_id in self.pending:
            if option_id == "model" and self.model:
                fields["model"] = self.model
            elif option_id == "effort" and self.effort:
                fields["effort"] = self.effort
            elif option_id == "fast":
                fields["serviceTier"] = (self.fast_tier() or FAST_TIERS[0]) if self.fast else None
            elif option_id == "sandbox" and self.sandbox is not None and self.sandbox in SANDBOXES:
                fields["sandboxPolicy"] = {"type": SANDBOXES[self.sandbox]}
            elif option_id == "mode" and self.mode and self.mode != PLAN_MODE:
                fields["approvalPolicy"] = self.mode
        planning = self.mode == PLAN_MODE
        if planning != self.planning or (planning and {"mode", "model", "effort"} & self.pending.keys()):
            settings = {"model": self.model or "", "reasoning_effort": self.effort}
            fields["collaborationMode"] = {"mode": PLAN_MODE if planning else "default", "settings": settings}
            self.planning = planning
        self.pending.clear()
        return fields
