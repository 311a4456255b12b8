"""One scenario per capability, run by both tiers: live (the real pi) and recorded (a replay).

Each scenario drives the public API only and asserts the events. Checks that need the real
process (files on disk, what the model was sent) run only when ``h.live``. Prompts use the fake
model's keywords (``RUN``, ``WRITE``, ``SLOW``, ``THINK``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import attrs
import pytest
from pi_harness import PINS, STEERING_PINS, WAIT, Harness

from anyagent import (
    Answer,
    Cancelled,
    Capability,
    Completed,
    CompletionSource,
    ContextCompacted,
    ContextUsage,
    Diagnostic,
    Input,
    MessageEnded,
    PermissionChoice,
    PermissionRequest,
    PromptOrigin,
    QuestionAnswer,
    QuestionRequest,
    Queued,
    ReasoningDelta,
    RequestOpened,
    ResumeFailed,
    SessionStatus,
    SessionUpdated,
    Started,
    StatusChanged,
    Steered,
    TextDelta,
    ToolKind,
    ToolStatus,
    ToolUpdated,
    TurnEnded,
    TurnStarted,
    UserMessage,
)
from anyagent_pi.adapter import CAPABILITIES
from anyagent_testkit.events import EventReader, kinds, text_of

ECHO = "Hello from the fake model. You said:"

Scenario = Callable[[Harness], Awaitable[None]]


@attrs.frozen
class Spec:
    """A scenario, the processes of its recording that exit by themselves, whether the replay
    must keep the recorded pace (a scenario that acts mid-stream), and whether pi loads the test
    extension ``fixtures/ask-colour.ts``."""

    run: Scenario
    dies: tuple[int, ...] = ()
    realtime: bool = False
    extension: bool = False
    live_only: int = 0
    """Recorded processes the replay does not launch (their checks need the real pi)."""
    pins: tuple[str, ...] = PINS
    """The live pins it runs on (steering needs a pi with ``clear_queue``)."""


def completed(events: list[Any]) -> TurnEnded:
    [end] = kinds(events, TurnEnded)
    assert end.stop == Completed(CompletionSource.PROTOCOL), end
    return end


async def text_turn(h: Harness) -> None:
    """Open, one plain turn: text streams, the message ends, usage, one protocol end."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        info = session.info()
        assert info.resume_token and info.resume_token.endswith(".jsonl")
        assert info.details.version == h.version  # read beside the npm install
        # pi 0.73.1 has no clear_queue, so no steer
        assert info.details.capabilities == (CAPABILITIES.with_(Capability.STEER) if h.steers else CAPABILITIES)
        assert not info.details.capabilities.supports(Capability.PERMISSIONS)
        assert info.configuration["model"] == "fake/claude-fake-1"
        assert [o.id for o in info.details.config_options] == ["model", "effort", "permission_gate"]
        delivery = await session.prompt("hello there")
        assert isinstance(delivery.kind, Started)
        turn = await reader.turn()
        assert turn[0].kind == TurnStarted(PromptOrigin(delivery.prompt_id))
        assert text_of(turn) == f"{ECHO} hello there"
        deltas = kinds(turn, TextDelta)
        assert len(deltas) > 1 and len({d.message_id for d in deltas}) == 1
        assert [m.message_id for m in kinds(turn, MessageEnded)] == [deltas[0].message_id]
        [usage] = kinds(turn, ContextUsage)
        assert usage.used_tokens > 0 and usage.window_tokens == 128000
        completed(turn)
        assert session.status() is SessionStatus.IDLE


async def tool_run(h: Harness) -> None:
    """pi runs bash without asking: running, then completed with its output; the model is told."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        await session.prompt("RUN echo hi-from-pi")
        turn = await reader.turn()
        updates = [t.tool for t in kinds(turn, ToolUpdated)]
        assert updates[0].kind is ToolKind.EXECUTE and updates[0].status is ToolStatus.RUNNING
        assert updates[0].input.command == "echo hi-from-pi"
        assert updates[-1].status is ToolStatus.COMPLETED and "hi-from-pi" in (updates[-1].output or "")
        assert not kinds(turn, RequestOpened)
        assert "The tool finished: hi-from-pi" in text_of(turn)
        completed(turn)


async def queue(h: Harness) -> None:
    """A prompt during a turn queues in the engine and starts its own turn after it."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        await session.prompt("SLOW 6")
        await reader.until(TextDelta)
        second = await session.prompt("second prompt")
        assert second.kind == Queued(0)
        completed(await reader.turn())
        two = await reader.turn()
        assert two[0].kind == TurnStarted(PromptOrigin(second.prompt_id))
        assert text_of(two) == f"{ECHO} second prompt"
        completed(two)
        statuses = [e.kind.status for e in reader.seen if isinstance(e.kind, StatusChanged)]
        assert SessionStatus.IDLE not in statuses[:-1], statuses


