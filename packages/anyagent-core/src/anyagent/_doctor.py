"""``anyagent doctor``: what is wrong with the agents on this machine, one check per catalog agent.

Registered as a built-in through core's own plugin (``_builtin.anyagent_commands``), like a third
party's command. For each agent of the catalog (or each one named): found or not (where discovery
looked, the install hint), its version against the versions this release was tested with
(``TESTED_VERSIONS``, kept equal to the live tier's pins by a test), login state (the adapter's
probe; the login command when logged out), config home, capabilities and options, the catalog's
quirks in effect; ``--smoke`` runs one real tiny turn (``Runtime.generate``, tools off, with the
user's own login: a few hundred tokens on their account).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import anyio
import attrs

from ._render import Renderer
from ._terminal import EXIT_AGENT_ERROR, EXIT_AUTH, EXIT_NOT_INSTALLED, EXIT_OK, EXIT_USAGE
from .errors import AgentError, AuthRequired
from .installation import AgentInstallation, AgentProfile, MissingAgent
from .options import SessionOptions
from .types import AgentDetails, Authenticated, AuthUnknown, SelectKind, Unauthenticated
from .values import EnvVarLogin, TerminalLogin

TESTED_VERSIONS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "claude": ("2.1.332",),
        "codex": ("0.171.0",),
        "opencode": ("1.18.33",),
        "pi": ("0.73.1", "1.6.0"),
        "qwen": ("0.15.10", "0.24.4"),
        "gemini": ("0.61.0",),
        "claude-acp": ("0.49.0",),
        "codex-acp": ("0.16.0", "2.6.0"),
        "hermes": ("0.19.0",),
    }
)
"""The CLI versions this release was tested with, by catalog id: the live tier's pins
(``anyagent_testkit.live.PINNED``; core's tests keep the two equal)."""

HELP = "what is wrong with the agents here: found, version, login, options, a smoke turn"
DESCRIPTION = (
    "For each catalog agent (or each AGENT named): found or not (where it looked, how to install),"
    " its version against the versions this release was tested with, login state (and the login command),"
    " config home, capabilities, options and the catalog's quirks; --smoke runs one real tiny turn."
    " Exits non-zero when an agent you named is unusable (3 not found, 4 logged out, 5 another failure)."
)

SMOKE_PROMPT = "Reply with the single word: ok"
SMOKE_TIMEOUT = 120.0
PROBE_TIMEOUT = 60.0


@attrs.frozen
class AgentCheck:
    """What the doctor found about one catalog agent (``--json`` prints these)."""

    id: str
    name: str
    found: bool
    path: str | None = None
    install_hint: str = ""
    searched: tuple[str, ...] = ()
    version: str | None = None
    tested: tuple[str, ...] = ()
    version_verdict: str = "untested"  # same / older / newer / unknown / untested
    login: str = "unknown"  # logged in / logged out / unknown / error
    account: str | None = None
    login_commands: tuple[str, ...] = ()
    config_home: str | None = None
    capabilities: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    quirks: tuple[str, ...] = ()
    error: str | None = None
    smoke: str | None = None  # None: not run; else "ok (… s): reply" or the failure

    @property
    def usable(self) -> bool:
        """Found, not logged out, probed without error and (when run) the smoke turn passed."""
        return (
            self.found
            and self.login != "logged out"
            and self.error is None
            and (self.smoke is None or self.smoke.startswith("ok"))
        )


def _numbers(version: str) -> tuple[int, ...] | None:
    match = re.search(r"\d+(?:\.\d+)*", version)
    return tuple(int(part) for part in match[0].split(".")) if match else None


def version_verdict(version: str | None, tested: Sequence[str]) -> str:
    """``same`` when ``version`` is one of ``tested``; ``older``/``newer`` than all of them; ``between`` two;
    ``unknown`` when the version could not be read; ``untested`` when the release tested none."""
    if not tested:
        return "untested"
    found = _numbers(version) if version else None
    if found is None:
        return "unknown"
    known = sorted(n for n in (_numbers(t) for t in tested) if n is not None)
    if found in known:
        return "same"
    if found < known[0]:
        return "older"
    if found > known[-1]:
        return "newer"
    return "between"


def _login_commands(login: Sequence[object]) -> tuple[str, ...]:
    lines = []
    for method in login:
        if isinstance(method, TerminalLogin):
            lines.append(f"run: {' '.join(method.command)}")
        elif isinstance(method, EnvVarLogin):
            lines.append(f"or set {method.name}")
    return tuple(lines)


def _config_home(profile: AgentProfile) -> str | None:
    if profile.config_home_env is None:
        return None
    value = os.environ.get(profile.config_home_env)
    return f"{profile.config_home_env}={value}" if value else f"{profile.config_home_env} unset (the agent's default)"


async def check_agent(
    runtime: Any,
    profile: AgentProfile,
    agent: AgentInstallation | None,
    missing: MissingAgent | None,
    *,
    smoke: bool = False,
) -> AgentCheck:
    """Check one catalog agent: ``agent`` is its installation when discovery found it, else ``missing`` says why."""
    tested = TESTED_VERSIONS.get(profile.id, ())
    base = AgentCheck(
        id=profile.id,
        name=profile.name,
        found=agent is not None,
        path=str(agent.executable_path) if agent is not None else None,
        install_hint=profile.install_hint,
        searched=missing.searched if missing is not None else (),
        tested=tested,
        config_home=_config_home(profile),
        quirks=tuple(sorted(profile.quirks)),
    )
    if agent is None:
        return base
    details: AgentDetails | None = None
    try:
        with anyio.fail_after(PROBE_TIMEOUT):
            details = await runtime.probe(agent)
    except TimeoutError:
        base = attrs.evolve(base, login="error", error=f"the probe did not finish in {PROBE_TIMEOUT:.0f} s")
    except AuthRequired as exc:
        base = attrs.evolve(base, login="logged out", login_commands=_login_commands(exc.login))
    except AgentError as exc:
        base = attrs.evolve(base, login="error", error=f"{type(exc).__name__}: {exc.message}")
    version = details.version if details is not None and details.version else agent.version
    if version is None:
        version = await cli_version(agent)
    base = attrs.evolve(base, version=version, version_verdict=version_verdict(version, tested))
    if details is not None:
        auth = details.auth
        if isinstance(auth, Authenticated):
            email = auth.account.email if auth.account is not None else None
            base = attrs.evolve(base, login="logged in", account=email)
        elif isinstance(auth, Unauthenticated):
            base = attrs.evolve(base, login="logged out", login_commands=_login_commands(auth.login))
        elif isinstance(auth, AuthUnknown):
            base = attrs.evolve(base, login="unknown")
        options = []
        for option in details.config_options:
            choices = (
                "|".join(c.value for c in option.kind.choices) if isinstance(option.kind, SelectKind) else "on|off"
            )
            options.append(f"{option.id}={option.current} [{choices}]")
        base = attrs.evolve(base, capabilities=tuple(c.value for c in details.capabilities), options=tuple(options))
    if smoke and base.login != "logged out" and base.error is None:
        base = attrs.evolve(base, smoke=await _smoke(runtime, agent))
    return base


async def cli_version(agent: AgentInstallation) -> str | None:
    """``<executable> --version``'s first line (10 s at most, 64 KiB read), or None when it fails."""
    try:
        with anyio.fail_after(10):
            result = await anyio.run_process(
                [str(agent.executable_path), "--version"], check=False, stdin=subprocess.DEVNULL
            )
    except (OSError, TimeoutError):
        return None
    lines = result.stdout[:65536].decode("utf-8", "replace").strip().splitlines()
    return lines[0].strip() if result.returncode == 0 and lines else None


async def _smoke(runtime: Any, agent: AgentInstallation) -> str:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="anyagent-doctor-") as directory:
        try:
            with anyio.fail_after(SMOKE_TIMEOUT):
                reply = await runtime.generate(agent, SessionOptions.in_dir(directory), SMOKE_PROMPT)
        except TimeoutError:
            return f"failed: no reply in {SMOKE_TIMEOUT:.0f} s"
        except AgentError as exc:
            return f"failed: {type(exc).__name__}: {exc.message}"
    reply = " ".join(reply.split())
    return f"ok ({time.monotonic() - started:.1f} s): {reply[:60]!r}"


