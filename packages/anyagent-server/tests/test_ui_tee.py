"""The hub's ``Tee``: every session ``anyagent ui`` opens is recorded into the store, prompts included
(in process, on asyncio and trio; the browser suite drives the same path through a real server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from anyagent import Runtime
from anyagent_server import mockscript
from anyagent_server._ui import StoreTee
from anyagent_server.hub import Hub, Peer
from anyagent_store import Store, ThreadStatus

pytestmark = pytest.mark.anyio

SCRIPT = Path(__file__).parent / "mock-scripts" / "turn.json"


async def test_a_hub_session_is_recorded_with_its_prompt_and_status(tmp_path: Path) -> None:
    lines: list[dict[str, Any]] = []
    got = anyio.Event()

    async def send(text: str) -> None:
        lines.append(json.loads(text))
        got.set()

    async def wait_for(pred: Any) -> dict[str, Any]:
        nonlocal got
        with anyio.fail_after(10):
            while True:
                for line in lines:
                    if pred(line):
                        return line
                got = anyio.Event()
                await got.wait()

    async with Store.sqlite(tmp_path / "t.db") as store, Runtime.with_mock(mockscript.load(SCRIPT)) as runtime:
        tee = StoreTee(store)
        async with Hub(runtime, tee=tee) as hub:
            peer = Peer(send)
            await hub.receive(peer, json.dumps({"id": 1, "cmd": "open", "agent": "mock", "dir": str(tmp_path)}))
            session = (await wait_for(lambda line: line.get("id") == 1))["ok"]["id"]
            await hub.receive(peer, json.dumps({"id": 2, "cmd": "prompt", "session": session, "text": "run it"}))
            opened = await wait_for(lambda line: "RequestOpened" in str(line.get("event", {}).get("kind")))
            assert tee.threads[session]  # the live session maps to its thread
            request = opened["event"]["kind"]["RequestOpened"]["Permission"]["id"]
            answer = {"Permission": "AllowOnce"}
            cmd = {"id": 3, "cmd": "answer", "session": session, "request": request, "answer": answer}
            await hub.receive(peer, json.dumps(cmd))
            await wait_for(lambda line: "TurnEnded" in str(line.get("event", {}).get("kind")))
            await hub.receive(peer, json.dumps({"id": 4, "cmd": "close", "session": session}))
            await wait_for(lambda line: line.get("closed") == session)
        page = await store.threads()
        assert len(page.threads) == 1
        thread = page.threads[0]
        assert thread.title == "run it" and thread.agent_id == "mock" and thread.cwd == str(tmp_path)
        assert thread.status is ThreadStatus.IDLE
        texts = [getattr(s.event.kind, "text", None) for s in await store.history(thread) if s.event]
        assert texts.index("run it") < texts.index("Let me check. ") < texts.index("Done.")  # the prompt, then the turn
        assert tee.threads == {}  # forgotten once the session closed
