"""Live tier: the pinned real ``claude`` (2.1.332) against the testkit's fake model.

Run with ``pytest --live``. With ``ANYAGENT_CLAUDE_RECORD=1`` each scenario also rewrites its
recording under ``tests/recordings/`` (the recorded tier replays those files).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from claude_harness import RECORDINGS, SANITIZED_ROOT, Harness, recording_wanted, runtime_with_env, sanitize
from claude_scenarios import SCENARIOS

from anyagent import AgentInstallation, AuthRequired, McpServer, SessionOptions, Unauthenticated, UnsupportedFeature
from anyagent_testkit.live import LiveAgent

pytestmark = [pytest.mark.live, pytest.mark.anyio]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_scenario(name: str, live_agent: Callable[..., LiveAgent], fake_model: object, tmp_path: Path) -> None:
    agent = live_agent("claude")
    record = tmp_path / f"{name}.jsonl" if recording_wanted() else None
    installation = AgentInstallation.at("claude", agent.executable)
    async with runtime_with_env(agent.env) as runtime:
        await SCENARIOS[name].run(Harness(runtime, installation, agent.workspace, fake_model, record, agent.home))
    if record is not None:
        sanitize(
            record,
            RECORDINGS / f"{name}.jsonl",
            {str(agent.root): SANITIZED_ROOT, str(agent.executable): "claude"},
        )


async def test_logged_out_is_auth_required_with_runnable_logins(live_agent: Callable[..., LiveAgent]) -> None:
    agent = live_agent("claude")
    env = {key: value for key, value in agent.env.items() if key != "ANTHROPIC_API_KEY"}
    installation = AgentInstallation.at("claude", agent.executable)
    async with runtime_with_env(env) as runtime:
        with pytest.raises(AuthRequired) as caught:
            await runtime.open(installation, SessionOptions.in_dir(agent.workspace))
        commands = [getattr(method, "command", None) for method in caught.value.login]
        assert (str(agent.executable), "auth", "login") in commands
        assert any(getattr(method, "name", None) == "ANTHROPIC_API_KEY" for method in caught.value.login)
        auth = await runtime.probe_auth(installation)
        assert isinstance(auth, Unauthenticated)


async def test_plan_usage_needs_a_subscription(live_agent: Callable[..., LiveAgent]) -> None:
    agent = live_agent("claude")
    installation = AgentInstallation.at("claude", agent.executable)
    async with runtime_with_env(agent.env) as runtime:
        with pytest.raises(UnsupportedFeature):
            await runtime.plan_usage(installation)


MCP_ENV_SERVER = r"""
import json, os, sys
with open(os.environ["PROBE_OUT"], "w") as out:
    out.write(os.environ.get("PROBE_SECRET", ""))
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or message.get("method") is None:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": message.get("params", {}).get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "probe", "version": "1"}}
    elif message["method"] == "tools/list":
        result = {"tools": []}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


async def test_mcp_secrets_reach_the_server_from_a_private_file_not_argv(
    live_agent: Callable[..., LiveAgent], fake_model: object, tmp_path: Path
) -> None:
    """The real claude reads ``--mcp-config`` from the 0600 file: the stdio server starts with its env
    value, which is in neither claude's command line nor the wire recording."""
    import sys

    import anyio

    agent = live_agent("claude")
    out = tmp_path / "probe.out"
    secret = "s3cret-value-for-the-probe"
    server = McpServer.stdio(
        "probe", sys.executable, ["-c", MCP_ENV_SERVER], {"PROBE_SECRET": secret, "PROBE_OUT": str(out)}
    )
    options = SessionOptions.in_dir(agent.workspace).mcp_server(server).record_wire(tmp_path / "wire.jsonl")
    installation = AgentInstallation.at("claude", agent.executable)
    async with runtime_with_env(agent.env) as runtime:
        session, _events = await runtime.open(installation, options)
        async with session:
            with anyio.fail_after(60):
                while not out.exists() or not out.read_text():
                    await anyio.sleep(0.1)
            assert out.read_text() == secret
            assert not _on_a_command_line(secret)
    assert secret not in (tmp_path / "wire.jsonl").read_text(encoding="utf-8")


def _on_a_command_line(secret: str) -> bool:
    """Whether any process's ``/proc/PID/cmdline`` holds ``secret``."""
    for path in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if secret.encode() in path.read_bytes():
                return True
        except OSError:
            continue
    return False
