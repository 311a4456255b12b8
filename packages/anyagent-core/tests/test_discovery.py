"""Discovery against real files in tmp_path: env override, PATH, login-shell PATH (a fake ``$SHELL``), known
install dirs, profile extras, upgrades, diagnostics, and the Windows rules through the pure functions."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import anyio
import pytest

from anyagent import NotInstalled, Runtime
from anyagent._discovery import (
    IN_PROCESS,
    LOGIN_SHELL_TIMEOUT,
    Discovery,
    LoginShellPath,
    candidate_names,
    dedup_key,
    expand_dir,
    find_executable,
    home_dir,
    is_executable_mode,
    known_dirs,
    newest_first,
    os_key,
    parse_marked_path,
    parse_npmrc_prefix,
    split_path_var,
)
from anyagent.installation import AgentInstallation, AgentProfile, DiscoveryReport, InstallationSource
from anyagent.types import DiagnosticLevel

_ENV_TO_CLEAR = (
    "NPM_CONFIG_PREFIX",
    "npm_config_prefix",
    "NVM_DIR",
    "FNM_DIR",
    "VOLTA_HOME",
    "ASDF_DATA_DIR",
    "BUN_INSTALL",
    "PNPM_HOME",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME, an empty PATH, no login shell, no stray overrides or version-manager variables."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("ANYAGENT_NO_LOGIN_SHELL", "1")
    for name in list(os.environ):
        if name.startswith("ANYAGENT_") and name.endswith("_BIN"):
            monkeypatch.delenv(name)
    for name in _ENV_TO_CLEAR:
        monkeypatch.delenv(name, raising=False)
    return home


def exe(directory: Path, name: str, mode: int = 0o755) -> Path:
    """A real file ``directory/name`` with ``mode``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(mode)
    return path


def profile(agent_id: str, *executables: str, **kwargs: object) -> AgentProfile:
    """A test profile; executable names are unique to these tests so nothing on the machine matches."""
    kwargs.setdefault("install_hint", f"install {agent_id}")
    kwargs.setdefault("args", ("--proto",))
    return AgentProfile(id=agent_id, name=agent_id.title(), wire="acp", executables=executables, **kwargs)  # type: ignore[arg-type]


def set_path(monkeypatch: pytest.MonkeyPatch, *dirs: Path | str) -> None:
    monkeypatch.setenv("PATH", os.pathsep.join(str(d) for d in dirs))


async def scan(*profiles: AgentProfile, **kwargs: object) -> DiscoveryReport:
    return await Discovery(**kwargs).scan(profiles)  # type: ignore[arg-type]


def codes(report: DiscoveryReport) -> list[str | None]:
    return [d.code for d in report.diagnostics]


# ---------------------------------------------------------------------------------------------
# PATH, env override, order


