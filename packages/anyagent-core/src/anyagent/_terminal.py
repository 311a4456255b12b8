"""One turn at the terminal: render its events, answer its requests (asking the user unless told
to allow), and turn its end into the command's exit status.

Shared by the ``anyagent`` command (``run``, ``chat``) and ``anyagent demo``; it lives apart from
``cli`` so that ``_demo`` does not import the command that imports it.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable

import anyio

from ._engine import Events, Session
from ._render import Renderer
from ._types import (
    Answer,
    Cancelled,
    Completed,
    Failed,
    PermissionChoice,
    PermissionRequest,
    QuestionAnswer,
    QuestionRequest,
    Refused,
    RequestOpened,
    TurnEnded,
)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NOT_INSTALLED = 3
EXIT_AUTH = 4
EXIT_AGENT_ERROR = 5
EXIT_CANCELLED = 130


def to_json(value: object) -> str:
    from . import serialize

    return serialize.dumps(value)


def exit_for(stop: object) -> int:
    if isinstance(stop, Completed):
        return EXIT_OK
    if isinstance(stop, Cancelled):
        return EXIT_CANCELLED
    if isinstance(stop, (Failed, Refused)):
        return EXIT_FAILED
    return EXIT_FAILED


Ask = Callable[[str], Awaitable["str | None"]]


async def ask_permission(request: PermissionRequest, out: Renderer, ask: Ask) -> PermissionChoice:
    labels = {
        PermissionChoice.ALLOW_ONCE: "allow once",
        PermissionChoice.ALLOW_ALWAYS: "allow always",
        PermissionChoice.DENY_ONCE: "deny",
        PermissionChoice.DENY_ALWAYS: "deny always",
    }
    options = list(request.options)
    prompt = "  ".join(f"[{i}] {labels[o]}" for i, o in enumerate(options, 1))
    while True:
        answer = await ask(f"{prompt} > ")
        if answer is None:
            return next((o for o in options if o.name.startswith("DENY")), options[-1])
        answer = answer.strip().lower()
        if answer.isdigit() and 1 <= int(answer) <= len(options):
            return options[int(answer) - 1]
        for option in options:
            if answer and labels[option].startswith(answer):
                return option
        out.line(out.yellow("pick one of the numbers shown"))


async def ask_question(request: QuestionRequest, out: Renderer, ask: Ask) -> list[QuestionAnswer]:
    answers: list[QuestionAnswer] = []
    for question in request.questions:
        while True:
            raw = await ask(f"{question.text} > ")
            raw = (raw or "").strip()
            picks = [p.strip() for p in raw.split(",") if p.strip()]
            if picks and all(p.isdigit() and 1 <= int(p) <= len(question.choices) for p in picks):
                if len(picks) > 1 and not question.multi_select:
                    out.line(out.yellow("pick one"))
                    continue
                answers.append(QuestionAnswer.choices([question.choices[int(p) - 1].id for p in picks]))
                break
            if raw and question.allows_free_text:
                answers.append(QuestionAnswer.text(raw))
                break
            out.line(
                out.yellow("type the number of a choice" + (" or your answer" if question.allows_free_text else ""))
            )
    return answers


async def read_line(prompt: str) -> str | None:
    """Read one line from stdin without blocking the event loop; None at end of input."""

    def read() -> str | None:
        sys.stdout.write(prompt)
        sys.stdout.flush()
        line = sys.stdin.readline()
        if line and not sys.stdin.isatty():
            sys.stdout.write(line if line.endswith("\n") else line + "\n")  # echo piped answers
        return line.rstrip("\n") if line else None

    return await anyio.to_thread.run_sync(read, abandon_on_cancel=True)


async def handle_request(
    session: Session, opened: RequestOpened, out: Renderer, auto: bool, *, quiet: bool = False, ask: Ask | None = None
) -> None:
    ask = ask or read_line
    request = opened.request
    if isinstance(request, PermissionRequest):
        if auto:
            choice = next((o for o in request.options if o.name.startswith("ALLOW")), request.options[0])
            if not quiet:
                out.line(out.dim(f"    answered: {choice.name.lower().replace('_', ' ')}"))
        else:
            choice = await ask_permission(request, out, ask)
        await session.answer(request.id, Answer.permission(choice))
    else:
        answers: list[QuestionAnswer]
        if auto:
            answers = [
                QuestionAnswer.choices([q.choices[0].id]) if q.choices else QuestionAnswer.text("yes")
                for q in request.questions
            ]
        else:
            answers = await ask_question(request, out, ask)
        await session.answer(request.id, Answer.question(answers))


async def stream_turn(session: Session, events: Events, out: Renderer, *, json_lines: bool, auto: bool) -> int:
    async for event in events:
        if json_lines:
            print(to_json(event), flush=True)
        else:
            out.render(event)
        kind = event.kind
        if isinstance(kind, RequestOpened):
            await handle_request(session, kind, out, auto, quiet=json_lines)
        elif isinstance(kind, TurnEnded) and (event.turn_info is None or event.turn_info.parent_tool_id is None):
            if isinstance(kind.stop, Failed):
                await drain_failure(events, out, json_lines)
            return exit_for(kind.stop)
    return EXIT_FAILED


async def drain_failure(events: Events, out: Renderer, json_lines: bool) -> None:
    """After a failed turn the session may be ending: surface why (raises its AgentError)."""
    with anyio.move_on_after(1.0):
        async for event in events:
            if json_lines:
                print(to_json(event), flush=True)
            else:
                out.render(event)
