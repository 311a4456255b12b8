"""What ``anyagent threads``/``show``/``resume``/``export`` do (imported when one runs)."""

from __future__ import annotations

import argparse
import json
from datetime import datetime

import anyio

import anyagent
from anyagent.cli import cmd_chat

from ._errors import StoreError
from ._model import Thread, ThreadStatus
from ._store import Store

__all__ = ["export", "resume", "show", "threads"]

_EXIT_STORE = 5  # like any other agent error (anyagent.cli)


def _store(context: anyagent.CommandContext) -> Store:
    return Store.from_url(getattr(context.args, "store", None))


def _when(value: datetime) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M")


def _json(thread: Thread) -> str:
    data = {
        "id": thread.id,
        "agent_id": thread.agent_id,
        "status": thread.status.value,
        "title": thread.title,
        "cwd": thread.cwd,
        "created_at": thread.created_at.isoformat(),
        "updated_at": thread.updated_at.isoformat(),
        "event_count": thread.event_count,
        "resume_token": thread.resume_token,
        "archived": thread.archived,
        "origin_id": thread.origin_id,
        "origin_kind": thread.origin_kind.value if thread.origin_kind else None,
    }
    return json.dumps(data, ensure_ascii=False)


def _fail(context: anyagent.CommandContext, exc: StoreError) -> int:
    context.out.line(context.out.red(f"error: {type(exc).__name__}: {exc.message}"))
    return _EXIT_STORE


async def threads(context: anyagent.CommandContext) -> int:
    args, out = context.args, context.out
    try:
        async with _store(context) as store:
            page = await store.threads(
                agent=args.agent,
                cwd=str(await anyio.Path(args.directory).absolute()) if args.directory else None,
                status=[ThreadStatus(s) for s in args.status or ()],
                text=args.search,
                archived=bool(args.archived),
                limit=max(1, args.limit),
            )
    except StoreError as exc:
        return _fail(context, exc)
    if args.json:
        for thread in page.threads:
            out.line(_json(thread))
        return 0
    if not page.threads:
        out.line(out.dim(f"no threads in {store.location}"))
        return 0
    rows = [
        (t.id[:8], t.agent_id, t.status.value, _when(t.updated_at), str(t.event_count), t.title or "(untitled)")
        for t in page.threads
    ]
    header = ("THREAD", "AGENT", "STATUS", "UPDATED", "EVENTS", "TITLE")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
    out.line(out.bold("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)) + "  " + header[5]))
    for row in rows:
        out.line("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[5])
    if page.next_cursor:
        out.line(out.dim(f"(more: --limit {args.limit * 2})"))
    return 0


def _heading(context: anyagent.CommandContext, thread: Thread) -> None:
    out = context.out
    out.line(out.bold(thread.title or "(untitled)") + out.dim(f"  {thread.id}"))
    facts = [thread.agent_id, thread.status.value, f"last activity {_when(thread.updated_at)}"]
    if thread.cwd:
        facts.insert(1, thread.cwd)
    if thread.origin_id and thread.origin_kind:
        facts.append(f"{thread.origin_kind.value} of {thread.origin_id[:8]}")
    out.line(out.dim(" · ".join(facts)))


async def show(context: anyagent.CommandContext) -> int:
    out = context.out
    try:
        async with _store(context) as store:
            thread = await store.thread(context.args.thread)
            _heading(context, thread)
            async for stored in store.events(thread):
                if stored.event is None:
                    out.line(out.yellow(f"[event {stored.position} no longer decodes: {stored.error}] {stored.raw}"))
                else:
                    out.render(stored.event)
            out.end_stream()
    except StoreError as exc:
        return _fail(context, exc)
    return 0


async def resume(context: anyagent.CommandContext) -> int:
    args = context.args
    try:
        async with _store(context) as store:
            thread = await store.thread(args.thread)
            recording = await store.reopen(context.runtime, thread)
            async with recording:
                _heading(context, thread)
                chat_args = argparse_namespace(args, agent=thread.agent_id, directory=thread.cwd)
                return await cmd_chat(
                    context.runtime,
                    chat_args,
                    context.out,
                    opened=(recording.session, recording),
                    on_prompt=recording.note_prompt,
                )
    except StoreError as exc:
        return _fail(context, exc)


def argparse_namespace(args: argparse.Namespace, **changes: object) -> argparse.Namespace:
    values = dict(vars(args))
    values.update(changes)
    return argparse.Namespace(**values)


async def export(context: anyagent.CommandContext) -> int:
    args = context.args
    try:
        async with _store(context) as store:
            text = await store.export(args.thread, args.format)
    except StoreError as exc:
        return _fail(context, exc)
    if args.output:
        await anyio.Path(args.output).write_text(text, encoding="utf-8")
    else:
        context.out.end_stream()
        context.out.out.write(text)
        context.out.out.flush()
    return 0
