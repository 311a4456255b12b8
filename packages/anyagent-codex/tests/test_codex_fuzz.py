"""The testkit's fuzz harness on the Codex adapter: mutated copies of the committed recordings played
through the real adapter and engine; every counter must stay 0.

``nox -s tests`` runs a bounded sample; ``nox -s fuzz`` sets ``ANYAGENT_FUZZ_FRAMES`` (10k+).
"""

from __future__ import annotations

import os

import pytest
from codex_harness import RECORDINGS

from anyagent import AgentInstallation
from anyagent_testkit.fuzz import CODEX_RULES, FuzzTarget, fuzz

pytestmark = pytest.mark.anyio

# single-process recordings the generic driver replays (prompts, answers, cancels)
NAMES = [
    "text-turn",
    "approval-accept",
    "approval-decline",
    "cancel-streaming",
    "cancel-with-approval-pending",
    "mcp-http-tool",
    "plan-update",
    "subagent-spawn-and-wait",
    "subagent-asks-approval",
    "subagent-outlives-the-turn",
]
TARGET = FuzzTarget(
    "codex",
    CODEX_RULES,
    lambda executable, _recording: AgentInstallation.at("codex", executable),
    [(RECORDINGS / f"{name}.jsonl", 1) for name in NAMES],
)


async def test_fuzzed_recordings_keep_every_invariant(anyio_backend: str) -> None:
    frames = int(os.environ.get("ANYAGENT_FUZZ_FRAMES", "600"))
    seed = int(os.environ.get("ANYAGENT_FUZZ_SEED", "0"))
    report = await fuzz(TARGET, frames=frames, seed=seed)
    print(f"\ncodex fuzz ({anyio_backend}, seed {seed}): {report.describe()}")
    assert report.frames >= frames and report.turns > 0
    assert report.clean, report.describe()


async def test_unmutated_recordings_are_clean(anyio_backend: str) -> None:
    """The control: the driver replays each recording whole (a turn per recording, no counter)."""
    report = await fuzz(TARGET, frames=10**9, mutations=["none"], max_cases=len(NAMES))
    assert report.cases == len(NAMES)
    assert report.turns >= report.cases and report.clean, report.describe()
