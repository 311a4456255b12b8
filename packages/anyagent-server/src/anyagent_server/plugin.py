"""The ``anyagent serve`` subcommand, registered through core's ``anyagent_commands`` hook."""

from __future__ import annotations

import argparse
import sys

import anyagent

__all__ = ["anyagent_commands"]


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mock",
        dest="serve_mock",
        metavar="SCRIPT.json",
        help="serve only the scripted agent 'mock' playing this anyagent-rs mock script (each session from its start)",
    )
    parser.add_argument(
        "--schema", action="store_true", help="print the JSON Schema of every line in and out, then exit"
    )
    parser.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="serve the same protocol over a WebSocket on HOST:PORT (loopback only unless --allow-remote)",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow --listen on a non-loopback address: anyone who can reach it and holds the token drives your agents",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser Origin allowed to connect (repeatable; default: none, so browser pages are refused)",
    )
    parser.add_argument("--token-file", metavar="PATH", help="where --listen writes its bearer token (mode 0600)")
    parser.add_argument("--replay", type=int, default=None, metavar="N", help="output lines kept per session (4096)")


def _mock_script(path: str) -> anyagent.mock.Script | None:
    """The anyagent-rs mock script at ``path`` (``--mock``), or None after printing why it cannot be read."""
    from . import mockscript

    try:
        return mockscript.load(path)
    except anyagent.AgentError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return None


async def _run(context: anyagent.CommandContext) -> int:
    args = context.args
    if args.schema:
        from .schema import schema_text

        sys.stdout.write(schema_text())
        return 0
    from .hub import DEFAULT_REPLAY

    replay = args.replay or DEFAULT_REPLAY
    if args.serve_mock:
        script = _mock_script(args.serve_mock)
        if script is None:
            return 2
        async with anyagent.Runtime.with_mock(script) as runtime:
            return await _serve(runtime, args, replay)
    return await _serve(context.runtime, args, replay)


async def _serve(runtime: anyagent.Runtime, args: argparse.Namespace, replay: int) -> int:
    if args.listen:
        from .websocket import serve_websocket

        status: int = await serve_websocket(
            runtime,
            args.listen,
            allow_remote=args.allow_remote,
            origins=args.allow_origin,
            token_file=args.token_file,
            replay=replay,
        )
        return status
    from .stdio import StdoutClosed, serve_stdio

    try:
        return await serve_stdio(runtime, replay=replay)
    except StdoutClosed as exc:
        print(f"anyagent serve: {exc.message}", file=sys.stderr)
        return 1


def _ui_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=0, metavar="N", help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--no-browser", action="store_true", help="print the URL only; do not open a browser")
    parser.add_argument(
        "--store", metavar="PATH|URL", help="the thread store (default: $ANYAGENT_STORE or the default SQLite file)"
    )
    parser.add_argument(
        "--mock", dest="ui_mock", metavar="SCRIPT.json", help="offer only the scripted agent 'mock' playing this script"
    )


async def _run_ui(context: anyagent.CommandContext) -> int:
    from anyagent_store import Store, StoreError

    from ._ui import serve_ui

    args = context.args
    store = Store.from_url(args.store)
    try:
        await store.open()
    except StoreError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    try:
        if args.ui_mock:
            script = _mock_script(args.ui_mock)
            if script is None:
                return 2
            async with anyagent.Runtime.with_mock(script) as runtime:
                return await serve_ui(runtime, store, port=args.port, open_browser=not args.no_browser)
        return await serve_ui(context.runtime, store, port=args.port, open_browser=not args.no_browser)
    finally:
        await store.aclose()


@anyagent.hookimpl
def anyagent_commands(register: anyagent.Register) -> None:
    """Add `anyagent serve` (the API as JSON lines on stdin/stdout, or over a WebSocket) to the command line."""
    register.command(
        anyagent.CliCommand(
            name="serve",
            help="the API as JSON lines on stdin/stdout (anyagent-rs's sidecar protocol 1), or over a WebSocket",
            description=(
                "Speak the Runtime/Session API as one JSON object per line: commands on stdin, replies, events,"
                " session errors and closed on stdout. See docs/sidecar.md."
            ),
            run=_run,
            arguments=_arguments,
        )
    )
    register.command(
        anyagent.CliCommand(
            name="ui",
            help="a local web app over every agent: thread list, chat, permissions, settings, usage",
            description=(
                "Serve the web app on 127.0.0.1 and open the browser on a URL carrying a one-time token"
                " (then an HttpOnly cookie). Threads are kept in the anyagent-store database. See docs/ui.md."
            ),
            run=_run_ui,
            arguments=_ui_arguments,
        )
    )
