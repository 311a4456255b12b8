"""pi ignoring an ``abort`` past the engine's cancel deadline, through the real adapter and engine.

The agent is the replayer playing ``recordings/cancel.jsonl`` reshaped the way pi misbehaves under
load: after ``abort`` it streams 80 more deltas over ~1.6 s (the engine's deadline is 0.3 s here),
then ends the old run itself (``agent_end``) and only then answers the abort. The session must not
wedge (before: the late deltas opened an agent-originated turn nothing ended, and the next prompt
stayed ``Queued``), and the next prompt must reach pi only once pi ended the old run (pi answers a
prompt mid-run "Agent is already processing"; before, it was written at once).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pi_harness import RECORDINGS, WAIT, replay_shim, runtime_with_env

from anyagent import (
    AgentInstallation,
    Cancelled,
    Completed,
    PromptOrigin,
    SessionOptions,
    TextDelta,
    TurnEnded,
    TurnStarted,
)
from anyagent_testkit.events import EventReader, text_of

pytestmark = pytest.mark.anyio

LATE_DELTAS = 80
STREAM_SECONDS = 1.6


def late_recording(target: Path) -> Path:
    """``cancel.jsonl`` with the abort ignored: more deltas after it, then the old run's end."""
    lines: list[dict[str, Any]] = [json.loads(line) for line in (RECORDINGS / "cancel.jsonl").read_text().splitlines()]
    abort = next(i for i, line in enumerate(lines) if line.get("_sent", {}).get("type") == "abort")
    delta = next(
        line
        for line in lines[:abort]
        if line.get("assistantMessageEvent", {}).get("type") == "text_delta"  # the one before the abort
    )
    out: list[dict[str, Any]] = []
    for line in lines[: abort + 1]:
        out.append({**line, "_t": 0.0})
    step = STREAM_SECONDS / LATE_DELTAS
    for k in range(1, LATE_DELTAS + 1):
        event = {**delta["assistantMessageEvent"], "delta": "late "}
        out.append({**delta, "assistantMessageEvent": event, "_t": round(k * step, 3)})
    end = STREAM_SECONDS + 0.2
    for line in lines[abort + 1 :]:
        out.append({**line, "_t": end} if "_t" in line else line)
    target.write_text("".join(json.dumps(line) + "\n" for line in out), encoding="utf-8")
    return target


def sent_and_ends(record: Path) -> list[str]:
    """The adapter's prompts and pi's ``agent_end`` frames, in the order the wire saw them."""
    order: list[str] = []
    for line in record.read_text(encoding="utf-8").splitlines():
        frame = json.loads(line)
        sent = frame.get("_sent")
        if isinstance(sent, dict) and sent.get("type") == "prompt":
            order.append(f"prompt {sent.get('message')}")
        elif frame.get("type") == "agent_end":
            order.append("agent_end")
    return order


async def test_pi_streaming_past_the_cancel_deadline_neither_wedges_nor_gets_the_prompt_early(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyagent._engine as engine_module

    monkeypatch.setattr(engine_module, "CANCEL_GRACE", 0.3)
    shim = replay_shim(tmp_path / "bin", late_recording(tmp_path / "late.jsonl"), realtime=True)
    record = tmp_path / "wire.jsonl"
    options = SessionOptions.in_dir(tmp_path).record_wire(record)
    async with runtime_with_env(dict(os.environ)) as runtime:
        session, events = await runtime.open(AgentInstallation.at("pi", shim), options)
        reader = EventReader(events, timeout=WAIT)
        async with session:
            await session.prompt("SLOW 40")
            await reader.until(TextDelta)
            await session.cancel()
            first = await reader.until(TurnEnded)
            assert first.kind.stop == Cancelled()  # the engine's deadline, not pi's answer
            await session.prompt("are you still there")
            second = await reader.turn(timeout=10)
            assert second[-1].kind == TurnEnded(Completed()), second[-1].kind
            assert "You said: are you still there" in text_of(second)
            origins = [e.kind.origin for e in reader.seen if isinstance(e.kind, TurnStarted)]
            assert all(isinstance(origin, PromptOrigin) for origin in origins), origins
            assert "late" not in text_of(second)  # the cancelled run's output after its end: dropped
    assert sent_and_ends(record) == ["prompt SLOW 40", "agent_end", "prompt are you still there", "agent_end"]
