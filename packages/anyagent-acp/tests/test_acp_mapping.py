"""The pure ACP → anyagent mapping, the quirks reader and the catalog, without processes."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

import anyagent_acp.plugin
from anyagent import (
    Authenticated,
    AuthKind,
    BooleanKind,
    Cancelled,
    Capability,
    Completed,
    ContextUsage,
    EnvVarLogin,
    Failed,
    FileDiff,
    McpTool,
    PermissionChoice,
    Question,
    QuestionChoice,
    Refused,
    Runtime,
    SelectKind,
    TerminalLogin,
    ToolKind,
    ToolStatus,
)
from anyagent_acp import PROFILES, Quirks, translate
from anyagent_acp._state import InfoState, Setter
from anyagent_acp.quirks import EffortPrompt


def test_capabilities_from_initialize() -> None:
    init = {
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True},
            "mcpCapabilities": {"http": True, "sse": True},
            "_meta": {"steering": {"supported": True}},
        }
    }
    caps = translate.capabilities(init)
    assert {Capability.IMAGES, Capability.RESUME, Capability.STEER, Capability.PERMISSIONS} <= caps.items
    assert caps.mcp_transports == frozenset({"stdio", "http", "sse"})
    bare = translate.capabilities({})
    assert not bare.supports(Capability.RESUME) and bare.mcp_transports == frozenset({"stdio"})
    assert translate.capabilities({"agentCapabilities": {"sessionCapabilities": {"resume": {}}}}).supports(
        Capability.RESUME
    )


def test_login_methods_terminal_meta_and_env_var() -> None:
    init = {
        "authMethods": [
            {"id": "openai", "name": "Use OpenAI", "_meta": {"type": "terminal", "args": ["--auth-type=openai"]}},
            {"id": "key", "name": "API key", "type": "env_var", "vars": [{"name": "CODEX_API_KEY"}]},
            {"id": "oauth", "name": "Browser"},
        ]
    }
    methods = translate.login_methods(init, Path("/bin/qwen"))
    assert methods == (
        TerminalLogin(("/bin/qwen", "--auth-type=openai"), "Use OpenAI"),
        EnvVarLogin("CODEX_API_KEY", "API key"),
    )


def test_permission_options_keep_the_first_option_of_each_kind() -> None:
    options = [
        {"optionId": "proceed_always_project", "kind": "allow_always"},
        {"optionId": "proceed_always_user", "kind": "allow_always"},
        {"optionId": "proceed_once", "kind": "allow_once"},
        {"optionId": "cancel", "kind": "reject_once"},
        {"optionId": "weird", "kind": "maybe"},
    ]
    choices, ids = translate.permission_options(options)
    assert choices == (PermissionChoice.ALLOW_ALWAYS, PermissionChoice.ALLOW_ONCE, PermissionChoice.DENY_ONCE)
    assert ids[PermissionChoice.ALLOW_ALWAYS] == "proceed_always_project"
    # two scopes of "always" (gemini, qwen) are still a permission, not a choice
    assert translate.permission_question(options, {"toolCallId": "t", "title": "touch"}) is None


def test_a_permission_whose_one_time_options_share_a_kind_is_a_question() -> None:
    options = [
        {"optionId": "red", "name": "Red", "kind": "allow_once"},
        {"optionId": "blue", "name": "Blue", "kind": "allow_once"},
        {"optionId": "none", "kind": "reject_once"},
        {"name": "no id", "kind": "reject_once"},
    ]
    question = translate.permission_question(options, {"toolCallId": "t1", "title": "Which colour?"})
    assert question == Question(
        "t1",
        "Which colour?",
        None,
        (QuestionChoice("red", "Red"), QuestionChoice("blue", "Blue"), QuestionChoice("none", "none")),
        multi_select=False,
        allows_free_text=False,
    )
    plain = [{"optionId": "y", "kind": "allow_once"}, {"optionId": "n", "kind": "reject_once"}]
    assert translate.permission_question(plain, {"toolCallId": "t1"}) is None


@pytest.mark.parametrize(
    ("reason", "stop"),
    [
        ("end_turn", Completed()),
        ("cancelled", Cancelled()),
        ("refusal", Refused()),
        (
            "max_turn_requests",
            Failed("the agent stopped: it reached its request limit for one turn (max_turn_requests)"),
        ),
        ("teapot", Failed("the agent stopped: teapot")),
    ],
)
def test_stop_reasons(reason: str, stop: object) -> None:
    assert translate.stop_reason({"stopReason": reason}) == stop


def test_config_options_select_grouped_and_boolean() -> None:
    options = translate.config_from_configoptions(
        [
            {
                "id": "model",
                "name": "Model",
                "type": "select",
                "currentValue": "b",
                "category": "model",
                "options": [
                    {"group": "g", "name": "G", "options": [{"value": "a", "name": "A"}, {"value": "b", "name": "B"}]}
                ],
            },
            {"id": "fast", "name": "Fast", "type": "boolean", "currentValue": True},
            {"id": "broken"},
        ]
    )
    assert [o.id for o in options] == ["model", "fast"]
    assert isinstance(options[0].kind, SelectKind) and [c.value for c in options[0].kind.choices] == ["a", "b"]
    assert options[0].current == "b" and options[0].category == "model"
    assert isinstance(options[1].kind, BooleanKind) and options[1].current is True


def test_usage_cost_only_in_usd() -> None:
    assert translate.usage({"used": 5, "size": 10, "cost": {"amount": 0.5, "currency": "USD"}}) == ContextUsage(
        5, 10, 0.5
    )
    assert translate.usage({"used": 5, "size": 10, "cost": {"amount": 0.5, "currency": "EUR"}}) == ContextUsage(5, 10)
    assert translate.usage({"size": 10}) is None


def test_tool_book_merges_wherever_a_tool_appears() -> None:
    book = translate.ToolBook(lambda terminal_id: "live output" if terminal_id == "term-1" else None)
    # first sight inside a permission request: no status means pending
    first = book.upsert(
        {
            "toolCallId": "a",
            "title": "Edit x",
            "kind": "edit",
            "content": [{"type": "diff", "path": "/x", "newText": "n"}],
        }
    )
    assert first is not None and first.status is ToolStatus.PENDING and first.diffs == (FileDiff("/x", "n"),)
    second = book.upsert({"toolCallId": "a", "status": "completed"})
    assert second is not None and second.status is ToolStatus.COMPLETED and second.title == "Edit x"
    assert second.kind is ToolKind.EDIT and second.diffs == first.diffs
    unknown = book.upsert(
        {"toolCallId": "b", "status": "in_progress", "content": [{"type": "terminal", "terminalId": "term-1"}]}
    )
    assert unknown is not None and unknown.output == "live output"
    assert book.upsert({"title": "no id"}) is None
    book.clear()
    assert book.get("a") is None
    fresh = book.upsert({"toolCallId": "a"})
    assert fresh is not None and fresh.title == "" and fresh.status is ToolStatus.PENDING


def test_tool_input_reads_common_shapes() -> None:
    tool = translate.tool_input({"command": ["git", "status"], "file_path": "/a", "description": "check"})
    assert tool.command == "git status" and tool.path == "/a" and tool.description == "check"
    assert tool.arguments["file_path"] == "/a"


def test_quirks_keep_only_known_hooks() -> None:
    quirks = Quirks.read(
        {
            "notifications": {"a/b": "mode_update", "c/d": "rm_rf"},
            "requests": {"x/y": "cursor_question"},
        }
    )
    assert quirks.notifications["a/b"] == "mode_update" and "c/d" not in quirks.notifications
    assert quirks.notifications["$/cancel_request"] == "withdraw_request"
    assert quirks.notifications["_auth/status_update"] == "auth_status"
    assert quirks.requests == {"x/y": "cursor_question"}
    assert Quirks.read(None) == Quirks()


def test_every_profile_quirk_parses_and_names_real_hooks() -> None:
    for profile in PROFILES:
        assert profile.wire == "acp"
        raw = dict(profile.quirks)
        quirks = Quirks.read(raw)
        builtin = {"$/cancel_request", "_auth/status_update"}  # every agent gets these
        assert len(quirks.notifications) - len(builtin) == len(raw.get("notifications", {})), profile.id
        assert len(quirks.requests) == len(raw.get("requests", {})), profile.id


def test_info_state_keeps_our_options_when_the_agent_replaces_its_own() -> None:
    from anyagent import Capabilities

    state = InfoState(Capabilities(), effort_prompt=EffortPrompt(("low", "high"), frozenset({"auto"})))
    state.adopt_session(
        {
            "modes": {
                "currentModeId": "ask",
                "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}],
            },
            "models": {"currentModelId": "m1", "availableModels": [{"modelId": "m1"}, {"modelId": "auto"}]},
            "configOptions": [
                {
                    "id": "depth",
                    "name": "Depth",
                    "type": "select",
                    "currentValue": "1",
                    "options": [{"value": "1", "name": "1"}],
                }
            ],
        }
    )
    assert state.setters == {
        "mode": Setter.MODE,
        "depth": Setter.CONFIG,
        "model": Setter.MODEL,
        "effort": Setter.EFFORT_PROMPT,
    }
    state.adopt_config_options(
        [{"id": "depth2", "name": "D", "type": "select", "currentValue": "x", "options": [{"value": "x", "name": "x"}]}]
    )
    assert sorted(state.setters) == ["depth2", "effort", "mode", "model"]
    assert state.select("model", "auto") and state.option("effort") is None


async def _discover(tmp_path: Path) -> object:
    async with Runtime(plugins=[anyagent_acp.plugin]) as runtime:
        return await runtime.discover()


@pytest.mark.anyio
async def test_the_plugin_registers_the_wire_and_the_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "qwen"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    runtime = Runtime(plugins=[anyagent_acp.plugin])
    registry = runtime.registry()
    assert "acp" in registry.adapters
    assert {"cursor", "grok", "hermes", "kiro", "qwen", "gemini", "claude-acp", "codex-acp"} <= set(registry.profiles)
    report = await _discover(tmp_path)
    qwen = report.get("qwen")
    assert qwen is not None and qwen.wire == "acp" and qwen.args == ("--acp",)
    assert qwen.executable_path.resolve() == fake.resolve()
    missing = {m.id: m for m in report.missing}
    assert "curl https://cursor.com/install" in missing["cursor"].install_hint


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"_meta": {"claudeCode": {"toolName": "mcp__gh__search"}}}, McpTool("gh", "search")),
        ({"rawInput": {"server": "gh", "tool": "search", "arguments": {}}}, McpTool("gh", "search")),
        ({"title": "Tool: gh/search"}, McpTool("gh", "search")),
        ({"title": "gh__search"}, McpTool("gh", "search")),
        ({"title": "mcp_gh_search"}, McpTool("gh", "search")),
        ({"title": "search (gh MCP Server)"}, McpTool("gh", "search")),
        ({"_meta": {"toolName": "mcp__gh-enterprise__list"}}, McpTool("gh-enterprise", "list")),
        ({"_meta": {"serverName": "gh", "toolName": "search"}}, McpTool("gh", "search")),
        ({"_meta": {"claudeCode": {"toolName": "mcp__acp__Write"}}}, None),  # not a server of the session
        ({"rawInput": {"server": "other", "tool": "x"}}, None),
        ({"title": "gh/search the repo"}, None),  # a sentence, not a name
        ({"title": "Run ls"}, None),
    ],
)
def test_mcp_tool_names_one_of_the_sessions_servers(fields: dict[str, Any], expected: McpTool | None) -> None:
    assert translate.mcp_tool(fields, ["gh", "gh-enterprise"]) == expected
    assert translate.mcp_tool(fields, []) is None


def test_terminal_streams_send_only_what_came_after_attach_and_decode_across_chunks() -> None:
    from anyagent_acp.client import TerminalStreams

    streams = TerminalStreams()
    assert streams.chunk("term-1", b"early", 5) is None  # not attached: the snapshot carries it
    streams.attach("term-1", "t1", (b"early", 5))
    streams.attach("term-1", "t2", (b"early", 5))  # the first tool keeps it
    assert streams.chunk("term-1", b"rly-late", 10) == ("t1", "-late")  # overlaps what the snapshot held
    euro = "\u20ac".encode()
    assert streams.chunk("term-1", euro[:1], 11) is None  # half a character waits for the rest
    assert streams.chunk("term-1", euro[1:], 13) == ("t1", "\u20ac")
    streams.clear()
    assert streams.chunk("term-1", b"x", 14) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"kind": "chatgpt", "label": "ChatGPT"}, Authenticated(AuthKind.SUBSCRIPTION)),
        ({"kind": "apiKey"}, Authenticated(AuthKind.API_KEY)),
        ({"kind": "gateway", "label": "Custom model gateway", "detail": "fake"}, Authenticated(AuthKind.OTHER)),
        ({"kind": "none"}, None),
        ({}, None),
        ("chatgpt", None),
    ],
)
def test_auth_status_proves_a_login_only_for_a_signed_in_kind(raw: object, expected: object) -> None:
    assert translate.auth_status(raw) == expected


def test_the_catalog_says_which_agents_prove_their_login_with_a_session() -> None:
    proven = {p.id for p in PROFILES if Quirks.read(p.quirks).login_proven_by_session}
    assert proven == {"qwen", "gemini", "hermes", "codex-acp"}


def test_profile_modes_name_portable_modes() -> None:
    from anyagent.toolkit import PORTABLE_MODES

    for profile in PROFILES:
        assert set(profile.modes.values()) <= set(PORTABLE_MODES), profile.id
    by_id = {p.id: dict(p.modes) for p in PROFILES}
    assert by_id["gemini"]["autoEdit"] == "accept-edits" and by_id["qwen"]["auto-edit"] == "accept-edits"
    assert by_id["claude-acp"]["bypassPermissions"] == "bypass-permissions"


def test_message_book_extends_repeats_rewrites_and_clears() -> None:
    book = translate.MessageBook()
    message_id, parts = book.chunk("agent_message", "a")
    parts.append("Hel")
    assert message_id == "a"
    assert book.upsert("agent_message", "a", "Hello") == translate.MessageEdit("a", "lo")
    assert book.upsert("agent_message", "a", "Hello") is None
    assert book.upsert("agent_message", "a", "Bye") == translate.MessageEdit("a~1", "Bye", "a")
    assert book.chunk("agent_message", "a")[0] == "a~1"  # chunks follow the replacement
    assert book.upsert("agent_message", "a", "") == translate.MessageEdit("a~2", "", "a~1")
    assert book.upsert("agent_message", "a", "again") == translate.MessageEdit("a~2", "again")
    assert book.upsert("agent_thought", "a", "x") == translate.MessageEdit("a", "x")  # kinds apart


def test_message_book_forgets_the_oldest_message() -> None:
    book = translate.MessageBook()
    for index in range(translate.MESSAGES_KEPT + 1):
        book.upsert("agent_message", f"m{index}", "text")
    assert not book.known("agent_message", "m0") and book.known("agent_message", f"m{translate.MESSAGES_KEPT}")


def test_structured_diff_without_patch_or_with_a_rename() -> None:
    patch = (
        "diff --git a/old/name.txt b/new/name.txt\n"
        "similarity index 90%\n"
        "rename from old/name.txt\n"
        "rename to new/name.txt\n"
        "--- a/old/name.txt\n"
        "+++ b/new/name.txt\n"
        "@@ -1,2 +1,2 @@\n"
        " keep\n"
        "-old\n"
        "+new\n"
    )
    moved = {
        "type": "diff",
        "changes": [{"operation": "move", "oldPath": "old/name.txt", "path": "new/name.txt"}],
        "patch": {"format": "git_patch", "text": patch},
    }
    assert translate.structured_diffs(moved) == [FileDiff("new/name.txt", "keep\nnew\n", "keep\nold\n")]
    bare = {"type": "diff", "changes": [{"operation": "modify", "path": "/w/a"}]}
    assert translate.structured_diffs(bare) == [] and translate.diff_paths(bare) == ["/w/a"]
    other = {**moved, "patch": {"format": "_unified", "text": patch}}  # a format v2 does not define
    assert translate.structured_diffs(other) == []


def test_a_v2_command_subject_naming_a_shown_tool_changes_none_of_it() -> None:
    params = {"title": "Run make?", "subject": {"type": "command", "command": "make", "cwd": "/w", "toolCallId": "t"}}
    assert translate.permission_subject_v2(params, lambda tool_id: tool_id == "t") == {"toolCallId": "t"}
    fresh = translate.permission_subject_v2(params)
    assert fresh["kind"] == "execute" and fresh["rawInput"] == {"command": "make", "cwd": "/w"}
    assert fresh["title"] == "Run make?" and "content" not in fresh
