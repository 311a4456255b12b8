"""What recordings cannot drive, against the scripted fake agy (``fake_agy.py``): cancel by
respawn and the conversation resuming under the same session, AutoApprove's flag, logged-out
stderr, a dead resume token, and discovery with and without the ACP server."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import anyio
import pytest
from agy_support import WAIT, fake_agy, launched, runtime

import anyagent_acp.plugin
from anyagent import (
    AgentInstallation,
    AuthRequired,
    Cancelled,
    Completed,
    Diagnostic,
    DiagnosticCode,
    Input,
    PermissionMode,
    ProcessExited,
    ResumeFailed,
    SessionOptions,
    TextDelta,
    ToolStatus,
    ToolUpdated,
    TurnEnded,
)
from anyagent_antigravity.adapter import AgyDriver
from anyagent_antigravity.profile import PROFILE, SERVER
from anyagent_testkit.events import EventReader, kinds, text_of

pytestmark = pytest.mark.anyio


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purposes
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except OSError:
        return False


async def test_cancel_kills_agy_and_the_next_turn_continues_the_conversation(tmp_path: Path) -> None:
    agy = fake_agy(tmp_path / "agy")
    async with runtime() as rt:
        session, events = await rt.open(AgentInstallation.at("antigravity", agy), SessionOptions.in_dir(tmp_path))
        async with session:
            reader = EventReader(events, timeout=WAIT)
            token = session.info().resume_token
            await session.prompt("hello")
            first = await reader.turn()
            [first_text] = kinds(first, TextDelta)
            await session.prompt("SLOW please")
            running = await reader.kind(ToolUpdated)
            assert running.tool.status is ToolStatus.RUNNING
            await session.cancel()
            cancelled = await reader.turn()
            assert kinds(cancelled, TurnEnded) == [TurnEnded(Cancelled())]
            [pid, *_] = [int(p) for p in (tmp_path / "agy" / "pids").read_text().split()]
            assert not _alive(pid), "the cancelled agy was killed"
            await session.prompt("are you still there")
            again = await reader.turn()
            assert kinds(again, TurnEnded) == [TurnEnded(Completed())]
            assert f"conversation {token}" in text_of(again)
            assert "earlier: hello" in text_of(again)  # the conversation went on
            [again_text] = kinds(again, TextDelta)
            step = int(re.sub(r"\D", "", again_text.message_id))
            assert step > int(re.sub(r"\D", "", first_text.message_id)) + 3  # numbering continues
            assert session.info().resume_token == token
    argvs = launched(tmp_path / "agy")
    assert len(argvs) == 2
    assert "--conversation" not in argvs[0]
    assert argvs[1][argvs[1].index("--conversation") + 1] == token


async def test_a_relaunch_that_never_starts_ends_the_session_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(AgyDriver, "relaunch_timeout", 1.0)
    agy = fake_agy(tmp_path / "agy", {"hang_on_resume": True})
    async with runtime() as rt:
        session, events = await rt.open(AgentInstallation.at("antigravity", agy), SessionOptions.in_dir(tmp_path))
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.prompt("SLOW")
            await reader.kind(ToolUpdated)
            await session.cancel()
            assert kinds(await reader.turn(), TurnEnded) == [TurnEnded(Cancelled())]
            with pytest.raises(ProcessExited, match="relaunch after cancel failed"):
                await reader.rest()
    pids = [int(p) for p in (tmp_path / "agy" / "pids").read_text().split()]
    assert len(pids) == 2 and not any(_alive(pid) for pid in pids)


async def test_cancel_when_idle_does_not_relaunch(tmp_path: Path) -> None:
    agy = fake_agy(tmp_path / "agy")
    async with runtime() as rt:
        session, events = await rt.open(AgentInstallation.at("antigravity", agy), SessionOptions.in_dir(tmp_path))
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.cancel()
            await session.prompt("hello")
            assert kinds(await reader.turn(), TurnEnded) == [TurnEnded(Completed())]
    assert len(launched(tmp_path / "agy")) == 1


@pytest.mark.parametrize(
    ("mode", "status"), [(PermissionMode.ASK, ToolStatus.FAILED), (PermissionMode.AUTO_APPROVE, ToolStatus.COMPLETED)]
)
async def test_permission_mode_decides_the_skip_flag(tmp_path: Path, mode: PermissionMode, status: ToolStatus) -> None:
    agy = fake_agy(tmp_path / "agy")
    options = SessionOptions.in_dir(tmp_path).permission_mode(mode)
    async with runtime() as rt:
        session, events = await rt.open(AgentInstallation.at("antigravity", agy), options)
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.prompt("TOOL")
            turn = await reader.turn()
            assert kinds(turn, ToolUpdated)[-1].tool.status is status
            assert kinds(turn, TurnEnded) == [TurnEnded(Completed())]
    [argv] = launched(tmp_path / "agy")
    assert ("--dangerously-skip-permissions" in argv) is (mode is PermissionMode.AUTO_APPROVE)


@pytest.mark.parametrize("script", [{"logged_out": True}, {"stderr_logged_out": True}])
async def test_logged_out_is_auth_required(tmp_path: Path, script: dict[str, object]) -> None:
    agy = fake_agy(tmp_path / "agy", script)
    async with runtime() as rt:
        with pytest.raises(AuthRequired) as caught:
            await rt.open(AgentInstallation.at("antigravity", agy), SessionOptions.in_dir(tmp_path))
    assert caught.value.login == PROFILE.login  # type: ignore[attr-defined]


async def test_an_unknown_resume_token_is_resume_failed(tmp_path: Path) -> None:
    agy = fake_agy(tmp_path / "agy")
    options = SessionOptions.in_dir(tmp_path).resume("no-such-conversation")
    async with runtime() as rt:
        with pytest.raises(ResumeFailed, match="no-such-conversation"):
            await rt.open(AgentInstallation.at("antigravity", agy), options)


# ---------------------------------------------------------------------------------------------
# discovery


def _server(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "agy_acp_server.par"
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home and PATH with nothing installed."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    monkeypatch.setenv("ANYAGENT_NO_LOGIN_SHELL", "1")
    for variable in (
        "ANYAGENT_ANTIGRAVITY_BIN",
        "ANYAGENT_ANTIGRAVITY_ACP_BIN",
        "NPM_CONFIG_PREFIX",
        "npm_config_prefix",
    ):
        monkeypatch.delenv(variable, raising=False)
    return home


async def test_only_agy_installed_is_the_headless_wire_with_the_server_as_upgrade(
    tmp_path: Path, clean_env: Path
) -> None:
    agy = fake_agy(tmp_path / "path")
    async with runtime(anyagent_acp.plugin) as rt:
        report = await rt.discover()
        found = report.require("antigravity")
        assert (found.wire, found.executable_path) == ("agy", agy)
        assert found.upgrade is not None
        assert (found.upgrade.id, found.upgrade.install_hint) == (SERVER.id, SERVER.install_hint)
        assert str(clean_env / ".local" / "agy-acp-server") in found.upgrade.searched
        assert [a.id for a in report.agents if "antigravity" in a.id] == ["antigravity"]  # one id
        session, events = await rt.open(found, SessionOptions.in_dir(tmp_path))
        async with session:
            await session.prompt("hi")
            assert "echo: hi" in text_of(await EventReader(events, timeout=WAIT).turn())


async def test_the_installed_server_wins_and_the_env_override_forces_agy(
    tmp_path: Path, clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agy = fake_agy(tmp_path / "path")
    server = _server(clean_env / ".local" / "agy-acp-server")
    async with runtime() as rt:
        found = (await rt.discover()).require("antigravity")
        assert (found.wire, found.executable_path, found.upgrade) == ("acp", server, None)
        assert found.args == ()  # the server runs with no args
        monkeypatch.setenv("ANYAGENT_ANTIGRAVITY_BIN", str(agy))
        forced = (await rt.discover()).require("antigravity")
        assert (forced.wire, forced.executable_path, forced.upgrade) == ("agy", agy, None)
        monkeypatch.setenv("ANYAGENT_ANTIGRAVITY_BIN", str(server))
        pinned = (await rt.discover()).require("antigravity")
        assert (pinned.wire, pinned.executable_path) == ("acp", server)


async def test_nothing_installed_is_missing_with_agys_install_hint(tmp_path: Path, clean_env: Path) -> None:
    async with runtime() as rt:
        report = await rt.discover()
    assert report.get("antigravity") is None
    [missing] = [m for m in report.missing if m.id == "antigravity"]
    assert missing.install_hint == PROFILE.install_hint


async def test_attachments_go_into_the_prompt_text_as_paths(tmp_path: Path) -> None:
    """agy's headless wire takes text only: an attachment's path rides in the prompt (before: it was
    dropped with a diagnostic)."""
    agy = fake_agy(tmp_path / "agy")
    document = tmp_path / "notes.txt"
    document.write_text("hello", encoding="utf-8")
    async with runtime() as rt:
        session, events = await rt.open(AgentInstallation.at("antigravity", agy), SessionOptions.in_dir(tmp_path))
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.prompt(Input.text("summarize this").attach(document))
            turn = await reader.turn()
    assert f"summarize this\n\nAttached files:\n- {document}" in text_of(turn)
    assert not [d for d in kinds(turn, Diagnostic) if d.diagnostic.code == DiagnosticCode.ATTACHMENT]


def _model_option(session: object) -> object:
    info = session.info()  # type: ignore[attr-defined]
    return next(o for o in info.details.config_options if o.id == "model")


async def test_the_model_option_lists_what_agy_models_prints(tmp_path: Path) -> None:
    """Issue 28 item 6 (before: only the configured model was listed)."""
    lines = ["Available models:", "  Gemini 3.8 Flash (High)", "  gemini-3.1-pro-low   Gemini 3.1 Pro (Low)", ""]
    agy = fake_agy(tmp_path / "agy", {"models": lines})
    async with runtime() as rt:
        options = SessionOptions.in_dir(tmp_path).configure("model", "gemini-3.8-flash-low")
        session, events = await rt.open(AgentInstallation.at("antigravity", agy), options)
        async with session:
            option = _model_option(session)
            values = [c.value for c in option.kind.choices]  # type: ignore[attr-defined]
            labels = [c.label for c in option.kind.choices]  # type: ignore[attr-defined]
            assert values == ["Gemini 3.8 Flash (High)", "gemini-3.1-pro-low", "gemini-3.8-flash-low"]
            assert labels[1] == "Gemini 3.1 Pro (Low)"
            assert option.current == "gemini-3.8-flash-low"  # type: ignore[attr-defined]
            reader = EventReader(events, timeout=WAIT)
            await session.prompt("SLOW")  # a cancel relaunches agy: the list is kept, not read again
            await reader.kind(ToolUpdated)
            await session.cancel()
            await reader.turn()
            assert [c.value for c in _model_option(session).kind.choices] == values  # type: ignore[attr-defined]
    assert all(argv[:1] != ["models"] for argv in launched(tmp_path / "agy"))


@pytest.mark.parametrize("script", [{"models_fail": True}, {"models": []}])
async def test_a_failing_agy_models_falls_back_to_the_configured_model_with_a_diagnostic(
    tmp_path: Path, script: dict[str, object]
) -> None:
    agy = fake_agy(tmp_path / "agy", script)
    async with runtime() as rt:
        options = SessionOptions.in_dir(tmp_path).configure("model", "gemini-3.8-flash-low")
        session, events = await rt.open(AgentInstallation.at("antigravity", agy), options)
        async with session:
            option = _model_option(session)
            assert [c.value for c in option.kind.choices] == ["gemini-3.8-flash-low"]  # type: ignore[attr-defined]
            reader = EventReader(events, timeout=WAIT)
            diagnostic = (await reader.kind(Diagnostic)).diagnostic
            assert diagnostic.code == DiagnosticCode.AGENT_WARNING and "agy models" in diagnostic.message
            await session.prompt("hello")
            assert kinds(await reader.turn(), TextDelta)


async def test_a_hanging_agy_models_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("anyagent_antigravity.adapter.MODELS_WAIT", 0.5)
    agy = fake_agy(tmp_path / "agy", {"models_hang": True})
    async with runtime() as rt:
        with anyio.fail_after(WAIT):
            session, events = await rt.open(AgentInstallation.at("antigravity", agy), SessionOptions.in_dir(tmp_path))
        async with session:
            diagnostic = (await EventReader(events, timeout=WAIT).kind(Diagnostic)).diagnostic
            assert "timed out" in diagnostic.message