async def run_doctor(runtime: Any, names: Sequence[str] = (), *, smoke: bool = False) -> list[AgentCheck]:
    """Check every catalog agent (or those in ``names``, in that order), concurrently; unknown names raise
    ``KeyError``."""
    profiles: dict[str, AgentProfile] = {p.id: p for p in runtime.profiles()}
    unknown = [name for name in names if name not in profiles]
    if unknown:
        raise KeyError(", ".join(unknown))
    report = await runtime.discover()
    chosen = [profiles[name] for name in names] if names else list(profiles.values())
    results: dict[str, AgentCheck] = {}

    async def one(profile: AgentProfile) -> None:
        missing = next((m for m in report.missing if m.id == profile.id), None)
        results[profile.id] = await check_agent(runtime, profile, report.get(profile.id), missing, smoke=smoke)

    async with anyio.create_task_group() as tg:
        for profile in chosen:
            tg.start_soon(one, profile)
    return [results[p.id] for p in chosen]


def print_checks(checks: Sequence[AgentCheck], out: Renderer) -> None:
    """The doctor's report as a person reads it: one block per agent."""
    for check in checks:
        if not check.found:
            out.line(f"{out.red('✗')} {out.bold(check.name)} ({check.id}): not found")
            out.line(f"    install: {check.install_hint or '(no hint in the catalog)'}")
            if check.searched:
                more = " …" if len(check.searched) > 4 else ""
                out.line(out.dim(f"    looked in: {', '.join(check.searched[:4])}{more}"))
            continue
        mark = out.green("✓") if check.usable else out.red("✗")
        out.line(f"{mark} {out.bold(check.name)} ({check.id}): {check.path}")
        tested = ", ".join(check.tested) or "none"
        verdict = {"same": out.green("same"), "older": out.yellow("older"), "newer": out.yellow("newer")}.get(
            check.version_verdict, check.version_verdict
        )
        out.line(f"    version: {check.version or 'unknown'} ({verdict}; tested: {tested})")
        login = {"logged in": out.green("logged in"), "logged out": out.red("logged out")}.get(check.login, check.login)
        out.line(f"    login: {login}" + (f" as {check.account}" if check.account else ""))
        for line in check.login_commands:
            out.line(f"      {line}")
        if check.error:
            out.line(out.red(f"    error: {check.error}"))
        if check.config_home:
            out.line(f"    config home: {check.config_home}")
        if check.capabilities:
            out.line(f"    capabilities: {', '.join(check.capabilities)}")
        for option in check.options:
            out.line(f"    option {option}")
        if check.quirks:
            out.line(out.dim(f"    known quirks handled: {', '.join(check.quirks)}"))
        if check.smoke is not None:
            out.line(
                f"    smoke turn: {out.green(check.smoke) if check.smoke.startswith('ok') else out.red(check.smoke)}"
            )


