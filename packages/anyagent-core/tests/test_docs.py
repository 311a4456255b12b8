"""Every ```python block in docs/ and the READMEs runs, so the docs cannot rot.

Each block runs as its own program in a subprocess. A preamble swaps ``anyagent.Runtime`` for one
whose only agent, ``claude``, is the scripted mock (in-process), so examples written for a real
agent run offline. An HTML comment ``<!-- docs-agent: permission -->`` before a block makes that
agent ask a permission in each turn.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SOURCES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", ROOT / "packages/anyagent-core/README.md"]
BLOCK = re.compile(r"(?:<!--\s*docs-agent:\s*(?P<agent>\w+)\s*-->\s*\n)?```python\n(?P<code>.*?)```", re.S)

PREAMBLE = textwrap.dedent(
    """
    from datetime import datetime, timezone

    import anyagent
    from anyagent import Capability, ContextUsage, Runtime, ToolStatus
    from anyagent.mock import MockAdapter, Script, Step, completed, permission, select_option, text, tool

    VARIANT = {variant!r}

    def _turn():
        steps = [Step.emit(text("m1", "hello from the docs agent"))]
        if VARIANT == "permission":
            steps += [Step.emit(permission("r1")), Step.await_answer(), Step.emit(tool("t1", ToolStatus.COMPLETED))]
        return steps + [Step.emit(ContextUsage(1200, 200000, 0.001)), Step.end(completed())]

    _KEPT = anyagent.HistoryEntry(
        "claude", "kept-1", "fix the flaky test", "/work/repo", updated_at=datetime(2026, 11, 30, tzinfo=timezone.utc)
    )
    _SCRIPT = Script(
        options=(select_option("model", ["sonnet", "opus"]),), capabilities=(Capability.RESUME,), history=(_KEPT,)
    )
    for _ in range(20):
        _SCRIPT = _SCRIPT.turn(_turn())

    class _DocsAgent:
        @anyagent.hookimpl
        def anyagent_adapters(self, register):
            register.adapter(lambda: MockAdapter(_SCRIPT), wire="mock")

        @anyagent.hookimpl
        def anyagent_agents(self, register):
            register.profile(anyagent.AgentProfile(id="claude", name="Claude Code", wire="mock", executables=()))

    class DocsRuntime(Runtime):
        def __init__(self, plugins=None, *, _builtins=None):
            if plugins is None and _builtins is None:
                super().__init__(plugins=[], _builtins=[_DocsAgent()])
            else:
                super().__init__(plugins=plugins, _builtins=_builtins)

    anyagent.Runtime = DocsRuntime
    """
)


def _blocks() -> list[tuple[str, str, str]]:
    found = []
    for source in SOURCES:
        if not source.exists():
            continue
        for index, match in enumerate(BLOCK.finditer(source.read_text(encoding="utf-8")), 1):
            found.append((f"{source.relative_to(ROOT)}#{index}", match["agent"] or "text", match["code"]))
    return found


BLOCKS = _blocks()


@pytest.mark.skipif(not BLOCKS, reason="the docs are not beside this package (installed alone)")
@pytest.mark.parametrize(("variant", "code"), [(v, c) for _, v, c in BLOCKS], ids=[name for name, _, _ in BLOCKS])
def test_doc_block_runs(tmp_path: Path, variant: str, code: str) -> None:
    run_block(tmp_path, PREAMBLE.format(variant=variant) + "\n" + code)


def run_block(tmp_path: Path, program_text: str) -> None:
    """Run one block's program in a fresh interpreter, in an empty directory, with no agent on PATH."""
    program = tmp_path / "block.py"
    program.write_text(program_text, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(program)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "ANYAGENT_NO_LOGIN_SHELL": "1", "NO_COLOR": "1", "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"


def test_every_doc_page_has_runnable_code() -> None:
    pages = {name.split("#")[0] for name, _, _ in BLOCKS}
    expected = ("getting-started", "building-an-app", "events", "writing-an-adapter", "troubleshooting")
    for page in expected:
        assert f"docs/{page}.md" in pages
