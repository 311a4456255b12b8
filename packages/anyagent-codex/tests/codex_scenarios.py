"""Scenarios both tiers run: live against the pinned ``codex`` and the fake model (recording the
wire when asked), recorded by replaying that wire through the adapter. Each asserts events.

Prompts use the fake model's keywords: ``RUN <command>`` (an escalated ``exec_command``, so codex
asks for approval), ``SLOW n`` (n text chunks, 0.1 s apart), anything else an echo. The plan,
question and subagent scenarios give the fake model a responder that calls codex's own tools
(``update_plan``, ``request_user_input``, ``spawn_agent`` / ``wait_agent``) by what each request says.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import attrs
import pytest
from codex_harness import WAIT, Harness

from anyagent import (
    AgentOrigin,
    Answer,
    AuthRequired,
    Cancelled,
    Capability,
    Completed,
    ContextCompacted,
    ContextUsage,
    Diagnostic,
    DiagnosticCode,
    Failed,
    Input,
    MessageEnded,
    PermissionChoice,
    PermissionRequest,
    PlanEntryStatus,
    PlanUpdated,
    PromptOrigin,
    QuestionAnswer,
    QuestionRequest,
    Queued,
    RequestClosed,
    RequestOpened,
    ResumeFailed,
    Session,
    SessionOptions,
    SessionUpdated,
    Steered,
    TextDelta,
    ToolKind,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
    TurnEnded,
    TurnStarted,
    UserMessage,
)
from anyagent_codex import FORK_POINT, PROPOSED_PLAN
from anyagent_testkit.events import EventReader, kinds, text_of
from anyagent_testkit.fakemodel import TOOL_DONE_PREFIX, Conversation, Reply

ECHO = "Hello from the fake model. You said: "


@attrs.frozen
class Scenario:
    """A scenario and the world it needs: ``bad_key`` (the model answers 401), ``dead_model``
    (nothing listens where the model should be), ``max_retries`` (the adapter's retry bound),
    ``codex_args`` (more launch arguments for the live ``codex``)."""

    run: Callable[[Harness], Awaitable[None]]
    bad_key: bool = False
    dead_model: bool = False
    max_retries: int | None = None
    codex_args: tuple[str, ...] = ()


SCENARIOS: dict[str, Scenario] = {}
Run = Callable[[Harness], Awaitable[None]]


def scenario(func: Run | None = None, **world: Any) -> Any:
    def register(func: Run) -> Run:
        SCENARIOS[func.__name__.replace("_", "-")] = Scenario(func, **world)
        return func

    return register(func) if func is not None else register


@asynccontextmanager
async def opened(h: Harness, options: SessionOptions | None = None) -> AsyncIterator[tuple[Session, EventReader]]:
    """A session opened in ``h`` (closed on the way out) and a bounded reader of its events."""
    session, events = await h.runtime.open(h.agent, options or h.options())
    async with session:
        yield session, EventReader(events, timeout=WAIT)


async def _skills_listed(reader: EventReader) -> None:
    """Wait for the info update that brings codex's skills (answered just after open), so the next
    ``SessionUpdated`` read is the one a command caused."""
    await reader.match(lambda e: isinstance(e.kind, SessionUpdated) and bool(e.kind.info.details.commands))


def _ended(events: list[object]) -> TurnEnded:
    [end] = kinds(events, TurnEnded)  # type: ignore[arg-type]
    return end


@scenario
async def text_turn(h: Harness) -> None:
    async with opened(h) as (session, reader):
        await session.prompt("hello there")
        turn = await reader.turn()
        assert text_of(turn) == ECHO + "hello there"
        assert isinstance(_ended(turn).stop, Completed)
        assert kinds(turn, MessageEnded), "the message ended before the turn"
        [*_, usage] = kinds(turn, ContextUsage)
        assert usage.used_tokens > 0 and usage.window_tokens
        ended = [e for e in turn if isinstance(e.kind, MessageEnded)]
        assert ended[-1].extensions.get(FORK_POINT), "the message carries its turn as a fork point"
        assert session.info().details.commands, "codex's skills arrived as slash commands after open"


async def _approval(h: Harness, choice: PermissionChoice) -> list[object]:
    async with opened(h) as (session, reader):
        await session.prompt("RUN echo approved-run")
        request = (await reader.kind(RequestOpened)).request
        assert isinstance(request, PermissionRequest)
        assert "echo approved-run" in request.tool.title
        assert PermissionChoice.ALLOW_ONCE in request.options and PermissionChoice.DENY_ONCE in request.options
        await session.answer(request.id, Answer.permission(choice))
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
        return list(reader.seen)


@scenario
async def approval_accept(h: Harness) -> None:
    seen = await _approval(h, PermissionChoice.ALLOW_ONCE)
    final = [u.tool for u in kinds(seen, ToolUpdated) if not u.tool.status.active]  # type: ignore[arg-type]
    assert final and final[-1].status is ToolStatus.COMPLETED
    assert "approved-run" in (final[-1].output or "")
    assert "The tool finished" in text_of(seen)  # type: ignore[arg-type]


@scenario
async def approval_decline(h: Harness) -> None:
    seen = await _approval(h, PermissionChoice.DENY_ONCE)
    final = [u.tool for u in kinds(seen, ToolUpdated) if not u.tool.status.active]  # type: ignore[arg-type]
    assert final and final[-1].status is ToolStatus.FAILED, "a declined command ends failed"


@scenario
async def cancel_streaming(h: Harness) -> None:
    async with opened(h) as (session, reader):
        await session.prompt("SLOW 40")
        await reader.kind(TextDelta)
        await session.cancel()
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Cancelled)
        await session.prompt("are you still there")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
        assert text_of(turn).endswith("are you still there")


@scenario
async def cancel_with_approval_pending(h: Harness) -> None:
    async with opened(h) as (session, reader):
        await session.prompt("RUN echo never-runs")
        request = (await reader.kind(RequestOpened)).request
        await session.cancel()
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Cancelled)
        assert request.id in [closed.request_id for closed in kinds(reader.seen, RequestClosed)]
        await session.prompt("after the cancel")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed), "the late serverRequest/resolved starts no turn"
        assert len(kinds(reader.seen, TurnEnded)) == 2


@scenario
async def steer_mid_turn(h: Harness) -> None:
    async with opened(h) as (session, reader):
        await session.prompt("SLOW 15")
        await reader.kind(TextDelta)
        delivery = await session.prompt("steered in")
        assert isinstance(delivery.kind, Steered)
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
        assert ECHO + "steered in" in text_of(reader.seen), "the model answered the steered text in the same turn"
        assert len(kinds(reader.seen, TurnEnded)) == 1


@scenario
async def queue_behind_a_steer(h: Harness) -> None:
    """A prompt made while a steer waits for codex's answer queues in the engine, and runs as its
    own turn after the steered one."""
    async with opened(h) as (session, reader):
        await session.prompt("SLOW 15")
        await reader.kind(TextDelta)
        deliveries: dict[str, Any] = {}
        asked = anyio.Event()

        async def steer() -> None:
            asked.set()  # the engine takes the steer before the next prompt
            deliveries["steer"] = await session.prompt("steered in")

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(steer)
            await asked.wait()
            deliveries["queued"] = await session.prompt("queued after")
        assert isinstance(deliveries["steer"].kind, Steered)
        queued = deliveries["queued"]
        assert queued.kind == Queued(0)
        first = await reader.turn()
        assert isinstance(_ended(first).stop, Completed)
        second = await reader.turn()
        started = kinds(second, TurnStarted)
        assert started and started[0].origin == PromptOrigin(queued.prompt_id)
        assert isinstance(_ended(second).stop, Completed)
        assert ECHO + "queued after" in text_of(second), "the queued prompt ran in its own turn"
        assert ECHO + "queued after" not in text_of(first)


@scenario
async def configure_settings(h: Harness) -> None:
    async with opened(h) as (session, reader):
        await _skills_listed(reader)
        await session.configure("sandbox", "read-only")
        info = (await reader.kind(SessionUpdated)).info
        assert info.configuration["sandbox"] == "read-only"
        await session.configure("mode", "never")
        info = (await reader.kind(SessionUpdated)).info
        assert info.configuration["mode"] == "never"
        assert info.details.option("effort") is None, "the fake model has no catalog entry, so no efforts"
        await session.configure("model", "gpt-5.5")
        info = (await reader.kind(SessionUpdated)).info
        assert info.configuration["model"] == "gpt-5.5"
        effort = info.details.option("effort")
        assert effort is not None, "a catalog model brings its reasoning efforts"
        choices = [choice.value for choice in effort.kind.choices]  # type: ignore[union-attr]
        assert "low" in choices
        await session.configure("effort", "low")
        info = (await reader.kind(SessionUpdated)).info
        assert info.configuration["effort"] == "low"
        await session.prompt("configured")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
    if h.fake is not None:
        body = h.fake.model_calls()[-1].body
        assert body.get("model") == "gpt-5.5"
        assert body.get("reasoning", {}).get("effort") == "low", body.get("reasoning")


@scenario
async def resume_new_process(h: Harness) -> None:
    async with opened(h) as (session, reader):
        await session.prompt("remember PINEAPPLE")
        await reader.turn()
        token = session.info().resume_token
    assert token
    async with opened(h, h.options().resume(token)) as (session, reader):
        assert session.info().resume_token == token
        await session.prompt("what did I say")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
    if h.fake is not None:
        assert "PINEAPPLE" in str(h.fake.model_calls()[-1].body), "the resumed thread carries its history"


@scenario
async def fork_thread(h: Harness) -> None:
    async with opened(h) as (session, reader):
        await session.prompt("the original ORANGE")
        await reader.turn()
        token = session.info().resume_token
    assert token
    async with opened(h, h.options().fork_from(token)) as (session, reader):
        assert session.info().resume_token not in (None, token), "a fork is a new thread"
        await session.prompt("in the fork")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
    if h.fake is not None:
        assert "ORANGE" in str(h.fake.model_calls()[-1].body), "the fork carries the original's history"


STALE_THREAD = "01a229fc-0000-7000-8000-00000000dead"
"""A well-formed codex thread id no thread has (a token whose thread is gone)."""


@scenario
async def resume_stale_token(h: Harness) -> None:
    """A token codex cannot resolve — well-formed but unknown, or not a thread id at all — fails
    ``open`` with ``ResumeFailed`` (resume and fork alike), and the app's fallback, a fresh
    session, works."""
    for token in (STALE_THREAD, "not-a-thread"):
        for options in (h.options().resume(token), h.options().fork_from(token)):
            with pytest.raises(ResumeFailed, match="could not open thread"):
                await h.runtime.open(h.agent, options)
    async with opened(h) as (session, reader):
        assert session.info().resume_token not in (None, STALE_THREAD)
        await session.prompt("start afresh")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
        assert text_of(turn) == ECHO + "start afresh"


@scenario
async def fork_at_a_turn(h: Harness) -> None:
    """``fork_from(token, at)`` at the first turn — by its fork point (``MessageEnded``'s
    ``codex/fork_point``) or by the message's id, as the spec and the store pass it: the branch has
    the first turn and not the second; the original keeps both. A point the thread does not have
    fails ``ResumeFailed``."""
    async with opened(h) as (session, reader):
        await session.prompt("first APPLE")
        first = await reader.turn()
        await session.prompt("second BANANA")
        await reader.turn()
        token = session.info().resume_token
    assert token
    [*_, ended] = [e for e in first if isinstance(e.kind, MessageEnded)]
    turn_id = ended.extensions.get(FORK_POINT)
    assert isinstance(turn_id, str) and turn_id
    message_id = ended.kind.message_id  # type: ignore[attr-defined]
    for at in (turn_id, message_id):  # the turn's fork point, or the spec's message id
        async with opened(h, h.options().fork_from(token, at)) as (session, reader):
            assert session.info().resume_token not in (None, token), "a fork is a new thread"
            await session.prompt("in the branch")
            turn = await reader.turn()
            assert isinstance(_ended(turn).stop, Completed)
        if h.fake is not None:
            body = str(h.fake.model_calls()[-1].body)
            assert "APPLE" in body and "BANANA" not in body, f"the branch at {at} ends at the first turn"
    with pytest.raises(ResumeFailed, match="no turn or message"):
        await h.runtime.open(h.agent, h.options().fork_from(token, "no-such-message"))
    async with opened(h, h.options().resume(token)) as (session, reader):
        await session.prompt("back on the original")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
    if h.fake is not None:
        body = str(h.fake.model_calls()[-1].body)
        assert "APPLE" in body and "BANANA" in body and "in the branch" not in body, "the original is untouched"


@scenario
async def rollback_turn(h: Harness) -> None:
    async with opened(h) as (session, reader):
        await _skills_listed(reader)
        await session.prompt("keep KIWI")
        await reader.turn()
        await session.prompt("forget MANGO")
        await reader.turn()
        await session.rollback(1)
        await reader.kind(SessionUpdated)
        await session.prompt("after the rollback")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
    if h.fake is not None:
        body = str(h.fake.model_calls()[-1].body)
        assert "KIWI" in body and "MANGO" not in body, "the rewound turn left the conversation"


@scenario
async def compact_thread(h: Harness) -> None:
    async with opened(h) as (session, reader):
        await session.prompt("something to compact")
        await reader.turn()
        await session.compact()
        turn = await reader.turn()
        assert kinds(turn, ContextCompacted), "compaction reports ContextCompacted"
        assert not isinstance(_ended(turn).stop, Failed)


def png(width: int = 8, height: int = 8) -> bytes:
    """A valid RGB PNG of one colour."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\xff\x80\x00" * width for _ in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


@scenario
async def image_attachment(h: Harness) -> None:
    image = h.workspace / "dot.png"
    image.write_bytes(png())
    async with opened(h) as (session, reader):
        await session.prompt(Input("what is in this picture", attachments=(image,)))
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
        assert text_of(turn).startswith(ECHO)
    if h.fake is not None:
        body = str(h.fake.model_calls()[-1].body)
        assert "input_image" in body and "could not be processed" not in body, "the image reached the model"


@scenario
async def steer_as_the_turn_starts(h: Harness) -> None:
    async with opened(h) as (session, reader):
        await session.prompt("SLOW 10")
        # codex's first frame of the turn (the model-metadata notice), just before it names the turn; the
        # bubblewrap notice of the handshake is no such mark (a prompt before the turn's ack is queued)
        await reader.match(lambda event: isinstance(event.kind, Diagnostic) and event.turn_info is not None)
        delivery = await session.prompt("early steer")  # the steer waits in the adapter if it comes first
        assert isinstance(delivery.kind, Steered), (delivery, reader.seen)
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
        assert ECHO + "early steer" in text_of(reader.seen)


@scenario(dead_model=True, max_retries=2)
async def model_unreachable(h: Harness) -> None:
    async with opened(h) as (session, reader):
        await session.prompt("hello")
        turn = await reader.turn()
        stop = _ended(turn).stop
        assert isinstance(stop, Failed) and "gave up after 2 retries" in stop.message, stop
        retries = [e for e in kinds(turn, Diagnostic) if e.diagnostic.code == DiagnosticCode.API_RETRY]
        assert len(retries) == 2
        await session.prompt("still there")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Failed), "the next turn runs (and fails the same way)"


