"""The `anyagent` command in a real pseudo-terminal: Ctrl-C at each point, the chat input line
below streamed output, exit codes. The screen is rendered with a terminal emulator (pyte) so the
assertions are about what a person sees, not about escape sequences."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pexpect
import pyte
import pytest
from test_cli import COMPLETED, PERMISSION

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX pseudo-terminals")

ASKED = "[1] allow once  [2] deny > "


def text(message: str, words: str, pause: float = 0.0) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for word in words.split():
        steps.append({"emit": {"type": "TextDelta", "message_id": message, "text": word + " "}})
        if pause:
            steps.append({"sleep": pause})
    return steps


def script(tmp_path: Path, *turns: list[dict[str, Any]]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"steps": steps} for steps in turns]}))
    return str(path)


class Terminal:
    """The command on a 100x30 pseudo-terminal, its output drawn on an emulated screen."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        env = {
            **os.environ,
            "NO_COLOR": "1",
            "ANYAGENT_NO_LOGIN_SHELL": "1",
            "PROMPT_TOOLKIT_NO_CPR": "1",
            **(env or {}),
        }
        env.pop("PYTHONWARNINGS", None)
        self.screen = pyte.Screen(100, 30)
        self.stream = pyte.ByteStream(self.screen)
        self.transcript = b""
        self.child = pexpect.spawn(
            sys.executable, ["-m", "anyagent.cli", *args], env=env, dimensions=(30, 100), timeout=20
        )

    def _pump(self, timeout: float) -> None:
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return
        self.transcript += data
        self.stream.feed(data)

    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display if line.strip()]

    def wait_for(self, needle: str, timeout: float = 20) -> list[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(needle in line for line in self.lines()):
                return self.lines()
            self._pump(0.1)
        raise AssertionError(f"{needle!r} not on screen after {timeout}s:\n" + "\n".join(self.lines()))

    def exit_status(self, within: float) -> int | None:
        """Wait for the process to end on its own (no key pressed) and return its status."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            try:
                self._pump(0.1)
            except pexpect.EOF:
                self.child.wait()
                return self.child.exitstatus
            if not self.child.isalive():
                return self.child.exitstatus
        raise AssertionError(f"still running {within}s later:\n" + "\n".join(self.lines()))

    def close(self) -> None:
        self.child.close(force=True)


@pytest.fixture
def terminals() -> Any:
    opened: list[Terminal] = []

    def open_(*args: str, env: dict[str, str] | None = None) -> Terminal:
        opened.append(Terminal(*args, env=env))
        return opened[-1]

    yield open_
    for terminal in opened:
        terminal.close()


def test_run_ctrl_c_at_a_permission_prompt_cancels_and_exits_at_once(tmp_path: Path, terminals: Any) -> None:
    path = script(tmp_path, [{"emit": PERMISSION}, {"await_answer": True}, {"end": COMPLETED}])
    term = terminals("--mock", path, "run", "mock", "hi")
    term.wait_for(ASKED.rstrip())
    term.child.sendintr()
    assert term.exit_status(within=10) == 130  # no Enter needed: nothing is left reading stdin
    lines = term.lines()
    assert "(the request was withdrawn: nothing to answer any more)" in lines
    assert "— turn cancelled" in lines


def test_run_ctrl_c_mid_stream_cancels_the_turn(tmp_path: Path, terminals: Any) -> None:
    path = script(tmp_path, [*text("m1", "working on it"), {"sleep": 30}, {"end": COMPLETED}])
    term = terminals("--mock", path, "run", "mock", "hi")
    term.wait_for("working on it")
    term.child.sendintr()
    assert term.exit_status(within=10) == 130
    assert "cancelling the turn (Ctrl-C again to quit)" in term.lines()


@pytest.mark.parametrize("mode", ["plain", "live"])
def test_chat_ctrl_c_withdraws_the_prompt_and_at_idle_quits(tmp_path: Path, terminals: Any, mode: str) -> None:
    path = script(
        tmp_path,
        [*text("m1", "let me run the tests"), {"emit": PERMISSION}, {"await_answer": True}, {"end": COMPLETED}],
        [*text("m2", "second turn here"), {"end": COMPLETED}],
    )
    term = terminals("--mock", path, "chat", "mock", *(["--plain"] if mode == "plain" else []))
    header = term.wait_for("mid-turn messages queue")
    assert header[0].startswith("Mock agent in ")  # the agent a person knows, not an engine id
    assert not any("session s1" in line for line in header)
    term.child.sendline("run the tests")
    term.wait_for(ASKED.rstrip())
    term.child.sendintr()
    lines = term.wait_for("— turn cancelled")
    assert "(the request was withdrawn: nothing to answer any more)" in lines  # on a line of its own
    # the next line typed is a chat prompt again, not an answer to the withdrawn question
    term.child.sendline("next please")
    lines = term.wait_for("second turn here")
    assert not any("InvalidRequest" in line or "pick one of" in line for line in lines)
    term.wait_for("— turn done")
    term.child.sendintr()  # idle: one Ctrl-C quits, at once
    assert term.exit_status(within=10) == 130


def test_chat_second_ctrl_c_quits_while_a_turn_runs(tmp_path: Path, terminals: Any) -> None:
    # an agent that never confirms a cancel (the engine would wait 10 s): the second Ctrl-C does not wait
    path = tmp_path / "script.json"
    turn = [*text("m1", "busy busy"), {"sleep": 30}, {"end": COMPLETED}]
    path.write_text(json.dumps({"ignore_cancel": True, "turns": [{"steps": turn}]}))
    term = terminals("--mock", str(path), "chat", "mock")
    term.wait_for("›")
    term.child.sendline("go")
    term.wait_for("busy busy")
    started = time.monotonic()
    term.child.sendintr()
    term.wait_for("cancelling the turn (Ctrl-C again to quit)")
    term.child.sendintr()
    assert term.exit_status(within=8) == 130
    assert time.monotonic() - started < 8
    assert "— turn cancelled" not in term.lines()  # it quit without waiting for the turn to end


def test_chat_input_line_stays_below_streamed_output(tmp_path: Path, terminals: Any) -> None:
    path = script(
        tmp_path,
        [*text("m1", "word0 word1 word2 word3 word4 word5 word6 word7 word8 word9", pause=0.3), {"end": COMPLETED}],
        [*text("m2", "follow-up answered"), {"end": COMPLETED}],
    )
    term = terminals("--mock", path, "chat", "mock")
    term.wait_for("›")  # the input line is up
    term.child.sendline("stream please")
    term.wait_for("word2")
    term.child.send("queued follow-up")  # typed while the agent streams, not yet sent
    lines = term.wait_for("word6")
    assert lines[-1] == "› queued follow-up"  # the input line is the bottom line ...
    assert lines[-2].startswith("word0 word1 word2")  # ... the streamed line just above it
    assert not any("word" in line and "queued" in line for line in lines)  # never mixed
    term.child.send("\r")
    lines = term.wait_for("follow-up answered")
    # what was typed and the notice print above, the streamed line is finished whole below them
    start = lines.index("› queued follow-up")
    assert lines[start : start + 3] == [
        "› queued follow-up",
        "(queued: runs after the running turn)",
        "word0 word1 word2 word3 word4 word5 word6 word7 word8 word9",
    ]
    term.child.sendline("/quit")
    assert term.exit_status(within=10) == 0


def test_chat_exits_with_run_s_code_when_the_session_dies(tmp_path: Path, terminals: Any) -> None:
    path = script(tmp_path, [*text("m1", "about to go"), {"die": "exit status: 1"}])
    term = terminals("--mock", path, "chat", "mock")
    term.wait_for("mid-turn messages queue")
    term.child.sendline("go")
    assert term.exit_status(within=15) == 5
    assert any(line.startswith("session ended: ProcessExited") for line in term.lines())


def test_importing_anyagent_imports_no_terminal_or_http_library() -> None:
    code = (
        "import sys, anyagent, anyagent.wire, anyagent.toolkit\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'prompt_toolkit', 'rich', 'httpx', 'httpx_sse'}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"


def test_chat_without_the_cli_extra_reads_plain_lines_and_says_how_to_get_the_input_line(
    tmp_path: Path, terminals: Any
) -> None:
    blocked = tmp_path / "blocked" / "prompt_toolkit"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('not installed')\n")
    path = script(tmp_path, [*text("m1", "plain reply"), {"end": COMPLETED}])
    term = terminals("--mock", path, "chat", "mock", env={"PYTHONPATH": str(blocked.parent)})
    term.wait_for("pip install 'anyagent-core[cli]' for an input line that stays below the output")
    term.child.sendline("hi")
    term.wait_for("— turn done")
    term.child.sendintr()
    assert term.exit_status(within=10) == 130
