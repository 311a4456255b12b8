"""pi's own history: session files the real pi 1.6.0 wrote, listed (offline) and made, listed and
resumed live. ``tests/history/`` holds one file ``pi -p`` wrote in ``/tmp/hx/pi/workspace/my_proj.v2``."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import anyio
import pytest
from pi_harness import runtime_with_env

from anyagent import AgentInstallation, DiagnosticInfo, SessionOptions
from anyagent_pi.history import session_dir_name, sessions_dirs
from anyagent_testkit.events import EventReader, text_of
from anyagent_testkit.live import LiveAgent

pytestmark = pytest.mark.anyio

FIXTURE = next((Path(__file__).parent / "history").glob("*.jsonl"))
WORKSPACE = "/tmp/hx/pi/workspace/my_proj.v2"
PI = AgentInstallation.at("pi", "/nonexistent/pi")


def place(agent_dir: Path) -> Path:
    folder = agent_dir / "sessions" / session_dir_name(WORKSPACE)
    folder.mkdir(parents=True)
    return Path(shutil.copy(FIXTURE, folder))


def test_the_session_folder_is_named_as_pi_names_it() -> None:
    assert session_dir_name(WORKSPACE) == "--tmp-hx-pi-workspace-my_proj.v2--"  # what pi 1.6.0 created
    assert session_dir_name("C:\\work\\app") == "--C--work-app--"


def test_a_settings_session_dir_wins(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text(json.dumps({"sessionDir": str(tmp_path / "elsewhere")}))
    assert sessions_dirs({"PI_CODING_AGENT_DIR": str(tmp_path)}) == tmp_path / "elsewhere"
    assert sessions_dirs({"HOME": "/home/dev"}) == Path("/home/dev/.pi/agent/sessions")


async def test_a_real_session_file_is_listed_with_pi_titles(tmp_path: Path) -> None:
    placed = place(tmp_path)
    async with runtime_with_env({"PI_CODING_AGENT_DIR": str(tmp_path)}) as runtime:
        (listed,) = await runtime.history(PI, WORKSPACE)
        assert await runtime.history(PI) == [listed]
        assert await runtime.history(PI, tmp_path) == []
        assert listed.resume_token == str(placed)
        assert listed.title == "fix the flaky test please"
        assert listed.cwd == WORKSPACE
        assert listed.created_at == datetime(2026, 12, 3, 1, 41, 40, 211000, tzinfo=timezone.utc)
        assert listed.updated_at is not None and listed.updated_at > listed.created_at
        assert listed.message_count == 3  # system prompt, prompt, reply: pi counts message entries
        with placed.open("a", encoding="utf-8") as file:  # what pi's /name appends
            file.write(json.dumps({"type": "session_info", "id": "x1", "name": "Flaky test"}) + "\n")
        (named,) = await runtime.history(PI, WORKSPACE)
        assert named.title == "Flaky test"


async def test_a_file_without_a_session_header_is_skipped_with_a_diagnostic(tmp_path: Path) -> None:
    placed = place(tmp_path)
    (placed.parent / "foreign.jsonl").write_text('{"type": "message"}\n', encoding="utf-8")
    (placed.parent / "broken.jsonl").write_bytes(b"\xff\xfe not json\n")
    seen: list[DiagnosticInfo] = []
    async with runtime_with_env({"PI_CODING_AGENT_DIR": str(tmp_path)}) as runtime:
        listed = await runtime.history(PI, WORKSPACE, on_diagnostic=seen.append)
    assert [e.resume_token for e in listed] == [str(placed)]
    assert sorted(Path(d.message.split()[1].rstrip(":")).name for d in seen) == ["broken.jsonl", "foreign.jsonl"]


@pytest.mark.live
async def test_live_sessions_are_listed_and_resumed(live_agent: Callable[..., LiveAgent], fake_model: object) -> None:
    agent = live_agent("pi-node22")
    workspace = agent.workspace / "my_proj.v2"
    workspace.mkdir()
    for prompt in ("first: explain\nthe repo", "second conversation"):
        with anyio.fail_after(120):
            await anyio.run_process(
                [str(agent.executable), "--provider", "fake", "--model", "claude-fake-1", "-p", prompt],
                cwd=workspace,
                env=dict(agent.env),
            )
    installation = AgentInstallation.at("pi", agent.executable)
    async with runtime_with_env(agent.env) as runtime:
        listed = await runtime.history(installation, workspace)
        assert [e.title for e in listed] == ["second conversation", "first: explain the repo"]
        assert all(e.cwd == str(workspace) and e.message_count == 3 for e in listed)
        options = SessionOptions.in_dir(workspace).resume(listed[-1].resume_token)
        session, events = await runtime.open(installation, options)
        async with session:
            await session.prompt("and again")
            said = text_of(await EventReader(events, timeout=120).turn())
        assert said
        again = await runtime.history(installation, workspace)
        assert [e.title for e in again] == ["first: explain the repo", "second conversation"]
        assert again[0].message_count is not None and again[0].message_count > 3