@scenario(bad_key=True)
async def auth_lost(h: Harness) -> None:
    async with opened(h) as (session, reader):
        await session.prompt("hello")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Failed)
        with pytest.raises(AuthRequired) as caught:
            await reader.rest()
        assert caught.value.login, "the login methods come with it"


__all__ = ["SCENARIOS", "Scenario"]


# -- codex's own tools, called by a responder on the fake model


def _fake_tool_outputs(h: Harness) -> list[str]:
    """Every ``function_call_output`` the model received (live tier only)."""
    assert h.fake is not None
    return [
        str(item.get("output"))
        for call in h.fake.model_calls()
        for item in call.body.get("input", [])
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def _asked(word: str, reply: Reply) -> Callable[[Conversation], Reply | None]:
    """A responder: ``reply`` to a prompt with ``word`` in it (not to a tool result), else nothing."""
    return lambda c: reply if word in c.user_text and not c.tool_result_newest else None


PLAN = [
    {"step": "Read the failing test", "status": "completed"},
    {"step": "Fix the parser", "status": "in_progress"},
    {"step": "Run the suite", "status": "pending"},
]


@scenario
async def plan_update(h: Harness) -> None:
    if h.fake is not None:
        h.fake.responder = _asked("PLAN", Reply.tool("update_plan", explanation="three steps", plan=PLAN))
    async with opened(h) as (session, reader):
        assert Capability.PLAN in session.info().details.capabilities
        await session.prompt("PLAN the fix")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
        [plan] = kinds(turn, PlanUpdated)
        assert [(entry.content, entry.status) for entry in plan.entries] == [
            ("Read the failing test", PlanEntryStatus.COMPLETED),
            ("Fix the parser", PlanEntryStatus.IN_PROGRESS),
            ("Run the suite", PlanEntryStatus.PENDING),
        ]
        assert text_of(turn) == TOOL_DONE_PREFIX + "Plan updated"
    if h.fake is not None:
        assert _fake_tool_outputs(h) == ["Plan updated"], "codex ran its update_plan tool"


QUESTIONS = [
    {
        "id": "colour",
        "header": "Colour",
        "question": "Which colour should the button be?",
        "options": [
            {"label": "Red (Recommended)", "description": "Warm and loud"},
            {"label": "Blue", "description": "Calm"},
        ],
    }
]


@scenario
async def question_answered(h: Harness) -> None:
    if h.fake is not None:
        h.fake.responder = _asked("ASK", Reply.tool("request_user_input", questions=QUESTIONS))
    async with opened(h) as (session, reader):
        # off until codex asks one on the wire (the spec's rule), then a SessionUpdated adds it
        assert Capability.QUESTIONS not in session.info().details.capabilities
        await _skills_listed(reader)
        await session.configure("mode", "plan")  # codex's Plan mode: request_user_input works there
        info = (await reader.kind(SessionUpdated)).info
        assert info.configuration["mode"] == "plan"
        await session.prompt("ASK about the button")
        added = await reader.until(SessionUpdated, RequestOpened)
        assert isinstance(added.kind, SessionUpdated), "the capability comes before the question"
        assert Capability.QUESTIONS in added.kind.info.details.capabilities
        assert Capability.QUESTIONS in session.info().details.capabilities
        request = (await reader.kind(RequestOpened)).request
        assert isinstance(request, QuestionRequest)
        [question] = request.questions
        assert (question.id, question.header, question.text) == (
            "colour",
            "Colour",
            "Which colour should the button be?",
        )
        assert [choice.label for choice in question.choices] == ["Red (Recommended)", "Blue"]
        assert question.choices[1].description == "Calm"
        assert question.allows_free_text, "codex adds a free-form answer (isOther)"
        await session.answer(request.id, Answer.question([QuestionAnswer.choices(["Blue"])]))
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
        assert request.id in [closed.request_id for closed in kinds(reader.seen, RequestClosed)]
        assert text_of(turn).startswith(TOOL_DONE_PREFIX) and '"Blue"' in text_of(turn)
        await session.configure("mode", "default")  # out of Plan mode: codex refuses the tool again
        info = (await reader.kind(SessionUpdated)).info
        assert info.configuration["mode"] == "on-request"
        await session.prompt("ASK once more")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed) and not kinds(turn, RequestOpened)
        assert text_of(turn) == TOOL_DONE_PREFIX + "request_user_input is unavailable in Default mode"
    if h.fake is not None:
        answer, refusal = _fake_tool_outputs(h)[-2:]
        assert json.loads(answer) == {"answers": {"colour": {"answers": ["Blue"]}}}, "the model got the answer"
        assert refusal == "request_user_input is unavailable in Default mode"


