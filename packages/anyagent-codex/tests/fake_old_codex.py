"""A stand-in for an older ``codex app-server`` (0.147 was seen doing this), stdlib only.

The handshake answers are the real codex 0.171's, read from ``recordings/steer-as-the-turn-starts.jsonl``.
A turn: ``turn/start`` is answered with the turn's id at once, ``turn/started`` follows
``FAKE_CODEX_START_DELAY`` seconds later (default 0.5). Before ``turn/started`` codex refuses
``turn/steer`` ("no active turn to steer") and ``turn/interrupt`` ("no active turn to interrupt")
and the turn runs on as if they never came; after it, a steer joins the turn and an interrupt ends
it ``interrupted``. The turn answers ``FAKE_CODEX_TURN_TIME`` seconds (default 0.6) after
``turn/started`` with ``You said: <every text it was given, joined by " + ">``.

``FAKE_CODEX_IGNORE_INTERRUPT=S`` plays codex under load (issue 28 items 3a, 3b): ``turn/interrupt``
is never answered, the turn streams a delta every 20 ms for ``S`` more seconds and then ends
``interrupted`` itself; a ``turn/start`` while a turn runs is refused, as codex does ("still running
a turn").
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from pathlib import Path
from typing import Any

RECORDING = Path(__file__).parent / "recordings" / "steer-as-the-turn-starts.jsonl"
START_DELAY = float(os.environ.get("FAKE_CODEX_START_DELAY", "0.5"))
TURN_TIME = float(os.environ.get("FAKE_CODEX_TURN_TIME", "0.6"))
IGNORE_INTERRUPT = float(os.environ.get("FAKE_CODEX_IGNORE_INTERRUPT", "0") or 0)


def recorded_answers() -> dict[str, Any]:
    """The recorded results of the handshake's requests, by method."""
    methods: dict[int, str] = {}
    answers: dict[str, Any] = {}
    for line in RECORDING.read_text(encoding="utf-8").splitlines():
        frame = json.loads(line)
        sent = frame.get("_sent")
        if isinstance(sent, dict) and "id" in sent:
            methods[sent["id"]] = sent["method"]
        elif "result" in frame and frame.get("id") in methods:
            answers.setdefault(methods[frame["id"]], frame["result"])
    return answers


def send(frame: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def text_of(items: Any) -> str:
    return " ".join(str(item.get("text", "")) for item in items if isinstance(item, dict))


class Turn:
    def __init__(self, number: int, text: str) -> None:
        self.id = f"turn-{number}"
        self.texts = [text]
        self.started_at = time.monotonic() + START_DELAY
        self.started = False
        self.interrupted = False
        self.ends_at: float | None = None  # an ignored interrupt: the turn's own late end
        self.next_delta = 0.0
        self.deltas = 0


def main() -> None:
    answers = recorded_answers()
    thread = answers["thread/start"]["thread"]["id"]
    turn: Turn | None = None
    turns = 0
    buffer = b""
    while True:
        timeout = 0.05 if turn is not None else None
        ready, _, _ = select.select([sys.stdin.buffer], [], [], timeout)
        if ready:
            chunk = os.read(sys.stdin.fileno(), 65536)
            if not chunk:
                return
            buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if not line.strip():
                continue
            message = json.loads(line)
            method, rid, params = message.get("method"), message.get("id"), message.get("params") or {}
            if rid is None:
                continue
            if method == "turn/start" and turn is not None:
                send({"id": rid, "error": {"code": -32600, "message": "still running a turn"}})
            elif method == "turn/start":
                turns += 1
                turn = Turn(turns, text_of(params.get("input", [])))
                send({"id": rid, "result": {"turn": {"id": turn.id, "items": [], "status": "inProgress"}}})
            elif method == "turn/steer":
                if turn is None or not turn.started:
                    send({"id": rid, "error": {"code": -32600, "message": "no active turn to steer"}})
                else:
                    turn.texts.append(text_of(params.get("input", [])))
                    send({"id": rid, "result": {"turnId": turn.id}})
            elif method == "turn/interrupt" and IGNORE_INTERRUPT and turn is not None:
                turn.ends_at = time.monotonic() + IGNORE_INTERRUPT  # never answered
            elif method == "turn/interrupt":
                if turn is None or not turn.started:
                    send({"id": rid, "error": {"code": -32600, "message": "no active turn to interrupt"}})
                else:
                    turn.interrupted = True
                    send({"id": rid, "result": {}})
            elif method in answers:
                result = answers[method]
                send({"id": rid, "result": result})
            else:
                send({"id": rid, "result": {}})
        if turn is None:
            continue
        now = time.monotonic()
        if not turn.started and now >= turn.started_at:
            turn.started = True
            send(
                {
                    "method": "turn/started",
                    "params": {"threadId": thread, "turn": {"id": turn.id, "status": "inProgress"}},
                }
            )
        if turn.started and IGNORE_INTERRUPT and now >= turn.next_delta and not turn.interrupted:
            turn.next_delta = now + 0.02
            turn.deltas += 1
            delta = {"threadId": thread, "turnId": turn.id, "itemId": f"msg-{turn.id}", "delta": "x"}
            send({"method": "item/agentMessage/delta", "params": delta})
        if turn.ends_at is not None and now >= turn.ends_at:
            turn.interrupted = True
        if turn.started and (turn.interrupted or (turn.ends_at is None and now >= turn.started_at + TURN_TIME)):
            if not turn.interrupted:
                said = "You said: " + " + ".join(turn.texts)
                item = {"type": "agentMessage", "id": f"msg-{turn.id}", "text": said}
                delta = {"threadId": thread, "turnId": turn.id, "itemId": item["id"], "delta": said}
                send({"method": "item/agentMessage/delta", "params": delta})
                send({"method": "item/completed", "params": {"threadId": thread, "turnId": turn.id, "item": item}})
            status = "interrupted" if turn.interrupted else "completed"
            done = {"threadId": thread, "turn": {"id": turn.id, "items": [], "status": status, "error": None}}
            send({"method": "turn/completed", "params": done})
            turn = None


if __name__ == "__main__":
    main()
