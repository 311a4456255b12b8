"""A scripted Claude Code for ``anyagent demo``: the real ``claude`` adapter talks to this process.

Run as ``python -m anyagent_claude.demo [claude's flags ...]``; ``demo_installation`` writes a
``claude`` launcher that does exactly that, so ``Runtime.open`` launches it like the real CLI.
It speaks Claude Code's stream-json wire on stdin/stdout with the frame shapes of claude 2.1.332:

* in: control requests (``initialize``, ``get_usage``, ``get_binary_version``, ``interrupt``,
  ``set_model``, ``set_permission_mode``, ``apply_flag_settings``; anything else gets an error
  answer), permission answers and user messages;
* out, per user message, one scripted turn: ``system/init``, the replayed prompt, streamed
  thinking and text, an ``Edit`` of ``calc.py`` (``return a - b`` → ``return a + b``) that asks
  ``can_use_tool``; on allow the edit is applied to the file for real and the ``tool_result``
  carries the ``tool_use_result`` the real CLI sends (so the adapter shows a diff); on deny an
  error ``tool_result`` and a text saying the file was left alone; then a ``result`` with
  ``usage`` and ``modelUsage`` (so the app sees context usage).

No model, no network, no account. Flags it does not need are accepted and ignored.
"""

from __future__ import annotations

import difflib
import itertools
import json
import os
import queue
import re
import shlex
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from anyagent import AgentInstallation

__all__ = ["CALC_PY", "demo_installation", "demo_project", "main"]

Frame = dict[str, Any]

VERSION = "2.1.332"
"""The Claude Code release whose frame shapes this program speaks."""

MODEL = "claude-demo"
WINDOW = 200_000
TURN_COST = 0.0123
PACE = 0.025
"""Seconds between streamed deltas, so the demo reads as a stream."""

CALC_PY = "def add(a, b):\n    return a - b\n"
"""The buggy file ``demo_project`` writes and the scripted turn fixes."""

OLD = "    return a - b"
NEW = "    return a + b"

THINKING = "The test expects add(2, 3) == 5, but calc.py returns a - b. The operator is wrong."
INTRO = "`add` subtracts instead of adding. I'll fix the operator in calc.py."
DONE = "Fixed: `add` now returns `a + b`, so the test passes."
LEFT_ALONE = "Understood, I left calc.py alone. The fix is to change `return a - b` to `return a + b`."
NOT_APPLIED = "The edit did not apply, so calc.py is unchanged. ({reason})"
INTERRUPTED = "[Request interrupted by user]"

# usage of the two model calls of a turn: (message_start usage, output tokens at message_delta);
# the second one is the context occupancy the app sees: 3 + 412 + 17,920 + 97 = 18,432 tokens
FIRST_CALL = ({"input_tokens": 3, "cache_creation_input_tokens": 1_904, "cache_read_input_tokens": 16_256}, 96)
SECOND_CALL = ({"input_tokens": 3, "cache_creation_input_tokens": 412, "cache_read_input_tokens": 17_920}, 97)

_VALUE_FLAGS = frozenset({"--session-id", "--resume", "--model", "--permission-mode"})
_AUTO_ALLOW_MODES = frozenset({"acceptEdits", "bypassPermissions"})


# ---------------------------------------------------------------------------------------------
# setup helpers for the app side


def demo_installation(directory: Path) -> AgentInstallation:
    """Write an executable ``claude`` launcher for this program into ``directory`` (created if
    needed) and return the installation that points at it: ``AgentInstallation.at("claude", ...)``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if sys.platform == "win32":
        launcher = directory / "claude.cmd"
        launcher.write_text(f'@"{sys.executable}" -m anyagent_claude.demo %*\r\n', encoding="utf-8")
    else:
        launcher = directory / "claude"
        launcher.write_text(
            f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m anyagent_claude.demo "$@"\n', encoding="utf-8"
        )
        launcher.chmod(0o755)
    return AgentInstallation.at("claude", launcher)


def demo_project(directory: Path) -> Path:
    """Write the demo's project (``calc.py`` with its bug) into ``directory``; returns it."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "calc.py").write_bytes(CALC_PY.encode())
    return directory


# ---------------------------------------------------------------------------------------------
# the wire


class _Closed(Exception):
    """stdin reached its end: the app is done with us."""


class _Interrupted(Exception):
    """The app interrupted the running turn."""