CHILD_TASK = "CHILD count the apples"


def _spawner(task: str) -> Callable[[Conversation], Reply | None]:
    """A responder: the parent spawns a subagent with ``task``, then waits for it with the id codex
    returned; the child's own requests fall through to the keywords (``RUN``) or the echo."""

    spawn = _asked("SPAWN", Reply.tool("spawn_agent", message=task))

    def respond(c: Conversation) -> Reply | None:
        if c.tool_result_newest and '"agent_id"' in c.tool_output:
            return Reply.tool("wait_agent", targets=[json.loads(c.tool_output)["agent_id"]], timeout_ms=30000)
        return spawn(c)

    return respond


@scenario
async def subagent_spawn_and_wait(h: Harness) -> None:
    if h.fake is not None:
        h.fake.responder = _spawner(CHILD_TASK)
    async with opened(h) as (session, reader):
        assert Capability.SUBAGENTS in session.info().details.capabilities
        await session.prompt("SPAWN a helper")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
        tools = [update.tool for update in kinds(turn, ToolUpdated)]
        spawn = next(tool for tool in tools if tool.title == "spawnAgent")
        assert spawn.kind is ToolKind.SUBAGENT and spawn.input.description == CHILD_TASK
        child = [e for e in turn if e.turn_info is not None and e.turn_info.parent_tool_id == spawn.id]
        assert [m.text for m in kinds(child, UserMessage)] == [CHILD_TASK], "the child's task, under its spawn"
        assert text_of(child, spawn.id) == ECHO + CHILD_TASK, "the child's answer, under its spawn"
        assert kinds(child, MessageEnded)
        wait = [tool for tool in tools if tool.title == "wait" and not tool.status.active][-1]
        assert wait.kind is ToolKind.SUBAGENT and wait.status is ToolStatus.COMPLETED
        assert wait.output == ECHO + CHILD_TASK, "the wait collected the child's answer"
        main = text_of(turn)
        assert main.startswith(TOOL_DONE_PREFIX) and CHILD_TASK in main, "the parent's model got the answer"
        # the child's turn ended before the parent's (its end was consumed): one end, and the
        # session goes on
        await session.prompt("after the helper")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed) and text_of(turn) == ECHO + "after the helper"
        assert len(kinds(reader.seen, TurnEnded)) == 2
    if h.fake is not None:
        prompts = [
            json.dumps(item.get("content"))
            for call in h.fake.model_calls()
            for item in call.body.get("input", [])
            if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user"
        ]
        assert any(CHILD_TASK in prompt for prompt in prompts), "the child thread asked the model with its task"
        assert any(ECHO + CHILD_TASK in output for output in _fake_tool_outputs(h)), (
            "the wait result reached the parent"
        )


