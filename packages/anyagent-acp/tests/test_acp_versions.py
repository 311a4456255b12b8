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
    AgentOrigin,
    AgentProfile,
    Answer,
    Cancelled,
    Capability,
    Completed,
    CompletionSource,
    Diagnostic,
    FileDiff,
    McpServer,
    MessageEnded,
    PermissionChoice,
    PermissionRequest,
    PlanUpdated,
    ProtocolFailed,
    ReasoningDelta,
    RequestOpened,
    Runtime,
    SessionOptions,
    TextDelta,
    ToolInput,
    ToolLocation,
    ToolOutputDelta,
    ToolStatus,
    ToolUpdated,
    TurnEnded,
    TurnStarted,
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
    assert not kinds(seen, UserMessage)  # v2's user_message acknowledging our prompt is never shown
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


async def test_v2_structured_diffs_become_file_diffs_and_locations(tmp_path: Path) -> None:
    """v2 replaced ``oldText``/``newText`` with ``changes`` + a ``git_patch``: the patch's hunks
    are the ``FileDiff``s (an add the created file, a delete the removed one, each hunk of a modify
    its old and new sides), every change's file a location (a move without patch text too)."""
    async with runtime() as rt:
        session, events = await rt.open(_agent("2"), SessionOptions.in_dir(tmp_path))
        async with session:
            await session.prompt("diff")
            seen = await EventReader(events, timeout=WAIT).turn()
    tools = {e.tool.id: e.tool for e in kinds(seen, ToolUpdated)}
    edit = tools["e1"]
    assert edit.status == ToolStatus.COMPLETED
    assert edit.diffs == (
        FileDiff("/w/src/a.py", "one\nTWO\nthree\n", "one\ntwo\nthree\n"),
        FileDiff("/w/src/a.py", "ten\neleven\ntwelve\n", "ten\neleven\n"),
        FileDiff("/w/new.txt", "hello\nworld", None),  # created, no newline at its end
        FileDiff("/w/old.txt", "", "bye\n"),  # deleted
    )
    paths = ("/w/src/a.py", "/w/new.txt", "/w/old.txt", "/w/from.txt", "/w/to.txt")
    assert edit.locations == tuple(ToolLocation(p) for p in paths)
    logo = tools["e2"]  # a binary change streamed as a content chunk: no patch, a location only
    assert logo.diffs == () and logo.locations == (ToolLocation("/w/logo.png"),)


async def test_v2_whole_message_upserts_extend_or_replace_never_duplicate(tmp_path: Path) -> None:
    """The ``MessageBook`` rule: an upsert extending what was shown streams only its suffix under
    the same id, a repeat (or one without ``content``) nothing; a rewrite is a new message
    ``<id>~<n>`` carrying ``acp/replaces``, its whole text once; a clear is such a message with
    no text; a user message that does not acknowledge our prompt is shown."""
    async with runtime() as rt:
        session, events = await rt.open(_agent("2"), SessionOptions.in_dir(tmp_path))
        async with session:
            await session.prompt("upsert")
            seen = await EventReader(events, timeout=WAIT).turn()
    texts: dict[str, str] = {}
    for delta in kinds(seen, TextDelta):
        texts[delta.message_id] = texts.get(delta.message_id, "") + delta.text
    assert texts == {"a1": "Hello world!", "a2": "Draft", "a2~1": "Final answer.", "a3": "gone"}
    assert [d.text for d in kinds(seen, TextDelta) if d.message_id == "a1"] == ["Hel", "lo", " world", "!"]
    assert [d.text for d in kinds(seen, ReasoningDelta)] == ["thinking"]
    replacing = [(type(e.kind).__name__, e.extensions["acp/replaces"]) for e in seen if "acp/replaces" in e.extensions]
    assert replacing == [("TextDelta", "a2"), ("MessageEnded", "a3")]
    ended = [e.message_id for e in kinds(seen, MessageEnded)]
    assert ended.index("a2") < ended.index("a2~1") and "a3~1" in ended
    assert [(m.message_id, m.text) for m in kinds(seen, UserMessage)] == [("u2", "from the parent")]


async def test_v2_plans_by_plan_id_show_as_one_list(tmp_path: Path) -> None:
    """Each ``plan_update`` replaces its own ``planId``'s entries, the others stay; a plan type
    stable v2 does not define is reported, never shown as an empty plan."""
    async with runtime() as rt:
        session, events = await rt.open(_agent("2"), SessionOptions.in_dir(tmp_path))
        async with session:
            await session.prompt("plans")
            seen = await EventReader(events, timeout=WAIT).turn()
    shown = [[entry.content for entry in e.entries] for e in kinds(seen, PlanUpdated)]
    assert shown == [["a", "b"], ["a", "b", "c"], ["a", "b", "c", "d"]]
    assert any("plan_update" in d.diagnostic.message for d in kinds(seen, Diagnostic))


