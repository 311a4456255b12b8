"""Scenarios (both tiers) for what codex learns from the model provider and from MCP servers:
plan usage from rate-limit response headers, the fast service tier, an HTTP MCP server's tool.

Live, the fake model answers with ``x-codex-*`` rate-limit headers, and a loopback streamable-HTTP
MCP server (``codex_mcp``) serves the tool; recorded, the replayed wire carries what codex made of
them. Importing this module registers the scenarios in ``codex_scenarios.SCENARIOS``.
"""

from __future__ import annotations

import sys
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path

from codex_harness import Harness
from codex_mcp import FORM_ANSWER, FORM_SERVER, LOOKUP_ANSWER, HttpMcpServer
from codex_scenarios import _ended, _skills_listed, opened, scenario

from anyagent import (
    Answer,
    Capability,
    Completed,
    Diagnostic,
    DiagnosticCode,
    Event,
    McpServer,
    McpTool,
    PermissionChoice,
    PermissionRequest,
    PlanUsageUpdated,
    RequestOpened,
    Session,
    SessionUpdated,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
)
from anyagent_testkit.events import kinds
from anyagent_testkit.fakemodel import Reply

PRIMARY_RESET, SECONDARY_RESET = 1_900_000_000, 1_900_604_800
RATE_LIMIT_HEADERS = {
    "x-codex-primary-used-percent": "42.5",
    "x-codex-primary-window-minutes": "300",
    "x-codex-primary-reset-at": str(PRIMARY_RESET),
    "x-codex-secondary-used-percent": "7",
    "x-codex-secondary-window-minutes": "10080",
    "x-codex-secondary-reset-at": str(SECONDARY_RESET),
}
"""What a provider's model response says about the account's windows (codex parses these headers
on every model response, whatever the login, and pushes ``account/rateLimits/updated``)."""


@scenario
async def plan_usage_from_headers(h: Harness) -> None:
    if h.fake is not None:
        h.fake.queue(Reply.text("usage noted").with_headers(RATE_LIMIT_HEADERS))
    async with opened(h) as (session, reader):
        details = session.info().details
        assert Capability.PLAN_USAGE not in details.capabilities, "an API-key provider: plan_usage has no numbers"
        await session.prompt("how much have I used")
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
        [usage] = [update.usage for update in kinds(turn, PlanUsageUpdated)]  # type: ignore[attr-defined]
        windows = [(w.label, w.used_percent, w.resets_at) for w in usage.windows]
        assert windows == [
            ("5h", 43.0, datetime.fromtimestamp(PRIMARY_RESET, timezone.utc)),  # codex rounds 42.5 up
            ("7d", 7.0, datetime.fromtimestamp(SECONDARY_RESET, timezone.utc)),
        ]
        assert usage.plan is None, "headers carry no plan name"


@scenario
async def fast_service_tier(h: Harness) -> None:
    async with opened(h) as (session, reader):
        await _skills_listed(reader)
        assert session.info().details.option("fast") is None, "the fake model has no catalog entry, so no tiers"
        await session.configure("model", "gpt-5.5")
        info = (await reader.kind(SessionUpdated)).info
        fast = info.details.option("fast")
        assert fast is not None and fast.current is False, "gpt-5.5 lists the Fast tier (id priority)"
        await session.configure("fast", True)
        info = (await reader.kind(SessionUpdated)).info
        assert info.configuration["fast"] is True
        await session.prompt("go fast")
        assert isinstance(_ended(await reader.turn()).stop, Completed)
        await session.prompt("still fast")
        assert isinstance(_ended(await reader.turn()).stop, Completed)
        await session.configure("fast", False)
        info = (await reader.kind(SessionUpdated)).info
        assert info.configuration["fast"] is False
        await session.prompt("slow again")
        assert isinstance(_ended(await reader.turn()).stop, Completed)
    if h.fake is not None:
        tiers = [call.body.get("service_tier") for call in h.fake.model_calls()[-3:]]
        assert tiers == ["priority", "priority", None], "the tier rides the request and sticks until turned off"


MCP_PLACEHOLDER = "http://127.0.0.1:9/mcp"
"""The URL the recorded tier gives (no server runs: the replayed wire stands for codex)."""


async def _lookup(h: Harness, session: Session, query: str) -> None:
    if h.fake is not None:  # queued per turn: the tool result's request takes the next reply
        h.fake.queue(Reply.tool("lookup", query=query))
    await session.prompt(f"look up {query}")


def _final_call(turn: list[Event], tool_id: str | None = None) -> ToolUpdate:
    [*_, final] = [
        u.tool
        for u in kinds(turn, ToolUpdated)  # type: ignore[arg-type]
        if tool_id in (None, u.tool.id) and u.tool.kind == McpTool("catalogue", "lookup")
    ]
    return final  # type: ignore[no-any-return]


