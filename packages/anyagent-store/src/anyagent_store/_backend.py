"""The two databases behind ``Store``: SQLite (the embedded default) and PostgreSQL.

A backend is synchronous and owns one connection; the ``Store`` runs every call in a worker thread
(``anyio.to_thread.run_sync``, or a recording's writer thread) one at a time under a lock, so the event
loop never waits on the database. Both
speak the same SQL (written with ``?`` placeholders; PostgreSQL's driver gets ``%s``).
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from ._errors import ForeignDatabase, StoreCorrupt, StoreError, StoreFull, StoreTooNew, StoreUnavailable
from ._schema import MIGRATIONS, SCHEMA_VERSION, STORE_NAME

__all__ = ["THREAD_COLUMNS", "Backend", "ChunkRow", "PostgresBackend", "SqliteBackend", "ThreadQuery"]

THREAD_COLUMNS = (
    "id",
    "agent_id",
    "wire",
    "cwd",
    "title",
    "status",
    "resume_token",
    "created_us",
    "updated_us",
    "archived",
    "event_count",
    "origin_id",
    "origin_kind",
    "origin_position",
    "used_tokens",
    "window_tokens",
    "cost_usd",
)
_SELECT_THREAD = "SELECT " + ", ".join(THREAD_COLUMNS) + " FROM threads"
ChunkRow = tuple[str, int, int, str, "str | None"]  # thread id, first, last, body, searchable text
ThreadQuery = dict[str, Any]
_APPLICATION_ID = 0x41414753  # "AAGS": PRAGMA application_id of an anyagent store file
_SQLITE_HEADER = b"SQLite format 3\x00"


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class Backend:
    """What ``Store`` needs from a database. Every method blocks; ``Store`` calls them off the loop."""

    dialect = ""
    location = ""
    _like_op = "LIKE"

    # -- to implement ------------------------------------------------------------------------------
    def open(self) -> None:
        """Connect and create or migrate the schema; raises a `StoreError` when the database cannot be used."""
        raise NotImplementedError

    def close(self) -> None:
        """Close the connection; safe to call twice."""
        raise NotImplementedError

    def _transaction(self, write: bool = True) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _sql(self, statement: str) -> str:
        return statement

    def _errors(self, exc: Exception) -> StoreError | None:
        return None

    # -- shared ------------------------------------------------------------------------------------
    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except StoreError:
            raise
        except Exception as exc:
            mapped = self._errors(exc)
            if mapped is None:
                raise
            raise mapped from exc

    def _execute(self, cursor: Any, statement: str, params: Sequence[Any] = ()) -> Any:
        cursor.execute(self._sql(statement), tuple(params))
        return cursor

    def insert_thread(self, row: dict[str, Any]) -> None:
        """Insert one thread row (column name to value) in its own transaction."""
        names = [c for c in THREAD_COLUMNS if c in row]
        statement = f"INSERT INTO threads ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
        with self._guard(), self._transaction() as cur:
            self._execute(cur, statement, [row[n] for n in names])

    def update_thread(self, thread_id: str, fields: dict[str, Any]) -> None:
        """Set `fields` (column name to value) on the thread `thread_id` in one transaction."""
        with self._guard(), self._transaction() as cur:
            self._update(cur, thread_id, fields)

    def _update(self, cur: Any, thread_id: str, fields: dict[str, Any]) -> None:
        if fields:
            sets = ", ".join(f"{name} = ?" for name in fields)
            self._execute(cur, f"UPDATE threads SET {sets} WHERE id = ?", [*fields.values(), thread_id])

    def append(
        self, thread_id: str, first: int, lines: Sequence[str], text: str | None, fields: dict[str, Any]
    ) -> None:
        """Add one chunk (events ``first`` .. ``first + len(lines) - 1``) and update the thread's row, in one
        transaction."""
        with self._guard(), self._transaction() as cur:
            if lines:
                self._execute(
                    cur,
                    "INSERT INTO chunks (thread_id, first_position, last_position, body, text) VALUES (?, ?, ?, ?, ?)",
                    [thread_id, first, first + len(lines) - 1, "\n".join(lines), text],
                )
            self._update(cur, thread_id, fields)

    def thread(self, key: str) -> tuple[Any, ...] | list[tuple[Any, ...]]:
        """The row of thread ``key``, else the rows whose id starts with it (none, one or several)."""
        with self._guard(), self._transaction(write=False) as cur:
            row = self._execute(cur, _SELECT_THREAD + " WHERE id = ?", [key]).fetchone()
            if row is not None:
                return tuple(row)
            if not key or len(key) < 4:
                return []
            upper = key[:-1] + chr(ord(key[-1]) + 1)
            rows = self._execute(cur, _SELECT_THREAD + " WHERE id >= ? AND id < ? LIMIT 2", [key, upper]).fetchall()
            return [tuple(r) for r in rows]

    def threads(self, query: ThreadQuery) -> list[tuple[Any, ...]]:
        """The thread rows `query` selects (filters, order, page), as tuples in `THREAD_COLUMNS` order."""
        where: list[str] = []
        params: list[Any] = []
        if query.get("archived") is not None:
            where.append("archived = ?")
            params.append(1 if query["archived"] else 0)
        for column in ("agent_id", "cwd", "origin_id"):
            if query.get(column) is not None:
                where.append(f"{column} = ?")
                params.append(query[column])
        statuses = query.get("statuses")
        if statuses:
            where.append(f"status IN ({', '.join('?' * len(statuses))})")
            params.extend(statuses)
        if query.get("since") is not None:
            where.append("updated_us >= ?")
            params.append(query["since"])
        if query.get("until") is not None:
            where.append("updated_us < ?")
            params.append(query["until"])
        if query.get("title"):
            where.append(f"title {self._like_op} ? ESCAPE '\\'")
            params.append(_like(query["title"]))
        if query.get("text"):
            pattern = _like(query["text"])
            where.append(
                f"(title {self._like_op} ? ESCAPE '\\' OR EXISTS (SELECT 1 FROM chunks e WHERE e.thread_id = threads.id"
                f" AND e.text {self._like_op} ? ESCAPE '\\'))"
            )
            params += [pattern, pattern]
        if query.get("before") is not None:
            updated, thread_id = query["before"]
            where.append("(updated_us < ? OR (updated_us = ? AND id < ?))")
            params += [updated, updated, thread_id]
        statement = _SELECT_THREAD + (" WHERE " + " AND ".join(where) if where else "")
        statement += " ORDER BY updated_us DESC, id DESC LIMIT ?"
        params.append(query["limit"])
        with self._guard(), self._transaction(write=False) as cur:
            return [tuple(r) for r in self._execute(cur, statement, params).fetchall()]

    def chunks(self, thread_id: str, after: int, limit: int, upto: int | None = None) -> list[tuple[int, str]]:
        """Up to ``limit`` chunks ``(first position, body)`` holding events after ``after`` (up to ``upto``)."""
        statement = "SELECT first_position, body FROM chunks WHERE thread_id = ? AND last_position > ?"
        params: list[Any] = [thread_id, after]
        if upto is not None:
            statement += " AND first_position <= ?"
            params.append(upto)
        statement += " ORDER BY first_position LIMIT ?"
        params.append(limit)
        with self._guard(), self._transaction(write=False) as cur:
            return [(int(p), str(b)) for p, b in self._execute(cur, statement, params).fetchall()]

    def copy_events(self, source: str, target: str, upto: int) -> None:
        """Give ``target`` the events 1 .. ``upto`` of ``source`` (the chunk holding ``upto`` is cut there)."""
        with self._guard(), self._transaction() as cur:
            self._execute(
                cur,
                "INSERT INTO chunks (thread_id, first_position, last_position, body, text)"
                " SELECT ?, first_position, last_position, body, text FROM chunks"
                " WHERE thread_id = ? AND last_position <= ?",
                [target, source, upto],
            )
            row = self._execute(
                cur,
                "SELECT first_position, body, text FROM chunks WHERE thread_id = ? AND first_position <= ?"
                " AND last_position > ?",
                [source, upto, upto],
            ).fetchone()
            if row is not None:
                first, body, text = int(row[0]), str(row[1]), row[2]
                kept = body.split("\n")[: upto - first + 1]
                self._execute(
                    cur,
                    "INSERT INTO chunks (thread_id, first_position, last_position, body, text) VALUES (?, ?, ?, ?, ?)",
                    [target, first, upto, "\n".join(kept), text],
                )

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread `thread_id` and every chunk of its events in one transaction."""
        with self._guard(), self._transaction() as cur:
            self._execute(cur, "DELETE FROM chunks WHERE thread_id = ?", [thread_id])
            self._execute(cur, "DELETE FROM threads WHERE id = ?", [thread_id])

    def bulk_load(self, threads: Sequence[dict[str, Any]], chunks: Sequence[ChunkRow]) -> None:
        """Insert many threads and chunks in one transaction (imports and benchmarks)."""
        names = list(THREAD_COLUMNS)
        statement = f"INSERT INTO threads ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
        with self._guard(), self._transaction() as cur:
            cur.executemany(self._sql(statement), [tuple(t.get(n) for n in names) for t in threads])
            cur.executemany(
                self._sql(
                    "INSERT INTO chunks (thread_id, first_position, last_position, body, text) VALUES (?, ?, ?, ?, ?)"
                ),
                chunks,
            )

    def _migrate(self, cur: Any, version: int) -> None:
        for step in MIGRATIONS[self.dialect][version:]:
            for statement in step:
                self._execute(cur, statement)


