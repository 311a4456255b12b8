"""The hub's ``Tee``: every session ``anyagent ui`` opens is recorded into the store, prompts included
(in process, on asyncio and trio; the browser suite drives the same path through a real server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from anyagent import Capability, NotInstalled, Runtime, TextDelta, UnsupportedFeature, UserMessage
from anyagent.mock import Script, Step, completed, text
from anyagent_server import mockscript, wire
from anyagent_server._ui import StoreTee, UiApp
from anyagent_server.hub import Hub, Peer
from anyagent_store import PROMPT_EXTENSION, Store, ThreadStatus

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


class _Lines:
    """What one peer was sent, and waiting for a line."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.got = anyio.Event()
        self.peer = Peer(self.send)

    async def send(self, text: str) -> None:
        self.lines.append(json.loads(text))
        self.got.set()

    async def wait_for(self, pred: Any) -> dict[str, Any]:
        with anyio.fail_after(10):
            while True:
                for line in self.lines:
                    if pred(line):
                        return line
                self.got = anyio.Event()
                await self.got.wait()


def _kind(line: dict[str, Any]) -> str:
    kind = line.get("event", {}).get("kind")
    return next(iter(kind)) if isinstance(kind, dict) else str(kind)


async def test_continuing_a_stored_thread_appends_to_it_exactly(tmp_path: Path) -> None:
    first = Script(capabilities=(Capability.RESUME,)).turn(
        [Step.emit(text("m1", "first answer")), Step.end(completed())]
    )
    # on resume this agent replays m1 (as ACP's session/load does) before the new prompt's turn
    second = (
        Script(capabilities=(Capability.RESUME,))
        .agent_turn([Step.emit(text("m1", "first answer")), Step.end(completed())])
        .turn([Step.emit(text("m2", "second ")), Step.emit(text("m2", "answer")), Step.end(completed())])
    )
    async with Store.sqlite(tmp_path / "t.db") as store:
        async with Runtime.with_mock(first) as runtime:
            tee = StoreTee(store)
            async with Hub(runtime, tee=tee) as hub:
                out = _Lines()
                await hub.receive(out.peer, json.dumps({"id": 1, "cmd": "open", "agent": "mock", "dir": str(tmp_path)}))
                session = (await out.wait_for(lambda line: line.get("id") == 1))["ok"]["id"]
                await hub.receive(out.peer, json.dumps({"id": 2, "cmd": "prompt", "session": session, "text": "hello"}))
                await out.wait_for(lambda line: _kind(line) == "TurnEnded")
                await hub.receive(out.peer, json.dumps({"id": 3, "cmd": "close", "session": session}))
                await out.wait_for(lambda line: line.get("closed") == session)
        (before,) = (await store.threads()).threads
        stored_before = await store.history(before)
        assert before.event_count == len(stored_before) > 0
        async with Runtime.with_mock(second) as runtime:  # anyagent ui restarted
            tee = StoreTee(store)
            async with Hub(runtime, tee=tee) as hub:
                app = UiApp(hub, store, tee, "token", {"127.0.0.1:1"})
                session = await app.continue_thread(before.id)
                assert await app.continue_thread(before.id[:8]) == session  # one live session per thread
                assert tee.threads == {session: before.id} and tee.starts == {session: before.event_count}
                out = _Lines()
                await hub.receive(out.peer, json.dumps({"id": 1, "cmd": "attach", "session": session}))
                await out.wait_for(lambda line: line.get("id") == 1)
                await hub.receive(out.peer, json.dumps({"id": 2, "cmd": "prompt", "session": session, "text": "again"}))
                await out.wait_for(lambda _: _done(out, "m2"))  # the TurnEnded after m2's text
                await hub.receive(out.peer, json.dumps({"id": 3, "cmd": "close", "session": session}))
                await out.wait_for(lambda line: line.get("closed") == session)
                assert tee.threads == {} and tee.starts == {}
        forwarded = [line["event"] for line in out.lines if "event" in line]
    texts = [e["kind"]["TextDelta"]["text"] for e in forwarded if _kind({"event": e}) == "TextDelta"]
    assert texts == ["second ", "answer"]  # the replayed m1 never reached the page
    async with Store.sqlite(tmp_path / "t.db") as store:
        (after,) = (await store.threads()).threads  # the same thread, no second one
        stored = await store.history(after)
    assert after.id == before.id
    # the prompt + what was sent, m2's two text deltas (read back to back) stored as one
    assert after.event_count == len(stored) == before.event_count + 1 + len(forwarded) - 1
    assert [s.position for s in stored] == list(range(1, after.event_count + 1))
    assert [s.raw for s in stored[: before.event_count]] == [s.raw for s in stored_before]
    new = [s.event for s in stored[before.event_count :] if s.event is not None]
    prompts = [e for e in new if isinstance(e.kind, UserMessage)]
    assert [(p.kind.text, PROMPT_EXTENSION in p.extensions) for p in prompts] == [("again", True)]
    # the rest is exactly what the page was sent, once (the replayed turn's start/end may precede the prompt)
    sent = [e for e in forwarded if _kind({"event": e}) != "TextDelta"]
    assert [wire.encode_event(e) for e in new if e not in prompts and not isinstance(e.kind, TextDelta)] == sent
    said = [e.kind.text for e in [s.event for s in stored] if e is not None and isinstance(e.kind, TextDelta)]
    assert said == ["first answer", "second answer"]
    assert after.updated_at > before.updated_at and after.status is ThreadStatus.IDLE
    assert after.resume_token == before.resume_token


