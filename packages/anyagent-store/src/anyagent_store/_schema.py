"""The store's schema and its migrations, one list for both backends.

``SCHEMA_VERSION`` is what this package writes. A store at an older version is migrated step by step
inside one transaction when it is opened; a newer one is refused (``StoreTooNew``).

Version 1 (the first drafts of anyagent-store) kept one row per event and threads without origin
links or usage. Version 2 adds those columns and keeps events in chunks: one row per written batch
(``first_position`` .. ``last_position``, the events' ``anyagent.serialize`` lines joined by newlines, and
their searchable text), which makes a write one row and reading a long history a few hundred; the
migration turns each version-1 event into a one-event chunk.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "STORE_NAME"]

STORE_NAME = "anyagent-store"
SCHEMA_VERSION = 2
"""The database schema version this release writes (a newer one is refused with `StoreTooNew`)."""

_V1 = (
    "CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE threads (
        id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL,
        wire TEXT,
        cwd TEXT,
        title TEXT,
        status TEXT NOT NULL,
        resume_token TEXT,
        created_us BIGINT NOT NULL,
        updated_us BIGINT NOT NULL,
        archived INTEGER NOT NULL DEFAULT 0,
        event_count INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX threads_by_activity ON threads (archived, updated_us DESC, id DESC)",
    """CREATE TABLE events (
        thread_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        kind TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (thread_id, position)
    )""",
)

_V2_COMMON = (
    "ALTER TABLE threads ADD COLUMN origin_id TEXT",
    "ALTER TABLE threads ADD COLUMN origin_kind TEXT",
    "ALTER TABLE threads ADD COLUMN origin_position INTEGER",
    "ALTER TABLE threads ADD COLUMN used_tokens BIGINT",
    "ALTER TABLE threads ADD COLUMN window_tokens BIGINT",
    "ALTER TABLE threads ADD COLUMN cost_usd DOUBLE PRECISION",
    "CREATE INDEX threads_by_origin ON threads (origin_id)",
    # a chunk: the events first_position .. last_position of a thread, one serialize line each, and their text
    """CREATE TABLE chunks (
        thread_id TEXT NOT NULL,
        first_position INTEGER NOT NULL,
        last_position INTEGER NOT NULL,
        body TEXT NOT NULL,
        text TEXT,
        PRIMARY KEY (thread_id, first_position)
    )""",
)
_TEXT_KINDS = "('TextDelta', 'ReasoningDelta', 'UserMessage')"
_V2_MOVE = {  # version 1's one row per event becomes one chunk per event
    "sqlite": (
        "INSERT INTO chunks (thread_id, first_position, last_position, body, text)"
        " SELECT thread_id, position, position, body,"
        f" CASE WHEN kind IN {_TEXT_KINDS} THEN json_extract(body, '$.kind.text') END FROM events",
        "DROP TABLE events",
    ),
    "postgres": (
        "INSERT INTO chunks (thread_id, first_position, last_position, body, text)"
        " SELECT thread_id, position, position, body,"
        f" CASE WHEN kind IN {_TEXT_KINDS} THEN body::json -> 'kind' ->> 'text' END FROM events",
        "DROP TABLE events",
    ),
}

# MIGRATIONS[dialect][n] takes a store from version n to n + 1
MIGRATIONS: dict[str, tuple[tuple[str, ...], ...]] = {
    dialect: (_V1, _V2_COMMON + _V2_MOVE[dialect]) for dialect in ("sqlite", "postgres")
}
assert all(len(steps) == SCHEMA_VERSION for steps in MIGRATIONS.values())
