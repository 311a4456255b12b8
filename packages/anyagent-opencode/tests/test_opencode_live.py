"""Live tier: the pinned real ``opencode`` (1.18.33) against the testkit's fake model.

Run with ``pytest -m live --live``. One ``opencode serve`` per scenario (each runs many turns in
one session). With ``ANYAGENT_OPENCODE_RECORD=1`` each scenario also rewrites its recording under
``tests/recordings/`` (the recorded tier replays those files).
"""

from __future__ import annotations

import os
import signal
import struct
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
import pytest
from opencode_harness import (
    RECORDINGS,
    SANITIZED_ROOT,
    WAIT,
    listening_on,
    proc_file,
    recording_wanted,
    runtime_with_env,
    sanitize,
    server_password,
)
from opencode_scenarios import SCENARIOS, Stage, failing

from anyagent import (
    AgentInstallation,
    Authenticated,
    Completed,
    Failed,
    Input,
    ResumeFailed,
    SessionOptions,
    TextDelta,
    TurnEnded,
    seam,
)
from anyagent_opencode import PROFILE, OpencodeAdapter, OpencodeDriver
from anyagent_testkit.events import EventReader, kinds, text_of
from anyagent_testkit.fakemodel import ECHO_PREFIX, FakeModel
from anyagent_testkit.live import LiveAgent

pytestmark = [pytest.mark.live, pytest.mark.anyio]


def _png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0\xff\0\0"))
        + chunk(b"IEND", b"")
    )


PNG = _png()
"""A 1x1 PNG."""


@pytest.fixture
def anyio_backend() -> str:
    """The live tier runs on asyncio only (the recorded tier covers trio): it keeps CI tight."""
    return "asyncio"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_scenario(name: str, live_agent: Callable[..., LiveAgent], fake_model: FakeModel, tmp_path: Path) -> None:
    agent = live_agent("opencode")
    record = tmp_path / f"{name}.jsonl"
    installation = AgentInstallation.at("opencode", agent.executable)
    options = SessionOptions.in_dir(agent.workspace).record_wire(record)
    async with runtime_with_env(agent.env) as runtime:
        session, events = await runtime.open(installation, options)
        async with session:
            await SCENARIOS[name](Stage(session, EventReader(events, timeout=WAIT), fake_model))
    if recording_wanted():
        sanitize(
            record, RECORDINGS / f"{name}.jsonl", {str(agent.root): SANITIZED_ROOT, str(agent.executable): "opencode"}
        )


async def test_resume_in_a_new_server_and_fork(live_agent: Callable[..., LiveAgent], fake_model: FakeModel) -> None:
    agent = live_agent("opencode")
    installation = AgentInstallation.at("opencode", agent.executable)
    async with runtime_with_env(agent.env) as runtime:
        session, events = await runtime.open(installation, SessionOptions.in_dir(agent.workspace))
        async with session:
            token = session.info().resume_token
            await session.prompt("remember the word kumquat")
            assert isinstance((await EventReader(events, timeout=WAIT).turn())[-1].kind.stop, Completed)
            closing = time.monotonic()
        closed_in = time.monotonic() - closing  # opencode ignores stdin EOF: SIGTERM at once, not after 2 s
        assert closed_in < 1.5, f"close took {closed_in:.2f} s"
        assert token is not None and token.startswith("ses_")  # and the session outlived the SIGTERM:

        resumed, events = await runtime.open(installation, SessionOptions.in_dir(agent.workspace).resume(token))
        async with resumed:
            assert resumed.info().resume_token == token
            await resumed.prompt("what was the word")
            await EventReader(events, timeout=WAIT).turn()
        sent = str(fake_model.model_calls()[-1].body)
        assert "kumquat" in sent and "what was the word" in sent  # the history came along

        forked, events = await runtime.open(installation, SessionOptions.in_dir(agent.workspace).fork_from(token))
        async with forked:
            assert forked.info().resume_token not in (None, token)
            image = agent.workspace / "dot.png"
            image.write_bytes(PNG)
            await forked.prompt(Input("in the fork, look at this", attachments=(image,)))
            turn = await EventReader(events, timeout=WAIT).turn()
            assert isinstance(kinds(turn, TurnEnded)[-1].stop, Completed), kinds(turn, TurnEnded)
        sent = str(fake_model.model_calls()[-1].body)
        assert "in the fork, look at this" in sent and "kumquat" in sent  # the fork kept the history
        assert "data:image/png;base64," in sent  # the image went to the model

        with pytest.raises(ResumeFailed):
            await runtime.open(installation, SessionOptions.in_dir(agent.workspace).resume("ses_doesnotexist"))


