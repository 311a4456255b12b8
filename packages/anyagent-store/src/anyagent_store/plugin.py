"""The store's subcommands of ``anyagent`` (entry point ``store`` in group ``anyagent``):
``threads``, ``show``, ``resume``, ``export``. Each takes ``--store URL`` (default ``$ANYAGENT_STORE``,
else the SQLite file in the user's data directory)."""

from __future__ import annotations

import argparse

import anyagent

__all__ = ["anyagent_commands"]


def _store_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="URL",
        help="a SQLite file or postgresql://… (default: $ANYAGENT_STORE or the user's data dir)",
    )


def _threads_arguments(parser: argparse.ArgumentParser) -> None:
    _store_argument(parser)
    parser.add_argument("--agent", metavar="ID", help="only this agent's threads")
    parser.add_argument("-C", dest="directory", metavar="DIR", help="only threads in this directory")
    parser.add_argument("--status", choices=["idle", "working", "needs_input", "failed"], action="append")
    parser.add_argument("--search", metavar="TEXT", help="title or anything said contains TEXT")
    parser.add_argument("--archived", action="store_true", help="the archived threads instead")
    parser.add_argument("--limit", type=int, default=50, metavar="N")
    parser.add_argument("--json", action="store_true", help="one JSON object per thread")


def _thread_arguments(parser: argparse.ArgumentParser) -> None:
    _store_argument(parser)
    parser.add_argument("thread", metavar="THREAD", help="a thread id, or a unique prefix of one (4+ characters)")


def _resume_arguments(parser: argparse.ArgumentParser) -> None:
    _thread_arguments(parser)
    parser.add_argument("--plain", action="store_true", help="read lines from stdin without the input line")
    parser.add_argument("--auto-approve", action="store_true", help="allow every permission request without asking")


def _export_arguments(parser: argparse.ArgumentParser) -> None:
    _thread_arguments(parser)
    parser.add_argument("--format", choices=["jsonl", "md"], default="jsonl")
    parser.add_argument("-o", dest="output", metavar="FILE", help="write to FILE instead of stdout")


async def _threads(context: anyagent.CommandContext) -> int:
    from ._cli import threads

    return await threads(context)


async def _show(context: anyagent.CommandContext) -> int:
    from ._cli import show

    return await show(context)


async def _resume(context: anyagent.CommandContext) -> int:
    from ._cli import resume

    return await resume(context)


async def _export(context: anyagent.CommandContext) -> int:
    from ._cli import export

    return await export(context)


@anyagent.hookimpl
def anyagent_commands(register: anyagent.Register) -> None:
    """Add `anyagent threads` (the stored threads, newest first) to the command line."""
    register.command(
        anyagent.CliCommand(
            name="threads", help="the stored threads, newest first", run=_threads, arguments=_threads_arguments
        )
    )
    register.command(
        anyagent.CliCommand(name="show", help="a stored thread's transcript", run=_show, arguments=_thread_arguments)
    )
    register.command(
        anyagent.CliCommand(
            name="resume",
            help="chat on a stored thread (its history, then live)",
            run=_resume,
            arguments=_resume_arguments,
        )
    )
    register.command(
        anyagent.CliCommand(
            name="export", help="a stored thread as JSONL or Markdown", run=_export, arguments=_export_arguments
        )
    )
