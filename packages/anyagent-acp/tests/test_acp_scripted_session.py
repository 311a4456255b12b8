"""The recorded tier, part 3: session info, settings, unknown frames, handshake failures, load."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from acpsupport import SCRIPTED, opened, runtime, scripted

import anyagent_acp.plugin
from anyagent import (
    AgentInstallation,
    AgentProfile,
    AuthRequired,
    Capability,
    ContextUsage,
    Diagnostic,
    DiagnosticCode,
    EnvVarLogin,
    Input,
    InvalidConfiguration,
    McpServer,
    MessageEnded,
    PlanEntryStatus,
    PlanUpdated,
    PromptOrigin,
    ProtocolFailed,
    ResumeFailed,
    Runtime,
    SessionOptions,
    SessionUpdated,
    TextDelta,
    ToolUpdated,
    TurnStarted,
    UnsupportedFeature,
    UserMessage,
    hookimpl,
)
from anyagent_acp.client import INVALID_PARAMS, MAX_FILE_BYTES, FileAccess, RpcFailure
from anyagent_testkit.events import kinds, text_of

pytestmark = pytest.mark.anyio


async def test_plan_update(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("PLAN")
        seen = await reader.turn()
    plan = kinds(seen, PlanUpdated)[-1]
    assert [(e.content, e.status) for e in plan.entries] == [
        ("inspect", PlanEntryStatus.COMPLETED),
        ("fix", PlanEntryStatus.IN_PROGRESS),
    ]


async def test_usage_adds_context_usage_on_first_sight(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        assert not session.info().details.capabilities.supports(Capability.CONTEXT_USAGE)
        await session.prompt("USAGE")
        seen = await reader.turn()
        assert session.info().details.capabilities.supports(Capability.CONTEXT_USAGE)
    updated = kinds(seen, SessionUpdated)
    assert updated and updated[0].info.details.capabilities.supports(Capability.CONTEXT_USAGE)
    assert kinds(seen, ContextUsage) == [ContextUsage(1234, 200000)]


async def test_commands_and_title_update_the_session_info(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("COMMANDS")
        await reader.turn()
        assert [c.name for c in session.info().details.commands] == ["review"]
        await session.prompt("TITLE")
        await reader.turn()
        assert session.info().title == "A titled session"


async def test_modes_and_config_options_switch_live(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        details = session.info().details
        assert details.option("mode") is not None and details.option("mode").current == "ask"
        assert session.info().configuration["effort"] == "low"
        await session.configure("mode", "plan")
        await reader.match(
            lambda e: isinstance(e.kind, SessionUpdated) and e.kind.info.configuration.get("mode") == "plan"
        )
        await session.configure("effort", "high")
        await reader.match(
            lambda e: isinstance(e.kind, SessionUpdated) and e.kind.info.configuration.get("effort") == "high"
        )
        with pytest.raises(InvalidConfiguration):
            await session.configure("effort", "extreme")


async def test_creation_time_configuration_is_applied_before_the_first_turn(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).configure("effort", "high").configure("mode", "code")
    async with opened(tmp_path, options) as (session, _reader):
        assert session.info().configuration["effort"] == "high"
        assert session.info().configuration["mode"] == "code"


async def test_creation_time_configuration_of_an_unknown_option_fails_open(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).configure("colour", "blue")
    with pytest.raises(InvalidConfiguration):
        async with opened(tmp_path, options):
            pass


async def test_unknown_request_is_answered_method_not_found_and_the_turn_goes_on(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("UNKNOWNREQ")
        seen = await reader.turn()
    assert text_of(seen) == "error=-32601"


async def test_unknown_update_becomes_a_diagnostic_with_the_raw_frame(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("UNKNOWNUPDATE")
        seen = await reader.turn()
    unknown = [e for e in seen if isinstance(e.kind, Diagnostic) and e.kind.diagnostic.code == "unknown_frame"]
    assert len(unknown) == 1 and not unknown[0].extensions  # the frame rides in `raw` only
    raw = unknown[0].kind.diagnostic.raw
    assert raw["method"] == "session/update"
    assert raw["params"]["update"] == {"sessionUpdate": "mystery_update", "payload": 42}
    assert text_of(seen) == "after mystery"


async def test_unknown_notification_becomes_a_diagnostic(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("UNKNOWNNOTE")
        seen = await reader.turn()
    unknown = [k.diagnostic for k in kinds(seen, Diagnostic) if k.diagnostic.code == DiagnosticCode.UNKNOWN_FRAME]
    assert len(unknown) == 1 and unknown[0].raw == {"method": "vendor/ping", "params": {"n": 1}}
    assert text_of(seen) == "after ping"


async def test_a_version_we_do_not_speak_fails_open_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCRIPTED_VERSION", "3")
    with pytest.raises(ProtocolFailed) as caught:
        async with opened(tmp_path):
            pass
    assert "versions 3" in caught.value.message and "versions 1 and 2" in caught.value.message


async def test_version_2_with_a_v1_body_fails_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Version 2 is asked again in v2's shape; a v1-shaped answer (no ``info``) is no v2 agent."""
    monkeypatch.setenv("SCRIPTED_VERSION", "2")
    with pytest.raises(ProtocolFailed) as caught:
        async with opened(tmp_path):
            pass
    assert "`info`" in caught.value.message


