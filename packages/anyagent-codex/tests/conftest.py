from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every async test runs on both backends."""
    return str(request.param)


pytest.register_assert_rewrite("codex_scenarios", "codex_harness", "codex_usage_scenarios", "codex_mcp")
