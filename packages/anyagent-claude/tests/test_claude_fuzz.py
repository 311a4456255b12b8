"""The testkit's fuzz harness on the Claude adapter: mutated copies of the committed recordings played
through the real adapter and engine; every counter must stay 0.

``nox -s tests`` runs a bounded sample (a few hundred frames); ``nox -s fuzz`` sets
``ANYAGENT_FUZZ_FRAMES`` (10k+) and prints the counters.
"""

from __future__ import annotations

import os

import pytest
from claude_harness import RECORDINGS

from anyagent import AgentInstallation
from anyagent_testkit.fuzz import CLAUDE_RULES, FuzzTarget, fuzz

pytestmark = pytest.mark.anyio

# single-turn-driven recordings whose first process opens a fresh session ("queue" needs realtime
# pacing, "resume"/"fork"/"rollback" drive options the generic driver does not replay)
NAMES = [
    "text-turn",
    "permission-allow",
    "permission-deny",
    "question",
    "cancel",
    "subagent",
    "context-usage",
    "compact",
]
TARGET = FuzzTarget(
    "claude",
    CLAUDE_RULES,
    lambda executable, _recording: AgentInstallation.at("claude", executable),
    [(RECORDINGS / f"{name}.jsonl", 1) for name in NAMES],
)


async def test_fuzzed_recordings_keep_every_invariant(anyio_backend: str) -> None:
    frames = int(os.environ.get("ANYAGENT_FUZZ_FRAMES", "800"))
    seed = int(os.environ.get("ANYAGENT_FUZZ_SEED", "0"))
    report = await fuzz(TARGET, frames=frames, seed=seed)
    print(f"\nclaude fuzz ({anyio_backend}, seed {seed}): {report.describe()}")
    assert report.frames >= frames and report.turns > 0
    assert report.clean, report.describe()


async def test_unmutated_recordings_are_clean(anyio_backend: str) -> None:
    """The control: the driver replays each recording whole (a turn per recording, no counter)."""
    report = await fuzz(TARGET, frames=10**9, mutations=["none"], max_cases=len(NAMES))
    assert report.cases == len(NAMES)
    assert report.turns >= report.cases and report.clean, report.describe()
