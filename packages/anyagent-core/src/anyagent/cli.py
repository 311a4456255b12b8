"""The ``anyagent`` command: discover, probe, run, chat, demo, plugins, and plugins' own subcommands.

Built on stdlib ``argparse``: the command has six subcommands with a handful of flags each, so a
CLI framework would add a dependency (and import time) to every install of the core for no gain.

Exit status of ``run``: 0 completed, 1 failed or refused, 2 bad usage, 3 agent not installed,
4 login required, 5 other agent error, 130 cancelled.

Plugins add subcommands through the ``anyagent_commands`` hook (``anyagent.CliCommand``): the
command line is parsed after every installed plugin registered its commands, and a command's
``run`` gets an ``anyagent.CommandContext`` (the runtime, the parsed arguments, the renderer).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import sys
import warnings
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import anyio

from ._chatui import LiveConsole, PlainConsole, console
from ._render import Renderer
from ._terminal import (
    EXIT_AGENT_ERROR,
    EXIT_AUTH,
    EXIT_CANCELLED,
    EXIT_NOT_INSTALLED,
    EXIT_OK,
    EXIT_USAGE,
    Interrupts,
    Requests,
    Working,
    stdin_lines,
    stream_turn,
    to_json,
)
from .commands import CommandContext
from .errors import AgentError, AuthRequired, InvalidConfiguration, NotInstalled
from .installation import AgentInstallation, DiscoveryReport
from .options import SessionOptions
from .registry import CliCommand, PluginWarning
from .runtime import Runtime
from .session import Session
from .types import (
    AgentDetails,
    Authenticated,
    AuthUnknown,
    Capability,
    Delivery,
    EnvVarLogin,
    Event,
    PromptOrigin,
    Queued,
    RequestClosed,
    RequestOpened,
    SelectKind,
    Steered,
    TerminalLogin,
    TurnEnded,
    TurnStarted,
    Unauthenticated,
)
from .values import DiagnosticInfo


class UsageError(Exception):
    """A bad command line (exit status 2)."""


def _parse_set(values: Sequence[str]) -> list[tuple[str, str | bool]]:
    """``--set id=value`` pairs; ``true``/``false`` become booleans."""
    pairs: list[tuple[str, str | bool]] = []
    for raw in values:
        key, sep, value = raw.partition("=")
        if not sep or not key:
            raise UsageError(f"--set takes id=value, got {raw!r}")
        lowered = value.lower()
        pairs.append((key, lowered == "true" if lowered in ("true", "false") else value))
    return pairs


def _directory(args: argparse.Namespace) -> str:
    return os.path.abspath(getattr(args, "directory", None) or os.getcwd())


def _options(args: argparse.Namespace) -> SessionOptions:
    options = SessionOptions.in_dir(_directory(args))
    if getattr(args, "model", None):
        options = options.configure("model", args.model)
    for key, value in _parse_set(getattr(args, "set", None) or []):
        options = options.configure(key, value)
    # --auto-approve is applied by the command (handle_request), not PermissionMode.AUTO_APPROVE:
    # that way each approval still shows on screen and as an ``Answered`` line with --json
    if getattr(args, "record_wire", None):
        options = options.record_wire(args.record_wire)
    if getattr(args, "resume", None):
        options = options.resume(args.resume)
    elif getattr(args, "continue_", False):
        options = options.resume(_last_session(args))
    return options


# ---------------------------------------------------------------------------------------------
# the resume command printed on exit, and ``-c`` (continue the last session of an agent in a directory)


def _state_file() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "anyagent" / "last-sessions.json"


def _read_state() -> dict[str, str]:
    try:
        data = json.loads(_state_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return (
        {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(data, dict) else {}
    )


def _last_session(args: argparse.Namespace) -> str:
    token = _read_state().get(f"{args.agent}\0{_directory(args)}")
    if token is None:
        raise UsageError(f"no earlier session of {args.agent} in {_directory(args)} to continue (-c)")
    return token


def _remember(args: argparse.Namespace, session: Session) -> None:
    """Print how to come back to this session (stderr) and remember it for ``-c``."""
    token = session.info().resume_token
    if not token:
        return
    command = "chat" if args.command == "chat" else "run"
    where = f" -C {shlex.quote(args.directory)}" if getattr(args, "directory", None) else ""
    tail = "" if command == "chat" else " PROMPT"
    print(f"resume: anyagent {command} {args.agent}{where} --resume {shlex.quote(token)}{tail}", file=sys.stderr)
    state = _read_state()
    state[f"{args.agent}\0{_directory(args)}"] = token
    path = _state_file()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps(state, indent=1), encoding="utf-8")
        os.replace(scratch, path)


def _login_lines(login: Sequence[object]) -> list[str]:
    lines = []
    for method in login:
        if isinstance(method, TerminalLogin):
            lines.append(
                f"run: {' '.join(method.command)}" + (f"  ({method.description})" if method.description else "")
            )
        elif isinstance(method, EnvVarLogin):
            lines.append(f"or set {method.name}")
    return lines


# ---------------------------------------------------------------------------------------------
# discover / plugins / probe


async def cmd_discover(runtime: Runtime, args: argparse.Namespace, out: Renderer) -> int:
    report = await runtime.discover()
    if args.json:
        print(to_json(report))
        return EXIT_OK
    _print_report(report, out, verbose=args.verbose)
    return EXIT_OK


def _print_report(report: DiscoveryReport, out: Renderer, *, verbose: bool = False) -> None:
    if not report.agents and not report.missing:
        out.line("no agent profiles are installed: pip install anyagent-claude (or another adapter package)")
    for agent in report.agents:
        version = f" {agent.version}" if agent.version else ""
        out.line(f"{out.green('✓')} {out.bold(agent.name)} ({agent.id}){version}  {agent.executable_path}")
        out.line(out.dim(f"    wire: {agent.wire or '?'}, found via {agent.source.value}"))
        if agent.upgrade is not None:
            out.line(out.yellow(f"    upgrade available: {agent.upgrade.name} — {agent.upgrade.install_hint}"))
    if report.missing:  # one compact block: a line per agent, the directories searched once
        out.line(out.bold(f"not installed ({len(report.missing)}):"))
        width = max(len(m.id) for m in report.missing)
        for missing in report.missing:
            out.line(f"  {out.red('✗')} {missing.id.ljust(width)}  {missing.name} — {missing.install_hint}")
        searched = list(dict.fromkeys(d for m in report.missing for d in m.searched))
        if searched:
            shown = searched if verbose else searched[:6]
            more = "" if len(shown) == len(searched) else " … (-v lists them all)"
            out.line(out.dim(f"  searched {len(searched)} directories: {', '.join(shown)}{more}"))
    for diagnostic in report.diagnostics:
        out.line(out.yellow(f"! {diagnostic.message}"))


async def cmd_plugins(runtime: Runtime, args: argparse.Namespace, out: Renderer) -> int:
    plugins = runtime.plugins()
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "name": p.name,
                        "distribution": p.distribution,
                        "version": p.version,
                        "wires": list(p.wires),
                        "profiles": list(p.profiles),
                        "demos": list(p.demos),
                        "commands": list(p.commands),
                    }
                    for p in plugins
                ],
                indent=2,
            )
        )
        return EXIT_OK
    for plugin in plugins:
        dist = f"{plugin.distribution} {plugin.version or ''}".strip() if plugin.distribution else "?"
        out.line(f"{out.bold(plugin.name)}  {out.dim(dist)}")
        demos = f"   demos: {', '.join(plugin.demos)}" if plugin.demos else ""
        commands = f"   commands: {', '.join(plugin.commands)}" if plugin.commands else ""
        agents = ", ".join(plugin.profiles) or "-"
        out.line(f"    wires: {', '.join(plugin.wires) or '-'}   agents: {agents}{demos}{commands}")
    for diagnostic in runtime.registry().diagnostics:
        out.line(out.yellow(f"! {diagnostic.message}"))
    return EXIT_OK


def agents_markdown(runtime: Runtime) -> str:
    """The catalog as a Markdown table: every installed profile, its wire, executable, portable
    ``mode`` values, install hint."""
    from ._modes import describe_modes

    rows = ["| agent | id | wire | executable | modes | install |", "|---|---|---|---|---|---|"]
    for profile in runtime.profiles():
        if not profile.executables:
            continue  # in-process agents (the mock) are not installable agents
        wires = profile.wire + (
            f", {profile.upgrade.wire} with `{profile.upgrade.executables[0]}`" if profile.upgrade else ""
        )
        hint = profile.install_hint.replace("|", "\\|")
        modes = describe_modes(profile.modes)
        rows.append(f"| {profile.name} | `{profile.id}` | {wires} | `{profile.executables[0]}` | {modes} | {hint} |")
    return "\n".join(rows)


async def cmd_agents(runtime: Runtime, args: argparse.Namespace, out: Renderer) -> int:
    if args.markdown:
        print(agents_markdown(runtime))
        return EXIT_OK
    for profile in runtime.profiles():
        if profile.executables:
            out.line(f"{out.bold(profile.name)} ({profile.id})  wire {profile.wire}, runs `{profile.executables[0]}`")
            out.line(out.dim(f"    install: {profile.install_hint}"))
    return EXIT_OK


async def cmd_history(runtime: Runtime, args: argparse.Namespace, out: Renderer) -> int:
    """``anyagent history AGENT [-C DIR] [--all] [--json]``: the conversations the agent keeps itself."""

    def skipped(diagnostic: DiagnosticInfo) -> None:
        print(out.yellow(f"! {diagnostic.message}"), file=sys.stderr, flush=True)

    directory = None if args.all else (args.directory or os.getcwd())
    entries = await runtime.history(args.agent, directory, on_diagnostic=skipped)
    if args.json:
        for entry in entries:
            print(to_json(entry))
        return EXIT_OK
    if not entries:
        where = "anywhere" if directory is None else f"in {directory}"
        out.line(out.dim(f"no {args.agent} conversations {where}"))
        return EXIT_OK
    for entry in entries:
        when = entry.last_activity.astimezone().strftime("%Y-%m-%d %H:%M") if entry.last_activity else "?"
        count = f"  {entry.message_count} messages" if entry.message_count is not None else ""
        out.line(f"{out.dim(when)}  {out.bold(entry.title or '(untitled)')}{out.dim(count)}")
        place = f"  in {entry.cwd}" if directory is None and entry.cwd else ""
        out.line(out.dim(f"    anyagent chat {args.agent} --resume {shlex.quote(entry.resume_token)}{place}"))
    return EXIT_OK


async def cmd_probe(runtime: Runtime, args: argparse.Namespace, out: Renderer) -> int:
    report = await runtime.discover()
    agents = [report.require(agent_id) for agent_id in args.agents] if args.agents else list(report.agents)
    results: dict[str, AgentDetails | AgentError] = {}

    async def probe(agent: AgentInstallation) -> None:
        try:
            results[agent.id] = await runtime.probe(agent)
        except AgentError as exc:
            results[agent.id] = exc

    async with anyio.create_task_group() as tg:
        for agent in agents:
            tg.start_soon(probe, agent)
    if args.json:
        payload = {}
        for agent in agents:
            result = results[agent.id]
            payload[agent.id] = (
                json.loads(to_json(result))
                if isinstance(result, AgentDetails)
                else {"error": type(result).__name__, "message": result.message}
            )
        print(json.dumps(payload, indent=2))
        return EXIT_OK
    if not agents:
        out.line("no installed agents to probe (see `anyagent discover`)")
    for agent in agents:
        _print_details(agent, results[agent.id], out)
    if len(agents) > 1:
        _print_matrix(agents, results, out)
    return EXIT_OK


def _print_details(agent: AgentInstallation, result: AgentDetails | AgentError, out: Renderer) -> None:
    out.line(out.bold(f"{agent.name} ({agent.id})"))
    if isinstance(result, AgentError):
        out.line(out.red(f"    {type(result).__name__}: {result.message}"))
        if isinstance(result, AuthRequired):
            for line in _login_lines(result.login):
                out.line(f"    {line}")
        return
    auth = result.auth
    if isinstance(auth, Authenticated):
        account = auth.account.email if auth.account and auth.account.email else ""
        out.line(f"    login: {out.green(auth.kind.value)} {account}".rstrip())
    elif isinstance(auth, Unauthenticated):
        out.line(f"    login: {out.red('logged out')}")
        for line in _login_lines(auth.login):
            out.line(f"      {line}")
    elif isinstance(auth, AuthUnknown):
        out.line("    login: unknown")
    out.line(f"    version: {result.version or 'unknown'}")
    caps = ", ".join(c.value for c in result.capabilities) or "none"
    out.line(f"    capabilities: {caps}")
    for option in result.config_options:
        if isinstance(option.kind, SelectKind):
            values = ", ".join(c.value for c in option.kind.choices)
        else:
            values = "true/false"
        live = "" if option.live else " (at open only)"
        out.line(f"    option {option.id} = {option.current!r}  [{values}]{live}")
    if result.commands:
        out.line("    commands: " + " ".join(f"/{c.name}" for c in result.commands))


def _print_matrix(
    agents: list[AgentInstallation], results: dict[str, AgentDetails | AgentError], out: Renderer
) -> None:
    width = max(len(c.value) for c in Capability)
    out.line()
    out.line(" " * width + "  " + "  ".join(a.id[:8].ljust(8) for a in agents))
    for capability in Capability:
        cells = []
        for agent in agents:
            result = results[agent.id]
            mark = "✓" if isinstance(result, AgentDetails) and result.capabilities.supports(capability) else "·"
            cells.append(mark.ljust(8))
        out.line(capability.value.ljust(width) + "  " + "  ".join(cells))


# ---------------------------------------------------------------------------------------------
# run / chat


PROMPT_LIMIT = 16 * 1024 * 1024  # bytes `run -` reads from stdin at most


async def _prompt_text(args: argparse.Namespace) -> str:
    """The prompt argument, or with ``-`` all of stdin (bounded)."""
    if args.prompt != "-":
        return str(args.prompt)
    lines = stdin_lines()
    parts: list[str] = []
    size = 0
    while (line := await lines.read()) is not None:
        size += len(line) + 1
        if size > PROMPT_LIMIT:
            raise UsageError(f"the prompt on stdin is over {PROMPT_LIMIT // (1024 * 1024)} MiB")
        parts.append(line)
    text = "\n".join(parts).strip()
    if not text:
        raise UsageError("the prompt on stdin is empty")
    return text


async def cmd_run(runtime: Runtime, args: argparse.Namespace, out: Renderer) -> int:
    prompt = await _prompt_text(args)
    agent = (await runtime.discover()).require(args.agent)
    session, events = await runtime.open(agent, _options(args))
    try:
        async with session:
            await session.prompt(prompt)
            return await stream_turn(
                session,
                events,
                out,
                json_lines=args.json,
                auto=args.auto_approve,
                working=None if args.json else Working.on(out.side),
            )
    finally:
        _remember(args, session)


class _LineRouter:
    """The one reader of input in ``chat`` hands each line to the question being asked, if any,
    otherwise it is a chat line (prompt or slash command)."""

    def __init__(self, console: PlainConsole | LiveConsole) -> None:
        self._console = console
        self._waiter: tuple[anyio.Event, list[str | None], str] | None = None

    def prompt(self) -> str:
        return self._waiter[2] if self._waiter is not None else ""

    async def ask(self, prompt: str) -> str | None:
        done = anyio.Event()
        box: list[str | None] = []
        self._waiter = (done, box, prompt)
        self._console.show(prompt)
        try:
            await done.wait()
        finally:
            self._waiter = None
            self._console.show("")
        return box[0]

    def offer(self, line: str | None) -> bool:
        """Hand ``line`` to a waiting question; False when nobody is asking."""
        if self._waiter is None:
            return False
        done, box, _ = self._waiter
        box.append(line)
        done.set()
        return True


def _queued(position: int) -> str:
    ahead = "the running turn" + (f" and {position} queued prompt{'s' if position > 1 else ''}" if position else "")
    return f"(queued: runs after {ahead})"


async def cmd_chat(
    runtime: Runtime,
    args: argparse.Namespace,
    out: Renderer,
    *,
    opened: tuple[Session, AsyncIterator[Event]] | None = None,
    on_prompt: Callable[[str, Delivery], None] | None = None,
) -> int:
    """``anyagent chat``: an interactive session on ``args.agent``, until /quit, end of input or Ctrl-C.

    A plugin's command can chat on a session it opened itself: ``opened`` is that session and the
    events to show (say, a stored history followed by the live events), ``on_prompt(text, delivery)``
    hears each prompt the user sent. The session is closed at the end either way.
    """
    agent = (await runtime.discover()).require(args.agent)
    session, events = opened if opened is not None else await runtime.open(agent, _options(args))
    steer = session.info().details.capabilities.supports(Capability.STEER)
    out.configuration_shown(session.info().configuration)
    version = f" {agent.version}" if agent.version else ""
    directory = getattr(args, "directory", None) or os.getcwd()
    out.line(out.bold(f"{agent.name}{version}") + out.dim(f" in {directory}"))
    out.line(
        out.dim(
            f"mid-turn messages {'steer' if steer else 'queue'}; /help lists the commands; Ctrl-C clears the line,"
            " cancels the turn, twice (or when idle) quits"
        )
    )
    agent_commands = [f"/{c.name}" for c in session.info().details.commands]
    ui = console(out, plain=args.plain, completions=[*LOCAL_COMMANDS, *agent_commands])
    if ui.live:
        assert isinstance(ui, LiveConsole)
        out.working = ui.working
    else:
        out.working = Working.on(sys.stdout)
    router = _LineRouter(ui)
    interrupts = Interrupts()
    failure: list[AgentError] = []
    status = EXIT_OK
    # prompts whose turn the user must still see end (started or queued ones; a steered one joins a turn)
    awaited: set[str] = set()
    shown_ended: set[str] = set()  # prompts whose turn's TurnEnded was rendered
    turn_prompts: dict[str, str] = {}  # turn id -> the prompt that started it
    last_shown = [anyio.current_time()]  # when the consumer last rendered an event

    async def on_press() -> None:
        nonlocal status
        busy = session.status().value != "idle" or requests.pending
        if interrupts.press(busy=busy):
            requests.withdraw_all()
            out.line(out.yellow("cancelling the turn (Ctrl-C again to quit)"))
            with contextlib.suppress(AgentError):
                await session.cancel()
        else:
            status = EXIT_CANCELLED

    async def consume() -> None:
        try:
            async for event in events:
                out.render(event)
                last_shown[0] = anyio.current_time()
                kind, turn = event.kind, event.turn_info
                if isinstance(kind, TurnStarted) and isinstance(kind.origin, PromptOrigin) and turn is not None:
                    turn_prompts[turn.id] = kind.origin.prompt_id
                elif isinstance(kind, TurnEnded) and turn is not None and turn.id in turn_prompts:
                    shown_ended.add(turn_prompts.pop(turn.id))
                elif isinstance(kind, RequestOpened):
                    requests.opened(kind)
                elif isinstance(event.kind, RequestClosed):
                    requests.closed(event.kind.request_id)
        except AgentError as exc:
            out.line(out.red(f"session ended: {type(exc).__name__}: {exc.message}"))
            failure.append(exc)
        finally:
            interrupts.quit.set()

    async def read_input() -> None:
        while not interrupts.quit.is_set():
            try:
                line = await ui.read(router.prompt)
            except KeyboardInterrupt:  # the live console's Ctrl-C (the terminal is in raw mode)
                await on_press()
                continue
            if router.offer(line):
                continue
            if line is None:  # end of input (a piped script): let the work already asked for finish and be shown
                # (the engine goes idle before the events reach the screen: a slow reader, a stored history);
                # a queued prompt withdrawn by a cancel never gets a turn: stop once nothing shows for 5 s
                def unshown() -> bool:
                    return not awaited <= shown_ended and anyio.current_time() - last_shown[0] < 5.0

                while (session.status().value != "idle" or requests.pending or unshown()) and (
                    not interrupts.quit.is_set()
                ):
                    await anyio.sleep(0.05)
                interrupts.quit.set()
                return
            if line.strip() in ("/quit", "/exit"):
                interrupts.quit.set()
                return
            if line.strip() == "/help":
                _chat_help(session, out)
                continue
            delivery = await _chat_line(session, line, out, on_prompt)
            if delivery is not None and not isinstance(delivery.kind, Steered):
                awaited.add(delivery.prompt_id)

    async with ui, anyio.create_task_group() as tg:
        requests = Requests(
            session, out, tg, auto=args.auto_approve, ask=router.ask, withdraw_prompt=lambda: ui.show("")
        )
        tg.start_soon(consume)
        tg.start_soon(interrupts.watch, on_press)
        if isinstance(out.working, Working):
            tg.start_soon(out.working.animate)
        tg.start_soon(read_input)
        await interrupts.quit.wait()
        tg.cancel_scope.cancel()
    with anyio.CancelScope(shield=True):
        await session.close()
    _remember(args, session)
    if failure:
        return error_status(failure[0])
    return status


LOCAL_COMMANDS = {
    "/help": "this list",
    "/set": "OPTION VALUE — change a config option (see /info)",
    "/cancel": "cancel the running turn",
    "/compact": "compact the agent's context",
    "/rollback": "N — drop the last N turns (default 1)",
    "/info": "the session: id, status, resume token, configuration",
    "/quit": "end the session (also /exit, Ctrl-D)",
}


def _chat_help(session: Session, out: Renderer) -> None:
    """``/help``: the chat's own commands, then the agent's (sent to it as typed)."""
    width = max(len(name) for name in LOCAL_COMMANDS)
    out.note(out.bold("commands:"))
    for name, text in LOCAL_COMMANDS.items():
        out.note(f"  {name.ljust(width)}  {out.dim(text)}")
    commands = session.info().details.commands
    if commands:
        out.note(out.bold("the agent's commands (sent to it):"))
        for command in commands:
            out.note(f"  /{command.name}" + (f"  {out.dim(command.description)}" if command.description else ""))
    out.note(out.dim("Tab completes a command; Ctrl-C clears a typed line, cancels a turn, on an empty line quits"))


async def _chat_line(
    session: Session, line: str, out: Renderer, on_prompt: Callable[[str, Delivery], None] | None = None
) -> Delivery | None:
    """Act on one chat line: a local command, else a prompt (its ``Delivery``; None for anything else)."""
    text = line.strip()
    if not text:
        return None
    try:
        if text.startswith("/set "):
            parts = text.split(maxsplit=2)
            if len(parts) != 3:
                out.line(out.yellow("usage: /set OPTION VALUE"))
                return None
            ((key, value),) = _parse_set([f"{parts[1]}={parts[2]}"])
            await session.configure(key, value)
        elif text == "/cancel":
            await session.cancel()
        elif text == "/compact":
            await session.compact()
        elif text.startswith("/rollback"):
            parts = text.split()
            await session.rollback(int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 1)
        elif text == "/info":
            info = session.info()
            out.line(
                out.dim(f"session {info.session_id}, status {info.status.value}, resume token {info.resume_token}")
            )
            for key, value in info.configuration.items():
                out.line(out.dim(f"  {key} = {value}"))
        else:
            delivery = await session.prompt(text)
            if on_prompt is not None:
                on_prompt(text, delivery)
            if isinstance(delivery.kind, Queued):
                out.note(out.dim(_queued(delivery.kind.position)))
            elif isinstance(delivery.kind, Steered):
                out.note(out.dim("(steered into the running turn)"))
            return delivery
    except (AgentError, UsageError) as exc:
        message = exc.message if isinstance(exc, AgentError) else str(exc)
        out.line(out.yellow(f"{type(exc).__name__}: {message}"))
    return None


# ---------------------------------------------------------------------------------------------
# demo


async def cmd_demo(runtime: Runtime, args: argparse.Namespace, out: Renderer) -> int:
    from ._demo import run_demo  # the mock demo's script is built only when asked for

    return await run_demo(runtime, out, auto=args.yes, name=args.name)


# ---------------------------------------------------------------------------------------------


def build_parser(commands: Sequence[CliCommand] = ()) -> argparse.ArgumentParser:
    """The command line: the built-in subcommands, then ``commands`` (plugins' own) whose names are free."""
    from ._version import __version__

    parser = argparse.ArgumentParser(
        prog="anyagent", description="One interface to every coding agent on this machine."
    )
    parser.add_argument(
        "--version", action="version", version=f"anyagent {__version__} (Python {sys.version.split()[0]})"
    )
    parser.add_argument("--no-color", action="store_true", help="plain output")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="also show the agents' advisory notices (info diagnostics)"
    )
    parser.add_argument(
        "--mock",
        metavar="SCRIPT.json",
        help="use only the scripted agent 'mock' playing this script (for trying and testing)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("discover", help="installed agents, missing ones with install hints")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("probe", help="ask installed agents for login state, version, capabilities, options")
    p.add_argument("agents", nargs="*", metavar="AGENT")
    p.add_argument("--json", action="store_true")

    for name, help_text in (("run", "one turn, streamed"), ("chat", "an interactive session")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("agent", metavar="AGENT")
        if name == "run":
            p.add_argument("prompt", metavar="PROMPT", help="what to ask ('-': read it from stdin)")
            p.add_argument(
                "--json",
                action="store_true",
                help='one JSON event per line (anyagent.serialize), plus one {"type": "Answered"} line per'
                " request the command answered; questions and notices go to stderr",
            )
        else:
            p.add_argument(
                "--plain", action="store_true", help="read lines from stdin without the input line (prompt_toolkit)"
            )
        p.add_argument(
            "--auto-approve",
            action="store_true",
            help="allow every permission request (and take the first choice of every question) without asking;"
            " without it the command asks on the terminal and denies when there is no input",
        )
        p.add_argument("-m", "--model", metavar="MODEL", help="the model (the same as --set model=MODEL)")
        resume = p.add_mutually_exclusive_group()
        resume.add_argument("-r", "--resume", metavar="TOKEN", help="continue the session behind TOKEN")
        resume.add_argument(
            "-c",
            "--continue",
            dest="continue_",
            action="store_true",
            help="continue the last session this command ran with AGENT in this directory",
        )
        p.add_argument("--record-wire", metavar="PATH", help="tee the raw protocol to a JSONL file")
        p.add_argument("-C", dest="directory", metavar="DIR", help="working directory for the agent")
        p.add_argument("--set", action="append", metavar="ID=VALUE", help="a config option (repeatable)")

    p = sub.add_parser("demo", help="the whole stack against a bundled scripted agent; needs nothing installed")
    p.add_argument(
        "name", nargs="?", metavar="NAME", help="a demo a plugin offers (default: the first; 'mock': core's own)"
    )
    p.add_argument("--yes", action="store_true", help="answer the permission prompt automatically")

    p = sub.add_parser("agents", help="the catalog: every agent the installed plugins know")
    p.add_argument("--markdown", action="store_true", help="a Markdown table (the README's agent table)")

    p = sub.add_parser("plugins", help="installed plugins, their wires and agents")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("history", help="the conversations an agent keeps itself (newest first), to resume")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("-C", dest="directory", metavar="DIR", help="those run in DIR (default: this directory)")
    p.add_argument("--all", action="store_true", help="those run in any directory")
    p.add_argument("--json", action="store_true", help="one HistoryEntry per line (anyagent.serialize)")
    for command in commands:
        if command.name in COMMANDS:
            print(f"! a plugin's command {command.name!r} is a built-in command's name; it is ignored", file=sys.stderr)
            continue
        p = sub.add_parser(command.name, help=command.help, description=command.description or command.help)
        p.set_defaults(plugin_command=command)
        if command.arguments is not None:
            try:
                command.arguments(p)
            except Exception as exc:
                print(f"! command {command.name!r} failed to add its arguments: {exc!r}", file=sys.stderr)
    return parser


def plugin_commands() -> list[CliCommand]:
    """The subcommands the installed plugins register (entry points, as ``Runtime()`` loads them)."""
    from ._plugins import load_registry

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)  # a broken plugin is reported by the runtime's diagnostics
        registry = load_registry()
    return list(registry.commands.values())


COMMANDS = {
    "discover": cmd_discover,
    "probe": cmd_probe,
    "run": cmd_run,
    "chat": cmd_chat,
    "demo": cmd_demo,
    "plugins": cmd_plugins,
    "agents": cmd_agents,
    "history": cmd_history,
}


async def _main(args: argparse.Namespace) -> int:
    # ``run``'s standard output is the answer alone (``run claude hi > out.txt``): the rest to stderr
    out = Renderer(
        color=False if args.no_color else None,
        side=sys.stderr if args.command == "run" else None,
        verbose=args.verbose,
    )
    plugin_command: CliCommand | None = getattr(args, "plugin_command", None)
    handler = COMMANDS.get(args.command)
    if args.mock:
        from .mock import Script

        try:
            runtime = Runtime.with_mock(Script.load(args.mock))
        except AgentError as exc:
            out.line(out.red(f"error: {exc.message}"))
            return EXIT_USAGE
    else:
        runtime = Runtime()
    async with runtime:
        if args.command not in ("discover", "plugins"):  # those two list them with the rest
            for diagnostic in runtime.registry().diagnostics:
                print(out.yellow(f"! {diagnostic.message}"), file=sys.stderr, flush=True)
        try:
            if plugin_command is not None:
                return await plugin_command.run(CommandContext(runtime=runtime, args=args, out=out))
            assert handler is not None
            return await handler(runtime, args, out)
        except UsageError as exc:
            out.line(out.red(f"error: {exc}"))
            return EXIT_USAGE
        except AgentError as exc:
            if isinstance(exc, (NotInstalled, AuthRequired, InvalidConfiguration)):
                out.line(out.red(f"error: {exc.message}"))
            else:
                out.line(out.red(f"error: {type(exc).__name__}: {exc.message}"))
            if isinstance(exc, AuthRequired):
                for line in _login_lines(exc.login):
                    out.line(f"  {line}")
            return error_status(exc)


def error_status(exc: AgentError) -> int:
    """The exit status for an error that ended ``run`` or ``chat``."""
    if isinstance(exc, NotInstalled):
        return EXIT_NOT_INSTALLED
    if isinstance(exc, AuthRequired):
        return EXIT_AUTH
    if isinstance(exc, InvalidConfiguration):
        return EXIT_USAGE
    return EXIT_AGENT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``anyagent`` console script; returns the exit status."""
    # plugin problems are printed once, as "! ..." lines, not also as Python warnings
    warnings.simplefilter("ignore", PluginWarning)
    parser = build_parser(plugin_commands())
    args = parser.parse_args(argv)
    if args.command is None:  # bare `anyagent`: what it can do
        parser.print_help()
        return EXIT_OK
    try:
        status = anyio.run(_main, args)
    except KeyboardInterrupt:
        status = EXIT_CANCELLED
    except BrokenPipeError:
        # the reader went away (`anyagent run ... --json | head`): stop quietly, like other tools
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        status = EXIT_OK
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
