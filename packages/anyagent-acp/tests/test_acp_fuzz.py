"""The testkit's fuzz harness on the ACP adapter: mutated copies of the committed recordings (each
agent's first session) played through the real adapter and engine; every counter must stay 0.

``nox -s tests`` runs a bounded sample (a few hundred frames); ``nox -s fuzz`` sets
``ANYAGENT_FUZZ_FRAMES`` (10k+) and prints the counters.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from acpsupport import runtime
from test_acp_live import PROFILE_IDS, RECORDED

from anyagent import AgentInstallation
from anyagent_testkit.fuzz import ACP_RULES, FuzzTarget, fuzz

pytestmark = pytest.mark.anyio

RECORDINGS = Path(__file__).parent / "recordings"


def _installation(executable: Path, recording: Path) -> AgentInstallation:
    cli_id = recording.name.removesuffix("-A.jsonl")
    return AgentInstallation(id=PROFILE_IDS[cli_id], name=cli_id, executable_path=executable, wire="acp")


TARGET = FuzzTarget(
    "acp",
    ACP_RULES,
    _installation,
    [(RECORDINGS / f"{cli_id}-A.jsonl", 1) for cli_id in sorted(RECORDED)],
    runtime=runtime,
)


async def test_fuzzed_recordings_keep_every_invariant(anyio_backend: str) -> None:
    frames = int(os.environ.get("ANYAGENT_FUZZ_FRAMES", "1000"))
    seed = int(os.environ.get("ANYAGENT_FUZZ_SEED", "0"))
    report = await fuzz(TARGET, frames=frames, seed=seed)
    print(f"\nacp fuzz ({anyio_backend}, seed {seed}): {report.describe()}")
    assert report.frames >= frames and report.turns > 0
    assert report.clean, report.describe()


async def test_unmutated_recordings_are_clean(anyio_backend: str) -> None:
    """The control: the driver replays each agent's recording whole (every recorded turn, no counter)."""
    report = await fuzz(TARGET, frames=10**9, mutations=["none"], max_cases=len(RECORDED))
    assert report.cases == len(RECORDED) and report.turns >= 5 * report.cases and report.clean, report.describe()
