from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from storesupport import drop_schema, postgres_dsn

from anyagent_store import Store


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every async test runs on both backends."""
    return str(request.param)


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
