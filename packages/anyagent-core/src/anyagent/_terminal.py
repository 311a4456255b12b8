"""One turn at the terminal: render its events, answer its requests (asking the user unless told
to allow), and turn its end into the command's exit status.

Shared by the ``anyagent`` command (``run``, ``chat``) and ``anyagent demo``; it lives apart from
``cli`` so that ``_demo`` does not import the command that imports it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable

import anyio
import anyio.abc

from ._render import Renderer, Writer
from .errors import AgentError, InvalidRequest, SessionClosed
from .session import Events, Session
from .types import (
    Answer,
    Cancelled,
    Completed,
    Failed,
    PermissionChoice,
    PermissionRequest,
    QuestionAnswer,
    QuestionRequest,
    Refused,
    RequestClosed,
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


async def ask_question(request: QuestionRequest, out: Renderer, ask: Ask) -> list[QuestionAnswer] | None:
    """The user's answers, or None at end of input."""
    answers: list[QuestionAnswer] = []
    for question in request.questions:
        while True:
            line = await ask(f"{question.text} > ")
            if line is None:
                return None
            raw = line.strip()
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


class StdinLines:
    """Lines from standard input, read on the event loop: no thread ever blocks on stdin, so
    cancelling a read (Ctrl-C, a withdrawn request, the command ending) takes effect at once and
    nothing keeps the process alive afterwards. ``None`` at end of input (or with no stdin)."""

    def __init__(self, fd: int = 0) -> None:
        self._fd = fd
        self._buffer = b""
        self._eof = False

    async def _chunk(self) -> bytes:
        if sys.platform == "win32":  # pragma: no cover - no readiness API for console handles
            return await anyio.to_thread.run_sync(os.read, self._fd, 65536, abandon_on_cancel=True)
        try:
            await anyio.wait_readable(self._fd)
        except OSError:
            pass  # a regular file or /dev/null: not pollable, and reading it never blocks
        while True:
            try:
                return os.read(self._fd, 65536)
            except BlockingIOError:  # pragma: no cover - a spurious wake-up
                await anyio.sleep(0.01)
            except OSError:  # no stdin at all
                return b""

    async def read(self) -> str | None:
        """The next line without its newline; ``None`` at end of input."""
        while b"\n" not in self._buffer and not self._eof:
            chunk = await self._chunk()
            if not chunk:
                self._eof = True
            self._buffer += chunk
        if b"\n" in self._buffer:
            line, _, self._buffer = self._buffer.partition(b"\n")
        elif self._buffer:
            line, self._buffer = self._buffer, b""
        else:
            return None
        return line.decode(errors="replace").rstrip("\r")


_stdin: StdinLines | None = None


def stdin_lines() -> StdinLines:
    """The process's one reader of standard input (lines typed ahead stay in its buffer)."""
    global _stdin
    if _stdin is None:
        _stdin = StdinLines()
    return _stdin


def _interactive() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


_prompt_on: Writer | None = None  # where a prompt waits for its line, if one does


def end_prompt_line() -> None:
    """A prompt was withdrawn before its line was typed: end its screen line, so what prints next
    starts on a line of its own."""
    global _prompt_on
    if _prompt_on is not None:
        _prompt_on.write("\n")
        _prompt_on.flush()
        _prompt_on = None


async def read_line(prompt: str, *, to: Writer | None = None) -> str | None:
    """Write ``prompt`` (to stdout, or ``to``), then read one line of stdin; None at end of input.
    Piped answers are echoed so a transcript reads like a session."""
    global _prompt_on
    stream: Writer = to or sys.stdout
    stream.write(prompt)
    stream.flush()
    _prompt_on = stream if prompt else None
    try:
        line = await stdin_lines().read()
    except anyio.get_cancelled_exc_class():
        end_prompt_line()
        raise
    _prompt_on = None
    if line is not None and not _interactive():
        stream.write(line + "\n")
        stream.flush()
    elif line is None and prompt:
        stream.write("\n")
        stream.flush()
    return line


def choice_label(choice: PermissionChoice) -> str:
    return choice.name.lower().replace("_", " ")