async def test_model_error_fails_the_turn(live_agent: Callable[..., LiveAgent], fake_model: FakeModel) -> None:
    agent = live_agent("opencode")
    async with runtime_with_env(agent.env) as runtime:
        session, events = await runtime.open(
            AgentInstallation.at("opencode", agent.executable), SessionOptions.in_dir(agent.workspace)
        )
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await failing(Stage(session, reader, fake_model))
            assert "init" in {c.name for c in session.info().details.commands}
            calls = len(fake_model.model_calls())
            await session.prompt("/init")  # a slash command: POST /session/{id}/command
            assert isinstance(kinds(await reader.turn(), TurnEnded)[-1].stop, Completed)
            assert "AGENTS.md" in str(fake_model.model_calls()[calls:])  # opencode's init template


async def test_generate_probe_and_auth(live_agent: Callable[..., LiveAgent], fake_model: FakeModel) -> None:
    agent = live_agent("opencode")
    installation = AgentInstallation.at("opencode", agent.executable)
    async with runtime_with_env(agent.env) as runtime:
        text = await runtime.generate(installation, SessionOptions.in_dir(agent.workspace), "one line please")
        assert text.startswith(ECHO_PREFIX + "one line please")
        assert isinstance(await runtime.probe_auth(installation), Authenticated)
        details = await runtime.probe(installation)
        assert details.version == "1.18.33"
        assert {o.id for o in details.config_options} >= {"model"}
        assert details.commands  # opencode's slash commands (GET /command)


async def test_the_server_is_private(
    live_agent: Callable[..., LiveAgent], fake_model: FakeModel, tmp_path: Path
) -> None:
    """401 without the password; the password is not in argv, not in the recording; loopback only."""
    agent = live_agent("opencode")
    record = tmp_path / "wire.jsonl"
    installation = AgentInstallation.at("opencode", agent.executable)
    options = SessionOptions.in_dir(agent.workspace).record_wire(record)
    request = seam.ConnectRequest(installation, PROFILE, options, "s1", dict(agent.env))
    driver = await OpencodeAdapter().connect(request)
    assert isinstance(driver, OpencodeDriver)
    try:
        pid = driver.process.pid
        secret = server_password(pid)
        assert len(secret) >= 32
        assert secret not in proc_file(pid, "cmdline")
        url = str(driver.http._client.base_url)
        assert url.startswith("http://127.0.0.1:")
        async with httpx.AsyncClient(trust_env=False) as bare:
            assert (await bare.get(url + "/global/health")).status_code == 401
            assert (await bare.get(url + "/session")).status_code == 401
            wrong = await bare.get(url + "/global/health", auth=("opencode", "wrong"))
            assert wrong.status_code == 401
        port = int(url.rsplit(":", 1)[1].rstrip("/"))
        assert listening_on(port) == ["0100007F"]  # 127.0.0.1 only: no 0.0.0.0, no IPv6
    finally:
        await driver.aclose()
    assert secret.decode() not in await anyio.Path(record).read_text()
    assert secret.decode() not in driver.process.stderr_tail + driver.process.stdout_tail


async def test_process_death_fails_the_turn(live_agent: Callable[..., LiveAgent], fake_model: FakeModel) -> None:
    agent = live_agent("opencode")
    installation = AgentInstallation.at("opencode", agent.executable)
    async with runtime_with_env(agent.env) as runtime:
        session, events = await runtime.open(installation, SessionOptions.in_dir(agent.workspace))
        reader = EventReader(events, timeout=WAIT)
        async with session:
            await session.prompt("SLOW 60")
            await reader.kind(TextDelta)
            driver = session._engine.driver
            assert isinstance(driver, OpencodeDriver)
            os.kill(driver.process.pid, signal.SIGKILL)
            seen = await reader.turn()
            assert isinstance(kinds(seen, TurnEnded)[-1].stop, Failed)
            assert text_of(reader.seen)