class Wire:
    """Frames out on ``stdout`` (one JSON object per line); frames in from ``stdin``, read by a
    thread into a queue so a turn can notice an ``interrupt`` while it streams."""

    def __init__(self, stdin: BinaryIO, stdout: BinaryIO) -> None:
        self._out = stdout
        self._in: queue.Queue[Frame | None] = queue.Queue()
        threading.Thread(target=self._read, args=(stdin,), daemon=True).start()

    def _read(self, stdin: BinaryIO) -> None:
        for line in stdin:
            if not line.strip():
                continue
            try:
                frame = json.loads(line)
            except ValueError:
                sys.stderr.write(f"demo agent: ignoring a line that is not JSON: {line[:80]!r}\n")
                continue
            if isinstance(frame, dict):
                self._in.put(frame)
        self._in.put(None)

    def send(self, frame: Frame) -> None:
        """Write one frame."""
        self._out.write(json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
        self._out.flush()

    def receive(self, *, block: bool = True) -> Frame:
        """The next frame; raises ``_Closed`` at the end of stdin, ``queue.Empty`` when not
        blocking and nothing has arrived."""
        frame = self._in.get(block=block)
        if frame is None:
            self._in.put(None)  # stay closed for every later call
            raise _Closed
        return frame


# ---------------------------------------------------------------------------------------------
# the agent


def _flags(args: Sequence[str]) -> dict[str, str]:
    """The values of the few flags the demo honours; every other flag is ignored."""
    return {flag: value for flag, value in itertools.pairwise(args) if flag in _VALUE_FLAGS}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _uuid() -> str:
    return str(uuid.uuid4())


class DemoAgent:
    """Serves one session: answers control requests and plays the scripted turn per prompt."""

    def __init__(self, wire: Wire, args: Sequence[str], cwd: Path) -> None:
        flags = _flags(args)
        self.wire = wire
        self.cwd = cwd
        # a new session gets --session-id, a fork --session-id too, a resume only --resume
        self.session_id = flags.get("--session-id") or flags.get("--resume") or _uuid()
        self.model = flags.get("--model", "default")
        self.mode = flags.get("--permission-mode", "default")
        self.replay = "--replay-user-messages" in args
        self.prompts: deque[Frame] = deque()
        self.answers: dict[str, Frame] = {}
        self.busy = False
        self.interrupted = False
        self.cost = 0.0
        self._tool_ids = itertools.count(1)
        self._message_ids = itertools.count(1)

    @property
    def model_name(self) -> str:
        return MODEL if self.model == "default" else self.model

    def serve(self) -> int:
        """Run until stdin ends; returns the exit status."""
        try:
            while True:
                while self.prompts:
                    self.play(self.prompts.popleft())
                self.take(self.wire.receive())
        except (_Closed, BrokenPipeError):
            return 0

    # -- incoming frames

    def take(self, frame: Frame) -> None:
        """Handle one incoming frame: prompts queue up, control requests are answered at once."""
        kind = frame.get("type")
        if kind == "user":
            self.prompts.append(frame)
        elif kind == "control_request":
            self.control(frame)
        elif kind == "control_response":
            response = frame.get("response")
            if isinstance(response, dict) and isinstance(response.get("request_id"), str):
                self.answers[response["request_id"]] = response

    def control(self, frame: Frame) -> None:
        """Answer one control request from the app."""
        request_id = frame.get("request_id")
        request: Frame = frame["request"] if isinstance(frame.get("request"), dict) else {}
        subtype = request.get("subtype")
        body: Frame
        if subtype == "initialize":
            body = self.initialize_answer()
        elif subtype == "get_binary_version":
            body = {"version": VERSION}
        elif subtype == "get_usage":
            body = self.usage_answer()
        elif subtype == "interrupt":
            self.interrupted = self.busy
            body = {"still_queued": []}
        elif subtype == "set_permission_mode" and isinstance(request.get("mode"), str):
            self.mode = request["mode"]
            body = {}
        elif subtype == "set_model":
            model = request.get("model")
            self.model = model if isinstance(model, str) and model else "default"
            body = {}
        elif subtype == "apply_flag_settings":
            body = {}
        else:
            self.wire.send(
                {
                    "type": "control_response",
                    "response": {
                        "subtype": "error",
                        "request_id": request_id,
                        "error": f"Unsupported control request subtype: {subtype}",
                    },
                }
            )
            return
        self.wire.send(
            {"type": "control_response", "response": {"subtype": "success", "request_id": request_id, "response": body}}
        )

    def initialize_answer(self) -> Frame:
        return {
            "commands": [],
            "agents": [],
            "output_style": "default",
            "available_output_styles": ["default"],
            "models": [
                {
                    "value": "default",
                    "resolvedModel": MODEL,
                    "displayName": "Default (demo)",
                    "description": "The scripted demo agent: one fixed turn, no model behind it",
                    "supportsEffort": False,
                    "supportsFastMode": False,
                    "supportsAutoMode": False,
                }
            ],
            "account": {"tokenSource": "none", "apiKeySource": "ANTHROPIC_API_KEY", "apiProvider": "firstParty"},
            "pid": os.getpid(),
            "claude_code_version": VERSION,
            "current_permission_mode": self.mode,
            "fast_mode_state": "off",
            "session_state": "running" if self.busy else "idle",
        }

    def usage_answer(self) -> Frame:
        """``get_usage`` as an API-key login answers it: session totals, no plan quota."""
        return {
            "session": {"total_cost_usd": self.cost, "model_usage": self.model_usage()},
            "subscription_type": None,
            "rate_limits_available": False,
            "rate_limits": None,
            "behaviors": None,
        }

    def model_usage(self) -> Frame:
        totals = _totals()
        return {
            self.model_name: {
                "inputTokens": totals["input_tokens"],
                "outputTokens": totals["output_tokens"],
                "cacheReadInputTokens": totals["cache_read_input_tokens"],
                "cacheCreationInputTokens": totals["cache_creation_input_tokens"],
                "webSearchRequests": 0,
                "costUSD": self.cost,
                "contextWindow": WINDOW,
                "maxOutputTokens": 32_000,
            }
        }

    # -- waiting

    def pause(self) -> None:
        """Wait one beat of the stream, handling whatever arrived; raises ``_Interrupted``."""
        time.sleep(PACE)
        while True:
            try:
                self.take(self.wire.receive(block=False))
            except queue.Empty:
                break
        if self.interrupted:
            raise _Interrupted

    def ask_permission(self, tool: Frame) -> Frame:
        """Send ``can_use_tool`` for ``tool`` and wait for the answer (``behavior`` allow/deny)."""
        if self.mode in _AUTO_ALLOW_MODES:
            return {"behavior": "allow", "updatedInput": tool["input"]}
        request_id = _uuid()
        path = Path(tool["input"]["file_path"])
        self.wire.send(
            {
                "type": "control_request",
                "request_id": request_id,
                "request": {
                    "subtype": "can_use_tool",
                    "tool_name": tool["name"],
                    "display_name": tool["name"],
                    "input": tool["input"],
                    "description": path.name,
                    "permission_suggestions": [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}],
                    "tool_use_id": tool["id"],
                },
            }
        )
        while request_id not in self.answers:
            self.take(self.wire.receive())
            if self.interrupted:
                raise _Interrupted
        answer = self.answers.pop(request_id)
        if answer.get("subtype") != "success" or not isinstance(answer.get("response"), dict):
            return {"behavior": "deny", "message": str(answer.get("error") or "The permission request failed.")}
        decision: Frame = answer["response"]
        if decision.get("behavior") == "deny" and decision.get("interrupt") is True:
            raise _Interrupted
        return decision

    # -- the turn

    def play(self, prompt: Frame) -> None:
        """Play the scripted turn for one user message."""
        self.busy = True
        self.interrupted = False
        started = time.monotonic()
        try:
            self.send_init()
            if self.replay:
                self.send_replay(prompt)
            self.turn(started)
        except _Interrupted:
            self.send_user([{"type": "text", "text": INTERRUPTED}])
            self.send_result(started, aborted=True)
        finally:
            self.busy = False
            self.interrupted = False

    def turn(self, started: float) -> None:
        tool: Frame = {
            "type": "tool_use",
            "id": f"toolu_demo_{next(self._tool_ids):02d}",
            "name": "Edit",
            "input": {"file_path": str(self.cwd / "calc.py"), "old_string": OLD, "new_string": NEW},
        }
        thinking = {"type": "thinking", "thinking": THINKING, "signature": "demo-signature"}
        self.stream_message([thinking, {"type": "text", "text": INTRO}, tool], FIRST_CALL, "tool_use")
        decision = self.ask_permission(tool)
        denials: list[Frame] = []
        if decision.get("behavior") == "allow":
            updated = decision.get("updatedInput")
            outcome = apply_edit(updated if isinstance(updated, dict) else tool["input"], self.cwd)
            final = DONE if outcome.error is None else NOT_APPLIED.format(reason=outcome.error)
        else:
            message = str(decision.get("message") or "The user denied this tool use.")
            outcome = ToolOutcome(message, f"Error: {message}", message)
            denials.append({"tool_name": tool["name"], "tool_use_id": tool["id"], "tool_input": tool["input"]})
            final = LEFT_ALONE
        result: Frame = {"tool_use_id": tool["id"], "type": "tool_result", "content": outcome.content}
        if outcome.error is not None:
            result["is_error"] = True
        self.send_user([result], tool_use_result=outcome.details)
        self.stream_message([{"type": "text", "text": final}], SECOND_CALL, "end_turn")
        self.send_result(started, text=final, denials=denials)

    # -- frames out

    def envelope(self) -> Frame:
        return {"session_id": self.session_id, "parent_tool_use_id": None, "uuid": _uuid()}

    def send_init(self) -> None:
        self.wire.send(
            {
                "type": "system",
                "subtype": "init",
                "cwd": str(self.cwd),
                "session_id": self.session_id,
                "tools": ["Edit"],
                "mcp_servers": [],
                "model": self.model_name,
                "permissionMode": self.mode,
                "slash_commands": [],
                "apiKeySource": "ANTHROPIC_API_KEY",
                "claude_code_version": VERSION,
                "output_style": "default",
                "agents": [],
                "skills": [],
                "plugins": [],
                "uuid": _uuid(),
            }
        )

    def send_replay(self, prompt: Frame) -> None:
        self.wire.send(
            {
                "type": "user",
                "message": prompt.get("message"),
                **self.envelope(),
                "uuid": prompt.get("uuid") or _uuid(),
                "timestamp": _now(),
                "isReplay": True,
            }
        )

    def send_user(self, content: list[Frame], **extra: Any) -> None:
        self.wire.send(
            {"type": "user", "message": {"role": "user", "content": content}, **self.envelope(), "timestamp": _now()}
            | extra
        )

    def stream_message(self, blocks: list[Frame], call: tuple[dict[str, int], int], stop_reason: str) -> None:
        """One model call, the way the CLI reports it: ``stream_event``s for every block and delta,
        and one ``assistant`` frame per finished block."""
        usage, output_tokens = call
        message_id = f"msg_demo_{next(self._message_ids):02d}"
        message: Frame = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model_name,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**usage, "output_tokens": 1},
        }

        def event(body: Frame) -> None:
            self.wire.send({"type": "stream_event", "event": body, **self.envelope(), "api_message_id": message_id})

        event({"type": "message_start", "message": message})
        for index, block in enumerate(blocks):
            event({"type": "content_block_start", "index": index, "content_block": _empty(block)})
            for delta in _deltas(block):
                self.pause()
                event({"type": "content_block_delta", "index": index, "delta": delta})
            self.wire.send(
                {
                    "type": "assistant",
                    "message": {**message, "content": [block], "context_management": None},
                    **self.envelope(),
                    "timestamp": _now(),
                }
            )
            event({"type": "content_block_stop", "index": index})
        event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            }
        )
        event({"type": "message_stop"})

    def send_result(
        self, started: float, *, text: str = "", denials: list[Frame] | None = None, aborted: bool = False
    ) -> None:
        if not aborted:
            self.cost = round(self.cost + TURN_COST, 6)
        elapsed = int((time.monotonic() - started) * 1000)
        frame: Frame = {
            "type": "result",
            "subtype": "error_during_execution" if aborted else "success",
            "is_error": aborted,
            "duration_ms": elapsed,
            "duration_api_ms": elapsed,
            "num_turns": 2,
            "stop_reason": None if aborted else "end_turn",
            "session_id": self.session_id,
            "total_cost_usd": self.cost,
            "usage": _totals() if not aborted else dict.fromkeys(_totals(), 0),
            "modelUsage": self.model_usage(),
            "permission_denials": denials or [],
            "terminal_reason": "aborted_streaming" if aborted else "completed",
            "uuid": _uuid(),
        }
        if aborted:
            frame["errors"] = []
        else:
            frame["result"] = text
        self.wire.send(frame)


