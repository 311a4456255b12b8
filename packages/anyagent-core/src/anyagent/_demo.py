"""``anyagent demo``: one real turn through the whole stack against a scripted agent.

Adapter plugins offer demos through the ``anyagent_demos`` hook (``register.demo(DemoAgent(...))``):
the plugin's real adapter drives a scripted agent process over the agent's real wire, so nothing
needs to be installed and no account is used. ``anyagent-claude`` offers one (a scripted Claude
Code fixing a throwaway ``calc.py``: streamed reasoning and text, an edit that asks permission —
answered automatically with ``--yes``, asked otherwise; a deny really leaves the file alone — its
diff, context usage and the turn end). ``anyagent demo`` runs the first demo the plugins
registered, or the one named; with none (or ``anyagent demo mock``) the in-process mock adapter
plays a similar script. Core never imports an adapter package: it runs what plugins registered.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import anyio
import attrs

from ._render import Renderer
from ._terminal import stream_turn
from .errors import InvalidConfiguration
from .mock import Script, Step, completed, permission
from .options import SessionOptions
from .registry import DemoAgent
from .runtime import Runtime
from .types import (
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

MOCK = "mock"
"""The name of the fallback demo: core's in-process mock adapter."""

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


PROMPT = "the test for add() fails; fix it"
"""What the mock demo asks."""


async def run_demo(runtime: Runtime, out: Renderer, *, auto: bool, name: str | None = None) -> int:
    """Play a demo turn, printing it; with ``auto`` the permission is allowed without asking.

    ``name`` picks a demo a plugin registered (default: the first one; ``"mock"``: the in-process
    mock). Returns the exit status of the turn (0 when it completed); ``InvalidConfiguration`` for
    a name no plugin offers.
    """
    demos = runtime.registry().demos
    if name == MOCK or (name is None and not demos):
        return await _run_mock_demo(out, auto=auto)
    if name is None:
        return await _run_plugin_demo(runtime, next(iter(demos.values())), out, auto=auto)
    demo = demos.get(name)
    if demo is None:
        offered = ", ".join([*demos, MOCK])
        raise InvalidConfiguration(f"no demo {name!r} (offered: {offered})")
    return await _run_plugin_demo(runtime, demo, out, auto=auto)


async def _run_plugin_demo(runtime: Runtime, demo: DemoAgent, out: Renderer, *, auto: bool) -> int:
    """A demo a plugin registered: its adapter, launched through ``runtime`` like any agent,
    drives its scripted agent on a project written into a scratch directory."""
    with tempfile.TemporaryDirectory(prefix="anyagent-demo-", ignore_cleanup_errors=True) as scratch:
        bin_dir, project_dir = Path(scratch, "bin"), Path(scratch, "project")
        await anyio.Path(bin_dir).mkdir()
        await anyio.Path(project_dir).mkdir()
        agent = await anyio.to_thread.run_sync(demo.installation, bin_dir)
        project = await anyio.to_thread.run_sync(demo.project, project_dir)
        out.line(out.bold("anyagent demo") + out.dim(f" — {demo.title}"))
        out.line(out.dim(f"  agent: {agent.executable_path} (a scripted agent process: no model, no account)"))
        out.line(out.dim(f"  project: {project}"))
        session, events = await runtime.open(agent, SessionOptions.in_dir(project))
        async with session:
            out.line(out.cyan(f"> {demo.prompt}"))
            await session.prompt(demo.prompt)
            status = await stream_turn(session, events, out, json_lines=False, auto=auto)
        if demo.report is not None:
            out.line(out.dim(await anyio.to_thread.run_sync(demo.report, project)))
    return status


async def _run_mock_demo(out: Renderer, *, auto: bool) -> int:
    """The fallback: the in-process mock adapter plays ``demo_script``."""
    out.line(out.bold("anyagent demo") + out.dim(" — a scripted agent through the real engine (in-process mock)"))
    out.line(
        out.dim(
            "  real-wire demos come from adapter plugins: pip install anyagent-claude"
            " (a real adapter and a real subprocess)"
        )
    )
    async with Runtime.with_mock(demo_script()) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir(os.getcwd()))
        async with session:
            out.line(out.cyan(f"> {PROMPT}"))
            await session.prompt(PROMPT)
            return await stream_turn(session, events, out, json_lines=False, auto=auto)
