"""The live tier: real ACP agents (pinned npm installs) against the loopback fake model.

Run with ``pytest --live``. Each agent runs isolated (its own HOME, config and workspace) through a
tiny shim that sets exactly the testkit's environment, so nothing from the caller leaks in.
``ANYAGENT_ACP_RECORD=DIR`` also tees each session's wire to ``DIR/<agent>-<phase>.jsonl`` (that is
how ``tests/recordings/`` was made).
"""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest
from acpsupport import runtime

from anyagent import (
    AgentInstallation,
    Answer,
    Cancelled,
    Completed,
    PermissionChoice,
    RequestOpened,
    SessionOptions,
    SessionUpdated,
    TextDelta,
    TurnEnded,
)
from anyagent_testkit.events import EventReader, kinds, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.live]

# which ids the catalog knows them by (their profiles carry the verified quirks)
PROFILE_IDS = {
    "qwen": "qwen",
    "qwen-node22": "qwen",
    "gemini": "gemini",
    "claude-agent-acp": "claude-acp",
    "codex-acp": "codex-acp",
    "codex-acp-2": "codex-acp",
    "hermes": "hermes",
}
# the agents whose live scenario is committed under tests/recordings (qwen 0.24's is 0.6 MB: left out)
RECORDED = ("qwen", "gemini", "claude-agent-acp", "codex-acp", "codex-acp-2", "hermes")
# a mode each agent offers besides its default one
OTHER_MODE = {
    "qwen": "plan",
    "qwen-node22": "plan",
    "gemini": "autoEdit",
    "claude-agent-acp": "plan",
    "codex-acp": "auto",
    "codex-acp-2": "workspace-write",
    "hermes": "accept_edits",
}
# creation-time settings: codex-acp's default mode `auto` writes in the workspace without asking;
# codex-acp 2.x's default `agent` has an LLM review commands instead of asking
INITIAL = {"codex-acp": {"mode": "read-only"}, "codex-acp-2": {"mode": "read-only"}}
# what makes the agent ask before a command: hermes asks only for commands on its dangerous list
ASKING_COMMAND = {"hermes": "rm -rf ./junk_dir && "}
TURN = 120.0


@pytest.fixture
def anyio_backend() -> str:
    """One backend is enough for the slow real CLIs (the recorded tier covers trio)."""
    return "asyncio"


