"""stdlib logging: the ``anyagent`` logger hierarchy — wire frames at DEBUG (``anyagent.wire``),
sessions and turns at INFO (``anyagent.runtime``, ``anyagent.engine``) — never a secret, and never
imported by ``import anyagent``. Real child processes; every async test on asyncio and trio."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from anyagent import Runtime, SessionOptions, TurnEnded
from anyagent.mock import Script, Step, completed, text
from anyagent.process import spawn
from anyagent.wire import JsonLines

pytestmark = pytest.mark.anyio

AGENT = (
    "import sys, json\n"
    "print(json.dumps({'type': 'hello', 'apiKey': 'sk-ant-abcdefghijklmnop', 'usage': {'input_tokens': 12},"
    " 'note': 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz'}), flush=True)\n"
    "line = sys.stdin.readline()\n"
    "print(line.strip(), flush=True)\n"
)


async def test_wire_frames_are_logged_at_debug_with_every_secret_redacted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="anyagent")
    process = await spawn([sys.executable, "-c", AGENT], cwd=tmp_path)
    try:
        lines = JsonLines(process)
        hello = await lines.receive()
        assert isinstance(hello, dict) and hello["apiKey"] == "sk-ant-abcdefghijklmnop"  # the frame itself is whole
        await lines.send({"type": "login", "password": "hunter2-secret", "text": "key sk-live-0123456789abcdef"})
        await lines.receive()
    finally:
        await process.aclose(grace=0.5)
    wire = [r for r in caplog.records if r.name == "anyagent.wire"]
    assert [r.levelno for r in wire] == [logging.DEBUG] * 3
    received, sent, echoed = (r.getMessage() for r in wire)
    assert received.startswith(f"pid {process.pid} -> ") and sent.startswith(f"pid {process.pid} <- ")
    everything = "\n".join((received, sent, echoed))
    for secret in ("abcdefghijklmnop", "hunter2", "0123456789abcdef", "qrstuvwxyz"):
        assert secret not in everything
    frame = json.loads(received.split(" -> ", 1)[1])
    assert frame["apiKey"] == "<redacted>" and frame["usage"] == {"input_tokens": 12}  # counts are kept
    assert frame["note"] == "Authorization: Bearer <redacted>"
    assert (
        json.loads(sent.split(" <- ", 1)[1])["text"] == "key sk-live-0<redacted>"
    )  # a prefix names the key, the rest is gone


async def test_sessions_and_turns_are_logged_at_info(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="anyagent")
    script = Script().turn([Step.emit(text("m1", "hi")), Step.end(completed())])
    async with Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir(tmp_path))
        async with session:
            await session.prompt("hello")
            async for event in events:
                if isinstance(event.kind, TurnEnded):
                    break
    messages = [(r.name, r.levelname, r.getMessage()) for r in caplog.records if r.name.startswith("anyagent")]
    assert ("anyagent.runtime", "INFO", f"opening mock ({agent.executable_path}) in {tmp_path}") in messages
    assert ("anyagent.runtime", "INFO", "opened session s1 on mock mock") in messages
    assert ("anyagent.engine", "INFO", "session s1: turn t1 started (PromptOrigin)") in messages
    assert ("anyagent.engine", "INFO", "session s1: turn t1 ended Completed") in messages
    assert messages[-1] == ("anyagent.runtime", "INFO", "session s1 closed")


async def test_nothing_is_logged_below_the_configured_level(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="anyagent")
    process = await spawn([sys.executable, "-c", AGENT], cwd=tmp_path)
    try:
        await JsonLines(process).receive()
    finally:
        await process.aclose(grace=0.5)
    assert [r for r in caplog.records if r.name.startswith("anyagent")] == []


def test_import_anyagent_does_not_import_logging() -> None:
    code = "import sys, anyagent, anyagent.wire; print('logging' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "False"
