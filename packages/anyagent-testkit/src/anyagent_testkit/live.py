"""The live tier: the real agent CLIs, pinned, installed from npm or PyPI, run offline against the fake model.

``PINNED`` is the one table of versions. Bump a version deliberately (edit the table, rerun
``nox -s live``), never implicitly: ``install`` installs exactly the pinned version with
``npm install --prefix <cache>/<id>@<version> <package>@<version>`` — plus a pinned Node runtime
from npm (``node@<version>``) into the same prefix for a CLI that needs a newer Node than the
machine's — or, for a PyPI CLI, ``pip install '<package>[extras]==<version>'`` into a venv at
``<cache>/<id>@<version>/venv`` (idempotent: skipped when that version is already there and
answers ``--version``), and refuses anything else.

``prepare(cli_id, fake_model_url, root)`` builds an isolated environment from scratch under
``root`` — HOME, XDG dirs, TMPDIR (outside every config home), the CLI's own config dir and files,
telemetry and auto-update off, ``IS_SANDBOX=1`` for Claude when running as root — with the fake
model wired in (base URL + dummy key, per CLI) and returns a ``LiveAgent`` with the executable, the
environment and the CLI's protocol-mode arguments. Nothing from the caller's environment leaks in
(no real key, no login). The recipes follow the project's live-tier research notes.

The protocol-mode arguments of a CLI an adapter package drives come from that package's catalog
profile (``AgentProfile.args``, found through ``anyagent``'s plugin registry), so the live tier
launches exactly what the adapter launches; the testkit never imports an adapter package. Only a
CLI no installed adapter drives yet keeps its arguments in ``PINNED``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from anyagent import AgentProfile, Runtime, seam

__all__ = [
    "CACHE_ENV",
    "CODEX_OFFLINE_ARGS",
    "PINNED",
    "LiveAgent",
    "LiveInstallError",
    "PinnedCli",
    "default_cache",
    "install",
    "installed_executable",
    "installed_profiles",
    "prepare",
    "protocol_args",
    "runtime_with_env",
]

CACHE_ENV = "ANYAGENT_LIVE_CACHE"
"""The environment variable naming where the live tier installs its pinned CLIs (default: `.live-cache`)."""
INSTALL_TIMEOUT = 900.0
VERSION_TIMEOUT = 60.0
FAKE_KEY = "sk-anyagent-fake"
FAKE_MODEL = "fake-model"


@attrs.frozen
class PinnedCli:
    """One pinned CLI: npm ``package`` at ``version`` and its ``bin`` name.

    ``profile``: the id of the catalog profile whose ``args`` put it in protocol mode (registered
    by the adapter package that drives it); ``args``: its protocol-mode arguments when no adapter
    package drives it (``profile`` None). ``version_check``: whether ``<bin> --version`` prints the
    version (used to verify an install).
    """

    id: str
    package: str
    version: str
    bin: str
    profile: str | None = None
    args: tuple[str, ...] = ()
    version_check: bool = True
    registry: str = "npm"
    extras: tuple[str, ...] = ()
    python: str | None = None
    node: str | None = None

    @property
    def folder(self) -> str:
        """The cache folder name: ``<id>@<version>``."""
        return f"{self.id}@{self.version}"


PINNED: Mapping[str, PinnedCli] = MappingProxyType(
    {
        cli.id: cli
        for cli in (
            PinnedCli("claude", "@anthropic-ai/claude-code", "2.1.332", "claude", profile="claude"),
            PinnedCli("codex", "@openai/codex", "0.171.0", "codex", profile="codex"),
            PinnedCli("opencode", "opencode-ai", "1.18.33", "opencode", profile="opencode"),
            # the last release under this name (Node 20, no clear_queue, so no steer) ...
            PinnedCli("pi", "@mariozechner/pi-coding-agent", "0.73.1", "pi", profile="pi"),
            # ... and its successor (needs Node >= 22.19: npm's Node 22 beside it)
            PinnedCli("pi-node22", "@earendil-works/pi-coding-agent", "1.6.0", "pi", profile="pi", node="node@22.23.3"),
            PinnedCli("qwen", "@qwen-code/qwen-code", "0.15.10", "qwen", profile="qwen"),
            PinnedCli("qwen-node22", "@qwen-code/qwen-code", "0.24.4", "qwen", profile="qwen", node="node@22.23.3"),
            PinnedCli("gemini", "@google/gemini-cli", "0.61.0", "gemini", profile="gemini"),
            PinnedCli(
                "claude-agent-acp",
                "@agentclientprotocol/claude-agent-acp",
                "0.49.0",
                "claude-agent-acp",
                profile="claude-acp",
                version_check=False,
            ),
            PinnedCli(
                "codex-acp",
                "@zed-industries/codex-acp",
                "0.16.0",
                "codex-acp",
                profile="codex-acp",
                version_check=False,
            ),
            PinnedCli(
                "codex-acp-2",
                "@agentclientprotocol/codex-acp",
                "2.6.0",
                "codex-acp",
                profile="codex-acp",
                version_check=False,
            ),
            PinnedCli(
                "hermes",
                "hermes-agent",
                "0.19.0",
                "hermes",
                profile="hermes",
                version_check=False,  # `hermes --version` asks PyPI for updates; the dist-info is checked
                registry="pypi",
                extras=("acp",),
                python=">=3.11,<3.14",
            ),
        )
    }
)
"""Every live CLI, by id. Node 20 note: the npm CLIs without ``node`` are the newest versions that
run on Node 20; ``qwen-node22`` and ``pi-node22`` bring their own Node 22 from npm."""


class LiveInstallError(RuntimeError):
    """A pinned CLI could not be installed or does not run (npm missing, offline, wrong version)."""


def default_cache(start: Path | None = None) -> Path:
    """``$ANYAGENT_LIVE_CACHE``, else ``.live-cache`` in the nearest folder (from ``start``) that has a
    ``noxfile.py`` or ``.git``, else ``~/.cache/anyagent-live``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    here = (start or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        if (folder / "noxfile.py").exists() or (folder / ".git").exists():
            return folder / ".live-cache"
    return Path.home() / ".cache" / "anyagent-live"


def _pinned(cli_id: str) -> PinnedCli:
    try:
        return PINNED[cli_id]
    except KeyError:
        raise LiveInstallError(f"no pinned CLI {cli_id!r}; known: {', '.join(sorted(PINNED))}") from None


def installed_executable(cli_id: str, cache: Path | None = None) -> Path | None:
    """The executable of the pinned version if it is installed in ``cache`` (no checks run), else None."""
    cli = _pinned(cli_id)
    prefix = (cache or default_cache()) / cli.folder
    if cli.registry == "pypi":
        return _venv_executable(prefix, cli)
    if cli.node is not None and not (prefix / "node_modules" / ".bin" / "node").exists():
        return None
    manifest = prefix / "node_modules" / cli.package / "package.json"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("version") != cli.version:
        return None
    exe = _bin_path(prefix, cli, data)
    return exe if exe.exists() else None


def _bin_path(prefix: Path, cli: PinnedCli, manifest: Mapping[str, Any]) -> Path:
    bins = manifest.get("bin")
    name = cli.bin
    if isinstance(bins, dict) and bins and cli.bin not in bins:
        name = next(iter(bins))
    return prefix / "node_modules" / ".bin" / name


def _venv_executable(prefix: Path, cli: PinnedCli) -> Path | None:
    """A PyPI CLI's executable in ``prefix/venv`` when the pinned version's dist-info is there."""
    venv = prefix / "venv"
    dist = cli.package.replace("-", "_").lower()
    if not any(venv.glob(f"lib/python*/site-packages/{dist}-{cli.version}.dist-info")):
        return None
    exe = venv / "bin" / cli.bin
    return exe if exe.exists() else None


def install(cli_id: str, cache: Path | None = None, *, log: Callable[[str], None] | None = None) -> Path:
    """Install the pinned ``cli_id`` into ``cache`` (once) and return its executable.

    Idempotent and safe across concurrent test processes (a file lock per CLI). Raises
    ``LiveInstallError`` with npm's output when it fails.
    """
    cli = _pinned(cli_id)
    root = cache or default_cache()
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f".{cli.folder}.lock"):
        exe = installed_executable(cli_id, root)
        marker = root / cli.folder / ".anyagent-live.json"
        if exe is not None and marker.exists():
            return exe
        started = time.monotonic()
        if cli.registry == "pypi":
            _pip_install(cli, root / cli.folder)
        else:
            _npm_install(cli, root / cli.folder)
        exe = installed_executable(cli_id, root)
        if exe is None:
            raise LiveInstallError(
                f"{cli.registry} finished but {cli.package}@{cli.version} has no '{cli.bin}' executable"
            )
        _verify(cli, exe)
        seconds = round(time.monotonic() - started, 1)
        marker.write_text(json.dumps({"package": cli.package, "version": cli.version, "seconds": seconds}) + "\n")
        if log is not None:
            log(f"installed {cli.package}@{cli.version} in {seconds}s")
        return exe


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock across processes (POSIX ``flock``; no lock where ``fcntl`` is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _npm_install(cli: PinnedCli, prefix: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise LiveInstallError("npm is not on PATH; the live tier needs Node.js and npm")
    prefix.mkdir(parents=True, exist_ok=True)
    specs = [f"{cli.package}@{cli.version}", *([cli.node] if cli.node else [])]
    _run_install([npm, "install", "--prefix", str(prefix), *specs, "--no-audit", "--no-fund"])


def _pip_install(cli: PinnedCli, prefix: Path) -> None:
    """A fresh venv at ``prefix/venv`` with ``package[extras]==version``: through ``uv`` when it is
    on PATH (an interpreter matching ``cli.python``, found or fetched by uv), else this
    interpreter's ``venv`` and ``pip``."""
    venv = prefix / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    prefix.mkdir(parents=True, exist_ok=True)
    python = venv / "bin" / "python"
    extras = f"[{','.join(cli.extras)}]" if cli.extras else ""
    spec = f"{cli.package}{extras}=={cli.version}"
    uv = shutil.which("uv")
    if uv is not None:
        _run_install([uv, "venv", "--quiet", "--python", cli.python or sys.executable, str(venv)])
        _run_install([uv, "pip", "install", "--quiet", "--python", str(python), spec])
        return
    _run_install([sys.executable, "-m", "venv", str(venv)])
    _run_install([str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", spec])


def _run_install(argv: list[str]) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as exc:
        raise LiveInstallError(f"{' '.join(argv)} took longer than {INSTALL_TIMEOUT}s") from exc
    except OSError as exc:
        raise LiveInstallError(f"{' '.join(argv)} did not run: {exc}") from exc
    if done.returncode != 0:
        raise LiveInstallError(f"{' '.join(argv)} failed ({done.returncode}):\n{(done.stdout + done.stderr)[-4000:]}")


def _verify(cli: PinnedCli, exe: Path) -> None:
    if not cli.version_check:
        return
    try:
        with tempfile.TemporaryDirectory(prefix="anyagent-live-") as home:
            done = subprocess.run(
                [str(exe), "--version"],
                capture_output=True,
                text=True,
                timeout=VERSION_TIMEOUT,
                check=False,
                env={**_base_env(Path(home), _runtime_dirs(cli, exe)), "TMPDIR": home},
                stdin=subprocess.DEVNULL,
            )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LiveInstallError(f"{exe} --version did not run: {exc}") from exc
    if cli.version not in done.stdout + done.stderr:
        raise LiveInstallError(f"{exe} --version printed {(done.stdout + done.stderr)[:300]!r}, not {cli.version}")


# -- isolated environments --------------------------------------------------------------------


@attrs.frozen
class LiveAgent:
    """A pinned CLI ready to run in isolation: ``command(*extra)`` with ``env`` in ``workspace``.

    ``root`` holds everything: ``home`` (HOME and the CLI's config dir), ``xdg``, ``tmp`` (TMPDIR)
    and ``workspace`` (the working directory).
    """

    cli: PinnedCli
    executable: Path
    env: Mapping[str, str]
    args: tuple[str, ...]
    root: Path
    home: Path
    workspace: Path
    tmp: Path

    def command(self, *extra: str, protocol: bool = True) -> list[str]:
        """``[executable, *args, *extra]``; ``args`` are the protocol-mode arguments for this
        environment (``protocol=False`` leaves them out)."""
        return [str(self.executable), *(self.args if protocol else ()), *extra]


def _runtime_dirs(cli: PinnedCli, exe: Path) -> tuple[Path, ...]:
    """Folders that go first on the CLI's PATH: its own bin folder when it brings its runtime
    (the venv of a PyPI CLI, the pinned Node of ``node``), so ``#!/usr/bin/env node`` finds it."""
    return (exe.parent,) if cli.registry == "pypi" or cli.node else ()


def _base_env(home: Path, first: tuple[Path, ...] = ()) -> dict[str, str]:
    node = shutil.which("node")
    path = [str(folder) for folder in first]
    path += [str(Path(node).parent)] if node and str(Path(node).parent) not in path else []
    path += [entry for entry in ("/usr/local/bin", "/usr/bin", "/bin") if entry not in path]
    return {
        "PATH": os.pathsep.join(path),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "DO_NOT_TRACK": "1",
        "NO_UPDATE_NOTIFIER": "1",
        "npm_config_update_notifier": "false",
    }


def installed_profiles() -> Mapping[str, AgentProfile]:
    """The catalog profiles the installed adapter packages register (``anyagent``'s plugin
    registry, honouring ``ANYAGENT_LOAD_PLUGINS`` / ``ANYAGENT_DISABLE_PLUGINS``), by id."""
    from anyagent import Runtime

    return MappingProxyType(dict(Runtime().registry().profiles))


def protocol_args(cli_id: str, profiles: Mapping[str, AgentProfile] | None = None) -> tuple[str, ...]:
    """The arguments that put ``cli_id`` in protocol mode: its catalog profile's ``args`` (from
    ``profiles``, default ``installed_profiles()``), or ``PINNED``'s own for a CLI no adapter
    package drives. ``LiveInstallError`` when the profile is not installed."""
    cli = _pinned(cli_id)
    if cli.profile is None:
        return cli.args
    catalog = installed_profiles() if profiles is None else profiles
    profile = catalog.get(cli.profile)
    if profile is None:
        raise LiveInstallError(
            f"no installed anyagent plugin registers the {cli.profile!r} profile that launches {cli_id}; "
            f"install the adapter package that drives it (installed profiles: {', '.join(sorted(catalog)) or 'none'})"
        )
    return tuple(profile.args)


def prepare(
    cli_id: str,
    fake_model_url: str,
    root: Path,
    *,
    executable: Path | None = None,
    profiles: Mapping[str, AgentProfile] | None = None,
) -> LiveAgent:
    """An isolated environment under ``root`` for ``cli_id``, wired to the fake model at ``fake_model_url``.

    ``executable``: an installed binary to use (default: the pinned one from the cache, which must
    already be installed — call ``install`` first). ``profiles``: the catalog the protocol-mode
    arguments come from (default: the installed adapter packages', see ``protocol_args``).
    """
    cli = _pinned(cli_id)
    exe = executable or installed_executable(cli_id)
    if exe is None:
        raise LiveInstallError(f"{cli.package}@{cli.version} is not installed; call install({cli_id!r}) first")
    args = protocol_args(cli_id, profiles)
    root = root.absolute()
    home, tmp, workspace, xdg = root / "home", root / "tmp", root / "workspace", root / "xdg"
    for folder in (home, tmp, workspace, *(xdg / name for name in ("config", "data", "cache", "state"))):
        folder.mkdir(parents=True, exist_ok=True)
    env = _base_env(home, _runtime_dirs(cli, exe))
    env["TMPDIR"] = str(tmp)
    env.update({f"XDG_{name.upper()}_HOME": str(xdg / name) for name in ("config", "data", "cache", "state")})
    url = fake_model_url.rstrip("/")
    extra_env, extra_args = _CONFIGURERS[cli_id](_Layout(root, home, xdg, workspace), url)
    env.update(extra_env)
    return LiveAgent(cli, exe, MappingProxyType(env), (*args, *extra_args), root, home, workspace, tmp)


@attrs.frozen
class _Layout:
    root: Path
    home: Path
    xdg: Path
    workspace: Path


_Configured = tuple[dict[str, str], tuple[str, ...]]
"""What a CLI's configurer returns: extra environment variables and extra protocol arguments."""


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _root_sandbox() -> dict[str, str]:
    return {"IS_SANDBOX": "1"} if hasattr(os, "geteuid") and os.geteuid() == 0 else {}


def _claude(layout: _Layout, url: str) -> _Configured:
    config = layout.home / ".claude"
    config.mkdir(parents=True, exist_ok=True)
    return {
        "CLAUDE_CONFIG_DIR": str(config),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": FAKE_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_MAX_RETRIES": "1",
        **_root_sandbox(),
    }, ()


def _codex_config(url: str, env_key: str) -> str:
    return (
        f'model = "{FAKE_MODEL}"\n'
        'model_provider = "fake"\n'
        'sandbox_mode = "workspace-write"\n'
        "check_for_update_on_startup = false\n\n"
        "[model_providers.fake]\n"
        'name = "anyagent fake model"\n'
        f'base_url = "{url}/v1"\n'
        'wire_api = "responses"\n'
        f'env_key = "{env_key}"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n"
        "stream_idle_timeout_ms = 60000\n\n"
        "[analytics]\nenabled = false\n\n"
        "[feedback]\nenabled = false\n\n"
        '[otel]\nexporter = "none"\n'
    )


CODEX_OFFLINE_ARGS = ("--disable", "plugins", "--disable", "remote_plugin", "--disable", "apps")
"""Appended to ``codex app-server``: no curated-plugin sync, no remote plugins, no apps (the only
outbound lookups codex makes against a custom provider)."""


def _codex(layout: _Layout, url: str) -> _Configured:
    codex_home = layout.home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(_codex_config(url, "FAKE_API_KEY"), encoding="utf-8")
    env = {"CODEX_HOME": str(codex_home), "FAKE_API_KEY": FAKE_KEY, "RUST_LOG": "warn"}
    return env, CODEX_OFFLINE_ARGS


def _opencode(layout: _Layout, url: str) -> _Configured:
    config = {
        "model": f"fake/{FAKE_MODEL}",
        "small_model": f"fake/{FAKE_MODEL}",
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "anyagent fake model",
                "options": {"baseURL": f"{url}/v1", "apiKey": FAKE_KEY},
                "models": {
                    FAKE_MODEL: {
                        "name": "Fake Model",
                        "tool_call": True,
                        "attachment": True,
                        "modalities": {"input": ["text", "image"], "output": ["text"]},
                        "limit": {"context": 128000, "output": 4096},
                    },
                    f"{FAKE_MODEL}-2": {
                        "name": "Fake Two",
                        "tool_call": True,
                        "limit": {"context": 64000, "output": 4096},
                        "variants": {"low": {"reasoningEffort": "low"}, "high": {"reasoningEffort": "high"}},
                    },
                },
            }
        },
        "permission": {"bash": "ask", "edit": "ask", "webfetch": "deny"},
        "autoupdate": False,
        "share": "disabled",
        "enabled_providers": ["fake"],
        "lsp": False,
        "formatter": False,
    }
    _write_json(layout.xdg / "config" / "opencode" / "opencode.json", config)
    flags = ("MODELS_FETCH", "AUTOUPDATE", "LSP_DOWNLOAD", "DEFAULT_PLUGINS", "SHARE", "CLAUDE_CODE", "EXTERNAL_SKILLS")
    return {**{f"OPENCODE_DISABLE_{flag}": "1" for flag in flags}, "OPENCODE_PURE": "1"}, ()


PI_PERMISSION_EXTENSION = """\
// Written by anyagent-testkit: ask the RPC client before every write, edit and bash tool call.
export default function (pi: any) {
  pi.on("tool_call", async (event: any, ctx: any) => {
    const gated = ["write", "edit", "bash"];
    if (!gated.includes(event.toolName)) return undefined;
    if (!ctx.hasUI) return { block: true, reason: "nobody to ask" };
    const allowed = await ctx.ui.confirm(`Allow ${event.toolName}?`, JSON.stringify(event.input));
    return allowed ? undefined : { block: true, reason: "Denied by user" };
  });
}
"""
"""A pi extension that turns every mutating tool call into an ``extension_ui_request`` confirm;
``prepare("pi", ...)`` writes it to ``home/.pi/permission-gate.ts``; pass ``-e <that file>`` to load it
(it is not loaded by default: pi without it runs tools unasked, as a user's pi does)."""


def _pi(layout: _Layout, url: str) -> _Configured:
    agent_dir = layout.home / ".pi" / "agent"
    models = {
        "providers": {
            "fake": {
                "baseUrl": url,
                "api": "anthropic-messages",
                "apiKey": FAKE_KEY,
                "models": [
                    {"id": "claude-fake-1", "name": "Fake One", "reasoning": True, "input": ["text", "image"]},
                    {"id": "claude-fake-2", "name": "Fake Two", "reasoning": True, "input": ["text", "image"]},
                ],
            },
            # the same fake model over OpenAI chat completions (select it as "fake-openai/gpt-fake-1")
            "fake-openai": {
                "baseUrl": f"{url}/v1",
                "api": "openai-completions",
                "apiKey": FAKE_KEY,
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": "gpt-fake-1", "name": "Fake OpenAI"}],
            },
        }
    }
    _write_json(agent_dir / "models.json", models)
    # pi >= 0.8x compacts only what lies beyond the newest 20000 tokens: a short test session has none
    _write_json(agent_dir / "settings.json", {"compaction": {"keepRecentTokens": 1}})
    gate = layout.home / ".pi" / "permission-gate.ts"
    gate.write_text(PI_PERMISSION_EXTENSION, encoding="utf-8")
    sessions = layout.root / "sessions"
    sessions.mkdir(exist_ok=True)
    args = ("--provider", "fake", "--model", "claude-fake-1", "--session-dir", str(sessions))
    return {"PI_CODING_AGENT_DIR": str(agent_dir), "PI_OFFLINE": "1", "PI_TELEMETRY": "0"}, args


def _qwen(layout: _Layout, url: str) -> _Configured:
    settings = {
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "telemetry": {"enabled": False},
        "tools": {"approvalMode": "default"},
        "memory": {"enableManagedAutoMemory": False, "enableManagedAutoDream": False},
        "ui": {"enableFollowupSuggestions": False, "enableUserFeedback": False},
    }
    _write_json(layout.home / ".qwen" / "settings.json", settings)
    return {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": FAKE_KEY, "OPENAI_MODEL": FAKE_MODEL}, ()


def _gemini(layout: _Layout, url: str) -> _Configured:
    settings = {
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    }
    _write_json(layout.home / ".gemini" / "settings.json", settings)
    return {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": FAKE_KEY, "GEMINI_CLI_TRUST_WORKSPACE": "true"}, ()


def _codex_acp(layout: _Layout, url: str) -> _Configured:
    codex_home = layout.home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(_codex_config(url, "FAKE_OPENAI_KEY"), encoding="utf-8")
    return {"CODEX_HOME": str(codex_home), "FAKE_OPENAI_KEY": FAKE_KEY}, ()


def _hermes(layout: _Layout, url: str) -> _Configured:
    hermes_home = layout.home / ".hermes"
    config = {  # YAML is a superset of JSON: config.yaml written as JSON
        "model": {
            "provider": "custom",
            "base_url": f"{url}/v1",
            "default": FAKE_MODEL,
            "api_key": FAKE_KEY,
            "context_length": 128000,  # else a metadata lookup on openrouter.ai
        },
        "security": {"allow_lazy_installs": False, "tirith_enabled": False},
        "model_catalog": {"enabled": False},
    }
    _write_json(hermes_home / "config.yaml", config)
    return {"HERMES_HOME": str(hermes_home), "HERMES_DISABLE_LAZY_INSTALLS": "1"}, ()


_CONFIGURERS: Mapping[str, Callable[[_Layout, str], _Configured]] = {
    "claude": _claude,
    "codex": _codex,
    "opencode": _opencode,
    "pi": _pi,
    "pi-node22": _pi,
    "qwen": _qwen,
    "qwen-node22": _qwen,
    "gemini": _gemini,
    "claude-agent-acp": _claude,
    "codex-acp": _codex_acp,
    "codex-acp-2": _codex_acp,
    "hermes": _hermes,
}


def runtime_with_env(adapter: Callable[[], seam.Adapter], profile: AgentProfile, env: Mapping[str, str]) -> Runtime:
    """A ``Runtime`` that knows one agent, ``profile``, whose adapter (built by ``adapter``)
    launches it with exactly ``env`` — the live tier's isolated environment, in place of the
    host's — for ``connect``, ``probe_auth`` and ``history`` alike."""
    import anyagent
    from anyagent import AgentInstallation, AuthStatus, PlanUsage, Runtime, seam

    pinned = dict(env)

    class WithEnv(seam.Adapter):
        wire = profile.wire

        def __init__(self) -> None:
            self.inner = adapter()

        async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
            return await self.inner.connect(attrs.evolve(request, env=pinned))

        async def probe_auth(self, request: seam.ConnectRequest) -> AuthStatus | None:
            return await self.inner.probe_auth(attrs.evolve(request, env=pinned))

        async def plan_usage(self, installation: AgentInstallation, profile: AgentProfile | None) -> PlanUsage:
            return await self.inner.plan_usage(installation, profile)

        async def history(self, request: seam.ConnectRequest, cwd: Path | None) -> seam.HistoryListing:
            return await self.inner.history(attrs.evolve(request, env=pinned), cwd)

    class Plugin:
        @anyagent.hookimpl
        def anyagent_adapters(self, register: Any) -> None:
            register.adapter(WithEnv, wire=profile.wire)

        @anyagent.hookimpl
        def anyagent_agents(self, register: Any) -> None:
            register.profile(profile)

    return Runtime(plugins=[Plugin()])
