"""`anyagent` as a Unix command: `run ... > out.txt` holds only the answer, `-` reads the prompt from
stdin, `--version`, `python -m anyagent`, bare `anyagent` prints help, `-m`, `--resume`/`-c`, and the
resume command printed on exit (stderr). The terminal cases run in a real pseudo-terminal."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pexpect
import pyte
import pytest
import test_cli_terminal
from test_cli import COMPLETED, PERMISSION, TEXT_TURN, write_script
from test_cli_terminal import Terminal

import anyagent
from anyagent import Runtime, SessionOptions, SessionUpdated, serialize
from anyagent._render import Renderer
from anyagent.mock import Script, select_option

USAGE = {"type": "ContextUsage", "used_tokens": 1200, "window_tokens": 200000, "cost_usd": 0.0123}
TOOL = {
    "type": "ToolUpdated",
    "tool": {"id": "t9", "kind": "read", "title": "Read notes.md", "status": "completed", "input": {}},
}
ANSWER_TURN = [{"emit": TOOL}, {"emit": TEXT_TURN}, {"emit": USAGE}, {"end": COMPLETED}]


def model_script(tmp_path: Path, turns: list[list[dict[str, Any]]]) -> Path:
    option = json.loads(serialize.dumps(select_option("model", ["sonnet", "opus"])))
    return write_script(tmp_path, turns, options=[option], capabilities=["resume"])


def anyagent_cmd(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "anyagent", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "NO_COLOR": "1", "ANYAGENT_NO_LOGIN_SHELL": "1", **(env or {})},
    )


@pytest.fixture
def state(tmp_path: Path) -> dict[str, str]:
    """Where ``-c`` remembers sessions: a fresh folder per test."""
    return {"XDG_STATE_HOME": str(tmp_path / "state")}


def test_run_redirected_to_a_file_writes_only_the_answer_and_the_rest_shows_on_the_terminal(
    tmp_path: Path, state: dict[str, str]
) -> None:
    script = write_script(tmp_path, [ANSWER_TURN], capabilities=["resume"])
    out = tmp_path / "out.txt"
    command = shlex.join([sys.executable, "-m", "anyagent", "--mock", str(script), "run", "mock", "hi"])
    term = shell_terminal(f"{command} > {shlex.quote(str(out))}", state)
    try:
        assert term.exit_status(within=20) == 0
    finally:
        term.close()
    assert out.read_text() == "hello from the mock\n"
    screen = term.lines()
    assert any("Read notes.md" in line for line in screen)
    assert "context: 1,200 of 200,000 tokens (1%), $0.0123" in screen
    assert "— turn done" in screen
    assert "resume: anyagent run mock --resume mock-s1 PROMPT" in screen


def test_run_piped_asks_for_permission_on_stderr_and_the_answer_alone_on_stdout(tmp_path: Path) -> None:
    script = write_script(
        tmp_path, [[{"emit": TEXT_TURN}, {"emit": PERMISSION}, {"await_answer": True}, {"end": COMPLETED}]]
    )
    result = anyagent_cmd("--mock", str(script), "run", "mock", "hi", stdin="2\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello from the mock\n"
    assert "? permission: Run make test" in result.stderr
    assert "— turn done" in result.stderr


def test_run_dash_reads_the_prompt_from_stdin(tmp_path: Path) -> None:
    script = write_script(tmp_path, [[{"end": COMPLETED}]])
    result = anyagent_cmd("--mock", str(script), "run", "mock", "-", "--json", stdin="first line\nsecond line\n")
    assert result.returncode == 0, result.stderr
    # the mock agent's turns carry no prompt text: the prompt is checked where the engine hands it over
    code = (
        "import anyio, sys\n"
        "from anyagent import cli\n"
        "async def main():\n"
        "    args = cli.build_parser().parse_args(['run', 'mock', '-'])\n"
        "    print(repr(await cli._prompt_text(args)))\n"
        "anyio.run(main)\n"
    )
    read = subprocess.run(
        [sys.executable, "-c", code], input="first line\nsecond line\n", capture_output=True, text=True, timeout=30
    )
    assert read.stdout.strip() == repr("first line\nsecond line")
    empty = anyagent_cmd("--mock", str(script), "run", "mock", "-", stdin="\n")
    assert empty.returncode == 2
    assert "the prompt on stdin is empty" in empty.stderr
    assert empty.stdout == ""


def test_version_python_dash_m_and_bare_anyagent_prints_help() -> None:
    version = anyagent_cmd("--version")
    assert version.returncode == 0
    assert version.stdout.startswith(f"anyagent {anyagent.__version__} (Python ")
    bare = anyagent_cmd()
    assert bare.returncode == 0, bare.stderr
    assert bare.stdout.startswith("usage: anyagent")
    for command in ("discover", "run", "chat", "demo"):
        assert command in bare.stdout
    assert bare.stderr == ""


def test_model_flag_configures_the_session(tmp_path: Path) -> None:
    script = model_script(tmp_path, [])
    result = anyagent_cmd("--mock", str(script), "chat", "mock", "--plain", "-m", "opus", stdin="/info\n")
    assert result.returncode == 0, result.stderr
    assert "  model = opus" in result.stdout


def test_run_and_chat_print_the_resume_command_on_exit_and_c_continues_the_last_session(
    tmp_path: Path, state: dict[str, str]
) -> None:
    script = model_script(tmp_path, [[{"emit": TEXT_TURN}, {"end": COMPLETED}]])
    ran = anyagent_cmd("--mock", str(script), "run", "mock", "hi", env=state)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.strip().splitlines()[-1] == "resume: anyagent run mock --resume mock-s1 PROMPT"
    assert "resume:" not in ran.stdout
    chat = anyagent_cmd("--mock", str(script), "chat", "mock", "--plain", "--resume", "tok-7", stdin="", env=state)
    assert chat.returncode == 0, chat.stderr
    assert chat.stderr.strip().splitlines()[-1] == "resume: anyagent chat mock --resume tok-7"
    # -c: the last session of this agent in this directory (the chat's, remembered on its exit)
    again = anyagent_cmd("--mock", str(script), "chat", "mock", "--plain", "-c", stdin="/info\n", env=state)
    assert "resume token tok-7" in again.stdout
    elsewhere = anyagent_cmd("--mock", str(script), "run", "mock", "hi", "-c", "-C", str(tmp_path), env=state)
    assert elsewhere.returncode == 2
    assert f"no earlier session of mock in {tmp_path} to continue (-c)" in elsewhere.stderr
    both = anyagent_cmd("--mock", str(script), "run", "mock", "hi", "-c", "--resume", "x", env=state)
    assert both.returncode == 2  # one or the other


def test_set_model_prints_session_updated_once(tmp_path: Path) -> None:
    script = model_script(tmp_path, [])
    result = anyagent_cmd("--mock", str(script), "chat", "mock", "--plain", stdin="/set model opus\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("session updated") == 1


class Screen:
    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False


@pytest.mark.anyio
async def test_an_update_confirmed_twice_or_repeating_the_opening_configuration_prints_one_line(
    tmp_path: Path,
) -> None:
    script = Script(options=(select_option("model", ["sonnet", "opus"]),))
    async with Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir(tmp_path))
        async with session:
            screen = Screen()
            renderer = Renderer(screen)
            renderer.configuration_shown(session.info().configuration)
            await session.configure("model", "opus")
            async for event in events:
                if isinstance(event.kind, SessionUpdated):
                    break
            assert isinstance(event.kind, SessionUpdated)
            renderer.render(event)  # the change
            renderer.render(event)  # the same change confirmed again
            assert screen.text == "session updated: model=opus\n"
            again = Renderer(screen := Screen())
            again.configuration_shown(event.kind.info.configuration)
            again.render(event)
            assert screen.text == ""


def shell_terminal(command: str, env: dict[str, str]) -> Terminal:
    """``Terminal`` running a shell command line (for redirections) instead of the command alone."""
    term = Terminal.__new__(Terminal)
    term.screen = pyte.Screen(100, 30)
    term.stream = pyte.ByteStream(term.screen)
    term.transcript = b""
    full_env = {**os.environ, "NO_COLOR": "1", "ANYAGENT_NO_LOGIN_SHELL": "1", **env}
    term.child = pexpect.spawn("/bin/sh", ["-c", command], env=full_env, dimensions=(30, 100), timeout=20)
    return term


def _diagnostic(level: str, message: str) -> dict[str, Any]:
    return {"type": "Diagnostic", "diagnostic": {"message": message, "level": level, "code": "agent_warning"}}


def test_advisory_notices_show_only_with_verbose(tmp_path: Path) -> None:
    steps = [{"emit": _diagnostic("info", "model metadata not found")}, {"emit": _diagnostic("warning", "disk low")}]
    script = write_script(tmp_path, [[*steps, {"emit": TEXT_TURN}, {"end": COMPLETED}]])
    quiet = anyagent_cmd("--mock", str(script), "run", "mock", "hi")
    assert quiet.returncode == 0, quiet.stderr
    assert "[warning] disk low" in quiet.stderr
    assert "model metadata not found" not in quiet.stderr
    loud = anyagent_cmd("-v", "--mock", str(script), "run", "mock", "hi")
    assert "[info] model metadata not found" in loud.stderr
    assert quiet.stdout == loud.stdout == "hello from the mock\n"


PROFILES = """
import anyagent

