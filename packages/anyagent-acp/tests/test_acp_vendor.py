"""Vendor extensions and wire oddities, each bound by a catalog profile's quirks, against a raw
JSON-lines fake (``agents/vendor_agent.py``) launched under the profile's id."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from acpsupport import opened, vendor_agent

import anyagent_acp.plugin
from anyagent import (
    AgentInstallation,
    AgentProfile,
    Answer,
    Authenticated,
    AuthKind,
    AuthRequired,
    AuthUnknown,
    Cancelled,
    Capability,
    Completed,
    ContextUsage,
    Diagnostic,
    Failed,
    PermissionMode,
    PlanUpdated,
    ProcessExited,
    QuestionAnswer,
    QuestionRequest,
    RequestClosed,
    RequestOpened,
    Runtime,
    SessionOptions,
    SessionUpdated,
    Steered,
    TerminalLogin,
    TextDelta,
    ToolKind,
    ToolUpdated,
    TurnEnded,
    Unauthenticated,
    hookimpl,
)
from anyagent_testkit.events import EventReader, kinds, text_of

pytestmark = pytest.mark.anyio


async def test_cursor_preflight_questions_todos_task_and_estimated_usage(tmp_path: Path) -> None:
    agent = vendor_agent(tmp_path, "cursor", "cursor")
    async with opened(tmp_path, agent=agent) as (session, reader):
        assert session.info().details.auth == Authenticated()
        assert not session.info().details.capabilities.supports(Capability.QUESTIONS)
        await session.prompt("ASK")
        request = (await reader.kind(RequestOpened)).request
        assert isinstance(request, QuestionRequest)
        assert session.info().details.capabilities.supports(Capability.QUESTIONS)
        question = request.questions[0]
        assert question.text == "Which database?" and [c.id for c in question.choices] == ["pg", "lite"]
        await session.answer(request.id, Answer.question([QuestionAnswer.choices(["lite"])]))
        seen = await reader.turn()
        assert text_of(seen) == "answered [['lite']]"
        usage = [e for e in seen if isinstance(e.kind, ContextUsage)]
        assert usage and usage[-1].extensions["anyagent/estimated"] is True
        await session.prompt("TODOS")
        seen = await reader.turn()
    plan = kinds(seen, PlanUpdated)[-1]
    assert [e.content for e in plan.entries] == ["write", "test"]
    task = kinds(seen, ToolUpdated)[-1].tool
    assert task.id == "sub-1" and task.kind is ToolKind.SUBAGENT and task.title == "Explore"


async def test_cursor_logged_out_fails_open_with_its_login_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VENDOR_LOGGED_OUT", "1")
    with pytest.raises(AuthRequired) as caught:
        async with opened(tmp_path, agent=vendor_agent(tmp_path, "cursor", "cursor")):
            pass
    assert TerminalLogin(("cursor-agent", "login"), "Log in to Cursor") in caught.value.login
    assert "Not logged in" in caught.value.message


@pytest.mark.parametrize("profile_id", ["qwen", "gemini", "hermes", "codex-acp"])
async def test_a_session_proves_the_login_of_an_agent_that_refuses_sessions_logged_out(
    tmp_path: Path, profile_id: str
) -> None:
    async with opened(tmp_path, agent=vendor_agent(tmp_path, profile_id, "plain")) as (session, _reader):
        assert session.info().details.auth == Authenticated(AuthKind.OTHER)


async def test_a_bridge_that_opens_sessions_logged_out_proves_nothing(tmp_path: Path) -> None:
    # claude's ACP bridge opens a session without a login and fails only the prompt
    async with opened(tmp_path, agent=vendor_agent(tmp_path, "claude-acp", "plain")) as (session, _reader):
        assert session.info().details.auth == AuthUnknown()


@pytest.mark.parametrize("profile_id", ["codex-acp", "unprofiled"])
async def test_auth_status_update_reports_the_login(tmp_path: Path, profile_id: str) -> None:
    async with opened(tmp_path, agent=vendor_agent(tmp_path, profile_id, "codex2")) as (session, _reader):
        assert session.info().details.auth == Authenticated(AuthKind.SUBSCRIPTION)


async def test_portable_mode_names_reach_the_agent_as_its_own_ids(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).configure("mode", "accept-edits")
    agent = vendor_agent(tmp_path, "gemini", "gemini")  # modes default, plan, autoEdit
    async with opened(tmp_path, options, agent) as (session, reader):
        mode = session.info().details.option("mode")
        assert mode is not None and session.info().configuration["mode"] == "autoEdit"
        aliases = {choice.value: choice.aliases for choice in mode.kind.choices}  # type: ignore[union-attr]
        assert aliases == {"default": ("ask",), "plan": (), "autoEdit": ("accept-edits",)}
        assert not mode.accepts("bypass-permissions")  # gemini's yolo is not offered here
        for value, own in (("ask", "default"), ("accept-edits", "autoEdit"), ("plan", "plan"), ("default", "default")):
            await session.configure("mode", value)
            await reader.match(
                lambda e, own=own: isinstance(e.kind, SessionUpdated) and e.kind.info.configuration.get("mode") == own
            )


def _methods(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


async def test_probe_auth_stops_after_session_new(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "sent.log"
    monkeypatch.setenv("VENDOR_LOG", str(log))
    async with Runtime(plugins=[anyagent_acp.plugin]) as rt:
        assert await rt.probe_auth(vendor_agent(tmp_path, "qwen", "plain")) == Authenticated(AuthKind.OTHER)
        assert _methods(log) == ["initialize", "session/new"]  # no configuration, no prompt, no second open
        assert await rt.probe_auth(vendor_agent(tmp_path, "codex-acp", "codex2")) == Authenticated(
            AuthKind.SUBSCRIPTION
        )
        assert await rt.probe_auth(vendor_agent(tmp_path, "claude-acp", "plain")) == AuthUnknown()
        monkeypatch.setenv("VENDOR_LOGGED_OUT", "1")
        status = await rt.probe_auth(vendor_agent(tmp_path, "qwen", "plain"))
    assert isinstance(status, Unauthenticated)
    assert [m.name for m in status.login] == ["OPENAI_API_KEY"]


async def test_probe_auth_of_cursor_runs_only_its_preflight(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "sent.log"
    monkeypatch.setenv("VENDOR_LOG", str(log))
    async with Runtime(plugins=[anyagent_acp.plugin]) as rt:
        assert await rt.probe_auth(vendor_agent(tmp_path, "cursor", "cursor")) == Authenticated(AuthKind.OTHER)
        monkeypatch.setenv("VENDOR_LOGGED_OUT", "1")
        status = await rt.probe_auth(vendor_agent(tmp_path, "cursor", "cursor"))
    assert _methods(log) == []  # the ACP agent itself never started
    assert isinstance(status, Unauthenticated)
    assert TerminalLogin(("cursor-agent", "login"), "Log in to Cursor") in status.login


async def test_grok_models_effort_question_and_vendor_turn_end(tmp_path: Path) -> None:
    async with opened(tmp_path, agent=vendor_agent(tmp_path, "grok", "grok")) as (session, reader):
        details = session.info().details
        assert details.option("model").current == "grok-4"
        assert details.option("effort").current == "low"
        await session.configure("effort", "high")
        await reader.match(
            lambda e: isinstance(e.kind, SessionUpdated) and e.kind.info.configuration.get("effort") == "high"
        )
        await session.prompt("GROKEND")
        first = await reader.turn()
        assert text_of(first) == "done early" and kinds(first, TurnEnded)[-1].stop == Completed()
        await session.prompt("GROKASK")  # the late answer to GROKEND arrives first and ends nothing
        request = (await reader.kind(RequestOpened)).request
        assert [c.label for c in request.questions[0].choices] == ["Red", "Blue"]
        await session.answer(request.id, Answer.question([QuestionAnswer.choices(["Blue"])]))
        seen = await reader.turn()
    assert text_of(seen) == '{"outcome": "accepted", "answers": {"Colour?": ["Blue"]}}'
    assert len(kinds(seen, TurnEnded)) == 1


async def test_qwen_vendor_mode_notification(tmp_path: Path) -> None:
    async with opened(tmp_path, agent=vendor_agent(tmp_path, "qwen", "qwen")) as (session, reader):
        await session.configure("mode", "plan")
        await reader.match(
            lambda e: isinstance(e.kind, SessionUpdated) and e.kind.info.configuration.get("mode") == "plan"
        )


async def test_gemini_mode_text_and_missing_file_read_as_empty(tmp_path: Path) -> None:
    async with opened(tmp_path, agent=vendor_agent(tmp_path, "gemini", "gemini")) as (session, reader):
        await session.configure("mode", "autoEdit")
        await reader.match(
            lambda e: isinstance(e.kind, SessionUpdated) and e.kind.info.configuration.get("mode") == "autoEdit"
        )
        assert not kinds(reader.seen, TextDelta)
        await session.prompt(f"READMISSING {tmp_path / 'new.txt'}")
        assert text_of(await reader.turn()) == '{"content": ""}'


async def test_kiro_effort_switches_by_a_hidden_prompt(tmp_path: Path) -> None:
    async with opened(tmp_path, agent=vendor_agent(tmp_path, "kiro", "kiro")) as (session, reader):
        if not session.info().details.commands:  # announced after the handshake read its last frame
            await reader.match(lambda e: isinstance(e.kind, SessionUpdated) and bool(e.kind.info.details.commands))
        info = session.info()
        assert [c.name for c in info.details.commands] == ["effort"]
        assert info.details.commands[0].input_hint == "<level>"
        effort = info.details.option("effort")
        assert effort is not None and [c.value for c in effort.kind.choices][-1] == "max"
        await session.configure("effort", "high")
        await reader.match(
            lambda e: isinstance(e.kind, SessionUpdated) and e.kind.info.configuration.get("effort") == "high"
        )
        assert not kinds(reader.seen, TextDelta) and not kinds(reader.seen, TurnEnded)
        await session.configure("model", "auto")  # a model without effort drops the option
        await reader.match(
            lambda e: isinstance(e.kind, SessionUpdated) and e.kind.info.details.option("effort") is None
        )
        await session.prompt("hello")
        assert text_of(await reader.turn()) == "ok"


async def test_hermes_cancel_with_a_permission_pending_leaves_it_usable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15 item 4: hermes 0.19 wedges on a session/cancel beside a pending permission (either
    order); the answer alone cancels it, and the next prompt runs."""
    log = tmp_path / "order.log"
    monkeypatch.setenv("VENDOR_LOG", str(log))
    async with opened(tmp_path, agent=vendor_agent(tmp_path, "hermes", "hermes")) as (session, reader):
        await session.prompt("HOLD")
        await reader.kind(RequestOpened)
        await session.cancel()
        assert kinds(await reader.turn(), TurnEnded)[-1].stop == Cancelled()
        await session.prompt("hello")
        seen = await reader.turn()
        assert (text_of(seen), kinds(seen, TurnEnded)[-1].stop) == ("ok", Completed())
    lines = log.read_text().splitlines()
    assert "answer session/request_permission" in lines and "session/cancel" not in lines


