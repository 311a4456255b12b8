"""The recorded tier, part 1: text, thought, tools, stop reasons against the scripted SDK agent."""

from __future__ import annotations

from pathlib import Path

import pytest
from acpsupport import opened

from anyagent import (
    Capability,
    Completed,
    CompletionSource,
    Failed,
    McpServer,
    McpTool,
    MessageEnded,
    ReasoningDelta,
    Refused,
    SessionOptions,
    TextDelta,
    ToolKind,
    ToolStatus,
    ToolUpdated,
    TurnEnded,
)
from anyagent_testkit.events import kinds, text_of

pytestmark = pytest.mark.anyio


async def test_text_turn_ends_completed_by_the_protocol(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        info = session.info()
        assert info.details.version == "9.9.9"
        assert info.resume_token and info.resume_token.startswith("s-")
        caps = info.details.capabilities
        assert caps.supports(Capability.IMAGES) and caps.supports(Capability.RESUME)
        assert caps.supports(Capability.PERMISSIONS) and caps.supports(Capability.PLAN)
        assert not caps.supports(Capability.COMPACT) and not caps.supports(Capability.FORK)
        assert caps.mcp_transports == frozenset({"stdio", "http"})
        await session.prompt("hi there")
        seen = await reader.turn()
    assert text_of(seen) == "Hello world"
    deltas = kinds(seen, TextDelta)
    assert len({d.message_id for d in deltas}) == 1
    end = kinds(seen, TurnEnded)[-1]
    assert end.stop == Completed(CompletionSource.PROTOCOL)


async def test_thought_then_text_are_two_messages(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("THINK")
        seen = await reader.turn()
    thought = kinds(seen, ReasoningDelta)
    answer = kinds(seen, TextDelta)
    assert [t.text for t in thought] == ["pondering"]
    assert text_of(seen) == "thought done"
    assert thought[0].message_id != answer[0].message_id
    ended = [k.message_id for k in kinds(seen, MessageEnded)]
    assert thought[0].message_id in ended


async def test_tool_call_and_updates_merge_into_whole_snapshots(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("TOOL")
        seen = await reader.turn()
    tools = [k.tool for k in kinds(seen, ToolUpdated)]
    assert [t.status for t in tools] == [ToolStatus.PENDING, ToolStatus.RUNNING, ToolStatus.COMPLETED]
    last = tools[-1]
    assert last.id == "t1" and last.kind is ToolKind.EXECUTE and last.title == "Run ls"
    assert last.input.command == "ls -la"  # kept from the update before
    assert last.output == "a.txt\nb.txt"
    assert text_of(seen) == "listed"


async def test_a_duplicated_tool_call_is_an_upsert(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("DUPTOOL")
        seen = await reader.turn()
    tools = [k.tool for k in kinds(seen, ToolUpdated)]
    assert {t.id for t in tools} == {"d1"}
    assert tools[-1].status is ToolStatus.COMPLETED
    assert tools[-1].title == "Read a.txt" and tools[-1].input.path == "/x/a.txt"


async def test_calls_to_the_sessions_own_mcp_servers_are_mcp_tools(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).mcp_server(McpServer.stdio("files", "mcp-files"))
    async with opened(tmp_path, options) as (session, reader):
        await session.prompt("MCPTOOL")
        seen = await reader.turn()
    final = {k.tool.id: k.tool for k in kinds(seen, ToolUpdated)}
    assert final["m1"].kind == McpTool("files", "echo")  # claude-agent-acp: _meta.claudeCode.toolName
    assert final["m2"].kind == McpTool("files", "lookup")  # codex: rawInput {server, tool}
    assert final["m3"].kind is ToolKind.EDIT  # the bridge's internal mcp__acp__Write is a built-in tool
    assert final["m1"].status is ToolStatus.COMPLETED and final["m1"].input.arguments == {"text": "hi"}


async def test_without_mcp_servers_no_tool_is_an_mcp_tool(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("MCPTOOL")
        seen = await reader.turn()
    assert not [k for k in kinds(seen, ToolUpdated) if isinstance(k.tool.kind, McpTool)]


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("REFUSE", Refused()),
        ("MAXTOK", Failed("the agent stopped: it reached its token limit (max_tokens)")),
    ],
)
async def test_stop_reasons(tmp_path: Path, word: str, expected: object) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt(word)
        seen = await reader.turn()
    assert kinds(seen, TurnEnded)[-1].stop == expected


async def test_an_error_response_fails_the_turn_and_the_session_goes_on(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("FAIL")
        seen = await reader.turn()
        stop = kinds(seen, TurnEnded)[-1].stop
        assert isinstance(stop, Failed) and "Internal error" in stop.message
        await session.prompt("again")
        assert text_of(await reader.turn()) == "Hello world"
