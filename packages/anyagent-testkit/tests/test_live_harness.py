"""The live tier's machinery, offline: the pin table, installs (with a stand-in npm), isolated envs,
and protocol arguments taken from the adapter packages' catalog profiles."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from anyagent import AgentProfile
from anyagent_testkit.live import (
    CACHE_ENV,
    CODEX_OFFLINE_ARGS,
    PINNED,
    LiveInstallError,
    default_cache,
    install,
    installed_executable,
    installed_profiles,
    prepare,
    protocol_args,
)

EXPECTED_PINS = {
    "claude": ("@anthropic-ai/claude-code", "2.1.332"),
    "codex": ("@openai/codex", "0.171.0"),
    "opencode": ("opencode-ai", "1.18.33"),
    "pi": ("@mariozechner/pi-coding-agent", "0.73.1"),
    "pi-node22": ("@earendil-works/pi-coding-agent", "1.6.0"),
    "qwen": ("@qwen-code/qwen-code", "0.15.10"),
    "gemini": ("@google/gemini-cli", "0.61.0"),
    "claude-agent-acp": ("@agentclientprotocol/claude-agent-acp", "0.49.0"),
    "codex-acp": ("@zed-industries/codex-acp", "0.16.0"),
    "qwen-node22": ("@qwen-code/qwen-code", "0.24.4"),
    "codex-acp-2": ("@agentclientprotocol/codex-acp", "2.6.0"),
    "hermes": ("hermes-agent", "0.19.0"),
}

PROFILES = {
    profile_id: AgentProfile(id=profile_id, name=profile_id, wire="test", executables=(profile_id,), args=args)
    for profile_id, args in {
        "claude": ("--from-the-claude-profile",),
        "qwen": ("--acp",),
        "gemini": ("--acp",),
        "claude-acp": (),
        "codex-acp": (),
        "hermes": ("acp",),
        "codex": ("app-server",),
        "pi": ("--mode", "rpc"),
        "opencode": ("serve", "--hostname", "127.0.0.1"),
    }.items()
}
"""Stand-in catalog profiles (the real ones come from the installed adapter packages)."""

FAKE_NPM = """#!/bin/sh
# stand-in for npm: record the call, then lay out what `npm install --prefix P pkg@ver` would
echo "$@" >> "{calls}"
[ -n "{fail}" ] && {{ echo "npm ERR! offline" >&2; exit 1; }}
prefix="$3"; spec="$4"; pkg="${{spec%@*}}"; ver="${{spec##*@}}"
mkdir -p "$prefix/node_modules/$pkg" "$prefix/node_modules/.bin"
manifest="$prefix/node_modules/$pkg/package.json"
printf '{{"name":"%s","version":"%s","bin":{{"{bin}":"cli.js"}}}}' "$pkg" "$ver" > "$manifest"
printf '#!/bin/sh\\necho "{printed} (stand-in)"\\n' > "$prefix/node_modules/.bin/{bin}"
chmod +x "$prefix/node_modules/.bin/{bin}"
"""


def _fake_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, printed: str, fail: bool = False) -> Path:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    calls = tmp_path / "npm-calls.txt"
    npm = bin_dir / "npm"
    npm.write_text(FAKE_NPM.format(calls=calls, fail="yes" if fail else "", bin="claude", printed=printed))
    npm.chmod(npm.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    return calls


def test_the_pin_table_holds_exactly_the_pinned_versions() -> None:
    assert {cli_id: (cli.package, cli.version) for cli_id, cli in PINNED.items()} == EXPECTED_PINS
    with pytest.raises(TypeError):
        PINNED["claude"] = PINNED["codex"]  # type: ignore[index]


def test_install_runs_npm_once_and_then_reuses_the_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_npm(tmp_path, monkeypatch, printed="2.1.332")
    cache = tmp_path / "cache"
    exe = install("claude", cache)
    assert exe == cache / "claude@2.1.332" / "node_modules" / ".bin" / "claude"
    assert install("claude", cache) == exe
    lines = calls.read_text().splitlines()
    assert lines == [
        f"install --prefix {cache / 'claude@2.1.332'} @anthropic-ai/claude-code@2.1.332 --no-audit --no-fund"
    ]
    marker = json.loads((cache / "claude@2.1.332" / ".anyagent-live.json").read_text())
    assert marker["version"] == "2.1.332"
    assert installed_executable("claude", cache) == exe


def test_a_cli_that_does_not_report_the_pinned_version_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_npm(tmp_path, monkeypatch, printed="2.1.197")
    with pytest.raises(LiveInstallError, match=r"printed .*2\.1\.197.*not 2\.1\.332"):
        install("claude", tmp_path / "cache")


def test_npm_failures_and_a_missing_npm_are_loud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_npm(tmp_path, monkeypatch, printed="2.1.332", fail=True)
    with pytest.raises(LiveInstallError, match="npm ERR! offline"):
        install("claude", tmp_path / "cache")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(LiveInstallError, match="npm is not on PATH"):
        install("claude", tmp_path / "cache2")
    with pytest.raises(LiveInstallError, match="no pinned CLI 'cursor'"):
        install("cursor", tmp_path / "cache3")


@pytest.mark.parametrize("cli_id", sorted(EXPECTED_PINS))
def test_prepare_builds_an_isolated_environment_wired_to_the_fake_model(
    cli_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-real-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-secret")
    monkeypatch.setenv("CODEX_HOME", "/root/.codex")
    exe = tmp_path / "bin" / cli_id
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    agent = prepare(cli_id, "http://127.0.0.1:4321/", tmp_path / "root", executable=exe, profiles=PROFILES)
    env = dict(agent.env)
    assert "sk-real-secret" not in json.dumps(env)
    assert env["HOME"] == str(tmp_path / "root" / "home")
    assert env["TMPDIR"] == str(tmp_path / "root" / "tmp")
    for key, value in env.items():
        if key.endswith(("_HOME", "_DIR")) and key != "HOME":
            assert value.startswith(str(tmp_path / "root")), key
            assert not value.startswith(env["TMPDIR"]), f"{key} must not live under TMPDIR"
    assert "127.0.0.1:4321" in json.dumps(env) + _config_text(agent.home, agent.root)
    assert agent.workspace.is_dir()
    assert agent.command("--x")[0] == str(exe)
    assert agent.command("--x")[-1] == "--x"
    assert agent.command(protocol=False) == [str(exe)]


def _config_text(*folders: Path) -> str:
    return "".join(
        path.read_text()
        for folder in folders
        for path in folder.rglob("*")
        if path.is_file() and path.suffix in (".json", ".toml", ".yaml")
    )


def test_the_claude_recipe(tmp_path: Path) -> None:
    agent = prepare("claude", "http://127.0.0.1:9", tmp_path, executable=Path("/bin/true"), profiles=PROFILES)
    assert agent.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert agent.env["CLAUDE_CONFIG_DIR"] == str(tmp_path / "home" / ".claude")
    assert agent.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert agent.env["CLAUDE_CODE_MAX_RETRIES"] == "1"
    assert ("IS_SANDBOX" in agent.env) == (os.geteuid() == 0)
    assert agent.args == ("--from-the-claude-profile",)


def test_the_codex_recipe_writes_a_fake_provider(tmp_path: Path) -> None:
    tomllib = pytest.importorskip("tomllib")
    agent = prepare("codex", "http://127.0.0.1:9", tmp_path, executable=Path("/bin/true"), profiles=PROFILES)
    config = tomllib.loads((Path(agent.env["CODEX_HOME"]) / "config.toml").read_text())
    assert config["model_provider"] == "fake"
    assert config["model_providers"]["fake"]["base_url"] == "http://127.0.0.1:9/v1"
    assert config["model_providers"]["fake"]["wire_api"] == "responses"
    assert agent.env[config["model_providers"]["fake"]["env_key"]]
    assert agent.args == ("app-server", *CODEX_OFFLINE_ARGS)  # the profile's args, then the offline flags


@pytest.mark.parametrize("cli_id", ["pi", "pi-node22"])
def test_the_pi_recipe_writes_models_and_an_unloaded_gate_extension(cli_id: str, tmp_path: Path) -> None:
    agent = prepare(cli_id, "http://127.0.0.1:9", tmp_path, executable=Path("/bin/true"), profiles=PROFILES)
    agent_dir = Path(agent.env["PI_CODING_AGENT_DIR"])
    models = json.loads((agent_dir / "models.json").read_text())
    assert models["providers"]["fake"]["baseUrl"] == "http://127.0.0.1:9"
    assert all(model["reasoning"] for model in models["providers"]["fake"]["models"])
    settings = json.loads((agent_dir / "settings.json").read_text())
    assert settings["compaction"]["keepRecentTokens"] == 1  # a short session has something to compact
    assert "-e" not in agent.args  # tools run unasked unless a test loads the gate itself
    assert "ctx.ui.confirm" in (agent.home / ".pi" / "permission-gate.ts").read_text()
    assert agent.args[:2] == ("--mode", "rpc")
    node_first = agent.env["PATH"].split(os.pathsep)[0] == "/bin"  # the pinned Node 22 beside pi
    assert node_first is (PINNED[cli_id].node is not None)


def test_protocol_args_come_from_the_profile_or_the_pin_table(tmp_path: Path) -> None:
    assert protocol_args("qwen", PROFILES) == ("--acp",)
    assert protocol_args("opencode", PROFILES) == ("serve", "--hostname", "127.0.0.1")  # anyagent-opencode's
    assert protocol_args("pi", PROFILES) == ("--mode", "rpc")  # anyagent-pi's profile
    assert protocol_args("codex", PROFILES) == ("app-server",)  # anyagent-codex's profile
    assert PINNED["claude"].args == ()  # claude's flags live in its profile only
    with pytest.raises(LiveInstallError, match="'claude-acp' profile that launches claude-agent-acp"):
        prepare("claude-agent-acp", "http://127.0.0.1:9", tmp_path, executable=Path("/bin/true"), profiles={})


def test_the_installed_claude_profile_launches_the_live_claude(tmp_path: Path) -> None:
    """Without ``profiles`` the catalog is the installed plugins' (anyagent-claude registers ``claude``)."""
    profile = installed_profiles().get("claude")
    if profile is None:
        pytest.skip("anyagent-claude is not installed here")
    agent = prepare("claude", "http://127.0.0.1:9", tmp_path, executable=Path("/bin/true"))
    assert agent.args == profile.args
    assert {"--input-format", "--output-format", "--permission-prompt-tool"} <= set(agent.args)


