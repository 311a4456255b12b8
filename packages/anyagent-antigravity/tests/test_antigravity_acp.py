"""The ACP wire of the ``antigravity`` id: Google's ACP server as the profile's ``upgrade``.

Driven by ``anyagent-acp``'s adapter (a test dependency only: this package never imports it).
``authenticate`` runs once per open, and not at all when ``auth.type`` is set in the server's
settings file — which is read, never written.
"""

from __future__ import annotations

import json
import shlex
import stat
import sys
from pathlib import Path

import pytest
from agy_support import RECORDINGS, WAIT, replay_shim, runtime

import anyagent_acp.plugin
from anyagent import AgentInstallation, Completed, SessionOptions, TurnEnded
from anyagent_testkit.events import EventReader, kinds, text_of

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).parent / "scripted_acp_server.py"


def _server(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "agy_acp_server.par"
    path.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(SERVER))} "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _upgrade(path: Path) -> AgentInstallation:
    """What discovery returns when the server is installed: the ``antigravity`` id on wire ``acp``."""
    return AgentInstallation(id="antigravity", name="Antigravity", executable_path=path, wire="acp")


async def _pong(installation: AgentInstallation, workspace: Path) -> None:
    async with runtime(anyagent_acp.plugin) as rt:
        session, events = await rt.open(installation, SessionOptions.in_dir(workspace))
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.prompt("Reply with exactly the word pong and nothing else.")
            turn = await reader.turn()
            assert kinds(turn, TurnEnded) == [TurnEnded(Completed())]
            assert text_of(turn) == "pong"


async def test_authenticate_runs_once_per_open_without_auth_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, log = tmp_path / "home", tmp_path / "methods.log"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SCRIPTED_ACP_LOG", str(log))
    installation = _upgrade(_server(tmp_path / "bin"))
    await _pong(installation, tmp_path)
    await _pong(installation, tmp_path)
    methods = log.read_text().split()
    assert methods.count("authenticate") == 2  # once per open
    first = methods[: methods.index("session/prompt")]
    assert first == ["initialize", "authenticate", "session/new"]
    assert not (home / ".gemini").exists()  # nothing written


async def test_auth_type_in_the_settings_file_skips_authenticate_and_is_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, log = tmp_path / "home", tmp_path / "methods.log"
    settings = home / ".gemini" / "antigravity-acp" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"auth": {"type": "oauth-personal"}, "other": 1}))
    before = settings.stat().st_mtime_ns, settings.read_bytes()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SCRIPTED_ACP_LOG", str(log))
    await _pong(_upgrade(_server(tmp_path / "bin")), tmp_path)
    methods = log.read_text().split()
    assert "authenticate" not in methods
    assert methods[:2] == ["initialize", "session/new"]
    assert (settings.stat().st_mtime_ns, settings.read_bytes()) == before


async def test_an_empty_auth_type_still_authenticates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, log = tmp_path / "home", tmp_path / "methods.log"
    settings = home / ".gemini" / "antigravity-acp" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"auth": {"type": ""}}))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SCRIPTED_ACP_LOG", str(log))
    await _pong(_upgrade(_server(tmp_path / "bin")), tmp_path)
    assert log.read_text().split().count("authenticate") == 1


async def test_the_recorded_server_pong_replays_over_the_upgrade_with_auth_type_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # acp-02-pong was recorded without an authenticate: the settings file makes ours match it
    home = tmp_path / "home"
    settings = home / ".gemini" / "antigravity-acp" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"auth": {"type": "oauth-personal"}}))
    monkeypatch.setenv("HOME", str(home))
    shim = replay_shim(tmp_path / "bin", RECORDINGS / "acp-02-pong.jsonl", name="agy_acp_server.par", strict=True)
    await _pong(_upgrade(shim), tmp_path)