@scenario
async def subagent_asks_approval(h: Harness) -> None:
    if h.fake is not None:
        h.fake.responder = _spawner("RUN echo from-the-child")
    async with opened(h) as (session, reader):
        await session.prompt("SPAWN a helper that runs a command")
        opened_event = await reader.until(RequestOpened)
        request = opened_event.kind.request  # type: ignore[attr-defined]
        assert isinstance(request, PermissionRequest) and "echo from-the-child" in request.tool.title
        spawn = next(u.tool for u in kinds(reader.seen, ToolUpdated) if u.tool.title == "spawnAgent")
        assert opened_event.turn_info is not None and opened_event.turn_info.parent_tool_id == spawn.id, (
            "the child's approval comes under its spawn call"
        )
        await session.answer(request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
        child_tools = [
            e.kind.tool
            for e in reader.seen
            if isinstance(e.kind, ToolUpdated) and e.turn_info is not None and e.turn_info.parent_tool_id == spawn.id
        ]
        assert child_tools and child_tools[-1].status is ToolStatus.COMPLETED
        assert "from-the-child" in (child_tools[-1].output or ""), "the child's command ran"
        waited = [
            u.tool for u in kinds(reader.seen, ToolUpdated) if u.tool.title == "wait" and not u.tool.status.active
        ]
        assert waited and (waited[-1].output or "").startswith(TOOL_DONE_PREFIX), (
            "the wait collected the child's answer"
        )
        assert len(kinds(reader.seen, TurnEnded)) == 1


def _spawner_v2(c: Conversation) -> Reply | None:
    """``multi_agent_v2``: the parent spawns a named task, then waits for any agent. The child
    gets the parent's history and its task encrypted, so it answers the spawn's tool result."""
    if c.tool_result_newest and '"task_name"' in c.tool_output:
        return Reply.tool("wait_agent", timeout_ms=30000)
    return _asked("SPAWN", Reply.tool("spawn_agent", message=CHILD_TASK, task_name="apples"))(c)


@scenario(codex_args=("--enable", "multi_agent_v2"))
async def subagent_v2_spawn(h: Harness) -> None:
    if h.fake is not None:
        h.fake.responder = _spawner_v2
    async with opened(h) as (session, reader):
        await session.prompt("SPAWN a v2 helper")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
        tools = [update.tool for update in kinds(turn, ToolUpdated)]
        spawn = next(tool for tool in tools if tool.title == "Subagent /root/apples started")
        assert spawn.kind is ToolKind.SUBAGENT
        child = [e for e in turn if e.turn_info is not None and e.turn_info.parent_tool_id == spawn.id]
        assert text_of(child, spawn.id) == TOOL_DONE_PREFIX + "aborted", "the child's answer, under its spawn"
        assert any(tool.title == "Subagent /root/apples completed" for tool in tools)
        assert text_of(turn).startswith(TOOL_DONE_PREFIX) and "Wait completed" in text_of(turn)
        assert len(kinds(reader.seen, TurnEnded)) == 1


async def _spawn_without_waiting(h: Harness, session: Session, reader: EventReader, chunks: int) -> ToolUpdate:
    """The parent spawns a child that streams ``chunks`` pieces and ends its turn without waiting
    for it; the spawn call."""
    if h.fake is not None:
        h.fake.responder = _asked("SPAWN", Reply.tool("spawn_agent", message=f"SLOW {chunks}"))
    await session.prompt("SPAWN and do not wait")
    turn = await reader.turn()
    assert isinstance(_ended(turn).stop, Completed)
    return next(u.tool for u in kinds(turn, ToolUpdated) if u.tool.title == "spawnAgent")


@scenario
async def subagent_outlives_the_turn(h: Harness) -> None:
    async with opened(h) as (session, reader):
        spawn = await _spawn_without_waiting(h, session, reader, chunks=8)  # the child streams ~2 s
        later = await reader.turn()  # the child speaks alone: the engine runs it as the agent's turn
        [started] = kinds(later, TurnStarted)
        assert isinstance(started.origin, AgentOrigin)
        assert "slow7" in text_of(later, spawn.id), "the child's whole answer, under its spawn"
        assert isinstance(_ended(later).stop, Completed), "the child's end ended that turn"
        await session.prompt("after the helper")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed) and text_of(turn) == ECHO + "after the helper"
        assert len(kinds(reader.seen, TurnEnded)) == 3