def _shim(folder: Path, live: Any) -> Path:
    """An executable that runs the live CLI with exactly the testkit's environment."""
    assignments = " ".join(shlex.quote(f"{k}={v}") for k, v in live.env.items())
    script = folder / "agent-shim"
    script.write_text(f'#!/bin/sh\nexec env -i {assignments} {shlex.quote(str(live.executable))} "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def _installation(cli_id: str, live: Any, tmp_path: Path) -> AgentInstallation:
    shim = _shim(tmp_path, live)
    profile_id = PROFILE_IDS[cli_id]
    return AgentInstallation(id=profile_id, name=cli_id, executable_path=shim, wire="acp", args=live.args)


def _options(cli_id: str, workspace: Path, phase: str) -> SessionOptions:
    options = SessionOptions.in_dir(workspace)
    for option_id, value in INITIAL.get(cli_id, {}).items():
        options = options.configure(option_id, value)
    folder = os.environ.get("ANYAGENT_ACP_RECORD")
    if folder:
        options = options.record_wire(Path(folder) / f"{cli_id}-{phase}.jsonl")
    return options


def _stop(seen: list[Any]) -> Any:
    return next(e.kind.stop for e in reversed(seen) if isinstance(e.kind, TurnEnded))


async def _permission(reader: EventReader) -> Any:
    last = (await reader.until(RequestOpened, TurnEnded)).kind
    assert isinstance(last, RequestOpened), [type(e.kind).__name__ for e in reader.seen[-12:]]
    return last.request


@pytest.mark.parametrize(
    "cli_id", ["qwen", "qwen-node22", "gemini", "claude-agent-acp", "codex-acp", "codex-acp-2", "hermes"]
)
async def test_live_agent(cli_id: str, live_agent: Any, fake_model: Any, tmp_path: Path) -> None:
    live = live_agent(cli_id)
    agent = _installation(cli_id, live, tmp_path)
    await scenario(cli_id, agent, agent, live.workspace, real=True)


async def scenario(
    cli_id: str, agent: AgentInstallation, second: AgentInstallation, workspace: Path, *, real: bool
) -> None:
    """Text, allow, reject, cancel mid-stream and with a permission pending, the next turn, a mode
    switch, then a load in a second process. ``real=False`` (a replayed recording) skips the
    checks of files the agent wrote, since the recording's paths belong to another machine."""
    async with runtime() as rt:
        session, events = await rt.open(agent, _options(cli_id, workspace, "A"))
        reader = EventReader(events, timeout=TURN)
        async with session:
            # text
            await session.prompt("Say hello.")
            seen = await reader.turn()
            assert _stop(seen) == Completed() and text_of(seen)

            # permission allow: a new file (written through fs/write_text_file where the agent uses it)
            target = workspace / "allowed.txt"
            await session.prompt(f"WRITE {target} allowed-by-anyagent")
            request = await _permission(reader)
            await session.answer(request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
            seen = await reader.turn()
            assert isinstance(_stop(seen), Completed), _stop(seen)
            assert not real or (target.exists() and "allowed-by-anyagent" in target.read_text())

            # permission reject: the command never runs
            marker = workspace / "rejected_marker.txt"
            asking = ASKING_COMMAND.get(cli_id, "")
            await session.prompt(f"RUN {asking}touch {marker}")
            request = await _permission(reader)
            deny = PermissionChoice.DENY_ONCE if PermissionChoice.DENY_ONCE in request.options else request.options[-1]
            await session.answer(request.id, Answer.permission(deny))
            seen = await reader.turn()
            # Completed even where the agent ends it `cancelled` (codex-acp): no cancel was sent
            assert _stop(seen) == Completed() and not marker.exists(), _stop(seen)

            # cancel mid-stream
            await session.prompt("SLOW 40")
            await reader.match(lambda e: isinstance(e.kind, TextDelta) and "slow" in e.kind.text)
            await session.cancel()
            assert _stop(await reader.turn()) == Cancelled()

            # cancel with a permission pending
            await session.prompt(f"RUN {asking}touch {workspace / 'pending_marker.txt'}")
            await _permission(reader)
            await session.cancel()
            assert _stop(await reader.turn()) == Cancelled()

            # the next turn after a cancel: the model answers it (a wedged hermes 0.19 only queues it)
            await session.prompt("Say hello again.")
            seen = await reader.turn()
            assert _stop(seen) == Completed() and "Say hello again." in text_of(seen), text_of(seen)

            # set mode
            mode = OTHER_MODE[cli_id]
            if session.info().details.option("mode") is not None:
                await session.configure("mode", mode)
                await reader.match(
                    lambda e: isinstance(e.kind, SessionUpdated) and e.kind.info.configuration.get("mode") == mode
                )
            # set model (to the one in use: the fake model serves every id, but the agents list more)
            model = session.info().details.option("model")
            if model is not None and model.current is not None:
                chosen = model.current
                await session.configure("model", chosen)
                await reader.match(
                    lambda e: isinstance(e.kind, SessionUpdated) and e.kind.info.configuration.get("model") == chosen
                )
            token = session.info().resume_token
        assert token
        if cli_id == "gemini":
            return  # gemini 0.61 overwrites its chat file when loaded within the same minute (NOTES)
        # load in a second process
        if real:
            await anyio.sleep(1)
        session, events = await rt.open(second, _options(cli_id, workspace, "B").resume(token))
        reader = EventReader(events, timeout=TURN)
        async with session:
            await session.prompt("Say hello once more.")
            seen = await reader.turn()
            assert _stop(seen) == Completed() and "Say hello once more." in text_of(seen), text_of(seen)
            # history the agent replays while resuming (hermes) is no turn of its own
            assert len(kinds(reader.seen, TurnEnded)) == 1 and "Say hello again." not in text_of(reader.seen)