@anyagent.hookimpl
def anyagent_agents():
    return [anyagent.AgentProfile(id=f"ghost{i}", name=f"Ghost {i}", wire="mock", executables=(f"ghost{i}-agent",),
                                  install_hint=f"pipx install ghost{i}") for i in range(1, 4)]
"""


def test_discover_lists_missing_agents_in_one_compact_block(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "ghostplug-1.0.dist-info").mkdir(parents=True)
    (site / "ghostplug.py").write_text(PROFILES)
    (site / "ghostplug-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: ghostplug\nVersion: 1.0\n")
    (site / "ghostplug-1.0.dist-info" / "entry_points.txt").write_text("[anyagent]\nghostplug = ghostplug\n")
    env = {"PYTHONPATH": str(site), "ANYAGENT_LOAD_PLUGINS": "ghostplug", "PATH": str(tmp_path)}
    result = anyagent_cmd("discover", env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = lines.index("not installed (3):")
    assert lines[start + 1 : start + 4] == [f"  ✗ ghost{i}  Ghost {i} — pipx install ghost{i}" for i in range(1, 4)]
    assert lines[start + 4].startswith("  searched ") and f": {tmp_path}, " in lines[start + 4]
    assert len(lines) == start + 5  # before: two lines per missing agent
    verbose = anyagent_cmd("-v", "discover", env=env)
    assert "-v lists them all" not in verbose.stdout


terminals = test_cli_terminal.terminals  # the pseudo-terminal fixture


def wait_gone(term: Terminal, needle: str, timeout: float = 10, last: str | None = None) -> list[str]:
    """Wait until ``needle`` is off the screen (and, with ``last``, the last line reads ``last``: a
    redraw that erased the line but has not drawn the prompt yet is not the end state)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = term.lines()
        if not any(needle in line for line in lines) and (last is None or (lines and lines[-1] == last)):
            return lines
        term._pump(0.1)
    raise AssertionError(f"{needle!r} still on screen after {timeout}s:\n" + "\n".join(term.lines()))