@pytest.mark.anyio
async def test_path_hit_carries_profile_wire_args_and_source(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = home / "a", home / "b"
    first.mkdir()
    target = exe(second, "zz-agent")
    set_path(monkeypatch, first, second)
    report = await scan(profile("zz", "zz-agent"))
    assert report.agents == (
        AgentInstallation(
            id="zz",
            name="Zz",
            executable_path=target,
            wire="acp",
            args=("--proto",),
            source=InstallationSource.PATH,
        ),
    )
    assert report.missing == ()
    assert report.require("zz").executable_path == target


@pytest.mark.anyio
async def test_earlier_path_dir_wins_and_non_executables_are_skipped(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain, folder, real, later = home / "plain", home / "folder", home / "real", home / "later"
    exe(plain, "zz-agent", mode=0o644)  # no exec bit
    (folder / "zz-agent").mkdir(parents=True)  # a directory with the name
    target = exe(real, "zz-agent")
    exe(later, "zz-agent")
    set_path(monkeypatch, plain, folder, real, later)
    report = await scan(profile("zz", "zz-agent"))
    assert report.require("zz").executable_path == target


@pytest.mark.anyio
async def test_second_executable_name_is_found_and_dir_order_beats_name_order(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = home / "first", home / "second"
    target = exe(first, "zz-alt")
    exe(second, "zz-main")
    set_path(monkeypatch, first, second)
    report = await scan(profile("zz", "zz-main", "zz-alt"))
    assert report.require("zz").executable_path == target


@pytest.mark.anyio
async def test_env_override_wins_over_path(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe(home / "bin", "zz-agent")
    pinned = exe(home / "pinned", "whatever-name")
    set_path(monkeypatch, home / "bin")
    monkeypatch.setenv("ANYAGENT_ZZ_BIN", str(pinned))
    report = await scan(profile("zz", "zz-agent"))
    agent = report.require("zz")
    assert (agent.executable_path, agent.source) == (pinned, InstallationSource.ENV_OVERRIDE)
    assert report.diagnostics == ()


@pytest.mark.anyio
async def test_env_override_expands_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pinned = exe(home / "tools", "zz-agent")
    monkeypatch.setenv("ANYAGENT_ZZ_BIN", "~/tools/zz-agent")
    report = await scan(profile("zz", "zz-agent"))
    assert report.require("zz").executable_path == pinned


@pytest.mark.parametrize("kind", ["missing", "not-executable", "directory", "relative"])
@pytest.mark.anyio
async def test_bad_env_override_warns_and_falls_through(home: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    target = exe(home / "bin", "zz-agent")
    set_path(monkeypatch, home / "bin")
    value = {
        "missing": str(home / "nope" / "zz-agent"),
        "not-executable": str(exe(home / "odd", "zz-agent", mode=0o644)),
        "directory": str(home / "bin"),
        "relative": "bin/zz-agent",
    }[kind]
    monkeypatch.setenv("ANYAGENT_ZZ_BIN", value)
    report = await scan(profile("zz", "zz-agent"))
    agent = report.require("zz")
    assert (agent.executable_path, agent.source) == (target, InstallationSource.PATH)
    [diagnostic] = report.diagnostics
    assert diagnostic.code == "env_override"
    assert diagnostic.level is DiagnosticLevel.WARNING
    assert "ANYAGENT_ZZ_BIN" in diagnostic.message
    assert value in diagnostic.message


@pytest.mark.anyio
async def test_report_order_follows_profile_order(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("zz-c", "zz-a"):
        exe(home / "bin", name)
    set_path(monkeypatch, home / "bin")
    report = await scan(
        profile("zz-c", "zz-c"), profile("zz-x", "zz-x"), profile("zz-a", "zz-a"), profile("zz-b", "zz-b")
    )
    assert [a.id for a in report.agents] == ["zz-c", "zz-a"]
    assert [m.id for m in report.missing] == ["zz-x", "zz-b"]


@pytest.mark.anyio
async def test_missing_agent_lists_every_dir_checked_once(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one, two = home / "one", home / "two"
    one.mkdir()
    set_path(monkeypatch, one, two, str(one) + "/", one)
    extras = {"any": ("~/extra", "~/one"), "linux": ("/opt/zz/bin",), "windows": ("%APPDATA%\\zz",)}
    report = await scan(profile("zz", "zz-agent", extra_dirs=extras), platform="linux")
    [missing] = report.missing
    assert (missing.id, missing.name, missing.install_hint) == ("zz", "Zz", "install zz")
    searched = list(missing.searched)
    assert searched[:2] == [str(one), str(two)]
    assert len({d.rstrip("/") for d in searched}) == len(searched)
    for expected in (
        home / ".npm-global/bin",
        home / ".local/bin",
        "/usr/local/bin",
        "/home/linuxbrew/.linuxbrew/bin",
        home / ".volta/bin",
        home / ".asdf/shims",
        home / ".bun/bin",
        home / ".local/share/pnpm",
        home / "extra",
        "/opt/zz/bin",
    ):
        assert str(expected) in searched
    assert searched.index(str(home / ".local/bin")) < searched.index(str(home / ".volta/bin"))
    assert searched[-2:] == [str(home / "extra"), "/opt/zz/bin"]
    assert "%APPDATA%\\zz" not in searched
    with pytest.raises(NotInstalled, match="install zz"):
        report.require("zz")


@pytest.mark.anyio
async def test_relative_and_empty_path_entries_never_search_the_cwd(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe(home / "rel", "zz-agent")
    exe(home, "zz-agent")
    monkeypatch.chdir(home)
    monkeypatch.setenv("PATH", os.pathsep.join(["", "rel", "."]))
    report = await scan(profile("zz", "zz-agent"))
    assert [m.id for m in report.missing] == ["zz"]


@pytest.mark.anyio
async def test_in_process_profile_is_always_installed(home: Path) -> None:
    report = await scan(AgentProfile(id="mock", name="Mock", wire="mock", executables=()))
    assert report.require("mock").executable_path == IN_PROCESS
    assert report.require("mock").wire == "mock"


@pytest.mark.anyio
async def test_runtime_with_mock_discovers_the_mock() -> None:
    report = await Runtime.with_mock().discover()
    assert report.require("mock").executable_path == IN_PROCESS


# ---------------------------------------------------------------------------------------------
# Known install dirs and extras


@pytest.mark.anyio
async def test_local_bin_and_extras_are_known_locations(home: Path) -> None:
    local = exe(home / ".local/bin", "zz-local")
    extra = exe(home / "opt/zz", "zz-extra")
    exe(home / "win-only", "zz-extra")
    extras = {"any": ("~/opt/zz",), "windows": ("~/win-only",), "darwin": ("~/win-only",)}
    report = await scan(
        profile("zz-local", "zz-local"), profile("zz-extra", "zz-extra", extra_dirs=extras), platform="linux"
    )
    for agent_id, path in (("zz-local", local), ("zz-extra", extra)):
        agent = report.require(agent_id)
        assert (agent.executable_path, agent.source) == (path, InstallationSource.KNOWN_LOCATION)


@pytest.mark.anyio
async def test_npm_prefix_from_env_then_npmrc_then_default(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from_env = exe(home / "envprefix/bin", "zz-env")
    from_rc = exe(home / "rcprefix/bin", "zz-rc")
    default = exe(home / ".npm-global/bin", "zz-default")
    monkeypatch.setenv("NPM_CONFIG_PREFIX", str(home / "envprefix"))
    (home / ".npmrc").write_text("; comment\nregistry=https://example.invalid\nprefix = ~/rcprefix\n")
    report = await scan(profile("zz-env", "zz-env"), profile("zz-rc", "zz-rc"), profile("zz-default", "zz-default"))
    for agent_id, path in (("zz-env", from_env), ("zz-rc", from_rc), ("zz-default", default)):
        agent = report.require(agent_id)
        assert (agent.executable_path, agent.source) == (path, InstallationSource.KNOWN_LOCATION)


def test_npmrc_is_read_for_its_prefix_line_only(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """~/.npmrc holds registry tokens: only a ``prefix`` line is decoded and kept, one bounded line at a
    time (memory stays far below the file's size), and nothing of it reaches a diagnostic."""
    import tracemalloc

    from anyagent import _discovery

    token = "npm_" + "S3CRET" * 10_000  # a 60 kB line
    (home / ".npmrc").write_text(
        f"//registry.npmjs.org/:_authToken={token}\nregistry=https://example.invalid\nprefix=~/rcprefix\n"
        f"_auth={token[:100]}\nprefixes=/not/this"
    )
    seen: list[str] = []
    parse = _discovery.npmrc_prefix_line

    def spy(line: str) -> str | None:
        seen.append(line)
        return parse(line)

    monkeypatch.setattr(_discovery, "npmrc_prefix_line", spy)
    problems = _discovery._Problems()
    tracemalloc.start()
    try:
        prefix = _discovery._read_npmrc(str(home), problems)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert prefix == "~/rcprefix"
    assert seen == ["prefix=~/rcprefix\n", "prefixes=/not/this"]
    assert peak < 32 * 1024
    assert problems.items == []


@pytest.mark.anyio
async def test_nvm_versions_newest_first(home: Path) -> None:
    root = home / ".nvm/versions/node"
    for version in ("v9.11.2", "v20.9.0", "v18.20.1"):
        exe(root / version / "bin", "zz-agent")
    newest = exe(root / "v20.10.0/bin", "zz-agent")
    report = await scan(profile("zz", "zz-agent"))
    agent = report.require("zz")
    assert (agent.executable_path, agent.source) == (newest, InstallationSource.VERSION_MANAGER)


@pytest.mark.anyio
async def test_fnm_volta_bun_are_version_manager_dirs(home: Path) -> None:
    fnm = exe(home / ".local/share/fnm/node-versions/v22.1.0/installation/bin", "zz-fnm")
    exe(home / ".local/share/fnm/node-versions/v3.0.0/installation/bin", "zz-fnm")
    volta = exe(home / ".volta/bin", "zz-volta")
    bun = exe(home / ".bun/bin", "zz-bun")
    report = await scan(profile("zz-fnm", "zz-fnm"), profile("zz-volta", "zz-volta"), profile("zz-bun", "zz-bun"))
    for agent_id, path in (("zz-fnm", fnm), ("zz-volta", volta), ("zz-bun", bun)):
        agent = report.require(agent_id)
        assert (agent.executable_path, agent.source) == (path, InstallationSource.VERSION_MANAGER)


@pytest.mark.anyio
async def test_dir_on_path_and_in_extras_is_tagged_by_path(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = exe(home / ".local/bin", "zz-agent")
    set_path(monkeypatch, home / ".local/bin")
    report = await scan(profile("zz", "zz-agent", extra_dirs={"any": ("~/.local/bin",)}))
    assert report.require("zz").source is InstallationSource.PATH
    assert report.require("zz").executable_path == target


def test_known_dirs_order_and_tags(home: Path) -> None:
    (home / ".nvm/versions/node/v1.2.3").mkdir(parents=True)
    (home / ".nvm/versions/node/v10.0.0").mkdir(parents=True)
    dirs = known_dirs(str(home), {"HOME": str(home)}, "linux")
    paths = [d for d, _ in dirs]
    assert paths[:2] == [str(home / ".npm-global/bin"), str(home / ".local/bin")]
    assert paths.index(str(home / ".nvm/versions/node/v10.0.0/bin")) < paths.index(
        str(home / ".nvm/versions/node/v1.2.3/bin")
    )
    tags = dict(dirs)
    assert tags["/home/linuxbrew/.linuxbrew/bin"] is InstallationSource.KNOWN_LOCATION
    assert tags[str(home / ".asdf/shims")] is InstallationSource.VERSION_MANAGER
    darwin = [d for d, _ in known_dirs(str(home), {}, "darwin")]
    assert "/opt/homebrew/bin" in darwin
    assert str(home / "Library/pnpm") in darwin
    windows = [d for d, _ in known_dirs("C:\\Users\\me", {"APPDATA": "C:\\Users\\me\\AppData\\Roaming"}, "windows")]
    assert windows[:2] == ["C:\\Users\\me\\AppData\\Roaming\\npm", "C:\\Users\\me\\.local\\bin"]
    assert "/usr/local/bin" not in windows


# ---------------------------------------------------------------------------------------------
# Unreadable locations


@pytest.mark.anyio
async def test_unreadable_path_dir_is_a_diagnostic_not_a_failure(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loop = home / "loop"
    loop.symlink_to(loop)  # stat fails with ELOOP even for root
    target = exe(home / "bin", "zz-agent")
    set_path(monkeypatch, loop, home / "bin")
    report = await scan(profile("zz", "zz-agent"), profile("zz-other", "zz-other"))
    assert report.require("zz").executable_path == target
    unreadable = [d for d in report.diagnostics if d.code == "unreadable_dir"]
    assert len(unreadable) == 1  # reported once per scan, not once per profile
    assert str(loop) in unreadable[0].message
    assert str(loop) in report.missing[0].searched


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root can search any directory")
@pytest.mark.anyio
async def test_dir_without_search_permission_is_a_diagnostic(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = home / "locked"
    exe(locked, "zz-agent")
    locked.chmod(0)
    try:
        set_path(monkeypatch, locked)
        report = await scan(profile("zz", "zz-agent"))
    finally:
        locked.chmod(0o755)
    assert [m.id for m in report.missing] == ["zz"]
    assert "unreadable_dir" in codes(report)


@pytest.mark.anyio
async def test_unreadable_npmrc_and_version_root_are_diagnostics(home: Path) -> None:
    (home / ".npmrc").mkdir()  # reading it fails with EISDIR
    (home / ".nvm/versions").mkdir(parents=True)
    (home / ".nvm/versions/node").symlink_to(home / ".nvm/versions/node")
    report = await scan(profile("zz", "zz-agent"))
    assert [m.id for m in report.missing] == ["zz"]
    assert "unreadable_file" in codes(report)
    assert "unreadable_dir" in codes(report)


# ---------------------------------------------------------------------------------------------
# Upgrade (a richer runtime of the same agent)


def upgradable(**extra: object) -> AgentProfile:
    server = AgentProfile(
        id="zz-server",
        name="Zz server",
        wire="acp",
        executables=("zz-server",),
        args=("--acp",),
        install_hint="download the zz server",
        extra_dirs={"any": ("~/.zz-server",)},
    )
    return AgentProfile(
        id="zz",
        name="Zz",
        wire="zz-native",
        executables=("zz",),
        args=("--stream",),
        install_hint="install zz",
        upgrade=server,
        **extra,  # type: ignore[arg-type]
    )


@pytest.mark.anyio
async def test_upgrade_wins_when_both_are_installed(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe(home / "bin", "zz")
    server = exe(home / ".zz-server", "zz-server")
    set_path(monkeypatch, home / "bin")
    report = await scan(upgradable())
    agent = report.require("zz")
    assert (agent.id, agent.name, agent.wire, agent.args) == ("zz", "Zz", "acp", ("--acp",))
    assert (agent.executable_path, agent.source, agent.upgrade) == (server, InstallationSource.KNOWN_LOCATION, None)


@pytest.mark.anyio
async def test_base_cli_alone_carries_the_missing_upgrade(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = exe(home / "bin", "zz")
    set_path(monkeypatch, home / "bin")
    report = await scan(upgradable())
    agent = report.require("zz")
    assert (agent.executable_path, agent.wire, agent.args) == (base, "zz-native", ("--stream",))
    assert agent.upgrade is not None
    assert (agent.upgrade.id, agent.upgrade.name, agent.upgrade.install_hint) == (
        "zz-server",
        "Zz server",
        "download the zz server",
    )
    assert str(home / ".zz-server") in agent.upgrade.searched
    assert str(home / "bin") in agent.upgrade.searched


@pytest.mark.anyio
async def test_neither_installed_lists_both_searches(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    set_path(monkeypatch, home / "bin")
    report = await scan(upgradable(extra_dirs={"any": ("~/.zz",)}))
    [missing] = report.missing
    assert (missing.id, missing.install_hint) == ("zz", "install zz")
    assert str(home / ".zz-server") in missing.searched
    assert str(home / ".zz") in missing.searched
    assert len(set(missing.searched)) == len(missing.searched)


@pytest.mark.anyio
async def test_env_override_forces_the_base_cli(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe(home / ".zz-server", "zz-server")
    base = exe(home / "elsewhere", "zz")
    monkeypatch.setenv("ANYAGENT_ZZ_BIN", str(base))
    agent = (await scan(upgradable())).require("zz")
    assert (agent.executable_path, agent.wire, agent.source, agent.upgrade) == (
        base,
        "zz-native",
        InstallationSource.ENV_OVERRIDE,
        None,
    )


@pytest.mark.anyio
async def test_env_override_without_upgrade_still_names_it(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = exe(home / "elsewhere", "zz")
    monkeypatch.setenv("ANYAGENT_ZZ_BIN", str(base))
    agent = (await scan(upgradable())).require("zz")
    assert agent.executable_path == base
    assert agent.upgrade is not None
    assert agent.upgrade.id == "zz-server"


@pytest.mark.anyio
async def test_env_override_naming_the_upgrade_uses_its_wire(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = exe(home / "elsewhere", "zz-server")
    monkeypatch.setenv("ANYAGENT_ZZ_BIN", str(server))
    agent = (await scan(upgradable())).require("zz")
    assert (agent.executable_path, agent.wire, agent.args) == (server, "acp", ("--acp",))


# ---------------------------------------------------------------------------------------------
# Login-shell PATH (a fake $SHELL)


SLEEP = shutil.which("sleep") or "/bin/sleep"


def fake_shell(tmp_path: Path, body: str) -> tuple[Path, Path]:
    """A ``$SHELL`` script that appends its flag to a counter file, then runs ``body``; -> (shell, counter)."""
    counter = tmp_path / "shell-runs"
    shell = tmp_path / "fake-shell"
    shell.write_text(f'#!/bin/sh\necho "$1" >> "{counter}"\n{body}\n')
    shell.chmod(0o755)
    return shell, counter


def runs(counter: Path) -> list[str]:
    return counter.read_text().split() if counter.exists() else []


def login_env(monkeypatch: pytest.MonkeyPatch, shell: Path) -> None:
    monkeypatch.delenv("ANYAGENT_NO_LOGIN_SHELL")
    monkeypatch.setenv("SHELL", str(shell))


@pytest.mark.anyio
async def test_login_shell_path_found_through_noise_and_cached(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    login_dir = home / "login-bin"
    target = exe(login_dir, "zz-agent")
    body = f"""PATH="/nowhere:{login_dir}"; export PATH
echo "Welcome to the machine"
printf 'noise before the marker '
eval "$2"
echo 'and noise after'"""
    shell, counter = fake_shell(tmp_path, body)
    login_env(monkeypatch, shell)
    capture = LoginShellPath()
    discovery = Discovery(login_shell=capture)
    discovery.prewarm()
    discovery.prewarm()
    capture.join(10)
    assert runs(counter) == ["-lic"]
    original_popen = subprocess.Popen

    def no_subprocess(*args: object, **kwargs: object) -> None:
        raise AssertionError("scan ran a subprocess after prewarm")

    monkeypatch.setattr(subprocess, "Popen", no_subprocess)
    for _ in range(3):
        report = await discovery.scan([profile("zz", "zz-agent")])
        agent = report.require("zz")
        assert (agent.executable_path, agent.source) == (target, InstallationSource.LOGIN_SHELL_PATH)
    monkeypatch.setattr(subprocess, "Popen", original_popen)
    assert runs(counter) == ["-lic"]
    assert report.diagnostics == ()


@pytest.mark.anyio
async def test_scan_without_prewarm_starts_the_capture_and_waits(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    login_dir = home / "login-bin"
    target = exe(login_dir, "zz-agent")
    shell, counter = fake_shell(tmp_path, f'{SLEEP} 0.3; PATH="{login_dir}"; eval "$2"')
    login_env(monkeypatch, shell)
    capture = LoginShellPath()
    report = await Discovery(login_shell=capture).scan([profile("zz", "zz-agent")])
    assert report.require("zz").executable_path == target
    await Discovery(login_shell=capture).scan([profile("zz", "zz-agent")])
    assert runs(counter) == ["-lic"]
    capture.join(10)


@pytest.mark.anyio
async def test_lic_failure_falls_back_to_lc(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    login_dir = home / "login-bin"
    target = exe(login_dir, "zz-agent")
    body = f"""if [ "$1" = "-lic" ]; then echo "no interactive shells here"; exit 2; fi
PATH="{login_dir}"; eval "$2\""""
    shell, counter = fake_shell(tmp_path, body)
    login_env(monkeypatch, shell)
    capture = LoginShellPath()
    report = await Discovery(login_shell=capture).scan([profile("zz", "zz-agent")])
    assert report.require("zz").executable_path == target
    capture.join(10)
    assert runs(counter) == ["-lic", "-lc"]


@pytest.mark.anyio
async def test_shell_echoing_its_command_is_not_mistaken_for_the_path(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    login_dir = home / "login-bin"
    target = exe(login_dir, "zz-agent")
    shell, _ = fake_shell(tmp_path, f'echo "$2"; PATH="{login_dir}"; eval "$2"')
    login_env(monkeypatch, shell)
    capture = LoginShellPath()
    report = await Discovery(login_shell=capture).scan([profile("zz", "zz-agent")])
    assert report.require("zz").executable_path == target
    capture.join(10)


def _gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie waiting for init to reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.anyio
async def test_hanging_shell_is_bounded_killed_and_reaped(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = tmp_path / "pids"
    shell, counter = fake_shell(tmp_path, f'echo $$ >> "{pids}"; {SLEEP} 60 & echo $! >> "{pids}"; wait')
    login_env(monkeypatch, shell)
    target = exe(home / "bin", "zz-agent")
    set_path(monkeypatch, home / "bin")
    capture = LoginShellPath(timeout=0.5)
    discovery = Discovery(login_shell=capture)
    discovery.prewarm()
    started = time.monotonic()
    report = await discovery.scan([profile("zz", "zz-agent")])
    elapsed = time.monotonic() - started
    assert elapsed < 2.0
    assert report.require("zz").executable_path == target
    assert "login_shell_path" in codes(report)
    capture.join(10)
    assert runs(counter) == ["-lic"]  # the bound covers both attempts: no -lc after a timeout
    shell_pid, child_pid = (int(line) for line in pids.read_text().split())
    with pytest.raises(ProcessLookupError):
        os.kill(shell_pid, 0)  # killed and reaped by us
    deadline = time.monotonic() + 5
    while not _gone(child_pid) and time.monotonic() < deadline:
        await anyio.sleep(0.05)
    assert _gone(child_pid)  # the rc script's child died with the process group
    again = await discovery.scan([profile("zz", "zz-agent")])
    assert [d.code for d in again.diagnostics] == ["login_shell_path"]
    assert "did not answer" in again.diagnostics[0].message


@pytest.mark.anyio
async def test_scan_waiting_for_the_shell_can_be_cancelled(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shell, _ = fake_shell(tmp_path, f"exec {SLEEP} 60")
    login_env(monkeypatch, shell)
    capture = LoginShellPath(timeout=1.2)
    started = time.monotonic()
    with anyio.move_on_after(0.2) as scope:
        await Discovery(login_shell=capture).scan([profile("zz", "zz-agent")])
    assert scope.cancelled_caught
    assert time.monotonic() - started < 1.5
    capture.join(10)


@pytest.mark.anyio
async def test_shell_printing_no_marker_is_a_diagnostic(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shell, counter = fake_shell(tmp_path, 'echo "PATH is a secret"')
    login_env(monkeypatch, shell)
    capture = LoginShellPath()
    report = await Discovery(login_shell=capture).scan([profile("zz", "zz-agent")])
    assert [m.id for m in report.missing] == ["zz"]
    [diagnostic] = report.diagnostics
    assert diagnostic.code == "login_shell_path"
    assert "printed no PATH" in diagnostic.message
    capture.join(10)
    assert runs(counter) == ["-lic", "-lc"]


@pytest.mark.anyio
async def test_unstartable_shell_is_a_diagnostic(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    login_env(monkeypatch, tmp_path / "no-such-shell")
    capture = LoginShellPath()
    report = await Discovery(login_shell=capture).scan([profile("zz", "zz-agent")])
    [diagnostic] = report.diagnostics
    assert diagnostic.code == "login_shell_path"
    assert "cannot start" in diagnostic.message


@pytest.mark.anyio
async def test_no_login_shell_env_disables_the_capture(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shell, counter = fake_shell(tmp_path, 'eval "$2"')
    monkeypatch.setenv("SHELL", str(shell))
    capture = LoginShellPath()
    discovery = Discovery(login_shell=capture)
    discovery.prewarm()
    report = await discovery.scan([profile("zz", "zz-agent")])
    assert not capture.started
    assert runs(counter) == []
    assert report.diagnostics == ()


@pytest.mark.anyio
async def test_login_shell_is_skipped_on_windows_and_for_in_process_profiles(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shell, counter = fake_shell(tmp_path, 'eval "$2"')
    login_env(monkeypatch, shell)
    capture = LoginShellPath()
    windows = Discovery(platform="windows", login_shell=capture)
    windows.prewarm()
    await windows.scan([profile("zz", "zz-agent")])
    await Discovery(login_shell=capture).scan([AgentProfile(id="mock", name="Mock", wire="mock", executables=())])
    assert not capture.started
    assert runs(counter) == []


def test_default_login_shell_bound_is_five_seconds() -> None:
    assert LOGIN_SHELL_TIMEOUT == 5.0
    assert LoginShellPath().timeout == 5.0


# ---------------------------------------------------------------------------------------------
# Windows rules (pure functions, fake dirs)


def test_windows_candidates_try_exe_cmd_bat_never_the_bare_name() -> None:
    assert candidate_names("codex", "windows") == ("codex.exe", "codex.cmd", "codex.bat")
    assert candidate_names("codex.cmd", "windows") == ("codex.cmd",)
    assert candidate_names("codex", "linux") == ("codex",)


def test_windows_picks_the_cmd_beside_the_bare_npm_shim(tmp_path: Path) -> None:
    exe(tmp_path, "codex")  # npm's bash shim
    cmd = exe(tmp_path, "codex.cmd", mode=0o644)  # no exec bit needed on Windows
    assert find_executable(str(tmp_path), candidate_names("codex", "windows"), "windows") == str(cmd)
    exe_file = exe(tmp_path, "codex.exe", mode=0o644)
    assert find_executable(str(tmp_path), candidate_names("codex", "windows"), "windows") == str(exe_file)


def test_windows_bare_shim_alone_is_not_found(tmp_path: Path) -> None:
    exe(tmp_path, "codex")
    assert find_executable(str(tmp_path), candidate_names("codex", "windows"), "windows") is None
    assert find_executable(str(tmp_path), candidate_names("codex", "linux"), "linux") == str(tmp_path / "codex")


def test_executable_mode_rules() -> None:
    assert is_executable_mode(stat.S_IFREG | 0o755, "linux")
    assert is_executable_mode(stat.S_IFREG | 0o744, "darwin")
    assert not is_executable_mode(stat.S_IFREG | 0o644, "linux")
    assert is_executable_mode(stat.S_IFREG | 0o644, "windows")
    assert not is_executable_mode(stat.S_IFDIR | 0o755, "linux")
    assert not is_executable_mode(stat.S_IFDIR | 0o755, "windows")


def test_split_path_var_per_os() -> None:
    assert split_path_var('C:\\bin;;"C:\\Program Files\\x";relative;D:/y', "windows") == [
        "C:\\bin",
        "C:\\Program Files\\x",
        "D:/y",
    ]
    assert split_path_var("/usr/bin::relative:.:/opt/x/", "linux") == ["/usr/bin", "/opt/x/"]


def test_expand_dir_per_os() -> None:
    env = {"APPDATA": "C:\\Users\\me\\AppData\\Roaming"}
    assert expand_dir("~/.local/bin", "C:\\Users\\me", env, "windows") == "C:\\Users\\me\\.local\\bin"
    assert expand_dir("%APPDATA%\\npm", None, env, "windows") == "C:\\Users\\me\\AppData\\Roaming\\npm"
    assert expand_dir("%LOCALAPPDATA%\\agy\\bin", "C:\\Users\\me", env, "windows") is None
    assert expand_dir("~/.local/bin", "/home/me", {}, "linux") == "/home/me/.local/bin"
    assert expand_dir("~", "/home/me", {}, "linux") == "/home/me"
    assert expand_dir("~/x", None, {}, "linux") is None
    assert expand_dir("relative/dir", "/home/me", {}, "linux") is None
    assert expand_dir("/opt//zz/../bin", "/home/me", {}, "linux") == "/opt/bin"


def test_home_dir_per_os() -> None:
    assert home_dir({"USERPROFILE": "C:\\Users\\me", "HOME": "/x"}, "windows") == "C:\\Users\\me"
    assert home_dir({"HOMEDRIVE": "C:", "HOMEPATH": "\\Users\\me"}, "windows") == "C:\\Users\\me"
    assert home_dir({"HOME": "/home/me"}, "linux") == "/home/me"


def test_dedup_key_folds_case_and_separators_on_windows_only() -> None:
    assert dedup_key("C:\\Tools\\", "windows") == dedup_key("c:/tools", "windows")
    assert dedup_key("/Tools", "linux") != dedup_key("/tools", "linux")
    assert dedup_key("/tools/", "linux") == dedup_key("/tools", "linux")


def test_os_key() -> None:
    assert [os_key(p) for p in ("win32", "darwin", "linux", "freebsd14")] == ["windows", "darwin", "linux", "linux"]


@pytest.mark.anyio
async def test_windows_scan_over_fake_dirs(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Windows rules end to end on fake PATH dirs (quoted entries, ``;``, .cmd beside the bare shim)."""
    npm, native = home / "npm", home / "native"
    exe(npm, "zz-codex")  # the bash shim npm writes beside the .cmd
    cmd = exe(npm, "zz-codex.cmd", mode=0o644)
    found_exe = exe(native, "zz-claude.exe", mode=0o644)
    exe(native, "zz-shim-only")
    monkeypatch.setenv("PATH", f'"{home / "empty"}";{npm};"{native}"')
    report = await scan(
        profile("zz-codex", "zz-codex"),
        profile("zz-claude", "zz-claude"),
        profile("zz-shim-only", "zz-shim-only"),
        platform="windows",
    )
    assert (report.require("zz-codex").executable_path, report.require("zz-codex").source) == (
        cmd,
        InstallationSource.PATH,
    )
    assert report.require("zz-claude").executable_path == found_exe
    assert [m.id for m in report.missing] == ["zz-shim-only"]
    assert report.missing[0].searched[:3] == (str(home / "empty"), str(npm), str(native))


# ---------------------------------------------------------------------------------------------
# Small parsers


def test_newest_first_sorts_by_numeric_key() -> None:
    assert newest_first(["v9.1.0", "v20.10.0", "system", "v20.9.3", "v20.10.1"]) == [
        "v20.10.1",
        "v20.10.0",
        "v20.9.3",
        "v9.1.0",
        "system",
    ]


def test_parse_npmrc_prefix() -> None:
    assert parse_npmrc_prefix("a=b\n# prefix=/no\nprefix=/one\n prefix = '/two' \n") == "/two"
    assert parse_npmrc_prefix("registry=https://x\n") is None


def test_parse_marked_path() -> None:
    assert parse_marked_path("motd\nnoise MM/a:/bMM tail\n", "MM") == "/a:/b"
    assert parse_marked_path('echo MM"$PATH"MM\nMM/a\rMM', "MM") == "/a"
    assert parse_marked_path("MM/a\n", "MM") is None
    assert parse_marked_path("nothing", "MM") is None
