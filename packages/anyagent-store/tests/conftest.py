from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from anyagent_store import Store

DSN_VARIABLE = "ANYAGENT_STORE_TEST_DSN"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every async test runs on both backends."""
    return str(request.param)


def postgres_dsn() -> str:
    """The test server's DSN; skipped locally without one, a failure in CI (CI=true)."""
    dsn = os.environ.get(DSN_VARIABLE)
    if not dsn:
        message = (
            f"PostgreSQL tests need a server: set {DSN_VARIABLE} (`export {DSN_VARIABLE}=$(.ci/postgres.sh start)`"
            " starts one from Debian's postgresql package)"
        )
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)
    return dsn


def drop_schema(dsn: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    """How to make a store on each backend: a fresh SQLite file or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield lambda **kw: Store.sqlite(tmp_path / "threads.db", **kw)
        return
    dsn = postgres_dsn()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield lambda **kw: Store.postgres(dsn, schema=schema)
    drop_schema(dsn, schema)


@pytest.fixture
async def store(db: object) -> AsyncIterator[Store]:
    async with db() as opened:  # type: ignore[operator]
        yield opened