async def test_a_wedged_hermes_fails_its_turns_with_a_diagnostic_naming_the_bug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancel that lands just after hermes' model call ended still wedges it: the turn that gets
    "Queued for the next turn." fails typed, and later prompts fail without being sent."""
    log = tmp_path / "order.log"
    monkeypatch.setenv("VENDOR_LOG", str(log))
    async with opened(tmp_path, agent=vendor_agent(tmp_path, "hermes", "hermes")) as (session, reader):
        await session.prompt("RACE")
        await reader.match(lambda e: isinstance(e.kind, TextDelta) and e.kind.text == "slow")
        await session.cancel()
        assert kinds(await reader.turn(), TurnEnded)[-1].stop == Cancelled()
        await session.prompt("hello")
        seen = await reader.turn()
        stop = kinds(seen, TurnEnded)[-1].stop
        assert isinstance(stop, Failed) and "wedged" in stop.message and "hermes-agent 0.19.0" in stop.message
        diagnostic = kinds(seen, Diagnostic)[-1].diagnostic
        assert diagnostic.code == "agent_error" and "Queued for the next turn." in diagnostic.message
        await session.prompt("again")
        stop = kinds(await reader.turn(), TurnEnded)[-1].stop
        assert isinstance(stop, Failed) and "wedged" in stop.message
    prompts = [line for line in log.read_text().splitlines() if line.startswith("prompt ")]
    assert prompts == ["prompt RACE", "prompt hello"]


async def test_plain_cancel_sends_session_cancel_before_answering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "order.log"
    monkeypatch.setenv("VENDOR_LOG", str(log))
    agent = AgentInstallation.acp("plain", vendor_agent(tmp_path, "x", "plain").executable_path, ["plain"])
    async with opened(tmp_path, agent=agent) as (session, reader):
        await session.prompt("HOLD")
        await reader.kind(RequestOpened)
        await session.cancel()
        await reader.turn()
    lines = log.read_text().splitlines()
    assert lines.index("session/cancel") < lines.index("answer session/request_permission")


async def test_agent_withdraws_its_own_request_with_a_string_id(tmp_path: Path) -> None:
    agent = AgentInstallation.acp("plain", vendor_agent(tmp_path, "x", "plain").executable_path, ["plain"])
    async with opened(tmp_path, agent=agent) as (session, reader):
        await session.prompt("WITHDRAW")
        request = (await reader.kind(RequestOpened)).request
        await session.cancel()
        seen = await reader.turn()
    assert kinds(seen, RequestClosed)[0].request_id == request.id
    assert kinds(seen, TurnEnded)[-1].stop == Cancelled()


async def test_unknown_vendor_request_is_answered_and_the_turn_goes_on(tmp_path: Path) -> None:
    agent = AgentInstallation.acp("plain", vendor_agent(tmp_path, "x", "plain").executable_path, ["plain"])
    async with opened(tmp_path, agent=agent) as (session, reader):
        await session.prompt("DRAIN")
        assert text_of(await reader.turn()) == "drain -32601"


async def test_steer_where_advertised(tmp_path: Path) -> None:
    async with opened(tmp_path, agent=vendor_agent(tmp_path, "x", "steer")) as (session, reader):
        assert session.info().details.capabilities.supports(Capability.STEER)
        await session.prompt("STEER")
        await reader.until(TextDelta)
        delivery = await session.prompt("go left")
        assert isinstance(delivery.kind, Steered)
        assert "steered by go left" in text_of(await reader.turn())


async def test_garbage_on_stdout_is_a_diagnostic(tmp_path: Path) -> None:
    async with opened(tmp_path, agent=vendor_agent(tmp_path, "x", "plain")) as (session, reader):
        await session.prompt("GARBAGE")
        seen = await reader.turn()
    assert any(k.diagnostic.code == "bad_line" for k in kinds(seen, Diagnostic))
    assert text_of(seen) == "after garbage"


async def test_agent_death_mid_turn_fails_the_turn_and_raises_process_exited(tmp_path: Path) -> None:
    async with opened(tmp_path, agent=vendor_agent(tmp_path, "x", "plain")) as (session, reader):
        await session.prompt("DIE")
        with pytest.raises(ProcessExited) as caught:
            await reader.rest()
    assert "exit status: 3" in caught.value.status and "fatal" in caught.value.stderr
    assert any(isinstance(e.kind, TurnEnded) and isinstance(e.kind.stop, Failed) for e in reader.seen)


async def test_auto_approve_picks_allow_for_a_vendor_permission(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).permission_mode(PermissionMode.AUTO_APPROVE)
    async with opened(tmp_path, options, agent=vendor_agent(tmp_path, "x", "plain")) as (session, reader):
        await session.prompt("HOLD")
        assert text_of(await reader.turn()) == "held proceed_once"


async def test_a_silent_agent_times_out_the_handshake_and_is_reaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from anyagent import HandshakeTimeout, seam

    monkeypatch.setattr(seam, "HANDSHAKE_TIMEOUT", 1.0)
    pid_file = tmp_path / "pid"
    code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    agent = AgentInstallation.acp("silent", sys.executable, ["-c", code])
    with pytest.raises(HandshakeTimeout):
        async with opened(tmp_path, agent=agent):
            pass
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


class _EnvProfile:
    @hookimpl
    def anyagent_agents(self) -> list[AgentProfile]:
        env = {"ANYAGENT_ACP_SET_BY_BOTH": "profile", "ANYAGENT_ACP_SET_BY_PROFILE": "profile"}
        return [AgentProfile(id="envy", name="Envy", wire="acp", executables=(), quirks={"env": env})]


async def test_profile_env_is_a_default_the_callers_environment_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANYAGENT_ACP_SET_BY_BOTH", "caller")
    monkeypatch.delenv("ANYAGENT_ACP_SET_BY_PROFILE", raising=False)
    async with Runtime(plugins=[anyagent_acp.plugin, _EnvProfile()]) as rt:
        session, events = await rt.open(vendor_agent(tmp_path, "envy", "plain"), SessionOptions.in_dir(tmp_path))
        reader = EventReader(events, timeout=15)
        async with session:
            await session.prompt("ENV ANYAGENT_ACP_SET_BY_BOTH")
            assert text_of(await reader.turn()) == "caller"
            await session.prompt("ENV ANYAGENT_ACP_SET_BY_PROFILE")
            assert text_of(await reader.turn()) == "profile"
