"""ACP protocol version negotiation (issue 28 item 11): offer v1; an agent that refuses it with
-32022 listing v2 is initialized again with v2 and spoken to in v2; an agent speaking neither
fails ``ProtocolFailed`` naming the versions. Scripted v1-only, v2-only, both and neither agents
(``agents/versions_agent.py``) run as real subprocesses."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from acpsupport import AGENTS, WAIT, runtime

import anyagent_acp.plugin
from anyagent import (
    AgentInstallation,
    AgentProfile,
    Answer,
    Cancelled,
    Capability,
    Completed,
    CompletionSource,
    McpServer,
    PermissionChoice,
    PlanUpdated,
    ProtocolFailed,
    RequestOpened,
    Runtime,
    SessionOptions,
    TextDelta,
    ToolOutputDelta,
    ToolStatus,
    ToolUpdated,
    TurnEnded,
    UserMessage,
    hookimpl,
)
from anyagent_testkit.events import EventReader, kinds, text_of

pytestmark = pytest.mark.anyio


def _agent(versions: str) -> AgentInstallation:
    return AgentInstallation.acp("versions", sys.executable, [str(AGENTS / "versions_agent.py"), versions])


def _log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, SessionOptions]:
    log = tmp_path / "sent.log"
    monkeypatch.setenv("VERSIONS_LOG", str(log))
    return log, SessionOptions.in_dir(tmp_path)


async def test_a_v1_only_agent_is_spoken_to_in_v1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log, options = _log(tmp_path, monkeypatch)
    async with runtime() as rt:
        session, events = await rt.open(_agent("1"), options)
        async with session:
            reader = EventReader(events, timeout=WAIT)
            assert session.info().details.version == "1.0.0"
            await session.prompt("hi")
            seen = await reader.turn()
    assert text_of(seen) == "Hello v1"
    assert kinds(seen, TurnEnded)[-1].stop == Completed(CompletionSource.PROTOCOL)
    assert log.read_text().splitlines()[0] == "initialize 1"
    assert "initialize 2" not in log.read_text()


async def test_an_agent_speaking_both_gets_v1_with_one_initialize(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, options = _log(tmp_path, monkeypatch)
    async with runtime() as rt:
        session, events = await rt.open(_agent("1,2"), options)
        async with session:
            await session.prompt("hi")
            seen = await EventReader(events, timeout=WAIT).turn()
    assert text_of(seen) == "Hello v1"
    assert [line for line in log.read_text().splitlines() if line.startswith("initialize")] == ["initialize 1"]


async def test_a_v2_only_agent_is_initialized_again_in_v2_and_its_turn_ends_by_state_update(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, options = _log(tmp_path, monkeypatch)
    options = options.mcp_server(McpServer.stdio("tools", "mcp-tools"))
    async with runtime() as rt:
        session, events = await rt.open(_agent("2"), options)
        async with session:
            reader = EventReader(events, timeout=WAIT)
            info = session.info()
            assert info.details.version == "2.0.0"  # read from v2's `info`
            caps = info.details.capabilities
            assert caps.supports(Capability.IMAGES) and caps.supports(Capability.RESUME)  # v2 markers, baseline
            assert caps.mcp_transports == frozenset({"stdio", "http"})
            await session.prompt("hi")
            seen = await reader.turn()
            await session.prompt("again")  # the session goes on after a v2 turn
            again = await reader.turn()
    assert log.read_text().splitlines()[:2] == ["initialize 1", "initialize 2"]
    assert text_of(seen) == "Hello v2"
    assert len({d.message_id for d in kinds(seen, TextDelta)}) == 1
    assert kinds(seen, UserMessage)  # v2's whole user_message upsert
    tools = [e.tool for e in kinds(seen, ToolUpdated)]
    assert tools[-1].id == "t1" and tools[-1].status == ToolStatus.COMPLETED and tools[-1].title == "Read a"
    assert any("line one" in (t.output or "") for t in tools)  # tool_call_content_chunk appended
    assert [e.entries[0].content for e in kinds(seen, PlanUpdated)] == ["step"]  # plan_update
    assert kinds(seen, TurnEnded)[-1].stop == Completed(CompletionSource.PROTOCOL)
    assert text_of(again) == "Hello v2"


async def test_v2_cancel_is_confirmed_by_an_idle_state_update(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with runtime() as rt:
        session, events = await rt.open(_agent("2"), SessionOptions.in_dir(tmp_path))
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.prompt("wait")
            await reader.until(TextDelta)
            await session.cancel()
            seen = await reader.turn()
            assert kinds(seen, TurnEnded)[-1].stop == Cancelled()
            await session.prompt("after")
            assert text_of(await reader.turn()) == "Hello v2"


async def test_v2_permission_with_a_command_subject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log, options = _log(tmp_path, monkeypatch)
    async with runtime() as rt:
        session, events = await rt.open(_agent("2"), options)
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.prompt("perm")
            request = (await reader.kind(RequestOpened)).request
            assert request.tool.id == "t9" and request.tool.title == "Run ls?"
            await session.answer(request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
            seen = await reader.turn()
    assert text_of(seen) == "permission yes"
    assert 'reply {"outcome": {"outcome": "selected", "optionId": "yes"}}' in log.read_text()


@pytest.mark.parametrize(("speaks", "named"), [("3", "3"), ("3,4", "3, 4")])
async def test_an_agent_speaking_neither_fails_typed_naming_the_versions(
    tmp_path: Path, speaks: str, named: str
) -> None:
    async with runtime() as rt:
        with pytest.raises(ProtocolFailed) as caught:
            await rt.open(_agent(speaks), SessionOptions.in_dir(tmp_path))
    message = str(caught.value)
    assert f"versions {named}" in message and "1 and 2" in message


async def test_v2_display_terminal_output_streams_into_its_tool(tmp_path: Path) -> None:
    async with runtime() as rt:
        session, events = await rt.open(_agent("2"), SessionOptions.in_dir(tmp_path))
        async with session:
            await session.prompt("term")
            seen = await EventReader(events, timeout=WAIT).turn()
    deltas = kinds(seen, ToolOutputDelta)
    assert {d.tool_id for d in deltas} == {"t2"}
    assert "".join(d.text for d in deltas) == "h\u00e9llo\nworld\n"  # UTF-8 decoded across the chunk split
    final = [e.tool for e in kinds(seen, ToolUpdated) if e.tool.id == "t2"][-1]
    assert final.status == ToolStatus.COMPLETED and final.output == "h\u00e9llo\nworld\n"


async def test_v2_resume_is_session_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """v2 removed ``session/load``: ``capabilities.session`` makes ``session/resume`` the reattach."""
    log, options = _log(tmp_path, monkeypatch)
    async with runtime() as rt:
        session, events = await rt.open(_agent("2"), options.resume("ver-1"))
        async with session:
            assert session.info().resume_token == "ver-1"
            await session.prompt("hi")
            assert text_of(await EventReader(events, timeout=WAIT).turn()) == "Hello v2"
    sent = log.read_text().splitlines()
    assert "session/resume" in sent and "session/load" not in sent and "session/new" not in sent


class _LoginOnOpen:
    @hookimpl
    def anyagent_agents(self) -> list[AgentProfile]:
        return [
            AgentProfile(
                id="versions-login",
                name="Versions",
                wire="acp",
                executables=(),
                quirks={"authenticate_on_open": "agent-login"},
            )
        ]


@pytest.mark.parametrize(("speaks", "method"), [("1", "authenticate"), ("2", "auth/login")])
async def test_the_login_on_open_is_auth_login_in_v2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, speaks: str, method: str
) -> None:
    log, options = _log(tmp_path, monkeypatch)
    agent = AgentInstallation(
        id="versions-login",
        name="v",
        executable_path=sys.executable,
        wire="acp",
        args=[str(AGENTS / "versions_agent.py"), speaks],
    )
    async with Runtime(plugins=[anyagent_acp.plugin, _LoginOnOpen()]) as rt:
        session, _events = await rt.open(agent, options)
        await session.close()
    sent = log.read_text().splitlines()
    other = "auth/login" if method == "authenticate" else "authenticate"
    assert method in sent and other not in sent
    assert sent.index(method) < sent.index("session/new")
