"""One scenario per capability, run by both tiers: live (the real CLI) and recorded (a replay).

Each scenario drives the public API only (``Runtime.open``, ``Session``, ``Events``) and asserts
the events. Checks that need the real process (files on disk, what the model was sent) run only
when ``h.live``. Prompts use the fake model's keywords (``WRITE``, ``SLOW``, ``THINK``) or queue a
scripted reply (``h.queue``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import attrs
import pytest
from claude_harness import WAIT, Harness

from anyagent import (
    AgentOrigin,
    Answer,
    Authenticated,
    AuthKind,
    BooleanKind,
    Cancelled,
    Capability,
    Completed,
    CompletionSource,
    ContextCompacted,
    ContextUsage,
    Diagnostic,
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
    RollbackScope,
    SessionStatus,
    SessionUpdated,
    Started,
    StatusChanged,
    TextDelta,
    ToolKind,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
    TurnEnded,
    TurnStarted,
)
from anyagent_claude.adapter import CAPABILITIES
from anyagent_testkit.events import EventReader, kinds, text_of
from anyagent_testkit.fakemodel import Reply

ECHO = "Hello from the fake model. You said:"

Scenario = Callable[[Harness], Awaitable[None]]


@attrs.frozen
class Spec:
    """A scenario, the processes of its recording that exit by themselves (1-based), and whether
    the replay must keep the recorded pace (a scenario that acts mid-stream races a replay that
    writes the whole turn at once)."""

    run: Scenario
    dies: tuple[int, ...] = ()
    realtime: bool = False


def completed(events: list[Any]) -> TurnEnded:
    [end] = kinds(events, TurnEnded)
    assert end.stop == Completed(CompletionSource.PROTOCOL), end
    return end


async def text_turn(h: Harness) -> None:
    """Open, one plain turn: text streams in order, the message ends, usage, one protocol end."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        info = session.info()
        assert info.resume_token
        assert info.details.version == "2.1.332"
        assert info.details.auth == Authenticated(AuthKind.API_KEY, info.details.auth.account)  # type: ignore[union-attr]
        assert info.details.capabilities == CAPABILITIES
        assert not info.details.capabilities.supports(Capability.STEER)
        assert [o.id for o in info.details.config_options] == ["model", "effort", "fast", "mode"]
        assert info.configuration["model"] == "default" and info.configuration["mode"] == "default"
        assert info.details.commands, "initialize lists slash commands"
        delivery = await session.prompt("hello there")
        assert isinstance(delivery.kind, Started)
        turn = await reader.turn()
        started = turn[0]
        assert started.kind == TurnStarted(PromptOrigin(delivery.prompt_id))
        assert started.turn_info is not None and started.turn_info.id == delivery.kind.turn_id
        assert text_of(turn) == f"{ECHO} hello there"
        deltas = kinds(turn, TextDelta)
        assert len(deltas) > 1 and len({d.message_id for d in deltas}) == 1
        ended = kinds(turn, MessageEnded)
        assert [m.message_id for m in ended] == [deltas[0].message_id]
        [usage] = kinds(turn, ContextUsage)
        assert usage.used_tokens > 0 and usage.window_tokens == 1_000_000 and usage.cost_usd
        completed(turn)
        assert all(e.turn_info is not None for e in turn if not isinstance(e.kind, (StatusChanged, SessionUpdated)))
        assert session.status() is SessionStatus.IDLE


