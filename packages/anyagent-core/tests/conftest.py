from __future__ import annotations

import sys

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every async test runs on both backends."""
    return str(request.param)


@pytest.fixture(autouse=True, scope="session")
def _process_reactor() -> None:
    """The host's one process reactor (a thread with an epoll fd and a wake-up pipe) and its guard
    (a process and a socket), otherwise started by the first spawn and kept, exist before any
    test counts its fds."""
    if sys.platform != "win32":
        from anyagent._process_posix import _GUARD, _REACTOR

        _REACTOR.start()
        if _GUARD.usable():
            _GUARD.start()