@scenario
async def cancel_a_subagent_speaking_alone(h: Harness) -> None:
    """Cancelling the turn the engine runs for a subagent that outlived its parent's turn stops
    that subagent (codex interrupts its thread) and ends the turn Cancelled."""
    async with opened(h) as (session, reader):
        spawn = await _spawn_without_waiting(h, session, reader, chunks=12)  # the child streams ~3 s
        started = await reader.kind(TurnStarted)
        assert isinstance(started.origin, AgentOrigin)
        await reader.match(lambda e: bool(text_of([e], spawn.id)))  # the child is speaking
        await session.cancel()
        later = await reader.turn()
        assert isinstance(_ended(later).stop, Cancelled)
        assert "slow11" not in text_of(reader.seen, spawn.id), "the subagent streamed to its end"
        await session.prompt("after the cancel")
        mine = await reader.turn()
        assert isinstance(_ended(mine).stop, Completed) and text_of(mine) == ECHO + "after the cancel"
        try:  # its last chunk never comes, not even after the time it would have needed
            await reader.match(lambda e: "slow11" in text_of([e], spawn.id), timeout=3 if h.fake else 0.3)
        except TimeoutError:
            pass
        else:
            pytest.fail("the subagent streamed on after the cancel")


PROPOSAL = (
    "Here is my plan.\n<proposed_plan>\n# Tidy the garage\n- Sort items\n- Throw out trash\n</proposed_plan>\nDone."
)


