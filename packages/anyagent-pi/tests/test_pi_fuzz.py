"""The testkit's fuzz harness on the pi adapter: mutated copies of the committed recordings played
through the real adapter and engine; every counter must stay 0.

``nox -s tests`` runs a bounded sample; ``ANYAGENT_FUZZ_FRAMES`` (10k+) makes it a long run.
"""

from __future__ import annotations

import os

import pytest
from pi_harness import RECORDINGS

from anyagent import AgentInstallation
from anyagent_testkit.fuzz import PI_RULES, FuzzTarget, fuzz

pytestmark = pytest.mark.anyio

# single-session recordings the generic driver can replay (prompt, cancel, answer)
NAMES = ["text-turn", "tool-run", "cancel", "question", "context-usage", "openai-shape", "image"]
TARGET = FuzzTarget(
    "pi",
    PI_RULES,
    lambda executable, _recording: AgentInstallation.at("pi", executable),
    [(RECORDINGS / f"{name}.jsonl", 1) for name in NAMES],
)


async def test_fuzzed_recordings_keep_every_invariant(anyio_backend: str) -> None:
    frames = int(os.environ.get("ANYAGENT_FUZZ_FRAMES", "600"))
    seed = int(os.environ.get("ANYAGENT_FUZZ_SEED", "0"))
    report = await fuzz(TARGET, frames=frames, seed=seed)
    print(f"\npi fuzz ({anyio_backend}, seed {seed}): {report.describe()}")
    assert report.frames >= frames and report.turns > 0
    assert report.clean, report.describe()


async def test_unmutated_recordings_are_clean(anyio_backend: str) -> None:
    """The control: the driver replays each recording whole."""
    report = await fuzz(TARGET, frames=10**9, mutations=["none"], max_cases=len(NAMES))
    assert report.cases == len(NAMES)
    assert report.turns >= report.cases and report.clean, report.describe()
