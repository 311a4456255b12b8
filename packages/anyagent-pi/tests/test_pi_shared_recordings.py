"""The project's reference recordings of a logged-in pi 0.84.4 (``shared/recordings/pi``) through
the translator: every agent run ends exactly once, nothing raises, every dialog is seen.

The files live outside this repository: set ``ANYAGENT_PI_SHARED_RECORDINGS`` to their folder (or
keep the default ``/work/shared/recordings/pi``); without them the test skips. Client frames drive
the translator as the driver would: a ``prompt`` begins a turn, an ``abort`` marks the cancel.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from anyagent import Cancelled, Completed, Failed, seam
from anyagent_pi.translate import Translator

SHARED = Path(os.environ.get("ANYAGENT_PI_SHARED_RECORDINGS", "/work/shared/recordings/pi"))
FILES = sorted(SHARED.glob("*.jsonl")) if SHARED.is_dir() else []


def replay(path: Path) -> tuple[int, list[seam.TurnEnd], int]:
    """(agent runs, the TurnEnds, dialogs) of one recording."""
    translator = Translator()
    runs, ends, dialogs = 0, [], 0
    prompts = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        sent = entry.get("_sent")
        if isinstance(sent, dict):
            if sent.get("type") == "prompt" and not str(sent.get("message", "")).startswith("/"):
                prompts += 1
                translator.begin_turn(f"t{prompts}")
            elif sent.get("type") == "abort":
                translator.cancelling = True
            continue
        if entry.get("type") in (None, "response") or any(key.startswith("_") and key != "_t" for key in entry):
            continue
        runs += entry.get("type") == "agent_start"
        out = translator.feed(entry)
        dialogs += out.ui_request is not None
        ends += [event for event in out.events if isinstance(event, seam.TurnEnd)]
    return runs, ends, dialogs


@pytest.mark.skipif(not FILES, reason=f"no shared pi recordings in {SHARED}")
@pytest.mark.parametrize("path", FILES, ids=[path.name for path in FILES])
def test_every_run_ends_exactly_once(path: Path) -> None:
    runs, ends, dialogs = replay(path)
    assert len(ends) == runs, (path.name, runs, ends)
    assert len({end.turn_id for end in ends}) == len(ends), "one end per turn"
    if path.name.startswith(("04-", "08-")):
        assert [end.stop for end in ends] == [Cancelled()]
    elif path.name.startswith("06-"):
        assert runs == 0 and dialogs == 4  # select, input, confirm, notify: the driver answers them
    else:
        assert all(end.stop == Completed() for end in ends), ends
    assert not [end for end in ends if isinstance(end.stop, Failed)]
