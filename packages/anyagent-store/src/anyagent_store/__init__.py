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