def _done(out: _Lines, message: str) -> bool:
    seen = False
    for line in out.lines:
        if message in json.dumps(line.get("event", {})):
            seen = True
        elif seen and _kind(line) == "TurnEnded":
            return True
    return False


async def test_a_thread_without_token_or_agent_stays_read_only_with_the_typed_reason(tmp_path: Path) -> None:
    async with Store.sqlite(tmp_path / "t.db") as store, Runtime.with_mock(Script()) as runtime:
        tokenless = await store.create_thread("mock", cwd=str(tmp_path))
        elsewhere = await store.create_thread("nonesuch", cwd=str(tmp_path), resume_token="abc")
        tee = StoreTee(store)
        async with Hub(runtime, tee=tee) as hub:
            app = UiApp(hub, store, tee, "token", {"127.0.0.1:1"})
            assert (await app._resumable(tokenless))["kind"] == "UnsupportedFeature"
            reason = await app._resumable(elsewhere)
            assert reason["kind"] == "NotInstalled" and reason["agent"] == "nonesuch"
            with pytest.raises(UnsupportedFeature, match="no resume token"):
                await app.continue_thread(tokenless.id)
            with pytest.raises(NotInstalled):
                await app.continue_thread(elsewhere.id)
            assert hub.sessions == {} and tee.threads == {}  # nothing was started


async def test_a_handoff_starts_a_linked_thread_served_on_the_hub(tmp_path: Path) -> None:
    script = Script().turn([Step.emit(text("h1", "carrying on")), Step.end(completed())])
    async with Store.sqlite(tmp_path / "t.db") as store, Runtime.with_mock(script) as runtime:
        origin = await store.create_thread("nonesuch", cwd=str(tmp_path), title="elsewhere", resume_token="abc")
        tee = StoreTee(store)
        async with Hub(runtime, tee=tee) as hub:
            app = UiApp(hub, store, tee, "token", {"127.0.0.1:1"})
            session, thread_id = await app.handoff_thread(origin.id, "mock")
            assert tee.threads == {session: thread_id} and thread_id != origin.id
            out = _Lines()
            await hub.receive(out.peer, json.dumps({"id": 1, "cmd": "attach", "session": session}))
            await out.wait_for(lambda _: _done(out, "h1"))
            await hub.receive(out.peer, json.dumps({"id": 2, "cmd": "close", "session": session}))
            await out.wait_for(lambda line: line.get("closed") == session)
        successor = await store.thread(thread_id)
        stored = [s.event for s in await store.history(successor) if s.event is not None]
    assert (successor.origin_id, successor.agent_id, successor.title) == (origin.id, "mock", "elsewhere")
    assert isinstance(stored[0].kind, UserMessage) and "'nonesuch'" in stored[0].kind.text  # the hand-off prompt
    assert [e.kind.text for e in stored if isinstance(e.kind, TextDelta)] == ["carrying on"]