async def handle_request(
    session: Session,
    opened: RequestOpened,
    out: Renderer,
    auto: bool,
    *,
    quiet: bool = False,
    ask: Ask | None = None,
    report: Callable[[str, str, str], None] | None = None,
    answering: Callable[[], None] | None = None,
) -> None:
    """Answer one request: allowed (first allow option / first choice) when ``auto``, else asked
    through ``ask`` (end of input denies). ``report(request_id, answer, how)`` hears each answer;
    ``answering()`` is called once the answer is decided, before it is sent."""
    answering = answering or (lambda: None)
    reader = ask or read_line
    ended = False

    async def asking(prompt: str) -> str | None:
        nonlocal ended
        line = await reader(prompt)
        ended = line is None
        return line

    request = opened.request
    if isinstance(request, PermissionRequest):
        if auto:
            choice = next((o for o in request.options if o.name.startswith("ALLOW")), request.options[0])
            how = "--auto-approve"
        else:
            choice = await ask_permission(request, out, asking)
            how = "no input to ask (pass --auto-approve to allow)" if ended else "asked"
        answering()
        if report is not None:
            report(request.id, choice.value, how)
        elif not quiet:
            out.line(out.dim(f"    answered: {choice_label(choice)}"))
        await session.answer(request.id, Answer.permission(choice))
    else:
        answers: list[QuestionAnswer] | None
        if auto:
            answers = [
                QuestionAnswer.choices([q.choices[0].id]) if q.choices else QuestionAnswer.text("yes")
                for q in request.questions
            ]
        else:
            answers = await ask_question(request, out, asking)
        answering()
        if answers is None:  # nobody to answer: the question cannot be denied, so the turn stops
            if report is not None:
                report(request.id, "cancel_turn", "no input to answer the question")
            else:
                out.line(out.yellow("no input to answer the question: cancelling the turn"))
            await session.cancel()
            return
        if report is not None:
            report(request.id, "answered", "--auto-approve" if auto else "asked")
        await session.answer(request.id, Answer.question(answers))


class Requests:
    """Open requests, each answered in its own task: when the engine closes a request (the turn
    was cancelled, the agent withdrew it) its prompt is withdrawn at once instead of capturing the
    next line typed, and a late answer never reaches the session."""

    def __init__(
        self,
        session: Session,
        out: Renderer,
        tg: anyio.abc.TaskGroup,
        *,
        auto: bool,
        ask: Ask,
        quiet: bool = False,
        report: Callable[[str, str, str], None] | None = None,
        notice: Callable[[str], None] | None = None,
        withdraw_prompt: Callable[[], None] = end_prompt_line,
    ) -> None:
        self._session = session
        self._out = out
        self._tg = tg
        self._auto = auto
        self._ask = ask
        self._quiet = quiet
        self._report = report
        self._notice = notice or (lambda text: out.line(out.dim(text)))
        self._withdraw_prompt = withdraw_prompt
        self._lock = anyio.Lock()  # one question on screen at a time
        self._open: dict[str, anyio.CancelScope] = {}

    def opened(self, opened: RequestOpened) -> None:
        scope = anyio.CancelScope()
        self._open[opened.request.id] = scope
        self._tg.start_soon(self._answer, opened, scope)

    async def _answer(self, opened: RequestOpened, scope: anyio.CancelScope) -> None:
        request_id = opened.request.id

        def answering() -> None:  # decided: from here on the request is not withdrawn on screen
            self._open.pop(request_id, None)

        with scope:
            try:
                async with self._lock:
                    await handle_request(
                        self._session,
                        opened,
                        self._out,
                        self._auto,
                        quiet=self._quiet,
                        ask=self._ask,
                        report=self._report,
                        answering=answering,
                    )
            except (InvalidRequest, SessionClosed):
                pass  # closed while the answer was on its way: RequestClosed says so
            finally:
                self._open.pop(request_id, None)

    def closed(self, request_id: str) -> None:
        """``RequestClosed``: withdraw the question if it is still waiting for its answer."""
        scope = self._open.pop(request_id, None)
        if scope is not None:
            scope.cancel()
            self._withdraw_prompt()
            self._notice("(the request was withdrawn: nothing to answer any more)")

    def withdraw_all(self) -> None:
        for request_id in list(self._open):
            self.closed(request_id)

    @property
    def pending(self) -> bool:
        return bool(self._open)


