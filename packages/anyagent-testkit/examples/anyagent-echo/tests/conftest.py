from __future__ import annotations

import pytest

# These tests exercise the *installed* package (entry point, console script). In a checkout where it
# is not installed (a repo-wide `pytest` run), skip them; the testkit's test_example_adapter.py runs
# them in a fresh venv with the package installed.
pytest.importorskip(
    "anyagent_echo",
    reason="anyagent-echo is not installed here (`pip install -e .[test]`); "
    "anyagent-testkit's tests/test_example_adapter.py runs these tests in a fresh venv",
)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every async test runs on both backends."""
    return str(request.param)


@pytest.fixture(autouse=True)
def _no_login_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    """Discovery searches this process's PATH only: no login-shell PATH capture in tests."""
    monkeypatch.setenv("ANYAGENT_NO_LOGIN_SHELL", "1")