async def permission_allow(h: Harness) -> None:
    """A gated Write: the request offers what Claude accepts; allowing it writes the file."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        await session.prompt(f"WRITE {h.workspace}/allowed.txt ALPHA")
        opened = await reader.until(ToolUpdated)
        tool = opened.kind.tool
        assert tool.kind is ToolKind.EDIT and tool.status is ToolStatus.RUNNING
        assert tool.input.path is not None and tool.input.path.endswith("allowed.txt")
        event = await reader.until(RequestOpened)
        request = event.kind.request
        assert isinstance(request, PermissionRequest)
        assert request.tool.id == tool.id and request.tool.status is ToolStatus.PENDING
        assert request.options == (
            PermissionChoice.ALLOW_ONCE,
            PermissionChoice.ALLOW_ALWAYS,
            PermissionChoice.DENY_ONCE,
        )
        assert session.status() is SessionStatus.NEEDS_INPUT
        await session.answer(request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        turn = await reader.turn()
        done = [t.tool for t in kinds(turn, ToolUpdated) if t.tool.id == tool.id]
        assert done[-1].status is ToolStatus.COMPLETED
        [diff] = done[-1].diffs
        assert diff.path.endswith("allowed.txt") and diff.new_text == "ALPHA\n" and diff.old_text is None
        assert "The tool finished" in text_of(turn)
        completed(turn)
        if h.live:
            assert (h.workspace / "allowed.txt").read_text() == "ALPHA\n"


async def permission_deny(h: Harness) -> None:
    """A denied Write fails the tool, the model is told, the turn still completes, no file."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        await session.prompt(f"WRITE {h.workspace}/denied.txt BRAVO")
        event = await reader.until(RequestOpened)
        request = event.kind.request
        assert isinstance(request, PermissionRequest)
        await session.answer(request.id, Answer.permission(PermissionChoice.DENY_ONCE))
        turn = await reader.turn()
        updates = [t.tool for t in kinds(turn, ToolUpdated) if t.tool.id == request.tool.id]
        assert updates[-1].status is ToolStatus.FAILED
        completed(turn)
        if h.live:
            assert not (h.workspace / "denied.txt").exists()
            assert "denied" in h.history()


async def question(h: Harness) -> None:
    """AskUserQuestion becomes a question; the chosen label reaches the model."""
    h.queue(
        Reply.tool(
            "AskUserQuestion",
            questions=[
                {
                    "question": "Which color do you prefer?",
                    "header": "Color",
                    "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}],
                    "multiSelect": False,
                }
            ],
        )
    )
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        await session.prompt("ask me about colors")
        event = await reader.until(RequestOpened)
        request = event.kind.request
        assert isinstance(request, QuestionRequest)
        [asked] = request.questions
        assert asked.text == "Which color do you prefer?" and asked.header == "Color"
        assert [c.label for c in asked.choices] == ["Red", "Blue"] and not asked.multi_select
        assert session.status() is SessionStatus.NEEDS_INPUT
        await session.answer(request.id, Answer.question([QuestionAnswer.choices([asked.choices[1].id])]))
        turn = await reader.turn()
        assert kinds(turn, ToolUpdated) == []  # the question is not a tool
        assert "Blue" in text_of(turn)
        completed(turn)


async def cancel(h: Harness) -> None:
    """Cancel mid-stream: the turn ends Cancelled, the session survives and answers again."""
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
        assert ECHO in text_of(again)
        completed(again)


async def queue(h: Harness) -> None:
    """No steer: a prompt during a turn queues and starts its own turn after it, never idle between."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        first = await session.prompt("SLOW 6")
        await reader.until(TextDelta)
        second = await session.prompt("second prompt")
        assert second.kind == Queued(0)
        one = await reader.turn()
        completed(one)
        two = await reader.turn()
        assert two[0].kind == TurnStarted(PromptOrigin(second.prompt_id))
        assert f"{ECHO}" in text_of(two)
        completed(two)
        statuses = [e.kind.status for e in reader.seen if isinstance(e.kind, StatusChanged)]
        assert SessionStatus.IDLE not in statuses[:-1], statuses
        assert first.prompt_id != second.prompt_id


async def configure_model(h: Harness) -> None:
    """Model, effort and mode switch live; each is confirmed by SessionUpdated; options follow."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        assert session.info().details.option("fast") is not None  # the default model has fast mode
        await session.configure("model", "haiku")
        updated = (await reader.until(SessionUpdated)).kind.info
        assert updated.configuration["model"] == "haiku"
        assert updated.details.option("fast") is None  # haiku has no fast mode
        await session.prompt("which model")
        completed(await reader.turn())
        if h.live:
            assert "haiku" in h.last_model_call()["model"]
        await session.configure("effort", "low")
        assert (await reader.until(SessionUpdated)).kind.info.configuration["effort"] == "low"
        await session.configure("mode", "plan")
        assert (await reader.until(SessionUpdated)).kind.info.configuration["mode"] == "plan"
        await session.prompt("plan something")
        completed(await reader.turn())


async def context_usage(h: Harness) -> None:
    """Thinking streams as reasoning; every turn reports context usage; cost only grows."""
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
        assert first.window_tokens == second.window_tokens == 1_000_000
        assert second.cost_usd is not None and first.cost_usd is not None and second.cost_usd > first.cost_usd
        ordered = [e.kind for e in two if not isinstance(e.kind, StatusChanged)]
        assert isinstance(ordered[-1], TurnEnded) and isinstance(ordered[-2], ContextUsage)