class Working:
    """ "⠋ working…" on a terminal from the moment the session is WORKING until the turn's first
    output (a model can take seconds to its first token). Drawn on ``stream`` (a terminal) at the
    start of a line, or by ``redraw`` (the chat's input line shows ``text()``); anything the
    renderer writes clears it first. Never drawn where nobody sees it: no stream, no redraw."""

    FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

    def __init__(self, stream: Writer | None = None, *, redraw: Callable[[], None] | None = None) -> None:
        self._stream = stream
        self._redraw = redraw
        self.active = False
        self._drawn = False
        self._frame = 0

    @classmethod
    def on(cls, stream: Writer) -> Working | None:
        """An indicator for ``stream`` when it is a terminal, else None."""
        try:
            return cls(stream) if stream.isatty() else None
        except (AttributeError, ValueError):
            return None

    def text(self) -> str:
        return f"{self.FRAMES[self._frame % len(self.FRAMES)]} working…" if self.active else ""

    def start(self) -> None:
        self.active = True
        self._draw()

    def stop(self) -> None:
        """Output arrived (or the session is no longer working): take the indicator away."""
        if not self.active:
            return
        self.active = False
        self.clear()
        if self._redraw is not None:
            self._redraw()

    def clear(self) -> None:
        if self._drawn and self._stream is not None:
            self._drawn = False
            self._stream.write("\r\033[K")
            self._stream.flush()

    def _draw(self) -> None:
        if not self.active:
            return
        if self._stream is not None:
            self._stream.write(f"\r{self.text()}")
            self._stream.flush()
            self._drawn = True
        if self._redraw is not None:
            self._redraw()

    async def animate(self, interval: float = 0.1) -> None:
        """Turn the wheel until cancelled."""
        while True:
            await anyio.sleep(interval)
            if self.active:
                self._frame += 1
                self._draw()


def main_thread() -> bool:
    return sys.platform != "win32" and threading.current_thread() is threading.main_thread()


class Interrupts:
    """Ctrl-C: the first cancels the running turn (and withdraws any question on screen); a
    second within ``window`` seconds, or one while nothing is running, quits."""

    def __init__(self, window: float = 2.0) -> None:
        self.window = window
        self._last = -float("inf")
        self.quit = anyio.Event()

    def press(self, *, busy: bool) -> bool:
        """Record a press; True when it should cancel the turn, False when it quits."""
        now = anyio.current_time()
        if not busy or now - self._last < self.window:
            self.quit.set()
            return False
        self._last = now
        return True

    async def watch(self, on_press: Callable[[], Awaitable[None]]) -> None:
        """Turn SIGINT into ``on_press`` calls until cancelled (main thread, POSIX only)."""
        if not main_thread():
            await anyio.sleep_forever()
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            async for _ in signals:
                await on_press()


async def stream_turn(
    session: Session,
    events: Events,
    out: Renderer,
    *,
    json_lines: bool,
    auto: bool,
    ask: Ask | None = None,
    working: Working | None = None,
) -> int:
    """Print one turn's events (human or JSON lines), answer its requests, return the exit status.

    Ctrl-C cancels the turn (exit 130 when it ends cancelled); a second Ctrl-C quits at once. With
    ``json_lines`` the command's own answers print as ``{"type": "Answered", ...}`` lines and its
    questions and notices go to stderr."""
    notes: Writer = sys.stderr if json_lines else out.side
    interrupts = Interrupts()
    status = EXIT_FAILED
    error: AgentError | None = None

    def report(request_id: str, answer: str, how: str) -> None:
        if json_lines:
            print(json.dumps({"type": "Answered", "request_id": request_id, "answer": answer, "by": how}), flush=True)
        else:
            out.line(out.dim(f"    answered: {answer.replace('_', ' ')}"))

    def notice(text: str) -> None:
        if json_lines:
            print(text, file=sys.stderr, flush=True)
        else:
            out.line(out.yellow(text))

    async def asker(prompt: str) -> str | None:
        return await ask(prompt) if ask is not None else await read_line(prompt, to=notes)

    async def on_press() -> None:
        if interrupts.press(busy=True):
            requests.withdraw_all()
            notice("cancelling the turn (Ctrl-C again to quit)")
            with contextlib.suppress(AgentError):
                await session.cancel()
        else:
            tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        requests = Requests(session, out, tg, auto=auto, ask=asker, quiet=json_lines, report=report, notice=notice)
        tg.start_soon(interrupts.watch, on_press)
        if working is not None and not json_lines:
            out.working = working
            tg.start_soon(working.animate)
        try:
            status = await _stream(session, events, out, requests, json_lines)
        except AgentError as exc:  # re-raised below, bare (not in an exception group)
            error = exc
        tg.cancel_scope.cancel()
    if working is not None:
        working.stop()
        out.working = None
    if interrupts.quit.is_set():
        return EXIT_CANCELLED
    if error is not None:
        raise error
    return status


async def _stream(session: Session, events: Events, out: Renderer, requests: Requests, json_lines: bool) -> int:
    async for event in events:
        if json_lines:
            print(to_json(event), flush=True)
        else:
            out.render(event)
        kind = event.kind
        if isinstance(kind, RequestOpened):
            requests.opened(kind)
        elif isinstance(kind, RequestClosed):
            requests.closed(kind.request_id)
        elif isinstance(kind, TurnEnded) and (event.turn_info is None or event.turn_info.parent_tool_id is None):
            requests.withdraw_all()
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
