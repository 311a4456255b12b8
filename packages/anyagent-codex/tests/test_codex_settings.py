"""``fast``: which catalog models offer it and what ``turn/start`` carries. The tier shapes are
codex 0.171.0's own ``model/list`` entries (gpt-5.5 lists ``priority`` named "Fast"; the deprecated
``additionalSpeedTiers`` says ``fast``); the live and recorded ``fast-service-tier`` scenario
proves the model request then carries ``service_tier: priority``."""

from __future__ import annotations

from typing import Any

import pytest

from anyagent_codex.settings import Settings

GPT_55 = {
    "model": "gpt-5.5",
    "serviceTiers": [{"id": "priority", "name": "Fast", "description": "1.5x speed, increased usage"}],
    "additionalSpeedTiers": ["fast"],
}
LEGACY = {"model": "old", "serviceTiers": [], "additionalSpeedTiers": ["fast"]}
PLAIN = {"model": "plain", "serviceTiers": []}


@pytest.mark.parametrize(("model", "tier"), [(GPT_55, "priority"), (LEGACY, "fast"), (PLAIN, None)])
def test_fast_is_offered_with_the_tier_the_model_lists(model: dict[str, Any], tier: str | None) -> None:
    settings = Settings(models=[model], model=model["model"])
    assert settings.fast_tier() == tier
    assert (settings.option("fast") is not None) is (tier is not None)


def test_turning_fast_on_and_off_sends_the_tier_then_null() -> None:
    settings = Settings(models=[GPT_55], model="gpt-5.5")
    settings.set("fast", True)
    assert settings.turn_overrides() == {"serviceTier": "priority"}
    assert settings.turn_overrides() == {}, "codex keeps the tier: nothing to resend"
    settings.set("fast", False)
    assert settings.turn_overrides() == {"serviceTier": None}


@pytest.mark.parametrize(("reported", "fast"), [("priority", True), ("fast", True), ("default", False), (None, False)])
def test_the_thread_reports_whether_fast_is_on(reported: str | None, fast: bool) -> None:
    settings = Settings(models=[GPT_55])
    settings.adopt_thread({"model": "gpt-5.5", "serviceTier": reported})
    assert settings.fast is fast
    assert settings.configuration()["fast"] is fast