@scenario
async def plan_mode_proposes_a_plan(h: Harness) -> None:
    if h.fake is not None:
        h.fake.responder = _asked("PROPOSE", Reply.text(PROPOSAL))
    async with opened(h) as (session, reader):
        await _skills_listed(reader)
        await session.configure("mode", "plan")
        await reader.kind(SessionUpdated)
        await session.prompt("PROPOSE a plan")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
        ended = [e for e in turn if isinstance(e.kind, MessageEnded)]
        [plan_end] = [e for e in ended if e.extensions.get(PROPOSED_PLAN)]
        plan_id = plan_end.kind.message_id  # type: ignore[attr-defined]
        plan = "".join(d.text for d in kinds(turn, TextDelta) if d.message_id == plan_id)
        assert plan == "# Tidy the garage\n- Sort items\n- Throw out trash\n", "codex's proposed plan, whole"
        answer = "".join(d.text for d in kinds(turn, TextDelta) if d.message_id != plan_id)
        assert answer == "Here is my plan.\nDone.", "the answer without the plan codex took out of it"


@scenario
async def cancel_while_a_subagent_runs(h: Harness) -> None:
    if h.fake is not None:  # the parent waits on a child that streams for about 3 s
        h.fake.responder = _spawner("SLOW 12")
    async with opened(h) as (session, reader):
        await session.prompt("SPAWN a slow helper")
        await reader.match(lambda e: isinstance(e.kind, ToolUpdated) and e.kind.tool.title == "wait")
        await session.cancel()
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Cancelled)
        spawn = next(u.tool for u in kinds(reader.seen, ToolUpdated) if u.tool.title == "spawnAgent")
        after = await session.prompt("after the cancel")
        rest: list[Any] = []
        while not any(
            isinstance(e.kind, TurnStarted) and e.kind.origin == PromptOrigin(after.prompt_id) for e in rest
        ) or not isinstance(rest[-1].kind, TurnEnded):
            rest += await reader.turn()
        mine = rest[max(i for i, e in enumerate(rest) if isinstance(e.kind, TurnStarted)) :]
        assert isinstance(_ended(mine).stop, Completed) and text_of(mine) == ECHO + "after the cancel"
        # the cancel stopped the subagent too (codex lets it run on unless it is interrupted itself):
        # its last chunk never comes, not even after the time it would have needed
        assert "slow11" not in text_of(reader.seen, spawn.id), "the subagent streamed to its end"
        try:
            await reader.match(lambda e: "slow11" in text_of([e], spawn.id), timeout=3 if h.fake else 0.3)
        except TimeoutError:
            pass
        else:
            pytest.fail("the subagent streamed to its end after the cancel")
