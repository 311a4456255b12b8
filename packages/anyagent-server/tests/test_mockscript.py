"""The mock-script format's additions over anyagent-rs's: ``capabilities``, ``plan_usage`` and ``Child`` steps."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

import anyagent
from anyagent_server import mockscript

pytestmark = pytest.mark.anyio

RESET = 1_900_000_000

SCRIPT = {
    "capabilities": ["Rollback", "Subagents"],
    "plan_usage": {
        "plan": "Max",
        "windows": [
            {
                "label": "5 hours",
                "used_percent": 42.5,
                "resets_at": {"secs_since_epoch": RESET, "nanos_since_epoch": 0},
            },
            {"label": "week", "used_percent": 7, "resets_at": None},
        ],
    },
    "turns": [
        [
            {
                "Emit": {
                    "ToolUpdated": {
                        "id": "task1",
                        "kind": "Subagent",
                        "title": "Task: explore",
                        "status": "Running",
                        "input": {"Text": "explore"},
                        "output": None,
                        "diffs": [],
                        "locations": [],
                        "raw": None,
                    }
                }
            },
            {
                "Child": {
                    "parent_tool_id": "task1",
                    "steps": [
                        {"Emit": {"TextDelta": {"message_id": "c1", "text": "child says hi"}}},
                        {"End": {"Completed": {"source": "Protocol"}}},
                    ],
                }
            },
            {"Emit": {"TextDelta": {"message_id": "m1", "text": "parent again"}}},
            {"End": {"Completed": {"source": "Protocol"}}},
        ]
    ],
}


async def test_capabilities_plan_usage_and_child_steps_play() -> None:
    script = mockscript.parse(SCRIPT)
    caps = script.capability_set()
    assert caps.supports(anyagent.Capability.ROLLBACK) and caps.supports(anyagent.Capability.SUBAGENTS)
    async with anyagent.Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        usage = await runtime.plan_usage(agent)
        assert usage.plan == "Max"
        assert [(w.label, w.used_percent, w.resets_at) for w in usage.windows] == [
            ("5 hours", 42.5, datetime.fromtimestamp(RESET, tz=timezone.utc)),
            ("week", 7.0, None),
        ]
        session, events = await runtime.open(agent, anyagent.SessionOptions.in_dir("."))
        await session.prompt("go")
        seen: list[tuple[str | None, str]] = []
        async for event in events:
            kind = event.kind
            if isinstance(kind, anyagent.TextDelta):
                parent = event.turn_info.parent_tool_id if event.turn_info else None
                seen.append((parent, kind.text))
            if isinstance(kind, anyagent.TurnEnded) and not (event.turn_info and event.turn_info.parent_tool_id):
                break
        await session.close()
    assert seen == [("task1", "child says hi"), (None, "parent again")]


async def test_without_plan_usage_the_agent_says_it_has_none() -> None:
    async with anyagent.Runtime.with_mock(mockscript.parse({"turns": []})) as runtime:
        agent = (await runtime.discover()).require("mock")
        with pytest.raises(anyagent.UnsupportedFeature, match="no plan usage"):
            await runtime.plan_usage(agent)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"capabilities": ["Telepathy"]}, "unknown value 'Telepathy'"),
        ({"plan_usage": {"windows": [{"label": "5h", "used_percent": "lots"}]}}, "expected a number"),
        ({"turns": [[{"Child": {"parent_tool_id": "t", "steps": ["AwaitAnswer"]}}]]}, "unknown variant 'AwaitAnswer'"),
        ({"turns": [[{"Child": {"steps": []}}]]}, "parent_tool_id"),
    ],
)
async def test_malformed_additions_are_invalid_configuration(data: object, message: str) -> None:
    with pytest.raises(anyagent.InvalidConfiguration, match=message):
        mockscript.parse(data)
