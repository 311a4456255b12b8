"""The adapter against two recordings of a logged-in pi 0.84.4 (``recordings/shared-0.84.4-*``,
spliced from the project's reference recordings; see ``recordings/README.md``): steer and a
cancel that empties pi's queue, and every extension dialog answered exactly once.

What the adapter wrote is read back from its own wire recording (``record_wire``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from pi_harness import RECORDINGS, WAIT, replay_shim, runtime_with_env

from anyagent import (
    AgentInstallation,
    Answer,
    Cancelled,
    Capability,
    Completed,
    Diagnostic,
    QuestionAnswer,
    QuestionRequest,
    RequestOpened,
    SessionOptions,
    Steered,
    TurnEnded,
    TurnStarted,
)
from anyagent_testkit.events import EventReader, kinds

pytestmark = pytest.mark.anyio


def sent(record: Path) -> list[dict[str, Any]]:
    """The frames the adapter wrote, from its wire recording."""
    frames = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    return [frame["_sent"] for frame in frames if isinstance(frame.get("_sent"), dict)]


async def test_steer_is_delivered_and_cancel_clears_the_queue_before_abort(tmp_path: Path) -> None:
    shim = replay_shim(tmp_path / "bin", RECORDINGS / "shared-0.84.4-steer-then-cancel.jsonl")
    record = tmp_path / "wire.jsonl"
    options = SessionOptions.in_dir(tmp_path).record_wire(record)
    async with runtime_with_env(dict(os.environ)) as runtime:
        session, events = await runtime.open(AgentInstallation.at("pi", shim), options)
        reader = EventReader(events, timeout=WAIT)
        async with session:
            assert session.info().details.capabilities.supports(Capability.STEER)  # this pi has clear_queue
            await session.prompt("Count from 1 to 400, one number per line. No other text. No tools.")
            await reader.until(TurnStarted)
            await anyio.sleep(0.3)  # the adapter's TurnAck reaches the engine (a prompt before it queues)
            delivery = await session.prompt("Say only PEAR. No tools.")
            assert isinstance(delivery.kind, Steered)
            await session.cancel()
            turn = await reader.until(TurnEnded)
            assert turn.kind.stop == Cancelled()
            with anyio.move_on_after(0.5):
                await reader.until(TurnStarted)
            assert len(kinds(reader.seen, TurnEnded)) == len(kinds(reader.seen, TurnStarted)) == 1
    types = [frame["type"] for frame in sent(record)]
    assert types[-4:] == ["prompt", "steer", "clear_queue", "abort"], types


async def test_every_dialog_is_answered_once_and_unknown_ones_are_refused(tmp_path: Path) -> None:
    shim = replay_shim(tmp_path / "bin", RECORDINGS / "shared-0.84.4-extension-ui.jsonl")
    record = tmp_path / "wire.jsonl"
    options = SessionOptions.in_dir(tmp_path).record_wire(record)
    async with runtime_with_env(dict(os.environ)) as runtime:
        session, events = await runtime.open(AgentInstallation.at("pi", shim), options)
        reader = EventReader(events, timeout=WAIT)
        async with session:
            await session.prompt("/uidemo")
            answers = {
                "Pick a colour": Answer.question([QuestionAnswer.choices(["1"])]),
                "Say something": Answer.question([QuestionAnswer.text("hello there")]),
                "Sure?\nReally sure?": Answer.question([QuestionAnswer.choices(["yes"])]),
            }
            for _ in answers:
                request = (await reader.until(RequestOpened)).kind.request
                assert isinstance(request, QuestionRequest)
                await session.answer(request.id, answers[request.questions[0].text])
            end = await reader.until(TurnEnded)
            assert end.kind.stop == Completed()
            said = [e.kind.diagnostic for e in reader.seen if isinstance(e.kind, Diagnostic)]
            assert any(d.message == "pi: picked=Green typed=hello there ok=true" for d in said)
            assert any(d.code == "unknown_frame" and "pickFile" in d.message for d in said)
    replies = [frame for frame in sent(record) if frame["type"] == "extension_ui_response"]
    assert [{k: v for k, v in r.items() if k not in ("type", "id")} for r in replies] == [
        {"value": "Green"},
        {"value": "hello there"},
        {"confirmed": True},
        {"cancelled": True},
    ]
    assert len({reply["id"] for reply in replies}) == 4, "each dialog answered exactly once"
