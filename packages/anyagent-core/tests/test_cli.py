"""The `anyagent` command, end to end as a subprocess, with scripted mock agents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest

from anyagent import DiscoveryReport, Event, TurnEnded, serialize

TEXT_TURN = {"type": "TextDelta", "message_id": "m1", "text": "hello from the mock"}
COMPLETED = {"type": "Completed", "source": "protocol"}
PERMISSION = {  # a mock script step (test_cli_terminal.py uses it too)
    "type": "RequestOpened",
    "request": {
        "type": "PermissionRequest",
        "id": "r1",
        "tool": {
            "id": "t1",
            "kind": "execute",
            "title": "Run make test",
            "status": "pending",
            "input": {"command": "make test"},
        },
        "options": ["allow_once", "deny_once"],
    },
}


def write_script(tmp_path: Path, turns: list[list[dict[str, Any]]], **flags: Any) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({**flags, "turns": [{"steps": steps} for steps in turns]}))
    return path


def cli(*args: str, stdin: str = "", timeout: float = 30) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "ANYAGENT_NO_LOGIN_SHELL": "1"}
    return subprocess.run(
        [sys.executable, "-m", "anyagent.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_discover_lists_the_mock_and_json_round_trips(tmp_path: Path) -> None:
    script = write_script(tmp_path, [])
    human = cli("--mock", str(script), "discover")
    assert human.returncode == 0, human.stderr
    assert "Mock agent (mock)" in human.stdout
    machine = cli("--mock", str(script), "discover", "--json")
    report = serialize.loads(machine.stdout, DiscoveryReport)
    assert [a.id for a in report.agents] == ["mock"]


def test_probe_prints_details_and_json(tmp_path: Path) -> None:
    script = write_script(tmp_path, [], capabilities=["resume"])
    human = cli("--mock", str(script), "probe", "mock")
    assert human.returncode == 0, human.stderr
    assert "login: api_key" in human.stdout
    assert "resume" in human.stdout
    machine = json.loads(cli("--mock", str(script), "probe", "--json").stdout)
    assert machine["mock"]["version"] == "mock"


def _json_lines(stdout: str) -> tuple[list[Event], list[dict[str, Any]]]:
    events: list[Event] = []
    answers: list[dict[str, Any]] = []
    for line in stdout.splitlines():
        data = json.loads(line)
        if data.get("type") == "Answered":
            answers.append(data)
        else:
            event = serialize.loads(line)
            assert isinstance(event, Event)
            assert serialize.dumps(event) == line
            events.append(event)
    return events, answers


def test_run_json_prints_one_parseable_event_per_line_and_denies_without_auto_approve(tmp_path: Path) -> None:
    script = write_script(
        tmp_path, [[{"emit": TEXT_TURN}, {"emit": PERMISSION}, {"await_answer": True}, {"end": COMPLETED}]]
    )
    result = cli("--mock", str(script), "run", "mock", "hi", "--json")
    assert result.returncode == 0, result.stderr
    events, answers = _json_lines(result.stdout)
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert isinstance(events[-1].kind, TurnEnded)
    # no terminal to ask and no --auto-approve: denied, and the decision is on the stream
    assert answers == [
        {
            "type": "Answered",
            "request_id": "r1",
            "answer": "deny_once",
            "by": "no input to ask (pass --auto-approve to allow)",
        }
    ]
    assert "[1] allow once  [2] deny > " in result.stderr  # the question went to stderr, not the JSON


def test_run_json_allows_only_with_auto_approve_by_name(tmp_path: Path) -> None:
    script = write_script(tmp_path, [[{"emit": PERMISSION}, {"await_answer": True}, {"end": COMPLETED}]])
    result = cli("--mock", str(script), "run", "mock", "hi", "--json", "--auto-approve")
    assert result.returncode == 0, result.stderr
    _, answers = _json_lines(result.stdout)
    assert [(a["answer"], a["by"]) for a in answers] == [("allow_once", "--auto-approve")]
    answered = cli("--mock", str(script), "run", "mock", "hi", "--json", stdin="1\n")
    _, answers = _json_lines(answered.stdout)
    assert [(a["answer"], a["by"]) for a in answers] == [("allow_once", "asked")]


def test_run_asks_for_permission_and_streams_a_turn(tmp_path: Path) -> None:
    script = write_script(
        tmp_path, [[{"emit": TEXT_TURN}, {"emit": PERMISSION}, {"await_answer": True}, {"end": COMPLETED}]]
    )
    result = cli("--mock", str(script), "run", "mock", "hi", stdin="2\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello from the mock\n"  # the answer alone: the command's own lines go to stderr
    assert "? permission: Run make test" in result.stderr
    assert "[1] allow once  [2] deny" in result.stderr
    assert "— turn done" in result.stderr


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["run", "claude", "hi"], 3, "no agent 'claude' is known to the installed plugins (known agents: mock)"),
        (["run", "mock", "hi", "--set", "model=opus"], 2, "no config option 'model'"),
        (["run", "mock", "hi", "--set", "novalue"], 2, "--set takes id=value"),
    ],
)
def test_errors_have_exit_codes_and_messages(tmp_path: Path, args: list[str], status: int, message: str) -> None:
    script = write_script(tmp_path, [[{"end": COMPLETED}]])
    result = cli("--mock", str(script), *args)
    assert result.returncode == status, result.stdout + result.stderr
    assert message in result.stderr  # `run`'s stdout is the answer alone


def test_an_agent_that_is_known_but_missing_says_how_to_install_it(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "missingplug.py").write_text(
        "import anyagent\n"
        "@anyagent.hookimpl\n"
        "def anyagent_agents():\n"
        "    return [anyagent.AgentProfile(id='ghost', name='Ghost', wire='mock', executables=('ghost-agent',),\n"
        "                                  install_hint='pipx install ghost-agent')]\n"
    )
    info = site / "missingplug-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: missingplug\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[anyagent]\nmissingplug = missingplug\n")
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "ANYAGENT_NO_LOGIN_SHELL": "1",
        "PYTHONPATH": str(site),
        "ANYAGENT_LOAD_PLUGINS": "missingplug",
        "PATH": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "-m", "anyagent.cli", "run", "ghost", "hi"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert result.returncode == 3, result.stdout + result.stderr
    assert "Ghost is not installed: pipx install ghost-agent" in result.stderr
    listing = subprocess.run(
        [sys.executable, "-m", "anyagent.cli", "discover"], capture_output=True, text=True, env=env, timeout=30
    )
    assert "not installed (1):" in listing.stdout
    assert "  ✗ ghost  Ghost — pipx install ghost-agent" in listing.stdout.splitlines()
    assert f"directories: {tmp_path}, " in listing.stdout  # PATH first, then the known install dirs


def test_a_failed_turn_exits_1_and_a_bad_script_exits_2(tmp_path: Path) -> None:
    script = write_script(tmp_path, [[{"end": {"type": "Failed", "message": "model overloaded"}}]])
    result = cli("--mock", str(script), "run", "mock", "hi")
    assert result.returncode == 1
    assert "failed: model overloaded" in result.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"turns": [{"steps": [{"teleport": 1}]}]}')
    result = cli("--mock", str(bad), "run", "mock", "hi")
    assert result.returncode == 2
    assert "unknown mock step" in result.stderr


def test_a_logged_out_agent_exits_4_with_its_login_methods(tmp_path: Path) -> None:
    script = write_script(tmp_path, [], logged_out=True)
    result = cli("--mock", str(script), "run", "mock", "hi")
    assert result.returncode == 4, result.stdout + result.stderr
    assert "run: mock-agent login" in result.stderr
    assert "or set MOCK_API_KEY" in result.stderr
    probe = cli("--mock", str(script), "probe", "mock")
    assert probe.returncode == 0
    assert "logged out" in probe.stdout


def test_an_agent_dying_mid_turn_exits_with_the_reason(tmp_path: Path) -> None:
    script = write_script(tmp_path, [[{"emit": TEXT_TURN}, {"die": "exit status: 1"}]])
    result = cli("--mock", str(script), "run", "mock", "hi")
    assert result.returncode == 5, result.stdout + result.stderr
    assert "failed: the agent exited during the turn" in result.stderr
    assert "ProcessExited" in result.stderr


def test_demo_runs_the_whole_stack(tmp_path: Path) -> None:
    # the same lines whether the real-wire demo (anyagent-claude installed) or the mock fallback runs
    result = cli("demo", "--yes")
    assert result.returncode == 0, result.stderr
    for expected in ("thinking:", "? permission: Edit ", "+    return a + b", "context: 18,432", "— turn done"):
        assert expected in result.stdout
    assert "calc.py" in result.stdout


def test_demo_by_name_and_an_unknown_name_is_a_usage_error() -> None:
    result = cli("demo", "mock", "--yes")
    assert result.returncode == 0, result.stderr
    assert "(in-process mock)" in result.stdout and "— turn done" in result.stdout
    result = cli("demo", "no-such-demo")
    assert result.returncode == 2
    assert "no demo 'no-such-demo'" in result.stdout


def test_plugins_lists_the_builtin(tmp_path: Path) -> None:
    result = cli("plugins", "--json")
    assert result.returncode == 0, result.stderr
    names = [p["name"] for p in json.loads(result.stdout)]
    assert "anyagent.builtin" in names


def test_chat_answers_a_permission_and_ctrl_c_cancels(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        [
            [{"emit": TEXT_TURN}, {"emit": PERMISSION}, {"await_answer": True}, {"end": COMPLETED}],
            [
                {"emit": {"type": "TextDelta", "message_id": "m2", "text": "working on it"}},
                {"sleep": 30},
                {"end": COMPLETED},
            ],
        ],
    )
    env = {**os.environ, "NO_COLOR": "1", "ANYAGENT_NO_LOGIN_SHELL": "1"}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "anyagent.cli", "--mock", str(script), "chat", "mock", "--plain"],
        env=env,
        encoding="utf-8",
        timeout=15,
    )
    try:
        child.expect("mid-turn messages queue")
        child.sendline("run the tests")
        child.expect(r"\[1\] allow once  \[2\] deny > ")
        child.sendline("1")
        child.expect("— turn done")
        child.sendline("keep going")
        child.expect("working on it")
        child.sendintr()
        child.expect("cancelling the turn")
        child.expect("— turn cancelled")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


def test_a_broken_plugin_is_reported_once_without_a_python_warning(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = site / "brokenplug-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "brokenplug.py").write_text("raise RuntimeError('kaput')\n")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenplug\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[anyagent]\nbrokenplug = brokenplug\n")
    env = {**os.environ, "NO_COLOR": "1", "ANYAGENT_NO_LOGIN_SHELL": "1", "PYTHONPATH": str(site)}
    for command in (["discover"], ["plugins"], ["agents"]):
        result = subprocess.run(
            [sys.executable, "-m", "anyagent.cli", *command], capture_output=True, text=True, env=env, timeout=30
        )
        assert result.returncode == 0, result.stderr
        both = result.stdout + result.stderr
        assert both.count("plugin 'brokenplug' failed to import: RuntimeError: kaput") == 1, both
        assert "PluginWarning" not in both and ".py:" not in both


def test_the_demo_permission_block_names_the_file_once() -> None:
    result = cli("demo", "--yes")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("? permission: Edit "))
    end = next(i for i, line in enumerate(lines) if "answered: allow once" in line)
    block = lines[start:end]
    assert sum("calc.py" in line for line in block) == 1, "\n".join(block)
    assert "    +    return a + b" in block


def test_chat_with_piped_input_finishes_the_turns_it_was_given(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        [
            [{"emit": TEXT_TURN}, {"sleep": 0.5}, {"end": COMPLETED}],
            [{"emit": {"type": "TextDelta", "message_id": "m2", "text": "second reply"}}, {"end": COMPLETED}],
        ],
    )
    result = cli("--mock", str(script), "chat", "mock", stdin="first\nsecond\n")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "hello from the mock" in result.stdout and "second reply" in result.stdout
    assert result.stdout.count("— turn done") == 2


HELLO_PLUGIN = """
import anyagent