def _totals() -> dict[str, int]:
    """The token totals of one full turn (both model calls)."""
    totals = {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 0}
    for usage, output_tokens in (FIRST_CALL, SECOND_CALL):
        for key, value in usage.items():
            totals[key] += value
        totals["output_tokens"] += output_tokens
    return totals


def _empty(block: Frame) -> Frame:
    """A block as ``content_block_start`` announces it, before any delta."""
    if block["type"] == "thinking":
        return {"type": "thinking", "thinking": "", "signature": ""}
    if block["type"] == "text":
        return {"type": "text", "text": ""}
    return {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}


def _words(text: str) -> list[str]:
    return re.findall(r"\S+\s*", text)


def _deltas(block: Frame) -> Iterator[Frame]:
    """The ``content_block_delta`` bodies that stream ``block``."""
    if block["type"] == "thinking":
        for word in _words(block["thinking"]):
            yield {"type": "thinking_delta", "thinking": word}
        yield {"type": "signature_delta", "signature": block["signature"]}
    elif block["type"] == "text":
        for word in _words(block["text"]):
            yield {"type": "text_delta", "text": word}
    else:
        encoded = json.dumps(block["input"])
        half = len(encoded) // 2
        for part in (encoded[:half], encoded[half:]):
            yield {"type": "input_json_delta", "partial_json": part}


