"""``echo-agent``: the small JSON-lines agent the ``echo`` adapter drives (a console script).

It stands in for a real coding-agent CLI: one JSON object per line on stdin (client → agent) and
stdout (agent → client), diagnostics on stderr, exit 0 when stdin closes.

Agent → client::

    {"type": "hello", "protocol": 1, "version": "0.1.0", "tools": true}     the first line, always
    {"type": "ack", "turn": T}                                              the prompt was taken
    {"type": "text", "turn": T, "message": M, "text": "..."}               streamed assistant text
    {"type": "message_end", "turn": T, "message": M}                       no more text for M
    {"type": "tool", "turn": T, "tool": TOOL}                               a whole tool snapshot
    {"type": "permission", "turn": T, "request": R, "tool": TOOL, "options": ["allow", "deny"]}
    {"type": "done", "turn": T, "stop": "completed" | "cancelled" | "failed", "error": "..."}
    {"type": "error", "message": "...", "frame": <what we could not take>}

    TOOL = {"id", "name": "shell", "kind": "execute", "title", "status", "command", "output", "exit_code"}
    status: "pending" → "running" → "completed" | "failed" | "cancelled"

Client → agent::

    {"type": "prompt", "turn": T, "text": "..."}         a prompt arriving mid-turn waits its turn
    {"type": "permission_answer", "request": R, "decision": "allow" | "deny"}
    {"type": "cancel"}                                    ends the running turn as "cancelled"

What a prompt does: ``RUN <command>`` asks permission, then runs the command with the shell in
the working directory (output kept up to 64 KiB); ``SLOW [n]`` streams ``n`` words (default 50),
``ECHO_AGENT_SLOW_DELAY`` seconds apart (default 0.1), until done or cancelled; anything else is
echoed back as ``You said: <text>``. ``--no-tools`` makes ``RUN`` decline. Anything the agent
cannot take (not JSON, not an object, an unknown type, a stray answer) gets an ``error`` frame and
the agent goes on. A reader thread feeds stdin to the main loop, so a cancel is seen while
streaming or while a command runs.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import IO, Any, BinaryIO

PROTOCOL = 1
VERSION = "0.1.0"
MAX_LINE = 1024 * 1024
"""Bytes of one stdin line; a longer line is skipped and answered with an error frame."""
OUTPUT_LIMIT = 64 * 1024
"""Bytes of command output the agent keeps."""
COMMAND_TIMEOUT = 60.0
SLOW_WORDS = 50
SLOW_LIMIT = 1000
_POLL = 0.02


class _Cancelled(Exception):
    """The client cancelled the running turn."""


class _Eof(Exception):
    """stdin closed: the client is gone."""


class _Bad:
    """A stdin line that is not a JSON object."""

    def __init__(self, text: str, reason: str) -> None:
        self.text = text
        self.reason = reason


_EOF = object()
Item = Any  # a frame (dict), a _Bad, or _EOF


def _read_stdin(stdin: BinaryIO, inbox: queue.Queue[Item]) -> None:
    """The reader thread: every stdin line, parsed, into ``inbox``; ``_EOF`` at the end."""
    try:
        while True:
            line = stdin.readline(MAX_LINE + 1)
            if not line:
                break
            if len(line) > MAX_LINE and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # skip the rest of the over-long line
                    line = stdin.readline(MAX_LINE)
                inbox.put(_Bad("", f"a line longer than {MAX_LINE} bytes"))
                continue
            if line.strip():
                inbox.put(_parse(line))
    except (OSError, ValueError):
        pass
    inbox.put(_EOF)


def _parse(line: bytes) -> Item:
    text = line.decode("utf-8", "replace").strip()
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return _Bad(text[:1000], f"not JSON ({type(exc).__name__}: {exc})")
    if not isinstance(value, dict):
        return _Bad(text[:1000], f"not a JSON object ({type(value).__name__})")
    return value


class EchoAgent:
    """The agent's state: the inbox, prompts waiting their turn, and id counters."""

    def __init__(self, inbox: queue.Queue[Item], stdout: BinaryIO, *, tools: bool, slow_delay: float) -> None:
        self.inbox = inbox
        self.stdout = stdout
        self.tools = tools
        self.slow_delay = slow_delay
        self.waiting: deque[dict[str, Any]] = deque()
        self.counter = 0
        self.turn = ""

    # -- output

    def emit(self, frame: dict[str, Any]) -> None:
        """Write one frame as a compact JSON line (the main thread is the only writer)."""
        self.stdout.write(json.dumps(frame, separators=(",", ":")).encode("utf-8") + b"\n")
        self.stdout.flush()

    def refuse(self, message: str, frame: Any) -> None:
        """Answer something we cannot take with an error frame."""
        self.emit({"type": "error", "message": message, "frame": frame})

    def next_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}-{self.counter}"

    # -- the main loop

    def serve(self) -> None:
        """Say hello, then take frames until stdin closes."""
        self.emit({"type": "hello", "protocol": PROTOCOL, "version": VERSION, "tools": self.tools})
        while True:
            item = self.waiting.popleft() if self.waiting else self.inbox.get()
            if item is _EOF:
                return
            if isinstance(item, dict) and item.get("type") == "prompt":
                try:
                    self.run_turn(item)
                except _Eof:
                    return
            elif isinstance(item, dict) and item.get("type") == "cancel":
                pass  # nothing is running: a cancel that raced the end of a turn
            else:
                self.refuse_idle(item)

    def refuse_idle(self, item: Item) -> None:
        if isinstance(item, _Bad):
            self.refuse(item.reason, item.text)
        elif item.get("type") == "permission_answer":
            self.refuse("no permission request is waiting for an answer", item)
        else:
            self.refuse(f"unknown frame type {item.get('type')!r}", item)

    # -- waiting, cancel-aware

    def poll(self, timeout: float, request: str | None = None) -> str | None:
        """Take client frames for up to ``timeout`` seconds. Returns the decision when the answer
        to ``request`` arrives; raises ``_Cancelled`` on cancel and ``_Eof`` when stdin closes."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                item = self.inbox.get(timeout=max(0.0, remaining)) if remaining > 0 else self.inbox.get_nowait()
            except queue.Empty:
                return None
            decision = self.take_mid_turn(item, request)
            if decision is not None:
                return decision

    def take_mid_turn(self, item: Item, request: str | None) -> str | None:
        if item is _EOF:
            raise _Eof
        if isinstance(item, _Bad):
            self.refuse(item.reason, item.text)
            return None
        kind = item.get("type")
        if kind == "cancel":
            raise _Cancelled
        if kind == "prompt":
            self.waiting.append(item)  # one turn at a time: it runs after this one
        elif kind == "permission_answer" and request is not None and item.get("request") == request:
            decision = item.get("decision")
            if decision in ("allow", "deny"):
                return str(decision)
            self.refuse(f"decision must be 'allow' or 'deny', not {decision!r}", item)
        elif kind == "permission_answer":
            self.refuse(f"no permission request {item.get('request')!r} is waiting", item)
        else:
            self.refuse(f"unknown frame type {kind!r}", item)
        return None

    def sleep(self, seconds: float) -> None:
        """Wait, but stop at once for a cancel or EOF."""
        self.poll(seconds)

    # -- turns

    def run_turn(self, prompt: dict[str, Any]) -> None:
        turn, text = prompt.get("turn"), prompt.get("text")
        if not isinstance(turn, str) or not isinstance(text, str):
            self.refuse("a prompt needs a string 'turn' and a string 'text'", prompt)
            return
        self.turn = turn
        self.emit({"type": "ack", "turn": turn})
        try:
            self.respond(text.strip())
        except _Cancelled:
            self.emit({"type": "done", "turn": turn, "stop": "cancelled"})
        else:
            self.emit({"type": "done", "turn": turn, "stop": "completed"})

    def respond(self, text: str) -> None:
        word, _, rest = text.partition(" ")
        if word == "RUN" and rest.strip():
            self.run_command(rest.strip())
        elif word == "SLOW":
            count = int(rest) if rest.strip().isdigit() else SLOW_WORDS
            self.say(" ".join(f"word{i}" for i in range(1, min(count, SLOW_LIMIT) + 1)), delay=self.slow_delay)
        else:
            self.say(f"You said: {text}")

    def say(self, text: str, delay: float = 0.0) -> None:
        """Stream ``text`` word by word as one message, then end the message."""
        message = self.next_id("msg")
        words = text.split(" ")
        for index, word in enumerate(words):
            chunk = word if index == len(words) - 1 else word + " "
            self.emit({"type": "text", "turn": self.turn, "message": message, "text": chunk})
            if delay:
                self.sleep(delay)
            else:
                self.poll(0)  # a cancel is seen even in a fast stream
        self.emit({"type": "message_end", "turn": self.turn, "message": message})

    # -- the shell tool

    def run_command(self, command: str) -> None:
        if not self.tools:
            self.say(f"Tools are off in this session, so I did not run `{command}`.")
            return
        tool: dict[str, Any] = {
            "id": self.next_id("tool"),
            "name": "shell",
            "kind": "execute",
            "title": f"Run `{command}`",
            "status": "pending",
            "command": command,
            "output": None,
            "exit_code": None,
        }
        self.emit({"type": "tool", "turn": self.turn, "tool": tool})
        request = self.next_id("perm")
        self.emit(
            {"type": "permission", "turn": self.turn, "request": request, "tool": tool, "options": ["allow", "deny"]}
        )
        try:
            decision = self.wait_for_answer(request)
        except _Cancelled:
            self.emit({"type": "tool", "turn": self.turn, "tool": {**tool, "status": "cancelled"}})
            raise
        if decision == "deny":
            denied = {**tool, "status": "failed", "output": "denied by the user"}
            self.emit({"type": "tool", "turn": self.turn, "tool": denied})
            self.say(f"I did not run `{command}`: permission denied.")
            return
        self.emit({"type": "tool", "turn": self.turn, "tool": {**tool, "status": "running"}})
        try:
            status, output, code = self.execute(command)
        except _Cancelled:
            self.emit({"type": "tool", "turn": self.turn, "tool": {**tool, "status": "cancelled"}})
            raise
        finished = {**tool, "status": status, "output": output, "exit_code": code}
        self.emit({"type": "tool", "turn": self.turn, "tool": finished})
        self.say(f"Ran `{command}`: exit code {code}.")

    def wait_for_answer(self, request: str) -> str:
        while True:
            decision = self.poll(3600.0, request)
            if decision is not None:
                return decision

    def execute(self, command: str) -> tuple[str, str, int | None]:
        """Run ``command`` with the shell; (status, output, exit code). Cancel kills its group."""
        child = subprocess.Popen(
            command,
            shell=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=os.name == "posix",
        )
        kept = bytearray()
        reader = threading.Thread(target=_collect, args=(child.stdout, kept), daemon=True)
        reader.start()
        deadline = time.monotonic() + COMMAND_TIMEOUT
        try:
            while child.poll() is None and time.monotonic() < deadline:
                self.poll(_POLL)
        except (_Cancelled, _Eof):
            _kill(child)
            raise
        timed_out = child.poll() is None
        if timed_out:
            _kill(child)
        reader.join(timeout=2.0)
        output = kept.decode("utf-8", "replace")
        if timed_out:
            return "failed", output + f"\n(timed out after {COMMAND_TIMEOUT:g} s)", None
        return ("completed" if child.returncode == 0 else "failed"), output, child.returncode


def _collect(stream: IO[bytes], kept: bytearray) -> None:
    """Drain the command's output to its end, keeping the first ``OUTPUT_LIMIT`` bytes."""
    with stream:
        while chunk := stream.read(65536):
            kept += chunk[: max(0, OUTPUT_LIMIT - len(kept))]