def exit_status(checks: Sequence[AgentCheck], named: bool) -> int:
    """0 unless an agent the user named is unusable: 3 not found, 4 logged out, 5 another failure."""
    if not named:
        return EXIT_OK
    for check in checks:
        if not check.found:
            return EXIT_NOT_INSTALLED
    for check in checks:
        if check.login == "logged out":
            return EXIT_AUTH
    return EXIT_OK if all(c.usable for c in checks) else EXIT_AGENT_ERROR


def arguments(parser: argparse.ArgumentParser) -> None:
    """``anyagent doctor``'s arguments: AGENT ..., ``--smoke``, ``--json``."""
    parser.add_argument("agents", nargs="*", metavar="AGENT", help="only these catalog ids (default: every one)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="also run one real tiny turn per found agent, tools off, with your own login"
        " (costs a few hundred tokens on your account each)",
    )
    parser.add_argument("--json", action="store_true", help="the report as JSON (for a bug report)")


async def run_command(context: Any) -> int:
    """``anyagent doctor``'s body; ``context`` is the ``CommandContext`` (typed loosely: ``registry`` reaches
    ``runtime``, which loads this module's plugin)."""
    args, out = context.args, context.out
    if args.smoke and not args.json:
        out.line(out.yellow("--smoke: one real turn per found agent, on your account (a few hundred tokens each)"))
    try:
        checks = await run_doctor(context.runtime, args.agents, smoke=args.smoke)
    except KeyError as exc:
        out.line(out.red(f"error: no catalog agent {exc.args[0]} (see `anyagent agents`)"))
        return EXIT_USAGE
    if args.json:
        payload = [{**attrs.asdict(c), "usable": c.usable} for c in checks]
        print(json.dumps(payload, indent=2))
    else:
        if not checks:
            out.line("no agent profiles are installed: pip install anyagent-claude (or another adapter package)")
        print_checks(checks, out)
        found = [c for c in checks if c.found]
        usable = sum(c.usable for c in found)
        out.line(f"{len(found)} of {len(checks)} catalog agents found, {usable} usable")
    return exit_status(checks, bool(args.agents))
