from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every async test runs on both backends (the test's own host: the client side)."""
    return str(request.param)


pytest.register_assert_rewrite("sidecar_client", "schema_check")
