"""Portable ``mode`` names: aliases on a select option's choices, the agent's own ids first."""

from __future__ import annotations

import pytest

from anyagent import AgentProfile, BooleanKind, ConfigChoice, ConfigOption, SelectKind
from anyagent.toolkit import PORTABLE_MODES, describe_modes, mode_aliases

CLAUDE = {
    "default": "default",
    "acceptEdits": "accept-edits",
    "plan": "plan",
    "bypassPermissions": "bypass-permissions",
}


def option(choices: tuple[ConfigChoice, ...]) -> ConfigOption:
    return ConfigOption("mode", "Mode", SelectKind(choices), choices[0].value)


def test_aliases_are_accepted_and_resolve_to_the_agents_own_id() -> None:
    choices = mode_aliases([ConfigChoice("default"), ConfigChoice("acceptEdits"), ConfigChoice("plan")], CLAUDE)
    mode = option(choices)
    assert [c.aliases for c in choices] == [("ask",), ("accept-edits",), ()]
    for value, own in [
        ("accept-edits", "acceptEdits"),
        ("ask", "default"),
        ("plan", "plan"),
        ("acceptEdits", "acceptEdits"),
    ]:
        assert mode.accepts(value) and mode.resolve(value) == own
    assert not mode.accepts("bypass-permissions")  # not offered: no alias
    assert mode.resolve("turbo") == "turbo" and not mode.accepts("turbo")


def test_the_agents_own_id_wins_over_a_portable_name() -> None:
    # cursor: `agent` is its default, and its own `ask` (questions only) keeps the name
    choices = mode_aliases(
        [ConfigChoice("agent"), ConfigChoice("plan"), ConfigChoice("ask")], {"agent": "default", "ask": "ask"}
    )
    mode = option(choices)
    assert mode.resolve("default") == "agent" and mode.resolve("ask") == "ask"
    # two own ids for one portable name (versions of one agent): the first offered claims it
    both = mode_aliases([ConfigChoice("auto"), ConfigChoice("agent")], {"auto": "default", "agent": "default"})
    assert [c.aliases for c in both] == [("default", "ask"), ()]


def test_a_boolean_option_resolves_to_itself() -> None:
    fast = ConfigOption("fast", "Fast", BooleanKind(), False)
    assert fast.resolve(True) is True


@pytest.mark.parametrize(
    ("modes", "text"),
    [
        (CLAUDE, "`default`/`ask`, `accept-edits` (`acceptEdits`), `plan`, `bypass-permissions` (`bypassPermissions`)"),
        ({"agent": "default", "plan": "plan", "ask": "ask"}, "`default` (`agent`), `plan`"),
        ({"auto": "default", "agent": "default"}, "`default`/`ask` (`auto` or `agent`)"),
        ({}, ""),
    ],
)
def test_describe_modes_for_the_readme_table(modes: dict[str, str], text: str) -> None:
    assert describe_modes(modes) == text


def test_profiles_carry_their_modes() -> None:
    profile = AgentProfile(id="x", name="X", wire="acp", executables=("x",), modes={"autoEdit": "accept-edits"})
    assert dict(profile.modes) == {"autoEdit": "accept-edits"}
    assert set(PORTABLE_MODES) == {"default", "ask", "accept-edits", "plan", "bypass-permissions"}
