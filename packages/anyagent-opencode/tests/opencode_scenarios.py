"""The scenarios both tiers run: the live tier against the real ``opencode serve`` and the fake
model (and records them), the recorded tier against the HTTP replayer playing those recordings.

A scenario gets a ``Stage``: an open session, its ``EventReader``, and the fake model (None when
replaying: the recording already holds the model's answers). Each asserts the events it reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from anyagent import (
    Answer,
    Cancelled,
    ChoicesAnswer,
    Completed,
    ContextCompacted,
    ContextUsage,
    Diagnostic,
    DiagnosticCode,
    PermissionChoice,
    PermissionRequest,
    PlanUpdated,
    QuestionRequest,
    Queued,
    RequestClosed,
    RequestOpened,
    Session,
    SessionUpdated,
    TextDelta,
    ToolKind,
    ToolStatus,
    ToolUpdated,
    TurnEnded,
)
from anyagent_testkit.events import EventReader, kinds, text_of
from anyagent_testkit.fakemodel import ECHO_PREFIX, TOOL_DONE_PREFIX, FakeModel, Reply


@attrs.define
class Stage:
    session: Session
    reader: EventReader
    model: FakeModel | None

    def queue(self, *replies: Reply) -> None:
        if self.model is not None:
            self.model.queue(*replies)


async def _permission_turn(stage: Stage, prompt: str, choice: PermissionChoice) -> list[Any]:
    await stage.session.prompt(prompt)
    request = (await stage.reader.kind(RequestOpened)).request
    assert isinstance(request, PermissionRequest)
    assert request.tool.kind is ToolKind.EXECUTE
    assert set(request.options) == {
        PermissionChoice.ALLOW_ONCE,
        PermissionChoice.ALLOW_ALWAYS,
        PermissionChoice.DENY_ONCE,
    }
    await stage.session.answer(request.id, Answer.permission(choice))
    return await stage.reader.turn()


def _end(events: list[Any]) -> Any:
    return kinds(events, TurnEnded)[-1].stop


async def basics(stage: Stage) -> None:
    """text, context usage, permission once / always (then no ask) / reject, a question."""
    events = await _turn(stage, "hello there")
    assert isinstance(_end(events), Completed)
    assert text_of(events).startswith(ECHO_PREFIX + "hello there")
    usage = kinds(events, ContextUsage)
    assert usage and usage[-1].used_tokens > 0 and usage[-1].window_tokens == 128000

    events = await _permission_turn(stage, "RUN echo once-ran", PermissionChoice.ALLOW_ONCE)
    assert isinstance(_end(events), Completed)
    tools = [t.tool for t in kinds(events, ToolUpdated)]
    assert tools[-1].status is ToolStatus.COMPLETED and "once-ran" in (tools[-1].output or "")
    assert TOOL_DONE_PREFIX in text_of(events)

    events = await _permission_turn(stage, "RUN echo always-ran", PermissionChoice.ALLOW_ALWAYS)
    assert isinstance(_end(events), Completed)
    events = await _turn(stage, "RUN echo no-ask-now")  # "echo *" is allowed for the session now
    assert not kinds(events, RequestOpened) and isinstance(_end(events), Completed)
    assert "no-ask-now" in text_of(events)

    events = await _permission_turn(stage, "RUN touch rejected.txt", PermissionChoice.DENY_ONCE)
    assert isinstance(_end(events), Completed)
    assert [t.tool.status for t in kinds(events, ToolUpdated)][-1] is ToolStatus.FAILED

    stage.queue(Reply.tool("question", questions=[QUESTION]))
    await stage.session.prompt("ask me a question")
    request = (await stage.reader.kind(RequestOpened)).request
    assert isinstance(request, QuestionRequest)
    assert [c.label for c in request.questions[0].choices] == ["Red", "Blue"]
    await stage.session.answer(request.id, Answer.question([ChoicesAnswer(("Blue",))]))
    events = await stage.reader.turn()
    assert isinstance(_end(events), Completed)
    assert "Blue" in text_of(events)


QUESTION = {
    "question": "Which colour?",
    "header": "Colour",
    "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}],
}


async def cancels(stage: Stage) -> None:
    """cancel mid-stream, cancel with a permission pending (then a turn that completes), a prompt
    queued while busy, a model switch."""
    await stage.session.prompt("SLOW 40")
    await stage.reader.kind(TextDelta)
    await stage.session.cancel()
    events = await stage.reader.turn()
    assert isinstance(_end(events), Cancelled)

    await stage.session.prompt("RUN touch never.txt")
    request = (await stage.reader.kind(RequestOpened)).request
    await stage.session.cancel()
    events = await stage.reader.turn()
    assert isinstance(_end(events), Cancelled)
    assert request.id in [k.request_id for k in kinds(stage.reader.seen, RequestClosed)]
    events = await _turn(stage, "hello after the abort")
    assert isinstance(_end(events), Completed) and "hello after the abort" in text_of(events)

    await stage.session.prompt("SLOW 6")
    delivery = await stage.session.prompt("queued behind")
    assert isinstance(delivery.kind, Queued)
    first = await stage.reader.turn()
    second = await stage.reader.turn()
    assert isinstance(_end(first), Completed) and isinstance(_end(second), Completed)
    assert "queued behind" in text_of(second)

    await stage.session.configure("model", "fake/fake-model-2")
    updated = await stage.reader.kind(SessionUpdated)
    assert updated.info.configuration["model"] == "fake/fake-model-2"
    efforts = [o for o in updated.info.details.config_options if o.id == "effort"]
    assert efforts and [c.value for c in efforts[0].kind.choices] == ["high", "low"]  # fake-model-2's variants
    await stage.session.configure("effort", "high")
    updated = await stage.reader.kind(SessionUpdated)
    assert updated.info.configuration["effort"] == "high"
    events = await _turn(stage, "which model now")
    assert isinstance(_end(events), Completed)
    usage = kinds(events, ContextUsage)
    assert usage and usage[-1].window_tokens == 64000
    if stage.model is not None:
        body = stage.model.model_calls()[-1].body
        assert body.get("model") == "fake-model-2"
        assert body.get("reasoning_effort") == "high", {k: v for k, v in body.items() if k != "messages"}


async def history(stage: Stage) -> None:
    """rollback, compact, a Task-tool subagent and a plan."""
    for text in ("first turn", "second turn"):
        assert isinstance(_end(await _turn(stage, text)), Completed)
    await stage.session.rollback(1)
    await stage.reader.kind(SessionUpdated)
    events = await _turn(stage, "after rollback")
    assert isinstance(_end(events), Completed)
    if stage.model is not None:
        sent = str(stage.model.model_calls()[-1].body)
        assert "first turn" in sent and "second turn" not in sent

    await stage.session.compact()
    events = await stage.reader.turn()
    assert isinstance(_end(events), Completed)
    assert kinds(events, ContextCompacted)

    stage.queue(Reply.tool("task", description="sub job", prompt="say sub hello", subagent_type="general"))
    events = await _turn(stage, "delegate it")
    assert isinstance(_end(events), Completed)
    task = [t.tool for t in kinds(events, ToolUpdated) if t.tool.kind is ToolKind.SUBAGENT]
    assert task and task[-1].status is ToolStatus.COMPLETED
    nested = text_of(events, task[-1].id)
    assert nested.startswith(ECHO_PREFIX + "say sub hello")
    assert len(kinds(events, TurnEnded)) == 1  # the child's idle never ended the parent's turn

    stage.queue(
        Reply.tool("todowrite", todos=[{"content": "write tests", "status": "in_progress", "priority": "high"}])
    )
    events = await _turn(stage, "plan it")
    plans = kinds(events, PlanUpdated)
    assert plans and plans[-1].entries[0].content == "write tests"


async def _turn(stage: Stage, text: str) -> list[Any]:
    await stage.session.prompt(text)
    return await stage.reader.turn()


async def failing(stage: Stage) -> None:
    """A model error: opencode retries with back-off (2, 4, 10, 20, 30 s) before it fails the turn;
    each retry is an ``api_retry`` diagnostic with the provider's message, and a cancel ends it."""
    await stage.session.prompt("FAIL 400")
    retry = await stage.reader.match(
        lambda e: isinstance(e.kind, Diagnostic) and e.kind.diagnostic.code == DiagnosticCode.API_RETRY
    )
    assert "fake model failure" in retry.kind.diagnostic.message
    await stage.session.cancel()
    events = await stage.reader.turn()
    assert isinstance(_end(events), Cancelled)


SCENARIOS: dict[str, Callable[[Stage], Awaitable[None]]] = {
    "basics": basics,
    "cancels": cancels,
    "history": history,
}
