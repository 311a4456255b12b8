"""Reading Claude's initialize answer (auth, models, options, commands) and get_usage answer."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from anyagent import (
    Account,
    Authenticated,
    AuthKind,
    AuthUnknown,
    BooleanKind,
    EnvVarLogin,
    PlanUsageWindow,
    SelectKind,
    SlashCommand,
    Unauthenticated,
)
from anyagent_claude.settings import auth_status, commands_of, config_options, models_of
from anyagent_claude.usage import plan_usage

LOGIN = (EnvVarLogin("ANTHROPIC_API_KEY"),)

INIT: dict[str, Any] = {
    "models": [
        {
            "value": "default",
            "displayName": "Default (recommended)",
            "supportsEffort": True,
            "supportedEffortLevels": ["low", "medium", "high", "xhigh", "max"],
            "supportsFastMode": True,
            "supportsAutoMode": True,
        },
        {"value": "sonnet", "displayName": "Sonnet", "supportsEffort": True, "supportedEffortLevels": ["low", "high"]},
        {"value": "haiku", "displayName": "Haiku", "description": "fastest"},
        {"displayName": "no value, skipped"},
    ],
    "commands": [
        {"name": "review", "description": "Review a PR", "argumentHint": "<pr>"},
        {"name": "review", "description": "duplicate"},
        {"description": "nameless"},
    ],
}


@pytest.mark.parametrize(
    ("account", "env", "expected"),
    [
        (
            {"email": "me@example.com", "subscriptionType": "Claude Max", "apiProvider": "firstParty"},
            {},
            Authenticated(AuthKind.SUBSCRIPTION, Account("me@example.com", "Claude Max")),
        ),
        (
            {"tokenSource": "none", "apiKeySource": "ANTHROPIC_API_KEY", "apiProvider": "firstParty"},
            {},
            Authenticated(AuthKind.API_KEY, Account(None, None)),
        ),
        ({"apiProvider": "bedrock"}, {}, Authenticated(AuthKind.CLOUD_PROVIDER, Account(None, None))),
        ({"tokenSource": "CLAUDE_CODE_OAUTH_TOKEN"}, {}, Authenticated(AuthKind.SUBSCRIPTION, Account(None, None))),
        ({"tokenSource": "none", "apiProvider": "firstParty"}, {}, Unauthenticated(LOGIN)),
        (
            {"tokenSource": "none", "apiProvider": "firstParty"},
            {"ANTHROPIC_AUTH_TOKEN": "t"},
            Authenticated(AuthKind.OTHER),
        ),
        ({}, {}, AuthUnknown()),
        ({"something": "else"}, {}, AuthUnknown()),
    ],
)
def test_auth_status(account: dict[str, Any], env: dict[str, str], expected: Any) -> None:
    assert auth_status(account, env, LOGIN) == expected


def test_options_follow_the_model() -> None:
    models = models_of(INIT)
    assert [m.value for m in models] == ["default", "sonnet", "haiku"]
    options, current = config_options(models, {})
    ids = [o.id for o in options]
    assert ids == ["model", "effort", "fast", "mode"]
    assert current == {"model": "default", "fast": False, "mode": "default"}
    model = options[0]
    assert isinstance(model.kind, SelectKind) and model.kind.choices[0].label == "Default (recommended)"
    assert isinstance(options[2].kind, BooleanKind) and options[2].current is False
    mode = options[3]
    assert isinstance(mode.kind, SelectKind) and mode.kind.offers("auto") and not mode.kind.offers("bypassPermissions")

    options, current = config_options(models, {"model": "sonnet", "effort": "high", "fast": True, "mode": "auto"})
    assert [o.id for o in options] == ["model", "effort", "mode"]  # sonnet: no fast mode
    assert current == {"model": "sonnet", "effort": "high", "mode": "default"}  # no auto mode on sonnet
    effort = options[1]
    assert isinstance(effort.kind, SelectKind) and [c.value for c in effort.kind.choices] == ["low", "high"]

    options, current = config_options(models, {"model": "sonnet", "effort": "max"})
    assert "effort" not in current  # sonnet has no "max"

    options, current = config_options(models, {"model": "haiku", "effort": "low"})
    assert [o.id for o in options] == ["model", "mode"] and "effort" not in current

    options, _ = config_options(models, {"mode": "bypassPermissions"}, bypass=True)
    assert options[-1].current == "bypassPermissions"


def test_no_models_still_offers_the_mode() -> None:
    options, current = config_options((), {})
    assert [o.id for o in options] == ["mode"] and current == {"mode": "default"}


def test_commands() -> None:
    assert commands_of(INIT) == (SlashCommand("review", "Review a PR", "<pr>"),)
    assert commands_of({"commands": "nope"}) == ()


def test_plan_usage_from_limits() -> None:
    body = {
        "subscription_type": "max",
        "rate_limits_available": True,
        "rate_limits": {
            "five_hour": {"utilization": 1, "resets_at": None},
            "limits": [
                {"kind": "session", "group": "session", "percent": 42, "resets_at": "2026-08-23T08:59:59.746028+00:00"},
                {"kind": "weekly_all", "group": "weekly", "percent": 5, "resets_at": "2026-08-24T18:59:59Z"},
                {
                    "kind": "weekly_scoped",
                    "group": "weekly",
                    "percent": 9,
                    "scope": {"model": {"display_name": "Fable"}},
                },
                {"kind": "broken", "percent": "lots"},
            ],
        },
    }
    now = datetime(2026, 8, 23, tzinfo=timezone.utc)
    usage = plan_usage(body, now)
    assert usage is not None
    assert usage.plan == "max" and usage.fetched_at == now
    assert usage.windows == (
        PlanUsageWindow("5-hour", 42.0, datetime(2026, 8, 23, 8, 59, 59, 746028, tzinfo=timezone.utc)),
        PlanUsageWindow("weekly", 5.0, datetime(2026, 8, 24, 18, 59, 59, tzinfo=timezone.utc)),
        PlanUsageWindow("weekly (Fable)", 9.0, None),
    )


def test_plan_usage_from_the_older_shape_and_api_keys() -> None:
    old = {"rate_limits": {"five_hour": {"utilization": 42, "resets_at": 1787475600}, "seven_day": {"utilization": 5}}}
    usage = plan_usage(old)
    assert usage is not None
    assert [(w.label, w.used_percent) for w in usage.windows] == [("5-hour", 42.0), ("weekly", 5.0)]
    assert usage.windows[0].resets_at == datetime.fromtimestamp(1787475600, timezone.utc)
    assert plan_usage({"subscription_type": None, "rate_limits_available": False, "rate_limits": None}) is None