async def hello(context):
    agents = sorted(context.runtime.registry().profiles)
    mock = context.args.mock is not None
    context.out.line(f"hello {context.args.name}; agents: {','.join(agents) or '-'}; mock={mock}")
    return int(context.args.status)

def arguments(parser):
    parser.add_argument("--name", default="world")
    parser.add_argument("--status", default="0")

async def clash(context):
    raise AssertionError("a plugin command named like a built-in must never run")

@anyagent.hookimpl
def anyagent_commands(register):
    register.command(anyagent.CliCommand(name="hello", help="say hello", run=hello, arguments=arguments))
    register.command(anyagent.CliCommand(name="run", help="clashes with the built-in", run=clash))
"""


def test_a_plugin_adds_a_subcommand_through_the_commands_hook(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = site / "helloplug-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "helloplug.py").write_text(HELLO_PLUGIN)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: helloplug\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[anyagent]\nhelloplug = helloplug\n")
    env = {**os.environ, "NO_COLOR": "1", "ANYAGENT_NO_LOGIN_SHELL": "1", "PYTHONPATH": str(site)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "anyagent.cli", *args], capture_output=True, text=True, env=env, timeout=30
        )

    listed = run("--help")
    assert "hello" in listed.stdout and "say hello" in listed.stdout
    said = run("hello", "--name", "there", "--status", "3")
    assert said.returncode == 3, said.stderr
    assert "hello there; agents: " in said.stdout and "mock=False" in said.stdout
    script = write_script(tmp_path, [])
    mocked = run("--mock", str(script), "hello")  # the global flags reach the command: its runtime is the mock's
    assert mocked.returncode == 0, mocked.stderr
    assert "hello world; agents: mock; mock=True" in mocked.stdout
    # the built-in keeps its name: `run` still wants AGENT PROMPT, and the clash is said once
    builtin = run("run")
    assert builtin.returncode == 2 and "AGENT" in builtin.stderr
    assert builtin.stderr.count("'run' is a built-in command's name") == 1
    plugins = run("plugins", "--json")
    entry = next(p for p in json.loads(plugins.stdout) if p["name"] == "helloplug")
    assert entry["commands"] == ["hello", "run"]