# ---------------------------------------------------------------------------------------------------
# SQLite


class SqliteBackend(Backend):
    """One file in WAL mode: readers never wait for the writer, a second process (the CLI beside an
    app) waits for the write lock up to ``busy_timeout`` seconds. Commits are durable against a
    crashed or killed process (``synchronous=NORMAL``; a power cut may lose the last commits)."""

    dialect = "sqlite"

    def __init__(self, path: Path, *, busy_timeout: float = 10.0, max_bytes: int | None = None) -> None:
        self.path = path
        self.location = str(path)
        self.busy_timeout = busy_timeout
        self.max_bytes = max_bytes
        self._conn: sqlite3.Connection | None = None

    def _errors(self, exc: Exception) -> StoreError | None:
        if not isinstance(exc, sqlite3.Error):
            return None
        text = str(exc)
        if getattr(exc, "sqlite_errorcode", None) == 13 or "database or disk is full" in text:  # SQLITE_FULL
            return StoreFull(f"the store {self.location} is full: {text}", self.location)
        if isinstance(exc, sqlite3.DatabaseError) and ("malformed" in text or "not a database" in text):
            return StoreCorrupt(f"the store {self.location} is damaged: {text}", self.location)
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
            return StoreUnavailable(
                f"the store {self.location} stayed locked by another process: {text}", self.location
            )
        return StoreError(f"the store {self.location} failed: {type(exc).__name__}: {text}", self.location)

    def open(self) -> None:
        """Open (or create) the SQLite file at `path` and create or migrate its schema."""
        path = self.path
        try:
            with open(path, "rb") as handle:
                header = handle.read(16)
        except FileNotFoundError:
            header = b""
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(f"cannot read the store {path}: {exc}", str(path)) from exc
        if header and header != _SQLITE_HEADER:
            raise StoreCorrupt(f"{path} is not an SQLite database (an anyagent store is one)", str(path))
        try:
            conn = sqlite3.connect(str(path), timeout=self.busy_timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot open the store {path}: {exc}", str(path)) from exc
        self._conn = conn
        try:
            with self._guard():
                self._check_and_migrate(conn)
        except BaseException:
            self.close()
            raise

    def _check_and_migrate(self, conn: sqlite3.Connection) -> None:
        path = self.location
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if app_id not in (0, _APPLICATION_ID) or (tables and "store_meta" not in tables):
            raise ForeignDatabase(f"{path} is a database of another application, not an anyagent store", path)
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        self._use_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        if self.max_bytes is not None:
            page = conn.execute("PRAGMA page_size").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count = {max(1, self.max_bytes // page)}")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreTooNew(
                f"{path} has schema version {version}; this anyagent-store knows up to {SCHEMA_VERSION}", path
            )
        if version == SCHEMA_VERSION:
            return
        with self._transaction() as cur:  # BEGIN IMMEDIATE: a second process migrating waits, then sees it done
            version = cur.execute("PRAGMA user_version").fetchone()[0]
            if version < SCHEMA_VERSION:
                self._migrate(cur, version)
                cur.execute("INSERT OR REPLACE INTO store_meta (key, value) VALUES ('name', ?)", (STORE_NAME,))
                cur.execute(f"PRAGMA application_id = {_APPLICATION_ID}")
                cur.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _use_wal(self, conn: sqlite3.Connection) -> None:
        """Switch a fresh file to WAL. The switch takes the write lock from inside a read, where SQLite
        answers "database is locked" at once instead of waiting (its busy handler is not called there):
        two processes opening one fresh file at once collide on it. So retry until ``busy_timeout``; once
        another process has switched the file, the mode reads back "wal" and there is nothing to do."""
        deadline = time.monotonic() + self.busy_timeout
        pause = 0.001
        while True:
            try:
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    conn.execute("PRAGMA journal_mode = WAL").fetchone()
                return
            except sqlite3.OperationalError as exc:
                text = str(exc)
                if ("locked" not in text and "busy" not in text) or time.monotonic() >= deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    @contextmanager
    def _transaction(self, write: bool = True) -> Iterator[Any]:
        conn = self._conn
        if conn is None:
            raise StoreError("the store is closed", self.location)
        cur = conn.cursor()
        cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield cur
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        else:
            cur.execute("COMMIT")
        finally:
            cur.close()

    def close(self) -> None:
        """Close the SQLite connection; safe to call twice."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


# ---------------------------------------------------------------------------------------------------
# PostgreSQL

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")


class PostgresBackend(Backend):
    """A PostgreSQL database (psycopg 3, ``pip install 'anyagent-store[postgres]'``); the store's tables
    live in ``schema`` (created when missing), so several stores can share one database."""

    dialect = "postgres"
    _like_op = "ILIKE"

    def __init__(self, dsn: str, *, schema: str = "anyagent_store") -> None:
        if not _IDENTIFIER.fullmatch(schema):
            raise StoreError(f"schema name {schema!r} must be a lower-case SQL identifier")
        self.dsn = dsn
        self.schema = schema
        self.location = f"postgresql {_redact(dsn)} schema {schema}"
        self._conn: Any = None

    def _sql(self, statement: str) -> str:
        return statement.replace("%", "%%").replace("?", "%s")

    def _errors(self, exc: Exception) -> StoreError | None:
        import psycopg

        if isinstance(exc, psycopg.errors.DiskFull):
            return StoreFull(f"the store {self.location} is full: {exc}", self.location)
        if isinstance(exc, psycopg.OperationalError):
            return StoreUnavailable(f"the store {self.location} is unreachable: {exc}", self.location)
        if isinstance(exc, psycopg.Error):
            return StoreError(f"the store {self.location} failed: {type(exc).__name__}: {exc}", self.location)
        return None

    def open(self) -> None:
        """Connect to PostgreSQL at the DSN (needs psycopg) and create or migrate the schema."""
        try:
            import psycopg
        except ImportError as exc:
            raise StoreUnavailable(
                "the PostgreSQL backend needs psycopg: pip install 'anyagent-store[postgres]'", self.location
            ) from exc
        try:
            self._conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise StoreUnavailable(f"cannot connect to {self.location}: {exc}", self.location) from exc
        try:
            with self._guard():
                self._check_and_migrate()
        except BaseException:
            self.close()
            raise

    def _check_and_migrate(self) -> None:
        schema = self.schema
        with self._conn.transaction(), self._conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"anyagent-store:{schema}",))
            cur.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            cur.execute(f"SET search_path TO {schema}")
            cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,))
            tables = {r[0] for r in cur.fetchall()}
            version = 0
            if tables:
                if "store_meta" not in tables:
                    raise ForeignDatabase(f"{self.location} holds tables of another application", self.location)
                cur.execute("SELECT key, value FROM store_meta")
                meta = dict(cur.fetchall())
                if meta.get("name") != STORE_NAME:
                    raise ForeignDatabase(f"{self.location} holds tables of another application", self.location)
                version = int(meta.get("version", "0"))
            if version > SCHEMA_VERSION:
                raise StoreTooNew(
                    f"{self.location} has schema version {version}; this anyagent-store knows up to {SCHEMA_VERSION}",
                    self.location,
                )
            if version < SCHEMA_VERSION:
                self._migrate(cur, version)
                for key, value in (("name", STORE_NAME), ("version", str(SCHEMA_VERSION))):
                    cur.execute(
                        "INSERT INTO store_meta (key, value) VALUES (%s, %s)"
                        " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                        (key, value),
                    )
        self._conn.execute(f"SET search_path TO {schema}")

    @contextmanager
    def _transaction(self, write: bool = True) -> Iterator[Any]:
        if self._conn is None:
            raise StoreError("the store is closed", self.location)
        with self._conn.transaction(), self._conn.cursor() as cur:
            yield cur

    def close(self) -> None:
        """Close the PostgreSQL connection; safe to call twice."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _redact(dsn: str) -> str:
    return re.sub(r"(password=|:)[^@\s]*@", r"\1***@", dsn)


def default_path() -> Path:
    """Where ``Store.sqlite()`` keeps its file: ``$ANYAGENT_STORE`` if set, else the user's data directory
    (``$XDG_DATA_HOME/anyagent`` or ``~/.local/share/anyagent``; ``~/Library/Application Support/anyagent``
    on macOS; ``%LOCALAPPDATA%\\anyagent`` on Windows), file ``threads.db``."""
    explicit = os.environ.get("ANYAGENT_STORE")
    if explicit and "://" not in explicit:
        return Path(explicit).expanduser()
    import sys

    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "anyagent" / "threads.db"
