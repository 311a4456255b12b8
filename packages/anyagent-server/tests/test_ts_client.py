"""anyagent-rs's TypeScript client (its ``packages/node/anyagent``), unchanged, against ``anyagent serve``.

The client is not vendored (its code belongs to anyagent-rs). Build it once outside this repository:

    copy packages/node/anyagent/{package.json,tsconfig.json,src/} of spotta85/anyagent-rs to DIR
    cd DIR && npm install && npx tsc        # -> DIR/dist/index.js

then point ``ANYAGENT_TS_CLIENT`` at ``DIR/dist/index.js``. The test is skipped when node or the
built client is missing. ``tests/ts/drive.mjs`` uses the client as a new user would: ``Runtime.start``
with a mock script, ``discover``, ``open``, ``prompt``, answer the permission, ``close``;
``tests/ts/scenarios.mjs`` plays die.json, configure.json and flood.json through it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from sidecar_client import SCRIPTS

pytestmark = pytest.mark.anyio

HERE = Path(__file__).parent
_CANDIDATES = [os.environ.get("ANYAGENT_TS_CLIENT", ""), "/work/ts-client/anyagent/dist/index.js"]
CLIENT = next((Path(p) for p in _CANDIDATES if p and Path(p).is_file()), None)
NODE = shutil.which("node")

needs_client = pytest.mark.skipif(
    NODE is None or CLIENT is None, reason="node or the built anyagent-rs TS client (ANYAGENT_TS_CLIENT) missing"
)


def _binary(tmp_path: Path) -> Path:
    """An ``anyagent`` executable for ``ANYAGENT_BIN``: this interpreter's CLI."""
    binary = tmp_path / "anyagent"
    binary.write_text(
        f'#!/bin/sh\nexec "{sys.executable}" -c "import sys; from anyagent.cli import main; sys.exit(main())" "$@"\n'
    )
    binary.chmod(0o755)
    return binary


@needs_client
async def test_ts_client_open_prompt_answer_close(tmp_path: Path) -> None:
    assert NODE is not None and CLIENT is not None
    env = {**os.environ, "ANYAGENT_BIN": str(_binary(tmp_path))}
    argv = [NODE, str(HERE / "ts" / "drive.mjs"), str(CLIENT), str(SCRIPTS / "turn.json"), str(tmp_path)]
    with anyio.fail_after(60):
        done = await anyio.run_process(argv, env=env, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    summary = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert summary["session"] == "s1" and summary["agents"] == ["mock"]
    assert summary["delivery"] == ["Started"]
    assert summary["answered"] == "r1"
    assert summary["texts"] == ["Let me check. ", "Done."]
    kinds = summary["kinds"]
    assert kinds[0] == "TurnStarted" and "RequestOpened" in kinds and "RequestClosed" in kinds
    assert kinds.index("RequestClosed") > kinds.index("RequestOpened")
    assert "TurnEnded" in kinds
    assert summary["afterClose"] == "SessionClosed"
    assert summary["code"] == 0


async def _scenario(tmp_path: Path, scenario: str) -> dict[str, Any]:
    assert NODE is not None and CLIENT is not None
    env = {**os.environ, "ANYAGENT_BIN": str(_binary(tmp_path))}
    script = str(SCRIPTS / f"{scenario}.json")
    argv = [NODE, str(HERE / "ts" / "scenarios.mjs"), str(CLIENT), scenario, script, str(tmp_path)]
    with anyio.fail_after(120):
        done = await anyio.run_process(argv, env=env, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    summary: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert summary["code"] == 0
    return summary


@needs_client
async def test_ts_client_sees_the_agent_die_as_turn_failed_then_the_session_error(tmp_path: Path) -> None:
    summary = await _scenario(tmp_path, "die")
    assert "Failed" in summary["stop"]
    assert summary["kinds"][-2:] == ["TurnEnded", "StatusChanged"]
    thrown = summary["thrown"]
    assert thrown["kind"] == "ProcessExited" and thrown["data"]["status"] == "9"
    assert "mock died" in thrown["data"]["stderr"]


@needs_client
async def test_ts_client_configure_updates_its_live_session_info(tmp_path: Path) -> None:
    summary = await _scenario(tmp_path, "configure")
    assert (summary["before"], summary["after"], summary["current"]) == ("sonnet", "opus", "opus")
    assert summary["bad"] == "InvalidConfiguration"


@needs_client
async def test_ts_client_reads_a_20000_event_flood_whole_and_in_order(tmp_path: Path) -> None:
    summary = await _scenario(tmp_path, "flood")
    assert summary["deltas"] == 20_000 and summary["ordered"] is True