# ---------------------------------------------------------------------------------------------
# the Edit tool


class ToolOutcome(NamedTuple):
    """What a tool call produced: the ``tool_result`` content, the ``tool_use_result`` details,
    and the error (None when it succeeded)."""

    content: str
    details: Any
    error: str | None = None


def apply_edit(args: Frame, cwd: Path) -> ToolOutcome:
    """Run Claude's ``Edit`` on disk.

    On success the details are the object the real CLI sends (``filePath``, ``oldString``,
    ``newString``, ``originalFile``, ``structuredPatch``, ...); on failure they are the
    ``"Error: ..."`` string and the content is wrapped in ``<tool_use_error>``, as the CLI does.
    """
    path = Path(str(args.get("file_path", "")))
    old, new = str(args.get("old_string", "")), str(args.get("new_string", ""))
    try:
        original = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return _edit_error(f"File does not exist. Note: your current working directory is {cwd}.")
    matches = original.count(old) if old else 0
    if matches == 0:
        return _edit_error(f"String to replace not found in file.\nString: {old}")
    if matches > 1:
        return _edit_error(f"Found {matches} matches of the string to replace, but replace_all is false.")
    updated = original.replace(old, new, 1)
    try:
        path.write_bytes(updated.encode("utf-8"))
    except OSError as exc:
        return _edit_error(f"The file could not be written: {exc.strerror or exc}")
    details = {
        "filePath": str(path),
        "oldString": old,
        "newString": new,
        "originalFile": original,
        "structuredPatch": structured_patch(original, updated),
        "userModified": False,
        "replaceAll": False,
    }
    return ToolOutcome(f"The file {path} has been updated successfully.", details)


