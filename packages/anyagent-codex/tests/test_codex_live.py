"""Live tier: the pinned real ``codex`` (0.171.0 ``app-server``) against the testkit's fake model.

Run with ``pytest --live``. With ``ANYAGENT_CODEX_RECORD=1`` each scenario also rewrites its
recording under ``tests/recordings/`` (the recorded tier replays those files).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import attrs
import codex_usage_scenarios  # noqa: F401 (its scenarios join SCENARIOS)
import pytest
from codex_backend import ChatgptBackend, write_chatgpt_login
from codex_harness import RECORDINGS, SANITIZED_ROOT, Harness, recording_wanted, runtime_with_env, sanitize
from codex_scenarios import SCENARIOS

from anyagent import (
    AgentInstallation,
    AuthRequired,
    McpServer,
    Runtime,
    SessionOptions,
    TurnEnded,
    Unauthenticated,
    UnsupportedFeature,
)
from anyagent_testkit.live import LiveAgent

pytestmark = [pytest.mark.live, pytest.mark.anyio]


def installation(agent: LiveAgent) -> AgentInstallation:
    """The pinned codex with the live tier's arguments (the profile's, plus the offline flags)."""
    return attrs.evolve(AgentInstallation.at("codex", agent.executable), args=agent.args)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_scenario(name: str, live_agent: Callable[..., LiveAgent], fake_model: object, tmp_path: Path) -> None:
    agent = live_agent("codex")
    spec = SCENARIOS[name]
    env = dict(agent.env)
    if spec.bad_key:
        env["FAKE_API_KEY"] = "sk-bad-key"  # the fake model answers 401
    if spec.dead_model:
        config = Path(env["CODEX_HOME"]) / "config.toml"
        text = re.sub(r'base_url = "[^"]*"', 'base_url = "http://127.0.0.1:9/v1"', config.read_text())
        config.write_text(text)
    record = tmp_path / f"{name}.jsonl" if recording_wanted() else None
    async with runtime_with_env(env, spec.max_retries) as runtime:
        agent_at = attrs.evolve(installation(agent), args=(*agent.args, *spec.codex_args))
        await SCENARIOS[name].run(Harness(runtime, agent_at, agent.workspace, fake_model, record))
    if record is not None:
        sanitize(
            record,
            RECORDINGS / f"{name}.jsonl",
            {str(agent.root): SANITIZED_ROOT, str(agent.executable): "codex", sys.executable: "python"},
        )


async def test_logged_out_is_auth_required_with_the_login(live_agent: Callable[..., LiveAgent]) -> None:
    agent = live_agent("codex")
    (Path(agent.env["CODEX_HOME"]) / "config.toml").write_text("check_for_update_on_startup = false\n")
    async with runtime_with_env(agent.env) as runtime:
        with pytest.raises(AuthRequired) as caught:
            await runtime.open(installation(agent), SessionOptions.in_dir(agent.workspace))
        commands = [getattr(method, "command", None) for method in caught.value.login]
        assert (str(agent.executable), "login") in commands
        assert isinstance(await runtime.probe_auth(installation(agent)), Unauthenticated)


async def test_plan_usage_is_unsupported_for_a_provider_login(
    live_agent: Callable[..., LiveAgent], monkeypatch: pytest.MonkeyPatch
) -> None:
    """codex pushes rate-limit windows from any provider's headers (scenario plan-usage-from-headers),
    but ``account/rateLimits/read`` needs a ChatGPT login: no ``PlanUsage`` capability here."""
    agent = live_agent("codex")
    for key, value in agent.env.items():  # plan_usage launches with the process environment
        monkeypatch.setenv(key, value)
    async with runtime_with_env(agent.env) as runtime:
        with pytest.raises(UnsupportedFeature, match="authentication required to read rate limits"):
            await runtime.plan_usage(installation(agent))


async def test_plan_usage_reads_a_chatgpt_plan(
    live_agent: Callable[..., LiveAgent], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ChatGPT login (offline: ``codex_backend``): ``runtime.plan_usage`` is codex's
    ``account/rateLimits/read``, which asks the backend's ``/wham/usage`` with the login's token."""
    agent = live_agent("codex")
    with ChatgptBackend() as backend:
        write_chatgpt_login(Path(agent.env["CODEX_HOME"]), backend.url)
        for key, value in agent.env.items():  # plan_usage launches with the process environment
            monkeypatch.setenv(key, value)
        async with runtime_with_env(agent.env) as runtime:
            usage = await runtime.plan_usage(installation(agent))
    assert "/backend-api/wham/usage" in backend.paths
    assert all(token.startswith("Bearer ey") for token in backend.tokens), "codex sent the login's token"
    assert usage.plan == "plus"
    assert [(w.label, w.used_percent, w.resets_at) for w in usage.windows] == [
        ("5h", 42.0, datetime.fromtimestamp(1_900_000_000, timezone.utc)),
        ("7d", 7.0, datetime.fromtimestamp(1_900_604_800, timezone.utc)),
    ]


async def test_generate_returns_the_text(live_agent: Callable[..., LiveAgent]) -> None:
    agent = live_agent("codex")
    async with runtime_with_env(agent.env) as runtime:
        text = await runtime.generate(installation(agent), SessionOptions.in_dir(agent.workspace), "name a colour")
    assert text == "Hello from the fake model. You said: name a colour"


async def test_config_home_moves_codex_home(
    live_agent: Callable[..., LiveAgent], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``SessionOptions.config_home`` sets ``CODEX_HOME`` through the profile (the real runtime path)."""
    agent = live_agent("codex")
    other = tmp_path / "second-login"
    other.mkdir()
    (other / "config.toml").write_text((Path(agent.env["CODEX_HOME"]) / "config.toml").read_text())
    for key, value in agent.env.items():
        monkeypatch.setenv(key, value)
    import anyagent_codex.plugin

    async with Runtime(plugins=[anyagent_codex.plugin]) as runtime:
        options = SessionOptions.in_dir(agent.workspace).config_home(other)
        session, events = await runtime.open(installation(agent), options)
        async with session:
            await session.prompt("hello")
            async for event in events:
                if isinstance(event.kind, TurnEnded):
                    break
    assert list((other / "sessions").rglob("*.jsonl")), "the thread was stored under the config home"
    assert not (Path(agent.env["CODEX_HOME"]) / "sessions").exists()


MCP_SERVER = r"""
import json, sys
from pathlib import Path
Path(sys.argv[1]).write_text("started")
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message.get("method")
    if method == "initialize":
        result = {"protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "marker", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "ping", "description": "answers pong", "inputSchema": {"type": "object"}}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


async def test_a_stdio_mcp_server_rides_as_the_thread_config(
    live_agent: Callable[..., LiveAgent], fake_model: Any, tmp_path: Path
) -> None:
    agent = live_agent("codex")
    script, marker = tmp_path / "mcp_marker.py", tmp_path / "mcp-started"
    script.write_text(MCP_SERVER)
    server = McpServer.stdio("marker", sys.executable, [str(script), str(marker)])
    async with runtime_with_env(agent.env) as runtime:
        options = SessionOptions.in_dir(agent.workspace).mcp_server(server)
        session, events = await runtime.open(installation(agent), options)
        async with session:
            await session.prompt("hello")
            async for event in events:
                if isinstance(event.kind, TurnEnded):
                    break
    assert marker.read_text() == "started", "codex launched the MCP server the thread config named"
    offered = json.dumps(fake_model.model_calls()[-1].body.get("tools"))
    assert "ping" in offered and "answers pong" in offered, "the model was offered the MCP server's tool"
