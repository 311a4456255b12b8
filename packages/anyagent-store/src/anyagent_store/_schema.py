"""The store's schema and its migrations, one list for both backends.

``SCHEMA_VERSION`` is what this package writes. A store at an older version is migrated step by step
inside one transaction when it is opened; a newer one is refused (``StoreTooNew``).

Version 1 (anyagent-store before 0.1.0's release candidates) had threads without origin links and
usage, and events without their searchable text; version 2 adds them and backfills the text.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "STORE_NAME"]

STORE_NAME = "anyagent-store"
SCHEMA_VERSION = 2

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
    "ALTER TABLE events ADD COLUMN text TEXT",
    "CREATE INDEX threads_by_origin ON threads (origin_id)",
)
_TEXT_KINDS = "('TextDelta', 'ReasoningDelta', 'UserMessage')"
_V2_BACKFILL = {
    "sqlite": (f"UPDATE events SET text = json_extract(body, '$.kind.text') WHERE kind IN {_TEXT_KINDS}",),
    "postgres": (f"UPDATE events SET text = (body::json -> 'kind' ->> 'text') WHERE kind IN {_TEXT_KINDS}",),
}

# MIGRATIONS[dialect][n] takes a store from version n to n + 1
MIGRATIONS: dict[str, tuple[tuple[str, ...], ...]] = {
    dialect: (_V1, _V2_COMMON + _V2_BACKFILL[dialect]) for dialect in ("sqlite", "postgres")
}
assert all(len(steps) == SCHEMA_VERSION for steps in MIGRATIONS.values())