async def resume(h: Harness) -> None:
    """A new process continues the conversation by its token; a dead token is ResumeFailed."""
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
        turn = await reader2.turn()
        completed(turn)
        assert not [e for e in turn if isinstance(e.kind, TextDelta) and "TANGERINE" in e.kind.text]  # no replay
        if h.live:
            assert "TANGERINE" in h.history()
    with pytest.raises(ResumeFailed):
        await h.runtime.open(h.agent, h.options().resume("00000000-0000-4000-8000-000000000000"))


async def fork(h: Harness) -> None:
    """Fork at the first turn's fork point (keeps only it) and at the tip (keeps both)."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        await session.prompt("the first word is ALPHA")
        one = await reader.turn()
        [ended] = [e for e in one if isinstance(e.kind, MessageEnded)]
        at = ended.extensions.get("claude/fork_point")
        assert isinstance(at, str) and at
        await session.prompt("the second word is BRAVO")
        completed(await reader.turn())
        token = session.info().resume_token
    assert token
    branch, events2 = await h.runtime.open(h.agent, h.options().fork_from(token, at))
    reader2 = EventReader(events2, timeout=WAIT)
    async with branch:
        assert branch.info().resume_token not in (None, token)
        await branch.prompt("what were the words")
        completed(await reader2.turn())
        if h.live:
            assert "ALPHA" in h.history() and "BRAVO" not in h.history()
    tip, events3 = await h.runtime.open(h.agent, h.options().fork_from(token))
    reader3 = EventReader(events3, timeout=WAIT)
    async with tip:
        assert tip.info().resume_token not in (None, token, branch.info().resume_token)
        await tip.prompt("what were the words")
        completed(await reader3.turn())
        if h.live:
            assert "ALPHA" in h.history() and "BRAVO" in h.history()


async def rollback(h: Harness) -> None:
    """Roll back the last turn with its files (the file is gone and the model forgets it),
    then one more turn of conversation only."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        await session.prompt("remember ALPHA")
        completed(await reader.turn())
        await session.prompt("remember BRAVO")
        completed(await reader.turn())
        await session.prompt(f"WRITE {h.workspace}/rolled.txt CHARLIE")
        request = (await reader.until(RequestOpened)).kind.request
        await session.answer(request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        completed(await reader.turn())
        if h.live:
            assert (h.workspace / "rolled.txt").exists()
        before = session.info().resume_token
        await session.rollback(1, RollbackScope.CONVERSATION_AND_FILES)
        info = (await reader.until(SessionUpdated, Diagnostic)).kind
        assert isinstance(info, SessionUpdated), info
        assert info.info.resume_token not in (None, before)
        if h.live:
            assert not (h.workspace / "rolled.txt").exists()
        await session.prompt("what do you remember")
        completed(await reader.turn())
        if h.live:
            assert "BRAVO" in h.history() and "rolled.txt" not in h.history()
        await session.rollback(1, RollbackScope.CONVERSATION)
        assert isinstance((await reader.until(SessionUpdated, Diagnostic)).kind, SessionUpdated)
        await session.prompt("and now")
        completed(await reader.turn())
        if h.live:
            assert "BRAVO" in h.history() and "what do you remember" not in h.history()
        await session.rollback(9, RollbackScope.CONVERSATION)
        refused = (await reader.until(Diagnostic)).kind
        assert refused.diagnostic.code == "rollback_refused"


async def compact(h: Harness) -> None:
    """Compaction runs as an agent turn: ContextCompacted, then a lower context usage."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        for word in ("ALPHA", "BRAVO"):
            await session.prompt(f"remember {word}")
            turn = await reader.turn()
        [before] = kinds(turn, ContextUsage)
        await session.compact()
        turn = await reader.turn()
        assert kinds(turn, TurnStarted) == [TurnStarted(AgentOrigin())]
        assert kinds(turn, ContextCompacted) == [ContextCompacted()]
        [after] = kinds(turn, ContextUsage)
        assert after.used_tokens < before.used_tokens
        completed(turn)
        await session.prompt("still there")
        completed(await reader.turn())


@asynccontextmanager
async def _subagent_started(h: Harness, prompt: str, **extra: Any) -> AsyncIterator[tuple[EventReader, ToolUpdate]]:
    """A session whose prompt makes the fake model call ``Agent`` (plus ``extra`` arguments), read
    up to the subagent tool's first update, which must be a SUBAGENT titled "explore files"."""
    h.queue(
        Reply.tool(
            "Agent", description="explore files", prompt="list the files", subagent_type="general-purpose", **extra
        )
    )
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        await session.prompt(prompt)
        started = (await reader.until(ToolUpdated)).kind.tool
        assert started.kind is ToolKind.SUBAGENT and started.title == "explore files"
        yield reader, started


async def subagent(h: Harness) -> None:
    """The Agent tool is a subagent; its own text carries the parent tool id; it completes.

    Claude runs it in the background: it may finish inside the turn or after it (then Claude may
    wake up for an agent-originated turn); both orders must read the same.
    """
    async with _subagent_started(h, "use a subagent") as (reader, started):
        turn = await reader.turn()
        completed(turn)
        assert ECHO not in text_of(turn)  # the main thread's text is its own
        final = [t.tool for t in kinds(reader.seen, ToolUpdated) if t.tool.id == started.id][-1]
        while final.status is not ToolStatus.COMPLETED:
            event = await reader.until(ToolUpdated)
            if event.kind.tool.id == started.id:
                final = event.kind.tool
        assert final.output is not None
        with anyio.move_on_after(2.0 if h.live else 0.5):
            await reader.until(TurnStarted)  # a wake-up turn, if Claude starts one
        if len(kinds(reader.seen, TurnStarted)) > len(kinds(reader.seen, TurnEnded)):
            completed(await reader.turn())
        assert text_of(reader.seen, parent=started.id) == f"{ECHO} list the files"


async def subagent_foreground(h: Harness) -> None:
    """The Agent tool in the foreground (``run_in_background: false``): claude 2.1.332 sends the
    subagent's ``task_notification`` before the Agent call's ``tool_result`` (issue 15 item 1). The
    tool keeps kind SUBAGENT, its title and its result in its final snapshot."""
    async with _subagent_started(h, "use a subagent in the foreground", run_in_background=False) as (reader, started):
        completed(await reader.turn())
        final = [t.tool for t in kinds(reader.seen, ToolUpdated) if t.tool.id == started.id][-1]
        assert (final.kind, final.title, final.status) == (ToolKind.SUBAGENT, "explore files", ToolStatus.COMPLETED)
        assert final.output is not None and "list the files" in str(final.output), final.output
        assert len(kinds(reader.seen, TurnStarted)) == 1  # a foreground subagent wakes no turn


async def generate(h: Harness) -> None:
    """One-shot text: no tools offered, no transcript kept."""
    text = await h.runtime.generate(h.agent, h.options(), "a five-word title for: fix the parser")
    assert text == "OK"  # the fake model's answer to a request that offers no tools
    if h.live:
        [call] = [r for r in h.fake.requests if r.path.startswith("/v1/messages") and "count_tokens" not in r.path]
        assert not call.body.get("tools")
        assert h.home is not None and not list(h.home.glob("**/projects/**/*.jsonl")), "no transcript kept"


async def fast_mode(h: Harness) -> None:
    """Fast mode switches by relaunching under the same Session; the conversation survives."""
    session, events = await h.runtime.open(h.agent, h.options())
    reader = EventReader(events, timeout=WAIT)
    async with session:
        option = session.info().details.option("fast")
        assert option is not None and isinstance(option.kind, BooleanKind) and option.current is False
        await session.prompt("remember KIWI")
        completed(await reader.turn())
        await session.configure("fast", True)
        updated = (await reader.until(SessionUpdated, Diagnostic)).kind
        assert isinstance(updated, SessionUpdated), updated
        assert updated.info.configuration["fast"] is True
        await session.prompt("which fruit")
        completed(await reader.turn())
        if h.live:
            assert "KIWI" in h.history() and h.last_model_call().get("speed") == "fast"


SCENARIOS: dict[str, Spec] = {
    "text-turn": Spec(text_turn),
    "permission-allow": Spec(permission_allow),
    "permission-deny": Spec(permission_deny),
    "question": Spec(question),
    "cancel": Spec(cancel),
    "queue": Spec(queue, realtime=True),
    "configure-model": Spec(configure_model),
    "context-usage": Spec(context_usage),
    "resume": Spec(resume, dies=(3,)),
    "fork": Spec(fork),
    "rollback": Spec(rollback),
    "compact": Spec(compact),
    "subagent": Spec(subagent),
    "subagent-foreground": Spec(subagent_foreground),
    "generate": Spec(generate),
    "fast-mode": Spec(fast_mode),
}
