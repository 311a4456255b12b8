"""What Claude's ``initialize`` answer means: login state, models, config options, slash commands.

In: the ``initialize`` control response (``account``, ``models``, ``commands``,
``current_permission_mode``) and the session's chosen values. Out: ``AuthStatus``,
``ConfigOption``s (``model``, ``effort``, ``fast``, ``mode``) and ``SlashCommand``s. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from anyagent import (
    Account,
    Authenticated,
    AuthKind,
    AuthStatus,
    AuthUnknown,
    BooleanKind,
    ConfigChoice,
    ConfigOption,
    ConfigValue,
    LoginMethod,
    SelectKind,
    SlashCommand,
    Unauthenticated,
)
from anyagent import jsonread as j
from anyagent.toolkit import mode_aliases

from .profile import PROFILE

__all__ = [
    "MODES",
    "Model",
    "auth_status",
    "commands_of",
    "config_options",
    "default_model",
    "models_of",
    "own_mode",
]

MODES: tuple[tuple[str, str, str], ...] = (
    ("default", "Ask", "Ask before edits and commands"),
    ("acceptEdits", "Accept edits", "Edit files without asking; ask before commands"),
    ("plan", "Plan", "Read and plan only; no edits"),
    ("dontAsk", "Don't ask", "Deny anything not already allowed"),
)
"""Permission modes ``set_permission_mode`` accepts on every model (verified on 2.1.332)."""

AUTO_MODE = ("auto", "Auto", "The model decides what needs approval")
BYPASS_MODE = ("bypassPermissions", "Bypass permissions", "Run everything without asking (launch-time only)")


def _mode_choices(modes: Sequence[tuple[str, str, str]]) -> tuple[ConfigChoice, ...]:
    """The ``mode`` choices, with the portable names of ``PROFILE.modes`` as aliases."""
    return mode_aliases((ConfigChoice(value, label, description) for value, label, description in modes), PROFILE.modes)


def own_mode(value: ConfigValue) -> ConfigValue:
    """Claude's own id for a portable mode name (``accept-edits`` → ``acceptEdits``, ``ask`` →
    ``default``); any other value as it is."""
    return SelectKind(_mode_choices([*MODES, AUTO_MODE, BYPASS_MODE])).resolve(value) or value


_SUBSCRIPTION_TOKENS = frozenset({"claude.ai", "CLAUDE_CODE_OAUTH_TOKEN"})
_CLOUD_PROVIDERS = frozenset({"bedrock", "vertex", "foundry"})


@attrs.frozen
class Model:
    """One entry of ``initialize.models``."""

    value: str
    label: str
    description: str | None = None
    efforts: tuple[str, ...] = ()
    fast: bool = False
    auto_mode: bool = False


def models_of(init: Mapping[str, Any]) -> tuple[Model, ...]:
    """The models Claude offers, in its order (entries without a ``value`` are skipped)."""
    models: list[Model] = []
    for item in j.arr(init.get("models")):
        item = j.obj(item)
        value = j.nonempty(item.get("value"))
        if value is None or any(model.value == value for model in models):
            continue
        efforts = tuple(level for level in j.arr(item.get("supportedEffortLevels")) if isinstance(level, str) and level)
        models.append(
            Model(
                value=value,
                label=j.text(item.get("displayName"), "") or value,
                description=j.nonempty(item.get("description")),
                efforts=efforts if item.get("supportsEffort") is not False else (),
                fast=j.flag(item.get("supportsFastMode")),
                auto_mode=j.flag(item.get("supportsAutoMode")),
            )
        )
    return tuple(models)


def default_model(models: Sequence[Model]) -> str | None:
    """The model a session without ``--model`` runs: ``default`` when offered, else the first."""
    for model in models:
        if model.value == "default":
            return model.value
    return models[0].value if models else None


def _find(models: Sequence[Model], value: object) -> Model | None:
    return next((model for model in models if model.value == value), None)


def config_options(
    models: Sequence[Model], configuration: Mapping[str, ConfigValue], *, bypass: bool = False
) -> tuple[tuple[ConfigOption, ...], dict[str, ConfigValue]]:
    """The options for the current ``configuration`` and that configuration, cleaned.

    ``effort`` follows the model (absent when it has no levels; a level the new model lacks is
    dropped), ``fast`` appears only for models that support it (a ``between_turns`` option: it
    relaunches ``claude``), ``mode`` offers ``auto`` only
    for models that support it and ``bypassPermissions`` only when the session launched with it;
    its choices take the portable names too (``accept-edits``, ``ask``, …: ``PROFILE.modes``).
    """
    current: dict[str, ConfigValue] = dict(configuration)
    options: list[ConfigOption] = []
    model = _find(models, current.get("model"))
    if models:
        if model is None:
            model = _find(models, default_model(models))
            if model is not None:
                current["model"] = model.value
        choices = tuple(ConfigChoice(m.value, m.label, m.description) for m in models)
        options.append(ConfigOption("model", "Model", SelectKind(choices), current.get("model"), True, "model"))
    if model is not None and model.efforts:
        effort = current.get("effort")
        if effort not in model.efforts:
            current.pop("effort", None)
        levels = tuple(ConfigChoice(level, level.capitalize()) for level in model.efforts)
        options.append(
            ConfigOption("effort", "Effort", SelectKind(levels), current.get("effort"), True, "thought_level")
        )
    else:
        current.pop("effort", None)
    if model is not None and model.fast:
        current["fast"] = current.get("fast") is True
        # fast mode relaunches claude on the same conversation: the engine holds it while a turn runs
        options.append(
            ConfigOption("fast", "Fast mode", BooleanKind(), current["fast"], True, "speed", between_turns=True)
        )
    else:
        current.pop("fast", None)
    modes = list(MODES)
    if model is not None and model.auto_mode:
        modes.append(AUTO_MODE)
    if bypass:
        modes.append(BYPASS_MODE)
    if current.get("mode") not in [value for value, _, _ in modes]:
        current["mode"] = "default"
    options.append(
        ConfigOption("mode", "Permission mode", SelectKind(_mode_choices(modes)), current["mode"], True, "mode")
    )
    return tuple(options), current


def auth_status(account: Mapping[str, Any], env: Mapping[str, str], login: Sequence[LoginMethod]) -> AuthStatus:
    """Login state from ``initialize.account`` (and the launch env for a gateway token).

    A subscription or Console login names an email or plan; an API key, helper or token names
    its source; a cloud provider names itself; ``tokenSource: none`` with nothing else is logged out.
    """
    if not account:
        return AuthUnknown()
    email = j.nonempty(account.get("email"))
    plan = j.nonempty(account.get("subscriptionType"))
    if j.text(account.get("apiProvider"), "") in _CLOUD_PROVIDERS:
        return Authenticated(AuthKind.CLOUD_PROVIDER, Account(email, plan))
    if plan is not None:
        return Authenticated(AuthKind.SUBSCRIPTION, Account(email, plan))
    token = j.nonempty(account.get("tokenSource"))
    if token is not None and token != "none":
        kind = AuthKind.SUBSCRIPTION if token in _SUBSCRIPTION_TOKENS else AuthKind.API_KEY
        return Authenticated(kind, Account(email, plan))
    key = j.nonempty(account.get("apiKeySource"))
    if key is not None and key != "none":
        return Authenticated(AuthKind.API_KEY, Account(email, None))
    if email is not None:
        return Authenticated(AuthKind.API_KEY, Account(email, None))
    if env.get("ANTHROPIC_AUTH_TOKEN"):
        return Authenticated(AuthKind.OTHER, None)
    if token == "none" or "apiKeySource" in account or "tokenSource" in account:
        return Unauthenticated(tuple(login))
    return AuthUnknown()


def commands_of(init: Mapping[str, Any]) -> tuple[SlashCommand, ...]:
    """``initialize.commands`` as slash commands (name, description, argument hint)."""
    commands: list[SlashCommand] = []
    seen: set[str] = set()
    for item in j.arr(init.get("commands")):
        item = j.obj(item)
        name = j.nonempty(item.get("name"))
        if name is None or name in seen:
            continue
        seen.add(name)
        commands.append(SlashCommand(name, j.text(item.get("description"), ""), j.nonempty(item.get("argumentHint"))))
    return tuple(commands)
