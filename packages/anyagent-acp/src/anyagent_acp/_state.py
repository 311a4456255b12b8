"""What one ACP session reports about itself, kept as mutable state and published as ``DriverInfo``.

What flows in: the handshake results and later info-bearing updates (modes, config options,
models, commands, title, capabilities seen first), from ``session/update`` (``apply_update``) or a
vendor notification (``apply_vendor``). What flows out: a fresh ``DriverInfo`` on every change,
and for each config option the wire call that sets it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from anyagent import (
    AgentDetails,
    AuthStatus,
    AuthUnknown,
    Capabilities,
    Capability,
    ConfigChoice,
    ConfigOption,
    ConfigValue,
    SelectKind,
    SlashCommand,
)
from anyagent import jsonread as j
from anyagent.seam import DriverInfo
from anyagent.toolkit import mode_aliases

from . import translate
from .quirks import EffortPrompt

__all__ = ["INFO_UPDATES", "InfoState", "Setter"]

INFO_UPDATES = frozenset(
    {"available_commands_update", "current_mode_update", "config_option_update", "session_info_update"}
)
"""``session/update`` kinds that carry session info, never content (``InfoState.apply_update``)."""


class Setter(enum.Enum):
    """The wire call that changes one option."""

    MODE = "session/set_mode"
    CONFIG = "session/set_config_option"
    MODEL = "session/set_model"
    MODEL_EFFORT = "session/set_model+effort"  # grok: set_model with _meta.reasoningEffort
    EFFORT_PROMPT = "/effort"  # kiro: a hidden prompt


@attrs.define
class InfoState:
    """The session's details, configuration, resume token and title."""

    capabilities: Capabilities
    version: str | None = None
    auth: AuthStatus = AuthUnknown()
    resume_token: str | None = None
    title: str | None = None
    commands: tuple[SlashCommand, ...] = ()
    options: list[ConfigOption] = attrs.Factory(list)
    setters: dict[str, Setter] = attrs.Factory(dict)
    effort_prompt: EffortPrompt | None = None
    mode_names: Mapping[str, str] = attrs.Factory(dict)  # the profile's own mode id → portable name

    def info(self) -> DriverInfo:
        """The ``DriverInfo`` to publish: ACP ends prompted turns, never agent-originated ones."""
        configuration = {o.id: o.current for o in self.options if o.current is not None}
        return DriverInfo(
            details=AgentDetails(self.version, self.auth, self.capabilities, tuple(self.options), self.commands),
            configuration=configuration,
            resume_token=self.resume_token,
            title=self.title,
            ends_turns=True,
            ends_agent_turns=False,
        )

    # -- capabilities

    def add_capability(self, capability: Capability) -> bool:
        """Add a capability seen for the first time; True when it is new."""
        if self.capabilities.supports(capability):
            return False
        self.capabilities = self.capabilities.with_(capability)
        return True

    # -- options

    def option(self, option_id: str) -> ConfigOption | None:
        """The option ``option_id``, or None."""
        return next((o for o in self.options if o.id == option_id), None)

    def _put(self, option: ConfigOption, setter: Setter) -> None:
        if option.id == "mode" and isinstance(option.kind, SelectKind) and self.mode_names:
            option = attrs.evolve(option, kind=SelectKind(mode_aliases(option.kind.choices, self.mode_names)))
        for index, existing in enumerate(self.options):
            if existing.id == option.id:
                self.options[index] = option
                self.setters[option.id] = setter
                return
        self.options.append(option)
        self.setters[option.id] = setter

    def _drop(self, option_id: str) -> None:
        self.options = [o for o in self.options if o.id != option_id]
        self.setters.pop(option_id, None)

    def adopt_session(self, result: dict[str, Any]) -> None:
        """Modes, config options and first-class models from a ``session/new|load|resume`` result."""
        mode = translate.config_from_modes(result.get("modes"))
        if mode is not None:
            self._put(mode, Setter.MODE)
        self.adopt_config_options(result.get("configOptions"), keep_first_class=False)
        self.adopt_models(result.get("models"))
        self.sync_effort_prompt()

    def adopt_config_options(self, options: Any, *, keep_first_class: bool = True) -> None:
        """Replace the agent's own config options; ``mode`` from the modes state (set_mode works on
        every agent seen) and first-class ``model``/``effort`` stay ours."""
        ours = {oid for oid, s in self.setters.items() if s is not Setter.CONFIG}
        if not keep_first_class:
            ours = {oid for oid in ours if self.setters[oid] is Setter.MODE}
        self.options = [o for o in self.options if o.id in ours]
        self.setters = {oid: s for oid, s in self.setters.items() if oid in ours}
        for option in translate.config_from_configoptions(options):
            if option.id in ours:
                # the agent's own view of an option we set another way: take its current value
                if option.current is not None:
                    self.select(option.id, option.current)
                continue
            self._put(option, Setter.CONFIG)

    def adopt_models(self, models: Any) -> None:
        """The first-class ``models`` state (unless a ``model`` config option exists already)."""
        if models is None or self.setters.get("model") is Setter.CONFIG:
            return
        model, effort = translate.config_from_models(models)
        if model is None:
            return
        self._put(model, Setter.MODEL)
        if effort is not None:
            kept = self.option("effort")
            if kept is not None and kept.current is not None and effort.kind.offers(kept.current):  # type: ignore[union-attr]
                effort = attrs.evolve(effort, current=kept.current)
            self._put(effort, Setter.MODEL_EFFORT)
        elif self.setters.get("effort") is Setter.MODEL_EFFORT:
            self._drop("effort")

    def sync_effort_prompt(self) -> None:
        """Kiro: offer ``effort`` (switched by prompt) unless the selected model has none."""
        prompt = self.effort_prompt
        if prompt is None:
            return
        model = self.option("model")
        current_model = model.current if model is not None else None
        if not prompt.levels or (isinstance(current_model, str) and current_model in prompt.without):
            self._drop("effort")
            return
        kept = self.option("effort")
        current = kept.current if kept is not None and kept.current in prompt.levels else None
        choices = SelectKind(tuple(ConfigChoice(level, level) for level in prompt.levels))
        # a hidden prompt: the engine sends it only while no turn runs, and holds prompts until it is answered
        option = ConfigOption("effort", "Effort", choices, current, True, "thought_level", between_turns=True)
        self._put(option, Setter.EFFORT_PROMPT)

    def select(self, option_id: str, value: ConfigValue) -> bool:
        """Mark ``value`` selected for ``option_id``; True when something changed."""
        for index, option in enumerate(self.options):
            if option.id == option_id:
                if option.current == value:
                    return False
                self.options[index] = attrs.evolve(option, current=value)
                if option_id == "model":
                    self.sync_effort_prompt()
                return True
        return False

    def set_commands(self, commands: Iterable[SlashCommand]) -> None:
        """Adopt a new slash-command list."""
        self.commands = tuple(commands)

    # -- what the agent announces

    def apply_update(self, kind: str, update: Mapping[str, Any]) -> bool:
        """A ``session/update`` of a kind in ``INFO_UPDATES``; True when the info is to be published."""
        if kind == "available_commands_update":
            self.set_commands(translate.commands(update.get("availableCommands")))
            return True
        if kind == "current_mode_update":
            mode = j.text(update.get("currentModeId"))
            return mode is not None and self.select("mode", mode)
        if kind == "config_option_update":
            self.adopt_config_options(update.get("configOptions"))
            return True
        if kind == "session_info_update" and "title" in update:
            self.title = j.text(update.get("title"))
            return True
        return False

    def apply_vendor(self, hook: str, params: Mapping[str, Any]) -> bool | None:
        """A vendor notification bound to one of ``quirks.INFO_HOOKS``: True when the info is to be
        published, None when ``params`` is not what the hook reads (or ``hook`` is no info hook)."""
        if hook == "mode_update":  # qwen: {currentModeId}
            mode = j.text(params.get("currentModeId")) or j.text(params.get("modeId"))
            return mode is not None and self.select("mode", mode)
        if hook == "model_update":  # qwen: {currentModelId}
            model = j.text(params.get("currentModelId")) or j.text(params.get("modelId"))
            return model is not None and self.select("model", model)
        if hook == "models_update":  # grok: a first-class `models` state again
            self.adopt_models(params.get("models") if "models" in params else params)
            return True
        if hook == "model_changed":  # grok: {update: {sessionUpdate: model_changed, model_id, reasoning_effort}}
            update = j.obj(params.get("update"))
            if update.get("sessionUpdate") != "model_changed":
                return None
            changed = False
            for option_id, key in (("model", "model_id"), ("effort", "reasoning_effort")):
                value = j.text(update.get(key))
                if value is not None:
                    changed = self.select(option_id, value) or changed
            return changed
        if hook == "commands":  # kiro: {commands: [{name, description, meta.hint}]}
            self.set_commands(translate.commands(params.get("commands")))
            return True
        if hook == "auth_status":  # codex-acp 2.x: {authStatus: {kind, label, detail}}
            if not isinstance(params.get("authStatus"), dict):
                return None
            status = translate.auth_status(params.get("authStatus"))
            if status is None or status == self.auth:
                return False
            self.auth = status
            return True
        if hook == "effort_metadata":  # kiro's per-turn metadata: {effort}
            effort = j.text(params.get("effort"))
            option = self.option("effort")
            offered = effort is not None and option is not None and option.accepts(effort)
            return offered and self.select("effort", str(effort))
        return None