def _kill(child: subprocess.Popen[bytes]) -> None:
    """Kill the command and everything it started, then reap it."""
    try:
        if os.name == "posix":
            os.killpg(child.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            child.kill()
    except OSError:
        pass
    child.wait()


def main(argv: Sequence[str] | None = None) -> int:
    """The ``echo-agent`` console script."""
    parser = argparse.ArgumentParser(prog="echo-agent", description="a tiny JSON-lines agent for anyagent-echo")
    parser.add_argument("--no-tools", action="store_true", help="decline RUN prompts")
    parser.add_argument("--version", action="version", version=f"echo-agent {VERSION}")
    args = parser.parse_args(argv)
    try:
        slow_delay = float(os.environ.get("ECHO_AGENT_SLOW_DELAY", "0.1"))
    except ValueError:
        slow_delay = 0.1
    inbox: queue.Queue[Item] = queue.Queue()
    threading.Thread(target=_read_stdin, args=(sys.stdin.buffer, inbox), daemon=True).start()
    agent = EchoAgent(inbox, sys.stdout.buffer, tools=not args.no_tools, slow_delay=max(0.0, slow_delay))
    try:
        agent.serve()
    except (BrokenPipeError, KeyboardInterrupt):
        pass  # the client went away
    return 0


if __name__ == "__main__":
    sys.exit(main())