def test_prepare_needs_an_installed_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "empty-cache"))
    with pytest.raises(LiveInstallError, match="is not installed"):
        prepare("gemini", "http://127.0.0.1:9", tmp_path)


def test_the_default_cache_is_the_repos_live_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CACHE_ENV, raising=False)
    (tmp_path / "repo" / "packages" / "x").mkdir(parents=True)
    (tmp_path / "repo" / "noxfile.py").write_text("")
    assert default_cache(tmp_path / "repo" / "packages" / "x") == tmp_path / "repo" / ".live-cache"
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "elsewhere"))
    assert default_cache(tmp_path / "repo") == tmp_path / "elsewhere"


FAKE_UV = """#!/bin/sh
# stand-in for uv: record the call, then lay out what `uv venv` / `uv pip install` would
echo "$@" >> "{calls}"
if [ "$1" = venv ]; then
  eval venv=\\${{$#}}
  mkdir -p "$venv/bin" "$venv/lib/python3.11/site-packages"
  exit 0
fi
eval spec=\\${{$#}}; python="$5"; venv="$(dirname "$(dirname "$python")")"
version="${{spec##*==}}"
mkdir -p "$venv/lib/python3.11/site-packages/hermes_agent-$version.dist-info"
printf '#!/bin/sh\\n' > "$venv/bin/hermes"; chmod +x "$venv/bin/hermes"
"""


