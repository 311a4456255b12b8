"""``anyagent demo``: one real turn through the whole stack against a bundled scripted agent.

The agent is the public mock adapter playing a script: streamed reasoning and text, a tool that
reads a file, a permission request for an edit (with its diff), the edit landing, a plan,
context usage and the turn end. Nothing needs to be installed and no account is used.
"""

from __future__ import annotations

import os

import attrs

from ._options import SessionOptions
from ._render import Renderer
from ._runtime import Runtime
from ._types import (
    ContextUsage,
    FileDiff,
    PermissionChoice,
    PlanEntry,
    PlanEntryStatus,
    PlanUpdated,
    ReasoningDelta,
    TextDelta,
    ToolInput,
    ToolKind,
    ToolLocation,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
)
from .mock import Script, Step, completed, permission

_OLD = "def add(a, b):\n    return a - b\n"
_NEW = "def add(a, b):\n    return a + b\n"


def demo_script() -> Script:
    """The scripted turn the demo plays."""
    read = ToolUpdate(
        id="tool-read",
        kind=ToolKind.READ,
        title="Read calc.py",
        status=ToolStatus.RUNNING,
        input=ToolInput(path="calc.py"),
        locations=(ToolLocation("calc.py"),),
    )
    edit = ToolUpdate(
        id="tool-edit",
        kind=ToolKind.EDIT,
        title="Edit calc.py",
        status=ToolStatus.PENDING,
        input=ToolInput(path="calc.py"),
        diffs=(FileDiff("calc.py", _NEW, _OLD),),
        locations=(ToolLocation("calc.py", 2),),
    )
    words = ["The", "test", "fails", "because", "`add`", "subtracts.", "I'll", "fix", "the", "operator."]
    return Script().turn(
        [
            *[Step.emit(ReasoningDelta("r1", w + " ")) for w in ["Look", "at", "calc.py", "first."]],
            Step.emit(ToolUpdated(read)),
            Step.sleep(0.05),
            Step.emit(ToolUpdated(attrs.evolve(read, status=ToolStatus.COMPLETED, output=_OLD))),
            *[Step.emit(TextDelta("m1", w + " ")) for w in words],
            Step.emit(
                PlanUpdated(
                    (
                        PlanEntry("Find the bug", PlanEntryStatus.COMPLETED),
                        PlanEntry("Fix the operator", PlanEntryStatus.IN_PROGRESS),
                        PlanEntry("Run the tests"),
                    )
                )
            ),
            Step.emit(ToolUpdated(edit)),
            Step.emit(
                permission(
                    "perm-1",
                    [PermissionChoice.ALLOW_ONCE, PermissionChoice.ALLOW_ALWAYS, PermissionChoice.DENY_ONCE],
                    tool_update=edit,
                )
            ),
            Step.await_answer(),
            Step.emit(ToolUpdated(attrs.evolve(edit, status=ToolStatus.COMPLETED))),
            *[Step.emit(TextDelta("m2", w + " ")) for w in ["Fixed:", "`add`", "now", "returns", "a", "+", "b."]],
            Step.emit(ContextUsage(18_432, 200_000, 0.0123)),
            Step.end(completed()),
        ]
    )


async def run_demo(out: Renderer, *, auto: bool) -> int:
    """Play the demo turn, printing it; with ``auto`` the permission is allowed without asking."""
    from .cli import _stream_turn

    out.line(out.bold("anyagent demo") + out.dim(" — a scripted agent through the real engine"))
    async with Runtime.with_mock(demo_script()) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir(os.getcwd()))
        async with session:
            prompt = "the test for add() fails; fix it"
            out.line(out.cyan(f"> {prompt}"))
            await session.prompt(prompt)
            return await _stream_turn(session, events, out, json_lines=False, auto=auto)