@scenario
async def mcp_http_tool(h: Harness) -> None:
    """Allow once (the result comes back), deny (the call fails), allow always (codex stops asking)."""
    with ExitStack() as stack:
        url = MCP_PLACEHOLDER
        mcp = None
        if h.fake is not None:
            mcp = stack.enter_context(HttpMcpServer())
            url = mcp.url
        options = h.options().mcp_server(McpServer.http("catalogue", url))
        async with opened(h, options) as (session, reader):
            answers = (("kiwi", PermissionChoice.ALLOW_ONCE), ("plum", PermissionChoice.DENY_ONCE))
            for query, choice in (*answers, ("fig", PermissionChoice.ALLOW_ALWAYS)):
                await _lookup(h, session, query)
                request = (await reader.kind(RequestOpened)).request
                assert isinstance(request, PermissionRequest), request
                assert request.tool.kind == McpTool("catalogue", "lookup"), request.tool
                assert request.tool.input.arguments == {"query": query}
                assert PermissionChoice.ALLOW_ALWAYS in request.options, "codex offers to remember it for the session"
                await session.answer(request.id, Answer.permission(choice))
                turn = await reader.turn()
                assert isinstance(_ended(turn).stop, Completed)
                final = _final_call(turn, request.tool.id)
                if choice is PermissionChoice.DENY_ONCE:
                    assert final.status is ToolStatus.FAILED, final
                else:
                    assert final.status is ToolStatus.COMPLETED and final.output == LOOKUP_ANSWER + query, final
            await _lookup(h, session, "date")
            turn = await reader.turn()
            assert not kinds(turn, RequestOpened), "allowed for the session: codex no longer asks"
            final = _final_call(turn)
            assert final.status is ToolStatus.COMPLETED and final.output == LOOKUP_ANSWER + "date", final
        if mcp is not None:
            assert mcp.methods().count("tools/call") == 3, mcp.methods()
            assert h.fake is not None
            asked, answered = h.fake.model_calls()[-8:-6]  # the first turn: the call, then its result
            offered = str(asked.body.get("tools"))
            assert "mcp__catalogue" in offered and "lookup" in offered, "the MCP tool was offered to the model"
            assert LOOKUP_ANSWER + "kiwi" in str(answered.body), "the result went back to the model"


@scenario
async def mcp_server_form_declined(h: Harness) -> None:
    """A server's own form (an elicitation that is not codex's tool approval) has no surface: the
    adapter declines it and says so; the tool sees the decline."""
    if h.fake is not None:
        h.fake.queue(Reply.tool("ask"))
    server = McpServer.stdio("form", sys.executable, ["-c", FORM_SERVER])
    async with opened(h, h.options().mcp_server(server)) as (session, reader):
        await session.prompt("ask me")
        request = (await reader.kind(RequestOpened)).request
        assert isinstance(request, PermissionRequest) and request.tool.kind == McpTool("form", "ask")
        await session.answer(request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        turn = await reader.turn()
        assert isinstance(_ended(turn).stop, Completed)
        [said] = [e.diagnostic for e in kinds(turn, Diagnostic) if e.diagnostic.code == DiagnosticCode.UNSUPPORTED]  # type: ignore[attr-defined]
        assert "form" in said.message and "declined" in said.message
        final = [u.tool for u in kinds(turn, ToolUpdated) if u.tool.kind == McpTool("form", "ask")][-1]  # type: ignore[attr-defined]
        assert final.status is ToolStatus.COMPLETED and final.output == FORM_ANSWER + "decline", final


SECRET_ENV = "env-secret-4d1c9a"
"""An MCP server's env value: codex hands it to the server, and nothing else keeps it."""
SECRET_HEADER = "Bearer header-secret-7f3a2e"
"""An HTTP MCP server's ``Authorization`` value: codex sends it, and nothing else keeps it."""
ENV_SERVER = r"""
import json, os, sys
from pathlib import Path
Path(sys.argv[1]).write_text(os.environ.get("MCP_SECRET", "(unset)"))
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message.get("method")
    if method == "initialize":
        result = {"protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "vault", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "peek", "description": "says nothing", "inputSchema": {"type": "object"}}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


def _cmdlines_holding(*secrets: str) -> list[str]:
    """Every process whose command line (``/proc/PID/cmdline``, readable by any local user) holds
    one of ``secrets``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().decode("utf-8", "replace")
        except OSError:
            continue  # the process ended
        if any(secret in text for secret in secrets):
            found.append(f"{cmdline.parent.name}: {text[:200]!r}")
    return found


@scenario
async def mcp_secrets_stay_off_argv(h: Harness) -> None:
    """MCP env values and header values reach the servers (live: the stdio server sees its env,
    the HTTP server its header) but no command line, and the wire recording keeps them as
    ``<redacted>``: they ride ``thread/start``'s ``config`` over stdin, not ``-c`` on argv."""
    wire = h.record or h.workspace.parent / "secrets-wire.jsonl"
    marker = h.workspace.parent / "vault-env"
    with ExitStack() as stack:
        url = MCP_PLACEHOLDER
        mcp = None
        if h.fake is not None:
            mcp = stack.enter_context(HttpMcpServer())
            url = mcp.url
        vault = McpServer.stdio("vault", sys.executable, ["-c", ENV_SERVER, str(marker)], {"MCP_SECRET": SECRET_ENV})
        options = (
            h.options()
            .record_wire(wire)
            .mcp_server(vault)
            .mcp_server(McpServer.http("catalogue", url).with_header("Authorization", SECRET_HEADER))
        )
        async with opened(h, options) as (session, reader):
            await session.prompt("hello")
            turn = await reader.turn()
            assert isinstance(_ended(turn).stop, Completed)
            if h.live:
                assert not _cmdlines_holding(SECRET_ENV, SECRET_HEADER), "a secret is on a command line"
                assert marker.read_text() == SECRET_ENV, "codex started the stdio server with its env"
        if mcp is not None:
            assert SECRET_HEADER in mcp.authorizations, "codex sent the HTTP server its header"
    recorded = wire.read_text(encoding="utf-8")
    assert SECRET_ENV not in recorded and "header-secret" not in recorded, "the recording kept a secret"
    starts = [line for line in recorded.splitlines() if '"method":"thread/start"' in line]
    assert starts and all('"<redacted>"' in line for line in starts), "the thread's config carried them"
    metas = [line for line in recorded.splitlines() if line.startswith('{"_meta":')]
    assert metas and not any("<redacted>" in line or "MCP_SECRET" in line for line in metas), "argv held none"