def test_a_pypi_cli_is_installed_pinned_into_its_own_venv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    calls = tmp_path / "uv-calls.txt"
    uv = bin_dir / "uv"
    uv.write_text(FAKE_UV.format(calls=calls))
    uv.chmod(uv.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    cache = tmp_path / "cache"
    venv = cache / "hermes@0.19.0" / "venv"
    assert installed_executable("hermes", cache) is None
    exe = install("hermes", cache)
    assert exe == venv / "bin" / "hermes"
    assert install("hermes", cache) == exe  # once
    assert calls.read_text().splitlines() == [
        f"venv --quiet --python >=3.11,<3.14 {venv}",
        f"pip install --quiet --python {venv / 'bin' / 'python'} hermes-agent[acp]==0.19.0",
    ]
    (venv / "lib" / "python3.11" / "site-packages" / "hermes_agent-0.19.0.dist-info").rename(
        venv / "lib" / "python3.11" / "site-packages" / "hermes_agent-0.20.0.dist-info"
    )
    assert installed_executable("hermes", cache) is None  # another version is not the pinned one


def test_the_hermes_recipe_points_its_config_at_the_fake_and_its_path_at_the_venv(tmp_path: Path) -> None:
    exe = tmp_path / "venv" / "bin" / "hermes"
    agent = prepare("hermes", "http://127.0.0.1:9", tmp_path / "root", executable=exe, profiles=PROFILES)
    config = json.loads((Path(agent.env["HERMES_HOME"]) / "config.yaml").read_text())  # JSON is YAML
    assert config["model"] == {
        "provider": "custom",
        "base_url": "http://127.0.0.1:9/v1",
        "default": "fake-model",
        "api_key": "sk-anyagent-fake",
        "context_length": 128000,
    }
    assert agent.env["HERMES_DISABLE_LAZY_INSTALLS"] == "1"
    assert agent.env["PATH"].split(os.pathsep)[0] == str(exe.parent)
    assert agent.args == ("acp",)


def test_a_cli_needing_a_newer_node_gets_npms_node_installed_beside_it_and_first_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _fake_npm(tmp_path, monkeypatch, printed="0.24.4")
    cache = tmp_path / "cache"
    prefix = cache / "qwen-node22@0.24.4"
    bins = prefix / "node_modules" / ".bin"
    with pytest.raises(LiveInstallError):  # the stand-in npm lays out no node: not installed
        install("qwen-node22", cache)
    assert calls.read_text().splitlines() == [
        f"install --prefix {prefix} @qwen-code/qwen-code@0.24.4 node@22.23.3 --no-audit --no-fund"
    ]
    (bins / "node").write_text("#!/bin/sh\n")
    (bins / "node").chmod(0o755)
    assert installed_executable("qwen-node22", cache) == bins / "claude"  # the stand-in's only bin
    agent = prepare("qwen-node22", "http://127.0.0.1:9", tmp_path / "root", executable=bins / "qwen", profiles=PROFILES)
    assert agent.env["PATH"].split(os.pathsep)[0] == str(bins)
    plain = prepare("qwen", "http://127.0.0.1:9", tmp_path / "plain", executable=bins / "qwen", profiles=PROFILES)
    assert str(bins) not in plain.env["PATH"]