async def test_v2_permission_keeps_the_tool_title_and_shows_its_prompt(tmp_path: Path) -> None:
    """v2's permission ``title``/``description`` are the prompt's copy (``detail``), not the
    tool's title; a tool ``cancelled`` (new in v2) ends ``CANCELLED``."""
    async with runtime() as rt:
        session, events = await rt.open(_agent("2"), SessionOptions.in_dir(tmp_path))
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.prompt("toolperm")
            request = (await reader.kind(RequestOpened)).request
            assert isinstance(request, PermissionRequest)
            assert request.tool.id == "t5" and request.tool.title == "Run setup.sh"
            assert request.detail == "Run this script?\nIt changes your project."
            await session.answer(request.id, Answer.permission(PermissionChoice.DENY_ONCE))
            seen = await reader.turn()
    final = [e.tool for e in kinds(seen, ToolUpdated) if e.tool.id == "t5"][-1]
    assert final.status == ToolStatus.CANCELLED and final.title == "Run setup.sh"


async def test_v2_tool_patches_clear_on_null_and_content_replaces(tmp_path: Path) -> None:
    """v2's three-state tool patches: null clears a field (title, input, locations, content and
    the output it gave); a concrete ``content`` array replaces what the tool held, its text too."""
    async with runtime() as rt:
        session, events = await rt.open(_agent("2"), SessionOptions.in_dir(tmp_path))
        async with session:
            await session.prompt("nulls")
            seen = await EventReader(events, timeout=WAIT).turn()
    first, cleared, replaced, done = [e.tool for e in kinds(seen, ToolUpdated) if e.tool.id == "t6"]
    assert first.output == "partial" and first.input.pattern == "x" and first.locations and first.title == "Grep"
    assert cleared.title == "" and cleared.input == ToolInput() and cleared.locations == ()
    assert cleared.output is None
    assert replaced.output is None  # a terminal reference with no output: the old text is gone
    assert done.status == ToolStatus.COMPLETED and done.output is None


async def test_v2_work_the_agent_starts_itself_ends_by_its_idle_state(tmp_path: Path) -> None:
    """v2: ``running`` with no prompt of ours, content, then ``idle``: an agent-originated turn
    that ends ``Completed`` by protocol (not inferred after the quiet window)."""
    async with runtime() as rt:
        session, events = await rt.open(_agent("2"), SessionOptions.in_dir(tmp_path).quiet_window(30))
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.prompt("background")
            assert text_of(await reader.turn()) == "Hello v2"
            later = await reader.turn()
    assert isinstance(kinds(later, TurnStarted)[0].origin, AgentOrigin)
    assert text_of(later) == "later"
    assert kinds(later, TurnEnded)[-1].stop == Completed(CompletionSource.PROTOCOL)


async def test_v2_a_json_rpc_batch_line_is_its_messages(tmp_path: Path) -> None:
    """v2 follows JSON-RPC 2.0 batches on stdio: one line holding an array of messages is each
    of them, in order (here a chunk and the idle state that ends the turn)."""
    async with runtime() as rt:
        session, events = await rt.open(_agent("2"), SessionOptions.in_dir(tmp_path))
        async with session:
            await session.prompt("batch")
            seen = await EventReader(events, timeout=WAIT).turn()
    assert text_of(seen) == "batched"
    assert kinds(seen, TurnEnded)[-1].stop == Completed(CompletionSource.PROTOCOL)
    assert not [d for d in kinds(seen, Diagnostic) if d.diagnostic.code == "bad_line"]


async def test_v2_a_command_subjects_terminal_streams_into_its_tool(tmp_path: Path) -> None:
    """A ``command`` permission subject's ``terminalId`` ties the display terminal to the tool it
    makes: the command's output streams into that tool."""
    async with runtime() as rt:
        session, events = await rt.open(_agent("2"), SessionOptions.in_dir(tmp_path))
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.prompt("cmdterm")
            request = (await reader.kind(RequestOpened)).request
            assert request.tool.id == "t7" and request.tool.input.command == "make"
            await session.answer(request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
            seen = await reader.turn()
    assert [(d.tool_id, d.text) for d in kinds(seen, ToolOutputDelta)] == [("t7", "built\n")]
    final = [e.tool for e in kinds(seen, ToolUpdated) if e.tool.id == "t7"][-1]
    assert final.status == ToolStatus.COMPLETED and final.output == "built\n"
