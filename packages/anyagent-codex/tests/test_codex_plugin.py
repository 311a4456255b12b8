"""The plugin, the profile, discovery order, MCP servers as thread config and the translator's edge cases."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

import anyagent_codex
from anyagent import (
    AgentInstallation,
    Authenticated,
    Diagnostic,
    DiagnosticCode,
    DiagnosticLevel,
    InvalidConfiguration,
    McpServer,
    PlanUpdated,
    Runtime,
    SessionOptions,
    TextDelta,
    ToolOutputDelta,
    UnsupportedFeature,
    seam,
)
from anyagent_codex.adapter import _thread_params, auth_status, mcp_config, mcp_secrets
from anyagent_codex.driver import _is_auth
from anyagent_codex.translate import Translator, plan_usage


def test_the_entry_point_registers_the_codex_wire_and_profile() -> None:
    registry = Runtime().registry()
    assert registry.profiles["codex"] is anyagent_codex.PROFILE
    assert registry.profiles["codex"].wire == "codex" and "codex" in registry.adapters
    assert registry.profiles["codex"].config_home_env == "CODEX_HOME"


@pytest.mark.anyio
async def test_discovery_lists_native_codex_before_the_acp_bridge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("codex", "codex-acp"):
        exe = tmp_path / name
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("ANYAGENT_NO_LOGIN_SHELL", "1")
    async with Runtime() as runtime:
        report = await runtime.discover()
    ids = [agent.id for agent in report.agents]
    if "codex-acp" not in ids:
        pytest.skip("anyagent-acp is not installed here")
    assert ids.index("codex") < ids.index("codex-acp")


def test_mcp_servers_ride_as_thread_config_and_sse_is_refused(tmp_path: Path) -> None:
    """The servers go in ``thread/start``'s ``config`` (over stdin), never ``-c`` on argv, and their
    env and header values are the secrets a recording redacts."""
    options = SessionOptions.in_dir(tmp_path).mcp_server(McpServer.stdio("files", "npx", ["-y", "srv"], {"K": "v"}))
    options = options.mcp_server(
        McpServer.http("web", "http://127.0.0.1:9/mcp").with_header("Authorization", "Bearer x")
    )
    assert mcp_config(options) == {
        "mcp_servers.files.command": "npx",
        "mcp_servers.files.args": ["-y", "srv"],
        "mcp_servers.files.env": {"K": "v"},
        "mcp_servers.web.url": "http://127.0.0.1:9/mcp",
        "mcp_servers.web.http_headers": {"Authorization": "Bearer x"},
    }
    assert mcp_secrets(options) == ["v", "Bearer x"]
    assert _thread_params(options, mcp_config(options))["config"] == mcp_config(options)
    assert "config" not in _thread_params(options, {})
    with pytest.raises(UnsupportedFeature):
        mcp_config(SessionOptions.in_dir(tmp_path).mcp_server(McpServer.sse("old", "http://127.0.0.1:9/sse")))
    with pytest.raises(InvalidConfiguration, match="letters, digits"):
        mcp_config(SessionOptions.in_dir(tmp_path).mcp_server(McpServer.stdio("my.server", "npx")))


def test_account_read_maps_to_auth_status() -> None:
    login = anyagent_codex.PROFILE.login
    assert type(auth_status({"account": None, "requiresOpenaiAuth": True}, login)).__name__ == "Unauthenticated"
    chatgpt = auth_status({"account": {"type": "chatgpt", "email": "a@b", "planType": "plus"}}, login)
    assert isinstance(chatgpt, Authenticated) and chatgpt.account is not None and chatgpt.account.plan == "plus"
    assert type(auth_status({"account": None, "requiresOpenaiAuth": False}, login)).__name__ == "Authenticated"


def test_a_401_is_recognised_in_every_spelling() -> None:
    assert _is_auth({"message": "x", "codexErrorInfo": "unauthorized"})
    assert _is_auth({"message": "x", "codexErrorInfo": {"responseStreamConnectionFailed": {"httpStatusCode": 401}}})
    assert _is_auth({"message": "unexpected status 401 Unauthorized"})
    assert not _is_auth({"message": "Reconnecting... 2/5", "codexErrorInfo": {"httpConnectionFailed": {}}})


def test_rate_limits_become_plan_usage_only_with_a_window() -> None:
    assert plan_usage({"primary": None, "secondary": None}) is None
    usage = plan_usage({"planType": "pro", "primary": {"usedPercent": 12, "windowDurationMins": 300, "resetsAt": 1}})
    assert usage is not None and usage.plan == "pro" and usage.windows[0].label == "5h"


def test_odd_notifications_never_raise() -> None:
    translator = Translator()
    for method, params in [
        ("item/agentMessage/delta", {"itemId": 3}),
        ("item/started", {"item": "x"}),
        ("turn/plan/updated", {"plan": "no"}),
        ("thread/tokenUsage/updated", {}),
        ("some/new/thing", None),
    ]:
        [event] = translator.feed(method, params)
        assert isinstance(event, seam.Content) and isinstance(event.kind, Diagnostic)
        assert event.kind.diagnostic.code in (DiagnosticCode.BAD_FRAME, DiagnosticCode.UNKNOWN_FRAME)


def test_plan_and_output_deltas_translate() -> None:
    translator = Translator()
    [plan] = translator.feed(
        "turn/plan/updated", {"plan": [{"step": "a", "status": "completed"}, {"step": "b", "status": "inProgress"}]}
    )
    assert isinstance(plan, seam.Content) and isinstance(plan.kind, PlanUpdated) and len(plan.kind.entries) == 2
    [out] = translator.feed("item/commandExecution/outputDelta", {"itemId": "c1", "delta": "hi\n"})
    assert isinstance(out, seam.Content) and out.kind == ToolOutputDelta("c1", "hi\n")
    [text] = translator.feed("item/agentMessage/delta", {"itemId": "m1", "delta": "x"})
    assert isinstance(text, seam.Content) and text.kind == TextDelta("m1", "x")


def test_the_profile_installation_launches_app_server() -> None:
    assert anyagent_codex.PROFILE.args == ("app-server",)
    assert AgentInstallation.at("codex", "/usr/bin/codex").id == "codex"


def test_a_notice_codex_repeats_every_turn_is_reported_once_per_session_and_advisory_ones_at_info() -> None:
    translator = Translator()
    metadata = (
        "Model metadata for `fake-model` not found. Defaulting to fallback metadata; this can degrade performance"
    )
    sandbox = "Codex could not find bubblewrap on PATH; using the vendored bwrap"
    seen = []
    for _turn in range(3):  # codex 0.171 sends the metadata notice on every turn (see the recordings)
        for message in (metadata, sandbox, "the config file has an unknown key"):
            seen += translator.feed("warning", {"threadId": "t", "message": message})
    diagnostics = [e.kind.diagnostic for e in seen if isinstance(e, seam.Content) and isinstance(e.kind, Diagnostic)]
    assert [(d.message, d.level) for d in diagnostics] == [
        (f"codex: {metadata}", DiagnosticLevel.INFO),
        (f"codex: {sandbox}", DiagnosticLevel.INFO),
        ("codex: the config file has an unknown key", DiagnosticLevel.WARNING),
    ]
    assert len(Translator().feed("warning", {"message": metadata})) == 1  # a new session reports it again
