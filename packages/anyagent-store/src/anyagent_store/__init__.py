"""anyagent-store: durable threads for anyagent apps — the thread list, full transcripts, resume, fork,
hand-off to another agent, export — in SQLite (embedded, the default) or PostgreSQL.

::

    async with Store.sqlite() as store, Runtime() as runtime:
        agent = (await runtime.discover()).require("claude")
        session, events = await runtime.open(agent, SessionOptions.in_dir("."))
        async with session, store.record(session, events, cwd=".") as recording:
            await recording.prompt("explain this repo")
            async for event in recording:           # every event, teed into the thread's log
                ...
        page = await store.threads(limit=50)        # the thread list, newest activity first

The public names are the ones below; errors are ``StoreError`` and its subclasses (all
``anyagent.AgentError``s). Guide: ``docs/store.md``.
"""

from __future__ import annotations

import typing

from anyagent import seam

if typing.TYPE_CHECKING:  # imported on first access: the entry point loading .plugin imports none of it
    from ._backend import Backend, PostgresBackend, SqliteBackend, default_path
    from ._codec import RAW_EXTENSION
    from ._errors import (
        ForeignDatabase,
        StoreCorrupt,
        StoreError,
        StoreFull,
        StoreTooNew,
        StoreUnavailable,
        ThreadNotFound,
    )
    from ._handoff import HANDOFF_BUDGET, Turn, handoff_prompt, turns
    from ._model import OriginKind, StoredEvent, Thread, ThreadPage, ThreadStatus
    from ._schema import SCHEMA_VERSION
    from ._store import PROMPT_EXTENSION, Recording, Store, TitleMaker
else:
    __getattr__ = seam.lazy_exports(
        __name__,
        {
            "Backend": "._backend",
            "ForeignDatabase": "._errors",
            "HANDOFF_BUDGET": "._handoff",
            "OriginKind": "._model",
            "PROMPT_EXTENSION": "._store",
            "PostgresBackend": "._backend",
            "RAW_EXTENSION": "._codec",
            "Recording": "._store",
            "SCHEMA_VERSION": "._schema",
            "SqliteBackend": "._backend",
            "Store": "._store",
            "StoreCorrupt": "._errors",
            "StoreError": "._errors",
            "StoreFull": "._errors",
            "StoreTooNew": "._errors",
            "StoreUnavailable": "._errors",
            "StoredEvent": "._model",
            "Thread": "._model",
            "ThreadNotFound": "._errors",
            "ThreadPage": "._model",
            "ThreadStatus": "._model",
            "TitleMaker": "._store",
            "Turn": "._handoff",
            "default_path": "._backend",
            "handoff_prompt": "._handoff",
            "turns": "._handoff",
        },
    )

__version__ = "0.1.0"

__all__ = [
    "HANDOFF_BUDGET",
    "PROMPT_EXTENSION",
    "RAW_EXTENSION",
    "SCHEMA_VERSION",
    "Backend",
    "ForeignDatabase",
    "OriginKind",
    "PostgresBackend",
    "Recording",
    "SqliteBackend",
    "Store",
    "StoreCorrupt",
    "StoreError",
    "StoreFull",
    "StoreTooNew",
    "StoreUnavailable",
    "StoredEvent",
    "Thread",
    "ThreadNotFound",
    "ThreadPage",
    "ThreadStatus",
    "TitleMaker",
    "Turn",
    "__version__",
    "default_path",
    "handoff_prompt",
    "turns",
]
