"""Terminal rendering of events for the ``anyagent`` command: streamed text, dimmed reasoning,
tool calls with status and diffs, plans, requests, usage and turn ends."""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Mapping
from typing import Protocol

from .types import (
    Cancelled,
    Completed,
    CompletionSource,
    ContextCompacted,
    ContextUsage,
    Diagnostic,
    DiagnosticLevel,
    Event,
    FileDiff,
    McpTool,
    MessageEnded,
    PermissionRequest,
    PlanEntryStatus,
    PlanUpdated,
    PlanUsageUpdated,
    QuestionRequest,
    ReasoningDelta,
    Refused,
    RequestClosed,
    RequestOpened,
    SessionStatus,
    SessionUpdated,
    StatusChanged,
    StopReason,
    TextDelta,
    ToolOutputDelta,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
    TurnEnded,
    TurnStarted,
    UserMessage,
)

__all__ = ["Renderer", "Writer", "describe_stop"]


class Indicator(Protocol):
    """A "working…" indicator (``_terminal.Working``): started at WORKING, stopped by output."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


class Writer(Protocol):
    """Where a ``Renderer`` prints: a text stream, or the chat's live input screen."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...

    def isatty(self) -> bool: ...


_STATUS_MARK = {
    ToolStatus.PENDING: "·",
    ToolStatus.RUNNING: "…",
    ToolStatus.COMPLETED: "✓",
    ToolStatus.FAILED: "✗",
    ToolStatus.CANCELLED: "⊘",
}
_PLAN_MARK = {PlanEntryStatus.PENDING: "[ ]", PlanEntryStatus.IN_PROGRESS: "[~]", PlanEntryStatus.COMPLETED: "[x]"}


def describe_stop(stop: StopReason) -> str:
    """A short human phrase for a stop reason."""
    if isinstance(stop, Completed):
        return "done" if stop.source is CompletionSource.PROTOCOL else "idle (the agent went quiet)"
    if isinstance(stop, Cancelled):
        return "cancelled"
    if isinstance(stop, Refused):
        return "refused by the agent"
    return f"failed: {stop.message}"