STEER = "STEERED TEXT"


def user_texts(body: dict[str, Any]) -> list[str]:
    """The text of every user message of a model request (anthropic-messages shape)."""
    texts = []
    for message in body.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            texts += [b.get("text", "") for b in blocks if b.get("type") == "text"]
    return texts


async def no_turn_starts(reader: EventReader, seconds: float = 2.0) -> None:
    """Wait ``seconds``: no turn may start (pi starts no run by itself)."""
    with anyio.move_on_after(seconds):
        event = await reader.until(TurnStarted)
        raise AssertionError(f"a turn started by itself: {event}")


async def steer(h: Harness) -> None:
    """A prompt during a turn is steered into it: pi hands it to the model before its next call,
    the one turn ends once, and its echo is not reported as someone else's message."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        assert session.info().details.capabilities.supports(Capability.STEER)
        first = await session.prompt("SLOW 6")
        assert isinstance(first.kind, Started)
        await reader.until(TextDelta)
        steered = await session.prompt(STEER)
        assert steered.kind == Steered(first.kind.turn_id)
        turn = await reader.turn()
        completed(turn)
        # the first answer streams on (its first delta was read above), then the steer's
        assert text_of(turn).endswith(f"slow5 {ECHO} {STEER}"), text_of(turn)
        assert not kinds(turn, UserMessage), "a steer is the user's own prompt"
        await no_turn_starts(reader, 1.0)
        assert len(kinds(reader.seen, TurnStarted)) == len(kinds(reader.seen, TurnEnded)) == 1
        assert session.status() is SessionStatus.IDLE
        if h.live:
            calls = h.fake.model_calls()
            assert [user_texts(call.body) for call in calls] == [["SLOW 6"], ["SLOW 6", STEER]]


async def steer_cancel(h: Harness, clear_queue: bool) -> None:
    """Cancel a turn holding a steer (not yet delivered) and a queued prompt: the steer dies with
    the turn (the adapter empties pi's queue before ``abort``), pi starts no run by itself, and the
    engine's queue runs next or is dropped as ``cancel(clear_queue=...)`` says."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        first = await session.prompt("SLOW 40")
        assert isinstance(first.kind, Started)
        await reader.until(TextDelta)
        deliveries: dict[str, Any] = {}
        asked = anyio.Event()

        async def steer_it() -> None:
            asked.set()  # set before the prompt: the engine sees the steer before the queued prompt
            deliveries["steer"] = await session.prompt("STALE STEER")

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(steer_it)
            await asked.wait()
            queued = await session.prompt("QUEUED PROMPT")  # while the steer waits for pi's answer
        assert deliveries["steer"].kind == Steered(first.kind.turn_id)
        assert queued.kind == Queued(0)
        await session.cancel(clear_queue=clear_queue)
        turn = await reader.turn()
        assert kinds(turn, TurnEnded)[0].stop == Cancelled()
        if clear_queue:
            await no_turn_starts(reader)
            assert session.status() is SessionStatus.IDLE
            await session.prompt("after the cancel")
        again = await reader.turn()
        origin = again[0].kind
        assert isinstance(origin, TurnStarted) and isinstance(origin.origin, PromptOrigin), origin
        said = "after the cancel" if clear_queue else "QUEUED PROMPT"
        assert text_of(again) == f"{ECHO} {said}"
        completed(again)
        await no_turn_starts(reader, 1.0)
        if h.live:
            texts = user_texts(h.fake.model_calls()[-1].body)
            assert texts == ["SLOW 40", said], "the steer was dropped with the cancelled turn"


async def steer_cancel_keep_queue(h: Harness) -> None:
    """``cancel(clear_queue=False)``: the queued prompt runs next, the steer does not."""
    await steer_cancel(h, clear_queue=False)


async def steer_cancel_clear_queue(h: Harness) -> None:
    """``cancel(clear_queue=True)``: nothing runs until the next prompt, which has no steer in it."""
    await steer_cancel(h, clear_queue=True)


async def cancel(h: Harness) -> None:
    """Cancel mid-stream: the turn ends Cancelled, the session answers again."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        await session.prompt("SLOW 40")
        await reader.until(TextDelta)
        await session.cancel()
        turn = await reader.turn()
        [end] = kinds(turn, TurnEnded)
        assert end.stop == Cancelled()
        assert len(kinds(turn, TextDelta)) < 40
        await session.prompt("are you still there")
        again = await reader.turn()
        assert text_of(again) == f"{ECHO} are you still there"
        completed(again)


async def question(h: Harness) -> None:
    """An extension's select and input dialogs become questions; the answers reach it."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        assert "askcolour" in [c.name for c in session.info().details.commands]
        await session.prompt("/askcolour")
        request = (await reader.until(RequestOpened)).kind.request
        assert isinstance(request, QuestionRequest)
        [asked] = request.questions
        assert asked.text == "Pick a colour" and [c.label for c in asked.choices] == ["Red", "Green"]
        assert session.status() is SessionStatus.NEEDS_INPUT
        await session.answer(request.id, Answer.question([QuestionAnswer.choices([asked.choices[1].id])]))
        request = (await reader.until(RequestOpened)).kind.request
        assert isinstance(request, QuestionRequest) and request.questions[0].allows_free_text
        await session.answer(request.id, Answer.question([QuestionAnswer.text("hello there")]))
        turn = await reader.turn()
        said = [d.kind.diagnostic.message for d in reader.seen if isinstance(d.kind, Diagnostic)]
        assert "pi: picked=Green said=hello there" in said
        completed(turn)


async def cancel_question(h: Harness) -> None:
    """Cancel while a dialog waits: it is dismissed, the turn ends Cancelled, pi goes on."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        await session.prompt("/askcolour")
        await reader.until(RequestOpened)
        await session.cancel()
        turn = await reader.turn()
        assert kinds(turn, TurnEnded)[0].stop == Cancelled()
        await session.prompt("still there")
        again = await reader.turn()
        assert text_of(again) == f"{ECHO} still there"
        completed(again)


async def permission_gate(h: Harness) -> None:
    """The opt-in gate: a write asks first; allowed it writes, denied it fails and writes nothing."""
    options = h.options().configure("permission_gate", True)
    session, events = await h.runtime.open(h.agent, options)
    reader = EventReader(events, timeout=WAIT)
    async with session:
        info = session.info()
        assert info.details.capabilities.supports(Capability.PERMISSIONS)
        assert info.configuration["permission_gate"] is True
        await session.prompt(f"WRITE {h.workspace}/allowed.txt ALPHA")
        request = (await reader.until(RequestOpened)).kind.request
        assert isinstance(request, PermissionRequest)
        assert request.tool.kind is ToolKind.EDIT and (request.tool.input.path or "").endswith("allowed.txt")
        await session.answer(request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        turn = await reader.turn()
        final = [t.tool for t in kinds(turn, ToolUpdated)][-1]
        assert final.status is ToolStatus.COMPLETED and final.diffs and final.diffs[0].new_text.startswith("ALPHA")
        completed(turn)
        await session.prompt(f"WRITE {h.workspace}/denied.txt BRAVO")
        request = (await reader.until(RequestOpened)).kind.request
        await session.answer(request.id, Answer.permission(PermissionChoice.DENY_ONCE))
        turn = await reader.turn()
        assert [t.tool for t in kinds(turn, ToolUpdated)][-1].status is ToolStatus.FAILED
        completed(turn)
        if h.live:
            assert (h.workspace / "allowed.txt").read_text().startswith("ALPHA")
            assert not (h.workspace / "denied.txt").exists()


async def configure_model(h: Harness) -> None:
    """Model and thinking level switch live; each is confirmed by SessionUpdated."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        models = [c.value for c in session.info().details.option("model").kind.choices]  # type: ignore[union-attr]
        assert models == ["fake/claude-fake-1", "fake/claude-fake-2", "fake-openai/gpt-fake-1"]
        await session.configure("model", "fake/claude-fake-2")
        assert (await reader.until(SessionUpdated)).kind.info.configuration["model"] == "fake/claude-fake-2"
        await session.configure("effort", "high")
        assert (await reader.until(SessionUpdated)).kind.info.configuration["effort"] == "high"
        await session.prompt("which model")
        completed(await reader.turn())
        if h.live:
            body = h.fake.model_calls()[-1].body
            assert body["model"] == "claude-fake-2" and body.get("thinking"), body.get("thinking")


async def context_usage(h: Harness) -> None:
    """Thinking streams as reasoning; every turn reports context usage that grows."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        await session.prompt("THINK")
        one = await reader.turn()
        assert kinds(one, ReasoningDelta), "thinking streams as reasoning"
        [first] = kinds(one, ContextUsage)
        await session.prompt("and again")
        two = await reader.turn()
        [second] = kinds(two, ContextUsage)
        assert second.used_tokens > first.used_tokens and second.window_tokens == 128000


async def compact(h: Harness) -> None:
    """Compaction runs as a turn of its own: ContextCompacted, then one end."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        await session.prompt("remember PLUM")
        completed(await reader.turn())
        await session.compact()
        turn = await reader.turn()
        assert kinds(turn, ContextCompacted)
        completed(turn)


async def resume(h: Harness) -> None:
    """A new process continues the conversation by its session file; a missing file fails."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        await session.prompt("remember the word TANGERINE")
        completed(await reader.turn())
        token = session.info().resume_token
    assert token
    again, events2 = await h.runtime.open(h.agent, h.options().resume(token))
    reader2 = EventReader(events2, timeout=WAIT)
    async with again:
        assert again.info().resume_token == token
        await again.prompt("which word did I say")
        completed(await reader2.turn())
        if h.live:
            assert "TANGERINE" in h.history()
    with pytest.raises(ResumeFailed):  # a path: pi would start an empty session there
        await h.runtime.open(h.agent, h.options().resume(f"{h.workspace}/no-such-session.jsonl"))
    if h.live:  # an unknown id: pi exits saying so on stderr (recordings keep no stderr)
        with pytest.raises(ResumeFailed, match="No session found"):
            await h.runtime.open(h.agent, h.options().resume("0123abcd"))


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c63f8cfc0f01f00050001ff89993d1d0000000049454e44ae426082"
)
"""A valid 1x1 red PNG (pi 1.6.0 decodes attachments and drops a broken one)."""


async def image(h: Harness) -> None:
    """An image attachment rides inline as pi's ImageContent; the model receives it."""
    picture = h.workspace / "dot.png"
    picture.write_bytes(PNG)
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        assert session.info().details.capabilities.supports(Capability.IMAGES)
        await session.prompt(Input.text("describe this picture").attach(picture))
        turn = await reader.turn()
        assert text_of(turn) == f"{ECHO} describe this picture"
        completed(turn)
        if h.live:
            content = h.fake.model_calls()[-1].body["messages"][-1]["content"]
            assert [block["type"] for block in content] == ["text", "image"], content


async def openai_shape(h: Harness) -> None:
    """The same turn with a tool over pi's openai-completions provider (configured at open)."""
    options = h.options().configure("model", "fake-openai/gpt-fake-1")
    session, events = await h.runtime.open(h.agent, options)
    reader = EventReader(events, timeout=WAIT)
    async with session:
        assert session.info().configuration["model"] == "fake-openai/gpt-fake-1"
        await session.prompt("RUN echo over-openai")
        turn = await reader.turn()
        updates = [t.tool for t in kinds(turn, ToolUpdated)]
        assert updates[-1].status is ToolStatus.COMPLETED and "over-openai" in (updates[-1].output or "")
        assert "The tool finished: over-openai" in text_of(turn)
        completed(turn)
        if h.live:
            assert h.fake.model_calls()[-1].path.endswith("/chat/completions")


async def generate(h: Harness) -> None:
    """One-shot text: pi launched with --no-tools --no-session."""
    text = await h.runtime.generate(h.agent, h.options(), "a five-word title for: fix the parser")
    assert text == "OK"
    if h.live:
        [call] = h.fake.requests[-1:]
        assert not call.body.get("tools")


SCENARIOS: dict[str, Spec] = {
    "text-turn": Spec(text_turn),
    "tool-run": Spec(tool_run),
    "queue": Spec(queue, realtime=True, pins=("pi",)),  # a pi that steers takes the prompt into the turn
    "cancel": Spec(cancel, realtime=True),
    "question": Spec(question, extension=True),
    "cancel-question": Spec(cancel_question, extension=True),
    "permission-gate": Spec(permission_gate),
    "configure-model": Spec(configure_model),
    "context-usage": Spec(context_usage),
    "compact": Spec(compact),
    "resume": Spec(resume, live_only=1),
    "generate": Spec(generate),
    "image": Spec(image),
    "openai-shape": Spec(openai_shape),
    "steer": Spec(steer, realtime=True, pins=tuple(STEERING_PINS)),
    "steer-cancel-keep-queue": Spec(steer_cancel_keep_queue, realtime=True, pins=tuple(STEERING_PINS)),
    "steer-cancel-clear-queue": Spec(steer_cancel_clear_queue, realtime=True, pins=tuple(STEERING_PINS)),
}