class _AuthProfile:
    @hookimpl
    def anyagent_agents(self) -> list[AgentProfile]:
        return [
            AgentProfile(
                id="scripted-auth",
                name="Scripted (logged out)",
                wire="acp",
                executables=(),
                login=(EnvVarLogin("SCRIPTED_KEY"),),
            )
        ]


async def test_auth_required_at_session_new_with_a_login_method(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCRIPTED_AUTH", "1")
    agent = AgentInstallation(
        id="scripted-auth", name="s", executable_path=sys.executable, wire="acp", args=[str(SCRIPTED)]
    )
    async with Runtime(plugins=[anyagent_acp.plugin, _AuthProfile()]) as rt:
        with pytest.raises(AuthRequired) as caught:
            await rt.open(agent, SessionOptions.in_dir(tmp_path))
    assert caught.value.login == (EnvVarLogin("SCRIPTED_KEY"),)


async def test_auth_required_without_a_login_method_is_a_protocol_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCRIPTED_AUTH", "1")
    with pytest.raises(ProtocolFailed) as caught:
        async with opened(tmp_path):
            pass
    assert "Authentication required" in caught.value.message


async def test_an_mcp_transport_the_agent_lacks_fails_open(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).mcp_server(McpServer.sse("events", "http://127.0.0.1:9/sse"))
    with pytest.raises(UnsupportedFeature):
        async with opened(tmp_path, options):
            pass


async def test_mcp_servers_ride_session_new(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    store = tmp_path / "store"
    store.mkdir()
    monkeypatch.setenv("SCRIPTED_STORE", str(store))
    options = (
        SessionOptions.in_dir(tmp_path)
        .mcp_server(McpServer.stdio("tools", "mcp-tools", ["--fast"], {"K": "V"}))
        .mcp_server(McpServer.http("web", "http://127.0.0.1:9/mcp").with_header("X-A", "b"))
    )
    async with opened(tmp_path, options) as (session, _reader):
        token = session.info().resume_token
    saved = json.loads((store / f"{token}.json").read_text())["mcp"]
    assert saved[0] == {
        "name": "tools",
        "command": "mcp-tools",
        "args": ["--fast"],
        "env": [{"name": "K", "value": "V"}],
    }
    assert saved[1]["type"] == "http" and saved[1]["headers"] == [{"name": "X-A", "value": "b"}]


async def test_load_in_a_second_process_does_not_re_emit_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    monkeypatch.setenv("SCRIPTED_STORE", str(store))
    async with opened(tmp_path) as (session, reader):
        await session.prompt("remember me")
        assert text_of(await reader.turn()) == "Hello world"
        token = session.info().resume_token
    assert token is not None
    async with opened(tmp_path, SessionOptions.in_dir(tmp_path).resume(token)) as (session, reader):
        assert session.info().resume_token == token
        await session.prompt("and now")
        seen = await reader.turn()
    assert text_of(seen) == "Hello world"  # the replayed "Hello world" of turn 1 is not here twice
    assert not kinds(seen, UserMessage)
    assert sum(1 for e in seen if isinstance(e.kind, TextDelta)) == 2


async def test_history_replayed_by_session_resume_is_no_turn_and_later_ids_stay_unique(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    monkeypatch.setenv("SCRIPTED_STORE", str(store))
    monkeypatch.setenv("SCRIPTED_RESUME", "1")
    async with opened(tmp_path) as (session, reader):
        for _ in range(2):
            await session.prompt("remember me")
            assert text_of(await reader.turn()) == "Hello world"
        token = session.info().resume_token
    assert token is not None
    options = SessionOptions.in_dir(tmp_path).resume(token).quiet_window(0.5)
    async with opened(tmp_path, options) as (session, reader):
        await anyio.sleep(1)  # longer than the quiet window: a phantom turn would be over by now
        await session.prompt("and now")
        seen = await reader.turn()
        await session.prompt("again")
        seen += await reader.turn()
    starts = kinds(seen, TurnStarted)
    assert len(starts) == 2 and all(isinstance(s.origin, PromptOrigin) for s in starts)
    assert text_of(seen) == "Hello worldHello world"
    assert not kinds(seen, UserMessage) and not kinds(seen, ToolUpdated)
    ended = [e.message_id for e in kinds(seen, MessageEnded)]
    assert len(ended) == 2 and len(set(ended)) == 2


async def test_resuming_an_unknown_session_fails_typed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCRIPTED_STORE", str(tmp_path))
    with pytest.raises(ResumeFailed):
        async with opened(tmp_path, SessionOptions.in_dir(tmp_path).resume("s-nope")):
            pass


async def test_fork_and_compact_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFeature):
        async with opened(tmp_path, SessionOptions.in_dir(tmp_path).fork_from("s-x")):
            pass
    async with opened(tmp_path) as (session, _reader):
        with pytest.raises(UnsupportedFeature):
            await session.compact()


async def test_attachments_inline_images_and_pass_other_files_as_paths(tmp_path: Path) -> None:
    image = tmp_path / "shot.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\nfake")
    notes = tmp_path / "notes.txt"
    notes.write_text("remember")
    prompt = Input.text("BLOCKS look").attach(image).attach(notes)
    async with opened(tmp_path) as (session, reader):
        await session.prompt(prompt)
        seen = await reader.turn()
    assert text_of(seen) == f"blocks=image,text text=BLOCKS look\n\nAttached file: {notes}"


async def test_probe_reports_details(tmp_path: Path) -> None:
    async with runtime() as rt:
        details = await rt.probe(scripted())
    assert details.version == "9.9.9" and details.capabilities.supports(Capability.SLASH_COMMANDS)


def _release_fifo(fifo: Path) -> None:
    """Open the FIFO's writing end, so a read blocked on it (the bug) returns."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
async def test_a_fifo_or_device_attachment_is_refused_and_the_prompt_goes_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    notes = tmp_path / "notes.txt"
    notes.write_text("remember")
    prompt = Input.text("BLOCKS look").attach(fifo).attach(notes)
    if await anyio.Path("/dev/zero").exists():
        prompt = prompt.attach("/dev/zero")  # before: read until MemoryError
    rescue = threading.Timer(12, _release_fifo, (fifo,))  # before: only this unblocked the read
    rescue.start()
    started = time.monotonic()
    try:
        async with opened(tmp_path) as (session, reader):
            await session.prompt(prompt)
            seen = await reader.turn()
    finally:
        rescue.cancel()
    assert time.monotonic() - started < 10
    problems = [d.diagnostic for d in kinds(seen, Diagnostic)]
    assert {p.code for p in problems} == {DiagnosticCode.ATTACHMENT}
    assert any(str(fifo) in p.message and "FIFO" in p.message for p in problems)
    assert text_of(seen) == f"blocks=text text=BLOCKS look\n\nAttached file: {notes}"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
async def test_the_agent_reading_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    files = FileAccess(tmp_path)
    rescue = threading.Timer(8, _release_fifo, (fifo,))  # before: only this unblocked the open
    rescue.start()
    started = time.monotonic()
    try:
        with pytest.raises(RpcFailure) as info:
            await files.read({"path": str(fifo)})
    finally:
        rescue.cancel()
    assert time.monotonic() - started < 5
    assert info.value.code == INVALID_PARAMS and "not a regular file" in info.value.message
    big = tmp_path / "big.txt"
    with big.open("wb") as out:
        out.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(RpcFailure, match="the limit is"):
        await files.read({"path": str(big)})
