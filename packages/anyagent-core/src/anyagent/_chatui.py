"""The input side of ``anyagent chat``: where typed lines come from and where the prompt shows.

Two consoles with one interface. With the ``cli`` extra (``pip install 'anyagent-core[cli]'``,
prompt_toolkit) and a terminal on both ends, ``LiveConsole`` keeps an input line (with history and
line editing) below the streamed output: complete lines print above it, the line being streamed
shows just over it, so typing never mixes into the agent's text. Otherwise ``PlainConsole`` reads
lines from stdin on the event loop. prompt_toolkit is imported only here, only by ``chat``:
``import anyagent`` never pays for it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

from ._render import Renderer, Writer
from ._terminal import Working, read_line

Prompt = Callable[[], str]


class PlainConsole:
    """Lines from stdin; Ctrl-C arrives as SIGINT (handled by the caller)."""

    live = False

    def __init__(self, out: Renderer) -> None:
        self._out = out
        self._prompt_open = False  # a question's prompt is on screen, its line not yet typed

    async def __aenter__(self) -> PlainConsole:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def read(self, prompt: Prompt) -> str | None:
        """The next line (None at end of input). The chat prompt is not printed: output streams
        on the same screen lines; questions print their own prompt through ``show``."""
        line = await read_line("")
        self._prompt_open = False
        return line

    def show(self, prompt: str) -> None:
        """A question is now being asked: print its prompt (``""``: it is no longer asked)."""
        if prompt:
            self._out.end_stream()
            sys.stdout.write(prompt)
            self._prompt_open = True
        elif self._prompt_open:  # withdrawn before its answer was typed
            sys.stdout.write("\n")
            self._prompt_open = False
        sys.stdout.flush()


class _LiveLines:
    """What the renderer writes to under ``LiveConsole``: complete lines go above the input line
    (through prompt_toolkit's patched stdout), the unfinished line is kept and drawn over it."""

    def __init__(self, refresh: Callable[[], None]) -> None:
        self.partial = ""
        self._refresh = refresh

    def write(self, text: str) -> int:
        text = self.partial + text
        done, newline, self.partial = text.rpartition("\n")
        if newline:
            sys.stdout.write(done + "\n")
            sys.stdout.flush()
        self._refresh()
        return len(text)

    def above(self, text: str) -> None:
        """Print complete lines above the input line, leaving the unfinished streamed line be."""
        sys.stdout.write(text)
        sys.stdout.flush()

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return True


class LiveConsole:
    """An input line that stays below the streamed output (prompt_toolkit)."""

    live = True

    def __init__(self, out: Renderer, completions: Sequence[str] = ()) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import WordCompleter
        from prompt_toolkit.key_binding import KeyBindings

        bindings = KeyBindings()

        @bindings.add("c-c")
        def _interrupt(event: Any) -> None:
            # a half-typed line is cleared first (not lost to a quit); on an empty line Ctrl-C is the
            # chat's (cancel the turn, or quit)
            buffer = event.app.current_buffer
            if buffer.text:
                buffer.reset()
            else:
                event.app.exit(exception=KeyboardInterrupt())

        self._out = out
        completer = WordCompleter(list(completions), sentence=True) if completions else None
        self._session: Any = PromptSession(
            erase_when_done=True, key_bindings=bindings, completer=completer, complete_while_typing=False
        )
        self._lines = _LiveLines(self.refresh)
        self.working = Working(redraw=self.refresh)  # drawn above the input line, in ``message``
        self._saved: Writer | None = None
        self._patch: Any = None

    async def __aenter__(self) -> LiveConsole:
        from prompt_toolkit.patch_stdout import patch_stdout

        self._patch = patch_stdout(raw=True)
        self._patch.__enter__()
        self._saved = self._out.out
        self._out.out = self._lines
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._saved is not None:
            self._out.out = self._saved
        if self._lines.partial:
            sys.stdout.write(self._lines.partial + "\n")
            self._lines.partial = ""
        self._patch.__exit__(exc_type, exc, tb)

    def refresh(self) -> None:
        from prompt_toolkit.application import get_app_or_none

        app = get_app_or_none()
        if app is not None:
            app.invalidate()

    async def read(self, prompt: Prompt) -> str | None:
        """The next line; None at Ctrl-D; Ctrl-C raises ``KeyboardInterrupt``."""
        from prompt_toolkit.formatted_text import ANSI

        def message() -> Any:
            partial = self._lines.partial
            spinner = self.working.text()
            above = (partial + "\n" if partial else "") + (spinner + "\n" if spinner and not partial else "")
            return ANSI(above + (prompt() or "› "))

        try:
            line: str = await self._session.prompt_async(message)
        except EOFError:
            return None
        if line.strip():  # the input line is erased on Enter: keep what was typed in the transcript
            asked = prompt()
            self._out.note(asked + line if asked else self._out.cyan(f"› {line}"))
        return line

    def show(self, prompt: str) -> None:
        self.refresh()


def console(out: Renderer, *, plain: bool = False, completions: Sequence[str] = ()) -> PlainConsole | LiveConsole:
    """``LiveConsole`` when prompt_toolkit is installed and both ends are a terminal (``completions``:
    the words Tab completes)."""
    if not plain and sys.platform != "win32" and sys.stdin.isatty() and sys.stdout.isatty():
        try:
            return LiveConsole(out, completions)
        except ImportError:
            out.line(out.dim("(pip install 'anyagent-core[cli]' for an input line that stays below the output)"))
    return PlainConsole(out)
