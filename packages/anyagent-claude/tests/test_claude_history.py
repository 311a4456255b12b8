"""Claude Code's own history: project transcripts the real claude 2.1.332 wrote, listed and resumed.

``tests/history/`` holds transcripts the real CLI wrote against the fake model (gzipped; made by
``claude -p`` in ``/tmp/anyagent-live-history/workspace/my_proj.v2``: one single-turn session,
one resumed for a second turn). The offline tests unpack them into a config home; the live test
makes new sessions with the real claude through the adapter and lists them.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest
from claude_harness import IsolatedPlugin, runtime_with_env

from anyagent import (
    AgentInstallation,
    DiagnosticInfo,
    HistoryEntry,
    Runtime,
    SessionOptions,
    TurnEnded,
    serialize,
    toolkit,
)
from anyagent_claude.history import config_home, entry_from, project_dir_name
from anyagent_testkit.events import EventReader, text_of
from anyagent_testkit.live import LiveAgent

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent / "history"
WORKSPACE = "/tmp/anyagent-live-history/workspace/my_proj.v2"
PROJECT = "-tmp-anyagent-live-history-workspace-my-proj-v2"
SINGLE = "e4089713-c321-49d0-89d9-36d2b737de83"
RESUMED = "9e6ee483-f43d-4e64-ad7b-861cb39730eb"


def unpack(home: Path) -> Path:
    """The fixtures as ``home/projects/...``, each file's mtime its last entry's time."""
    for packed in FIXTURES.rglob("*.jsonl.gz"):
        target = home / "projects" / packed.relative_to(FIXTURES).with_suffix("")
        target.parent.mkdir(parents=True, exist_ok=True)
        data = gzip.decompress(packed.read_bytes())
        target.write_bytes(data)
        stamps = [json.loads(line).get("timestamp") for line in data.splitlines()]
        last = max(toolkit.history_time(s) for s in stamps if s)
        assert last is not None
        os.utime(target, (last.timestamp(), last.timestamp()))
    return home / "projects" / PROJECT


def runtime_for(home: Path) -> Runtime:
    return Runtime(plugins=[IsolatedPlugin({"CLAUDE_CONFIG_DIR": str(home), "HOME": "/nonexistent"})])


CLAUDE = AgentInstallation.at("claude", "/nonexistent/claude")


def test_the_project_folder_is_named_as_claude_names_it() -> None:
    # the folder names below are what claude 2.1.332 created (see the module docstring and the live test)
    assert project_dir_name(WORKSPACE) == PROJECT
    assert (
        project_dir_name("/tmp/hx/claude/workspace/my_proj.v2/sub dir") == "-tmp-hx-claude-workspace-my-proj-v2-sub-dir"
    )
    assert project_dir_name("/tmp/hx/long/workspace/caf\u00e9 \U0001f600") == "-tmp-hx-long-workspace-caf----"
    long = "/tmp/hx/long/workspace/" + "d" * 120 + "/" + "\u00e9-\u00fc_x\U0001f600" * 20
    assert project_dir_name(long) == (
        "-tmp-hx-long-workspace-" + "d" * 120 + "-----x------x------x------x------x------x------x------x---2k8zzu"
    )


def test_the_config_home_is_claude_config_dir_else_home_dot_claude() -> None:
    assert config_home({"CLAUDE_CONFIG_DIR": "/x/y"}) == Path("/x/y")
    assert config_home({"HOME": "/home/dev"}) == Path("/home/dev/.claude")


async def test_real_transcripts_list_newest_first_with_claude_titles(tmp_path: Path) -> None:
    unpack(tmp_path)
    async with runtime_for(tmp_path) as runtime:
        listed = await runtime.history(CLAUDE, WORKSPACE)
        everywhere = await runtime.history(CLAUDE)
        elsewhere = await runtime.history(CLAUDE, tmp_path)
    assert listed == everywhere
    assert elsewhere == []
    assert [e.resume_token for e in listed] == [RESUMED, SINGLE]
    resumed, single = listed
    # claude's list shows the last prompt of a session it has one for, else the first
    assert resumed.title == "and now the release steps"
    assert single.title == "fix the flaky test in tests/test_io.py"
    assert {e.cwd for e in listed} == {WORKSPACE}
    assert single.created_at == datetime(2026, 12, 3, 0, 46, 47, 21000, tzinfo=timezone.utc)
    assert resumed.updated_at is not None and resumed.updated_at > single.updated_at  # type: ignore[operator]
    assert all(e.agent_id == "claude" and e.message_count is None for e in listed)  # > 128 KiB: not read whole
    assert serialize.loads(serialize.dumps(resumed), HistoryEntry) == resumed


async def test_a_rename_wins_and_a_whole_small_file_is_counted(tmp_path: Path) -> None:
    folder = unpack(tmp_path)
    path = folder / f"{SINGLE}.jsonl"
    with path.open("a", encoding="utf-8") as file:  # what claude appends on /rename
        file.write(json.dumps({"type": "custom-title", "customTitle": "Flaky IO test", "sessionId": SINGLE}) + "\n")
    sample = toolkit.read_json_lines_sample(path)
    made = entry_from(sample)
    assert isinstance(made, HistoryEntry) and made.title == "Flaky IO test"
    # the same transcript without its bulky system-prompt entries fits the head: counted
    small = tmp_path / f"{RESUMED}.jsonl"
    kept = [
        line
        for line in (folder / f"{RESUMED}.jsonl").read_text(encoding="utf-8").splitlines()
        if json.loads(line)["type"] in ("queue-operation", "user", "assistant", "last-prompt")
    ]
    small.write_text("\n".join(kept) + "\n", encoding="utf-8")
    made = entry_from(toolkit.read_json_lines_sample(small))
    assert isinstance(made, HistoryEntry) and made.message_count == 4 and made.title == "and now the release steps"


async def test_foreign_corrupt_and_empty_files_are_skipped_with_a_diagnostic(tmp_path: Path) -> None:
    folder = unpack(tmp_path)
    (folder / "notes.jsonl").write_text('{"type": "user"}\n', encoding="utf-8")
    (folder / "0b0b0b0b-0000-4000-8000-000000000001.jsonl").write_bytes(b"\x00\xff garbage\n{not json\n")
    (folder / "0b0b0b0b-0000-4000-8000-000000000002.jsonl").write_text('{"hello": "world"}\n', encoding="utf-8")
    (folder / "0b0b0b0b-0000-4000-8000-000000000003.jsonl").write_bytes(b"")
    sidechain = {"type": "user", "isSidechain": True, "sessionId": "s", "message": {"content": "sub"}}
    (folder / "0b0b0b0b-0000-4000-8000-000000000004.jsonl").write_text(json.dumps(sidechain) + "\n", encoding="utf-8")
    unreadable = folder / "0b0b0b0b-0000-4000-8000-000000000005.jsonl"
    unreadable.mkdir()  # a folder named like a transcript
    (folder / "memory").mkdir(exist_ok=True)
    seen: list[DiagnosticInfo] = []
    async with runtime_for(tmp_path) as runtime:
        listed = await runtime.history(CLAUDE, WORKSPACE, on_diagnostic=seen.append)
    assert [e.resume_token for e in listed] == [RESUMED, SINGLE]
    assert sorted(Path(d.message.split()[1].rstrip(":")).name for d in seen) == [
        "0b0b0b0b-0000-4000-8000-000000000001.jsonl",
        "0b0b0b0b-0000-4000-8000-000000000002.jsonl",
        "0b0b0b0b-0000-4000-8000-000000000003.jsonl",
        "notes.jsonl",
    ]
    assert {d.code for d in seen} == {"history_unreadable"}


async def test_no_projects_folder_is_an_empty_history(tmp_path: Path) -> None:
    async with runtime_for(tmp_path / "absent") as runtime:
        assert await runtime.history(CLAUDE) == []


@pytest.mark.live
async def test_live_sessions_are_listed_and_resumed(
    live_agent: Callable[..., LiveAgent], fake_model: object, tmp_path: Path
) -> None:
    agent = live_agent("claude")
    workspace = agent.workspace / "my_proj.v2" / "sub dir"
    workspace.mkdir(parents=True)
    installation = AgentInstallation.at("claude", agent.executable)
    tokens = []
    async with runtime_with_env(agent.env) as runtime:
        for prompt in ("first: explain\nthe repo", "second conversation"):
            session, events = await runtime.open(installation, SessionOptions.in_dir(workspace))
            async with session:
                await session.prompt(prompt)
                async for event in events:
                    if isinstance(event.kind, TurnEnded):
                        break
                tokens.append(session.info().resume_token)
        config = Path(agent.env["CLAUDE_CONFIG_DIR"])
        assert [p.name for p in (config / "projects").iterdir()] == [project_dir_name(str(workspace))]
        listed = await runtime.history(installation, workspace)
        assert [e.resume_token for e in listed] == tokens[::-1]
        assert [e.title for e in listed] == ["second conversation", "first: explain the repo"]
        assert all(e.cwd == str(workspace) for e in listed)
        session, events = await runtime.open(
            installation, SessionOptions.in_dir(workspace).resume(listed[-1].resume_token)
        )
        async with session:
            await session.prompt("and again")
            said = text_of(await EventReader(events, timeout=120).turn())
        assert said
        again = await runtime.history(installation, workspace)
        assert [e.resume_token for e in again] == tokens  # the resumed one is the newest now
        assert again[0].title == "and again"
