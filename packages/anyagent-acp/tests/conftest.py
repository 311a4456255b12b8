from __future__ import annotations

import os

import pytest

# discovery would otherwise start the user's login shell to read its PATH
os.environ.setdefault("ANYAGENT_NO_LOGIN_SHELL", "1")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every async test runs on both backends."""
    return str(request.param)