def _edit_error(message: str) -> ToolOutcome:
    return ToolOutcome(f"<tool_use_error>{message}</tool_use_error>", f"Error: {message}", message)


def structured_patch(old: str, new: str, context: int = 3) -> list[Frame]:
    """The hunks of ``old`` → ``new`` in the CLI's ``structuredPatch`` shape."""
    a, b = old.splitlines(), new.splitlines()
    hunks: list[Frame] = []
    for group in difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(context):
        lines: list[str] = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                lines += [" " + line for line in a[a1:a2]]
                continue
            lines += ["-" + line for line in a[a1:a2]]
            lines += ["+" + line for line in b[b1:b2]]
        first, last = group[0], group[-1]
        hunks.append(
            {
                "oldStart": first[1] + 1,
                "oldLines": last[2] - first[1],
                "newStart": first[3] + 1,
                "newLines": last[4] - first[3],
                "lines": lines,
            }
        )
    return hunks


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: serve one session on stdin/stdout with ``argv`` as claude's command line."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--version" in args or "-v" in args:
        print(f"{VERSION} (Claude Code)")
        return 0
    agent = DemoAgent(Wire(sys.stdin.buffer, sys.stdout.buffer), args, Path.cwd())
    return agent.serve()


if __name__ == "__main__":
    sys.exit(main())