class Renderer:
    """Prints events as a person wants to read them. Colour only on a terminal (and not NO_COLOR)."""

    def __init__(
        self,
        out: Writer | None = None,
        *,
        color: bool | None = None,
        show_status: bool = False,
        side: Writer | None = None,
        verbose: bool = True,
    ) -> None:
        self.out: Writer = out or sys.stdout
        # ``side``: where everything but the agent's answer goes (``anyagent run`` passes stderr, so
        # ``run ... > out.txt`` holds only the answer); by default the same stream as ``out``
        self._side = side
        if color is None:
            color = self.side.isatty() and "NO_COLOR" not in os.environ
        self.color = color
        self.show_status = show_status
        self.verbose = verbose  # False: INFO diagnostics (advisory notices) are not shown
        self.working: Indicator | None = None  # "working…" from WORKING until the first output
        self._open_line = False
        self._open_on: Writer | None = None  # the stream holding the unfinished line
        self._mode: str | None = None  # "text" or "reasoning" while a stream is open
        self._tools: dict[str, ToolUpdate] = {}
        self._diffs_shown: set[str] = set()
        self.last_usage: ContextUsage | None = None
        self._shown_config: str | None = None  # the configuration the last "session updated" line showed

    # -- styling -------------------------------------------------------------------------------
    def _style(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def dim(self, text: str) -> str:
        return self._style(text, "2")

    def bold(self, text: str) -> str:
        return self._style(text, "1")

    def green(self, text: str) -> str:
        return self._style(text, "32")

    def red(self, text: str) -> str:
        return self._style(text, "31")

    def yellow(self, text: str) -> str:
        return self._style(text, "33")

    def cyan(self, text: str) -> str:
        return self._style(text, "36")

    def configuration_shown(self, configuration: Mapping[str, object]) -> None:
        """The configuration the user already sees (the session's at open): a ``SessionUpdated``
        that repeats it prints nothing."""
        self._shown_config = ", ".join(f"{k}={v}" for k, v in configuration.items())

    @property
    def side(self) -> Writer:
        """Where the command's own lines go (tool calls, notices, the turn's end)."""
        return self._side if self._side is not None else self.out

    # -- output --------------------------------------------------------------------------------
    def _write(self, text: str, to: Writer | None = None) -> None:
        if self.working is not None:
            self.working.stop()
        stream = to if to is not None else self.side
        stream.write(text)
        stream.flush()

    def line(self, text: str = "") -> None:
        """End any open stream, then print ``text`` on its own line."""
        self._close_stream()
        self._write(text + "\n")

    def note(self, text: str) -> None:
        """A line of the command's own (an echo, a notice) that does not interrupt a streamed line
        where the screen can hold both (the chat's live console prints it above); else ``line``."""
        above = getattr(self.out, "above", None)
        if above is not None:
            above(text + "\n")
        else:
            self.line(text)

    def end_stream(self) -> None:
        """End an open streamed line (before something else writes to the screen)."""
        self._close_stream()

    def _close_stream(self) -> None:
        if self._open_line:
            self._write("\n", self._open_on)
        self._open_line = False
        self._open_on = None
        self._mode = None

    def _stream(self, mode: str, text: str) -> None:
        if self._mode != mode:
            self._close_stream()
            self._mode = mode
            if mode == "reasoning":
                self._write(self.dim("thinking: "))
        # the answer goes to ``out``; reasoning and tool output are the command's (``side``)
        stream = self.out if mode == "text" else self.side
        self._write(self.dim(text) if mode == "reasoning" else text, stream)
        self._open_line = not text.endswith("\n")
        self._open_on = stream

    # -- events --------------------------------------------------------------------------------
    def render(self, event: Event) -> None:
        """Print one event."""
        kind = event.kind
        indent = "  " if event.turn_info is not None and event.turn_info.parent_tool_id else ""
        if isinstance(kind, TextDelta):
            self._stream("text", kind.text)
        elif isinstance(kind, ReasoningDelta):
            self._stream("reasoning", kind.text)
        elif isinstance(kind, MessageEnded):
            self._close_stream()
        elif isinstance(kind, UserMessage):
            self.line(indent + self.cyan(f"> {kind.text}"))
        elif isinstance(kind, ToolUpdated):
            self._tool(kind.tool, indent)
        elif isinstance(kind, ToolOutputDelta):
            self._stream("output", self.dim(kind.text))
        elif isinstance(kind, PlanUpdated):
            self.line(self.bold("plan:"))
            for entry in kind.entries:
                self.line(f"  {_PLAN_MARK[entry.status]} {entry.content}")
        elif isinstance(kind, RequestOpened):
            self._request(kind)
        elif isinstance(kind, RequestClosed):
            pass
        elif isinstance(kind, ContextUsage):
            self.last_usage = kind
        elif isinstance(kind, ContextCompacted):
            self.line(self.dim("context compacted"))
        elif isinstance(kind, PlanUsageUpdated):
            windows = ", ".join(f"{w.label} {w.used_percent:.0f}%" for w in kind.usage.windows)
            self.line(self.dim(f"plan usage: {windows}"))
        elif isinstance(kind, Diagnostic):
            info = kind.diagnostic
            if self.verbose or info.level is not DiagnosticLevel.INFO:
                self.line(self.yellow(f"[{info.level.value}] {info.message}"))
        elif isinstance(kind, TurnStarted):
            self._close_stream()
        elif isinstance(kind, TurnEnded):
            self._turn_end(kind)
        elif isinstance(kind, StatusChanged):
            if self.working is not None:
                if kind.status is SessionStatus.WORKING and not self._open_line:
                    self.working.start()
                else:
                    self.working.stop()
            if self.show_status:
                self.line(self.dim(f"status: {kind.status.value}"))
        elif isinstance(kind, SessionUpdated):
            # one line per change the user can see: an agent that confirms a change twice (its own
            # notice, then the engine's) or updates only what is not shown prints nothing more
            config = ", ".join(f"{k}={v}" for k, v in kind.info.configuration.items())
            if config != self._shown_config:
                self._shown_config = config
                self.line(self.dim(f"session updated{': ' + config if config else ''}"))

    def _tool(self, tool: ToolUpdate, indent: str = "") -> None:
        previous = self._tools.get(tool.id)
        self._tools[tool.id] = tool
        if previous is not None and previous.status is tool.status and previous.diffs == tool.diffs:
            return
        mark = _STATUS_MARK[tool.status]
        colour = {ToolStatus.COMPLETED: self.green, ToolStatus.FAILED: self.red}.get(tool.status, self.cyan)
        kind = f"{tool.kind.server}/{tool.kind.tool}" if isinstance(tool.kind, McpTool) else tool.kind.value
        self.line(
            f"{indent}{colour(mark)} {self.bold(tool.title or tool.id)} {self.dim(f'({kind}, {tool.status.value})')}"
        )
        if tool.status is ToolStatus.COMPLETED or tool.status is ToolStatus.FAILED:
            if tool.id not in self._diffs_shown:
                for diff in tool.diffs:
                    self.diff(diff, indent + "    ")
            if tool.output and not tool.diffs:
                for text_line in tool.output.rstrip().splitlines()[:12]:
                    self.line(indent + "    " + self.dim(text_line))

    def diff(self, diff: FileDiff, indent: str = "    ", *, label: bool = True) -> None:
        """Print a unified diff of one file edit (headed by its path unless ``label`` is False)."""
        old = (diff.old_text or "").splitlines()
        new = diff.new_text.splitlines()
        kind = "new file" if diff.old_text is None else "edit"
        if label:
            self.line(f"{indent}{self.dim(f'{kind}: {diff.path}')}")
        elif diff.old_text is None:
            self.line(f"{indent}{self.dim(kind)}")
        for text_line in list(difflib.unified_diff(old, new, lineterm="", n=2))[2:]:
            if text_line.startswith("+"):
                text_line = self.green(text_line)
            elif text_line.startswith("-"):
                text_line = self.red(text_line)
            else:
                text_line = self.dim(text_line)
            self.line(indent + text_line)

    def _request(self, opened: RequestOpened) -> None:
        request = opened.request
        if isinstance(request, PermissionRequest):
            tool = request.tool
            title = tool.title or tool.id
            self.line(self.yellow(f"? permission: {title}"))
            # each fact once: a path the title or a diff already names is not repeated
            if tool.input.command and tool.input.command not in title:
                self.line(f"    $ {tool.input.command}")
            elif tool.input.path and tool.input.path not in title and not tool.diffs:
                self.line(f"    {tool.input.path}")
            for diff in tool.diffs:
                self.diff(diff, "    ", label=diff.path not in title)
            if tool.diffs:
                self._diffs_shown.add(tool.id)
            if request.detail and request.detail not in title:
                self.line(self.dim(f"    {request.detail}"))
        elif isinstance(request, QuestionRequest):
            for question in request.questions:
                self.line(self.yellow(f"? {question.header + ': ' if question.header else ''}{question.text}"))
                for index, choice in enumerate(question.choices, 1):
                    extra = f" — {choice.description}" if choice.description else ""
                    self.line(f"    {index}. {choice.label}{self.dim(extra)}")

    def _turn_end(self, ended: TurnEnded) -> None:
        self._close_stream()
        usage = self.last_usage
        if usage is not None:
            window = f" of {usage.window_tokens:,}" if usage.window_tokens else ""
            percent = f" ({usage.used_tokens / usage.window_tokens:.0%})" if usage.window_tokens else ""
            cost = f", ${usage.cost_usd:.4f}" if usage.cost_usd is not None else ""
            self.line(self.dim(f"context: {usage.used_tokens:,}{window} tokens{percent}{cost}"))
        text = describe_stop(ended.stop)
        colour = self.green if isinstance(ended.stop, Completed) else self.red
        background = f" ({len(ended.background)} tool(s) still running)" if ended.background else ""
        self.line(colour(f"— turn {text}{background}"))