def wait_last(term: Terminal, last: str, timeout: float = 20) -> list[str]:
    """Wait until the screen's last line reads ``last`` (the input line is drawn again)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = term.lines()
        if lines and lines[-1] == last:
            return lines
        term._pump(0.1)
    raise AssertionError(f"last line is not {last!r} after {timeout}s:\n" + "\n".join(term.lines()))


SLOW_FIRST_TOKEN = [{"sleep": 1.5}, {"emit": TEXT_TURN}, {"end": COMPLETED}]


def test_run_shows_working_until_the_first_output_on_a_terminal_only(tmp_path: Path, terminals: Any) -> None:
    script = write_script(tmp_path, [SLOW_FIRST_TOKEN])
    term = terminals("--mock", str(script), "run", "mock", "hi")
    term.wait_for("working…")  # between the prompt and the first token
    lines = term.wait_for("hello from the mock")
    assert not any("working" in line for line in lines)  # cleared, not left above the answer
    assert term.exit_status(within=10) == 0
    assert lines[0] == "hello from the mock"
    piped = anyagent_cmd("--mock", str(script), "run", "mock", "hi")
    assert "working" not in piped.stderr + piped.stdout  # nobody to see it: not drawn


def test_chat_shows_working_above_the_input_line_until_output(tmp_path: Path, terminals: Any) -> None:
    script = write_script(tmp_path, [SLOW_FIRST_TOKEN])
    term = terminals("--mock", str(script), "chat", "mock")
    term.wait_for("›")
    term.child.sendline("go")
    lines = term.wait_for("working…")
    assert lines[-1] == "›" and "working…" in lines[-2]
    wait_gone(term, "working…")
    term.wait_for("— turn done")
    term.child.sendline("/quit")
    assert term.exit_status(within=10) == 0


def test_chat_ctrl_c_clears_a_half_typed_line_first_and_help_is_local_with_tab_completion(
    tmp_path: Path, terminals: Any
) -> None:
    script = write_script(tmp_path, [])
    term = terminals("--mock", str(script), "chat", "mock")
    term.wait_for("›")
    term.child.send("half typed thought")
    term.wait_for("› half typed thought")
    term.child.sendintr()
    lines = wait_gone(term, "half typed thought", last="›")
    assert term.child.isalive()  # the text was cleared, the chat goes on
    term.child.send("/hel\t")
    term.wait_for("› /help")
    term.child.send("\r")
    term.wait_for("/rollback")
    lines = wait_last(term, "›")  # the help is printed and the input line is back (a Ctrl-C before is no test)
    assert "commands:" in lines
    assert any(line.startswith("  /set") and "change a config option" in line for line in lines)
    assert not any("[" in line for line in lines)  # nothing was sent to the agent (no turn, no diagnostic)
    term.child.sendintr()  # an empty line, idle: quits
    assert term.exit_status(within=20) == 130
