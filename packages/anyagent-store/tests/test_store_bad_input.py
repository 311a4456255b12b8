"""Bad input: corrupt and foreign files, a newer schema, a full disk, migrations from older files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest
from storesupport import chatty_script, drop_schema, postgres_dsn, read_turn, record_turns

from anyagent import Runtime, SessionOptions, TextDelta, TurnEnded
from anyagent.mock import Script, Step, completed, text
from anyagent_store import (
    SCHEMA_VERSION,
    ForeignDatabase,
    Store,
    StoreCorrupt,
    StoreFull,
    StoreTooNew,
)
from anyagent_store._schema import MIGRATIONS

pytestmark = pytest.mark.anyio


async def test_a_garbage_file_is_a_typed_error_naming_it_and_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    path.write_bytes(b"this is my shopping list, not a database\n" * 10)
    with pytest.raises(StoreCorrupt, match=str(path)) as caught:
        await Store.sqlite(path).open()
    assert caught.value.location == str(path)
    assert path.read_bytes().startswith(b"this is my shopping list")


async def test_a_damaged_sqlite_file_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    async with Store.sqlite(path):
        pass
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the schema page's content, past the header
    path.write_bytes(bytes(data))
    for suffix in ("-wal", "-shm"):
        await anyio.Path(str(path) + suffix).unlink(missing_ok=True)
    with pytest.raises(StoreCorrupt, match=str(path)):
        await Store.sqlite(path).open()


async def test_another_applications_sqlite_file_is_foreign(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    with pytest.raises(ForeignDatabase, match=str(path)):
        await Store.sqlite(path).open()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("invoices",)]


async def test_another_applications_postgres_schema_is_foreign() -> None:
    dsn = postgres_dsn()
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA foreign_app")
        conn.execute("CREATE TABLE foreign_app.invoices (id INTEGER)")
    try:
        with pytest.raises(ForeignDatabase, match="foreign_app"):
            await Store.postgres(dsn, schema="foreign_app").open()
    finally:
        drop_schema(dsn, "foreign_app")


async def test_a_store_of_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    async with Store.sqlite(path):
        pass
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreTooNew, match="version 3"):
        await Store.sqlite(path).open()


def _version_one_sqlite(path: Path) -> None:
    """A file as anyagent-store wrote it at schema version 1: one thread, one stored text delta."""
    with sqlite3.connect(path) as conn:
        for statement in MIGRATIONS["sqlite"][0]:
            conn.execute(statement)
        conn.execute("INSERT INTO store_meta VALUES ('name', 'anyagent-store')")
        conn.execute(
            "INSERT INTO threads (id, agent_id, status, created_us, updated_us, event_count, title)"
            " VALUES ('a1b2c3d4e5', 'claude', 'idle', 1700000000000000, 1700000000000000, 1, 'old one')"
        )
        body = (
            '{"sequence":1,"occurred_at":"2023-11-14T22:13:20+00:00","session_id":"s1","kind":{"type":"TextDelta",'
            '"message_id":"m1","text":"the flux capacitor"},"turn_info":null,"extensions":{}}'
        )
        conn.execute("INSERT INTO events VALUES ('a1b2c3d4e5', 1, 'TextDelta', ?)", (body,))
        conn.execute(f"PRAGMA application_id = {0x41414753}")
        conn.execute("PRAGMA user_version = 1")


async def test_migration_from_a_version_one_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _version_one_sqlite(path)
    async with Store.sqlite(path) as store:
        thread = await store.thread("a1b2c3d4e5")
        assert (thread.title, thread.event_count, thread.origin_id, thread.used_tokens) == ("old one", 1, None, None)
        assert [t.id for t in (await store.threads(text="flux capacitor")).threads] == ["a1b2c3d4e5"]  # backfilled
        stored = await store.history(thread)
        assert stored[0].event is not None and isinstance(stored[0].event.kind, TextDelta)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


async def test_migration_from_a_version_one_postgres_schema() -> None:
    dsn = postgres_dsn()
    import psycopg

    schema = "v1_fixture"
    drop_schema(dsn, schema)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"SET search_path TO {schema}")
        for statement in MIGRATIONS["postgres"][0]:
            conn.execute(statement)
        conn.execute("INSERT INTO store_meta VALUES ('name', 'anyagent-store'), ('version', '1')")
        conn.execute(
            "INSERT INTO threads (id, agent_id, status, created_us, updated_us, event_count)"
            " VALUES ('t1t1t1t1', 'codex', 'idle', 1, 1, 1)"
        )
        conn.execute(
            "INSERT INTO events VALUES ('t1t1t1t1', 1, 'UserMessage', %s)",
            (
                '{"sequence":1,"occurred_at":"2023-11-14T22:13:20+00:00","session_id":"s1","kind":{"type":'
                '"UserMessage","message_id":"u1","text":"rename the module"},"turn_info":null,"extensions":{}}',
            ),
        )
    try:
        async with Store.postgres(dsn, schema=schema) as store:
            assert [t.id for t in (await store.threads(text="RENAME")).threads] == ["t1t1t1t1"]
        with psycopg.connect(dsn) as conn:
            row = conn.execute(f"SELECT value FROM {schema}.store_meta WHERE key = 'version'").fetchone()
            assert row == (str(SCHEMA_VERSION),)
    finally:
        drop_schema(dsn, schema)


async def test_a_new_file_starts_at_the_current_version(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "threads.db"
    async with Store.sqlite(path):
        pass
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


async def test_a_full_disk_fails_the_recording_typed_while_the_session_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "small.db"
    big = "x" * 2000
    script = Script()
    for _ in range(3):
        script = script.turn([Step.repeat(200, Step.emit(text("m1", big))), Step.end(completed())])
    async with Store.sqlite(path, max_bytes=1_000_000) as store, Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir(tmp_path))
        async with session:
            recording = store.record(session, events, batch_size=50)
            failed_at = None
            with pytest.raises(StoreFull, match=str(path)):
                async with recording:
                    for turn in range(3):
                        await recording.prompt("more")
                        seen = await read_turn(recording)
                        assert sum(isinstance(e.kind, TextDelta) for e in seen) == 200  # the app lost nothing
                        assert isinstance(seen[-1].kind, TurnEnded)
                        try:
                            await recording.flush()
                        except StoreFull:
                            failed_at = failed_at if failed_at is not None else turn
                    assert isinstance(recording.failure, StoreFull)
            assert failed_at in (1, 2)  # the first turn (~420 kB) fitted in 1 MB
            assert session.status().value == "idle"  # the session outlived the failed recording
        # what was written before the disk filled is intact, and the store opens cleanly
        thread = await store.thread(recording.thread.id)
        assert 0 < thread.event_count < 600
        assert len(await store.history(thread)) == thread.event_count
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


async def test_an_ordinary_recording_is_not_capped(tmp_path: Path) -> None:
    async with Store.sqlite(tmp_path / "t.db") as store, Runtime.with_mock(chatty_script(turns=1)) as runtime:
        recording = await record_turns(store, runtime, ["hello"])
        assert recording.failure is None
