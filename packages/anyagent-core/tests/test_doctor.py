"""``anyagent doctor`` against fake agents in each state: not found, found and logged in, logged out,
a probe that fails, a version older/same/newer than tested, a smoke turn; the tested versions equal the
live tier's pins; the exit status for named agents; ``--json``; and its screen in a real pty."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from test_cli import COMPLETED
from test_cli_terminal import Terminal, script, text

from anyagent import AgentProfile, Capability, ProtocolFailed, Register, Runtime, hookimpl, seam
from anyagent._doctor import TESTED_VERSIONS, AgentCheck, exit_status, run_doctor, version_verdict
from anyagent._render import Renderer
from anyagent.cli import main
from anyagent.mock import MockAdapter, Script, Step, completed, select_option
from anyagent.mock import text as text_kind


def test_tested_versions_are_the_live_tiers_pins() -> None:
    live = pytest.importorskip("anyagent_testkit.live")
    pins: dict[str, set[str]] = {}
    for cli in live.PINNED.values():
        if cli.profile is not None:
            pins.setdefault(cli.profile, set()).add(cli.version)
    assert {k: set(v) for k, v in TESTED_VERSIONS.items()} == pins


@pytest.mark.parametrize(
    ("version", "verdict"),
    [
        ("2.1.332 (Claude Code)", "same"),
        ("2.1.9", "older"),
        ("v2.2.0", "newer"),
        ("0.20.0", "between"),
        (None, "unknown"),
        ("garbled", "unknown"),
    ],
)
def test_version_verdict(version: str | None, verdict: str) -> None:
    tested = ("2.1.332",) if verdict != "between" else ("0.15.10", "0.24.4")
    assert version_verdict(version, tested) == verdict
    assert version_verdict("1.0", ()) == "untested"


class _Broken(MockAdapter):
    """An agent whose handshake fails (a wire it cannot speak)."""

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        raise ProtocolFailed("the agent answered initialize with garbage")


class _Fakes:
    """Four catalog agents on three mock wires: one missing, one logged in, one logged out, one broken."""

    @hookimpl
    def anyagent_adapters(self, register: Register) -> None:
        turn = [Step.emit(text_kind("m1", "ok")), Step.end(completed())]
        good = Script(
            version="2.1.332",
            capabilities=(Capability.RESUME,),
            options=(select_option("model", ["small", "large"]),),
        ).turn(turn)
        register.adapter(lambda: MockAdapter(good), wire="mock-good")
        register.adapter(lambda: MockAdapter(Script(logged_out=True)), wire="mock-out")
        register.adapter(lambda: _Broken(Script()), wire="mock-broken")

    @hookimpl
    def anyagent_agents(self, register: Register) -> None:
        register.profile(
            AgentProfile(id="ghost", name="Ghost", wire="mock-good", executables=("dr-ghost",), install_hint="get it")
        )
        register.profile(
            AgentProfile(
                id="claude", name="Fine", wire="mock-good", executables=("dr-fine",), quirks={"turn_hint": True}
            )
        )
        register.profile(AgentProfile(id="out", name="Out", wire="mock-out", executables=("dr-out",)))
        register.profile(
            AgentProfile(
                id="codex", name="Broken", wire="mock-broken", executables=("dr-broken",), config_home_env="DR_HOME"
            )
        )


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("dr-fine", "dr-out", "dr-broken"):
        exe = bin_dir / name
        exe.write_text("#!/bin/sh\necho 0.1.0\n")
        exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("ANYAGENT_NO_LOGIN_SHELL", "1")
    monkeypatch.setenv("DR_HOME", str(tmp_path / "home"))
    return Runtime(plugins=[], _builtins=[_Fakes()])


def _by_id(checks: list[AgentCheck]) -> dict[str, AgentCheck]:
    return {c.id: c for c in checks}


@pytest.mark.skipif(sys.platform == "win32", reason="the fake executables are sh scripts")
@pytest.mark.anyio
async def test_each_state(fakes: Runtime) -> None:
    async with fakes as runtime:
        checks = _by_id(await run_doctor(runtime))
    ghost, fine, out, broken = checks["ghost"], checks["claude"], checks["out"], checks["codex"]
    assert not ghost.found and ghost.install_hint == "get it" and ghost.searched and not ghost.usable
    assert fine.found and fine.login == "logged in" and fine.usable
    assert (fine.version, fine.version_verdict) == ("2.1.332", "same")
    assert "resume" in fine.capabilities and fine.options == ("model=small [small|large]",)
    assert fine.quirks == ("turn_hint",) and fine.smoke is None
    assert out.found and out.login == "logged out" and not out.usable
    assert out.login_commands == ("run: mock-agent login", "or set MOCK_API_KEY")  # the mock's MOCK_LOGIN
    assert out.version == "0.1.0"  # from `--version`, as the probe could not say
    assert out.version_verdict == "untested"
    assert (
        broken.error is not None and broken.error.startswith("ProtocolFailed: the agent answered") and not broken.usable
    )
    assert broken.config_home is not None and broken.config_home.startswith("DR_HOME=")
    assert broken.version_verdict == "older"  # 0.1.0 from --version vs the pinned codex


@pytest.mark.skipif(sys.platform == "win32", reason="the fake executables are sh scripts")
@pytest.mark.anyio
async def test_smoke_runs_one_turn_only_where_it_can(fakes: Runtime) -> None:
    async with fakes as runtime:
        checks = _by_id(await run_doctor(runtime, ["claude", "out"], smoke=True))
    assert checks["claude"].smoke is not None and checks["claude"].smoke.startswith("ok (")
    assert checks["claude"].smoke.endswith("'ok'")
    assert checks["out"].smoke is None  # logged out: no turn attempted


@pytest.mark.skipif(sys.platform == "win32", reason="the fake executables are sh scripts")
@pytest.mark.anyio
async def test_exit_status_for_named_agents(fakes: Runtime) -> None:
    async with fakes as runtime:
        assert exit_status(await run_doctor(runtime, ["ghost"]), named=True) == 3
        assert exit_status(await run_doctor(runtime, ["out"]), named=True) == 4
        assert exit_status(await run_doctor(runtime, ["codex"]), named=True) == 5
        assert exit_status(await run_doctor(runtime, ["claude"]), named=True) == 0
        assert exit_status(await run_doctor(runtime), named=False) == 0
        with pytest.raises(KeyError):
            await run_doctor(runtime, ["nope"])


def test_print_shows_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    from anyagent._doctor import print_checks

    checks = [
        AgentCheck(id="a", name="A", found=False, install_hint="npm i -g a", searched=("/usr/bin",)),
        AgentCheck(id="b", name="B", found=True, path="/bin/b", login="logged out", login_commands=("run: b login",)),
    ]
    print_checks(checks, Renderer(color=False))
    shown = capsys.readouterr().out
    assert "✗ A (a): not found" in shown and "install: npm i -g a" in shown and "looked in: /usr/bin" in shown
    assert "login: logged out" in shown and "run: b login" in shown


def test_json_for_a_bug_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["--mock", script(tmp_path, [*text("m1", "ok"), {"end": COMPLETED}]), "doctor", "mock", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert status == 0
    assert [entry["id"] for entry in payload] == ["mock"]
    assert payload[0]["found"] and payload[0]["usable"] and payload[0]["login"] == "logged in"


def test_unknown_agent_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--mock", script(tmp_path, text("m1", "ok")), "doctor", "nope"]) == 2
    assert "no catalog agent nope" in capsys.readouterr().out


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pseudo-terminals")
def test_doctor_on_a_terminal(tmp_path: Path) -> None:
    turn = [*text("m1", "ok"), {"end": COMPLETED}]
    terminal = Terminal("--mock", script(tmp_path, turn), "doctor", "--smoke", env={"PATH": os.environ["PATH"]})
    try:
        terminal.wait_for("catalog agents found")
        assert terminal.exit_status(within=20) == 0
        screen = terminal.lines()
        assert any(line.startswith("--smoke: one real turn per found agent") for line in screen)
        assert "✓ Mock agent (mock): " in "\n".join(screen)
        assert any(line.strip().startswith("smoke turn: ok (") and line.rstrip().endswith("'ok'") for line in screen)
        assert screen[-1] == "1 of 1 catalog agents found, 1 usable"
    finally:
        terminal.close()
