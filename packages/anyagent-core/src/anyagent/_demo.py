"""``anyagent demo``: one real turn through the whole stack against a bundled scripted agent.

With ``anyagent-claude`` installed (the usual case) the demo runs the real Claude adapter over a
real subprocess: ``anyagent_claude.demo`` is a scripted agent process speaking Claude Code's
stream-json wire, working on a throwaway ``calc.py``. It streams reasoning and text, asks to edit
the file (answered automatically with ``--yes``, asked otherwise; a deny really leaves the file
alone), shows the edit's diff, context usage and the turn end. Without it, the in-process mock
adapter plays a similar script. Nothing needs to be installed and no account is used.
"""

from __future__ import annotations

import importlib
import os
import tempfile
from pathlib import Path
from types import ModuleType

import anyio
import attrs

from ._installation import AgentInstallation
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


PROMPT = "the test for add() fails; fix it"


async def run_demo(out: Renderer, *, auto: bool) -> int:
    """Play the demo turn, printing it; with ``auto`` the permission is allowed without asking.

    Returns the exit status of the turn (0 when it completed).
    """
    claude = _claude_demo_modules()
    if claude is None:
        return await _run_mock_demo(out, auto=auto)
    demo, plugin = claude
    return await _run_claude_demo(out, demo, plugin, auto=auto)


def _claude_demo_modules() -> tuple[ModuleType, ModuleType] | None:
    """``anyagent_claude.demo`` and ``anyagent_claude.plugin``, or None when not installed.

    Imported here, lazily: the core never depends on an adapter package.
    """
    try:
        return importlib.import_module("anyagent_claude.demo"), importlib.import_module("anyagent_claude.plugin")
    except ImportError:
        return None


async def _run_claude_demo(out: Renderer, demo: ModuleType, plugin: ModuleType, *, auto: bool) -> int:
    """The real-wire demo: the Claude adapter drives ``python -m anyagent_claude.demo``."""
    from .cli import _stream_turn

    with tempfile.TemporaryDirectory(prefix="anyagent-demo-", ignore_cleanup_errors=True) as scratch:
        root = Path(scratch)
        agent: AgentInstallation = demo.demo_installation(root / "bin")
        project: Path = demo.demo_project(root / "project")
        out.line(
            out.bold("anyagent demo")
            + out.dim(" — the real Claude adapter talking to a scripted agent process over Claude Code's wire")
        )
        out.line(out.dim(f"  agent: {agent.executable_path} (python -m anyagent_claude.demo; no model, no account)"))
        out.line(out.dim(f"  project: {project}"))
        async with Runtime(plugins=[plugin]) as runtime:
            session, events = await runtime.open(agent, SessionOptions.in_dir(project))
            async with session:
                out.line(out.cyan(f"> {PROMPT}"))
                await session.prompt(PROMPT)
                status = await _stream_turn(session, events, out, json_lines=False, auto=auto)
        source = await anyio.Path(project / "calc.py").read_text(encoding="utf-8")
        body = next((line.strip() for line in source.splitlines() if line.strip().startswith("return")), "?")
        out.line(out.dim(f"calc.py on disk now: {body}"))
    return status


async def _run_mock_demo(out: Renderer, *, auto: bool) -> int:
    """The fallback: the in-process mock adapter plays ``demo_script``."""
    from .cli import _stream_turn

    out.line(out.bold("anyagent demo") + out.dim(" — a scripted agent through the real engine (in-process mock)"))
    out.line(out.dim("  pip install anyagent-claude for the real-wire demo (a real adapter and a real subprocess)"))
    async with Runtime.with_mock(demo_script()) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir(os.getcwd()))
        async with session:
            out.line(out.cyan(f"> {PROMPT}"))
            await session.prompt(PROMPT)
            return await _stream_turn(session, events, out, json_lines=False, auto=auto)
