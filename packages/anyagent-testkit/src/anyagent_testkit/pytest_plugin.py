"""The testkit's pytest plugin (loaded through the ``pytest11`` entry point ``anyagent_testkit``).

Adds:

* ``--live`` — run tests marked ``live`` (the real agent CLIs against the fake model). Without it
  they are skipped. With it, a pinned CLI that cannot be installed *fails* the test, loudly.
* ``--live-cache DIR`` — where pinned CLIs are installed (default ``$ANYAGENT_LIVE_CACHE``, else
  ``<rootdir>/.live-cache``).
* the ``live`` marker.
* fixtures: ``fake_model`` (a started ``FakeModel`` logging to ``tmp_path/fake-model.jsonl``),
  ``live_cache`` (the cache folder), ``live_agent`` (a factory: ``live_agent("claude")`` installs the
  pinned CLI once and returns a ``LiveAgent`` isolated under ``tmp_path``, wired to ``fake_model``,
  with the protocol arguments of the installed adapter package's profile).

The adapter conformance suite lives in ``anyagent_testkit.conformance``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .fakemodel import FakeModel
from .live import LiveAgent, LiveInstallError, default_cache, install, prepare

LIVE_MARKER = "live: drives a real agent CLI against the loopback fake model (run with --live)"
SKIP_REASON = "live test: pass --live to run the real agent CLIs (needs Node.js and the npm registry)"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--live`` and ``--live-cache`` (tolerating another plugin that already did)."""
    group = parser.getgroup("anyagent-live", "anyagent live tier")
    for name, kwargs in (
        ("--live", {"action": "store_true", "default": False, "help": "run tests marked live"}),
        ("--live-cache", {"default": None, "help": "folder for the pinned agent CLIs"}),
    ):
        try:
            group.addoption(name, **kwargs)
        except ValueError:
            pass


def pytest_configure(config: pytest.Config) -> None:
    """Declare the ``live`` marker."""
    config.addinivalue_line("markers", LIVE_MARKER)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``live`` tests unless ``--live`` was given."""
    if _live_enabled(config):
        return
    skip = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        if item.get_closest_marker("live") is not None:
            item.add_marker(skip)


def _live_enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("--live", default=False))


@pytest.fixture(scope="session")
def live_cache(pytestconfig: pytest.Config) -> Path:
    """The folder pinned CLIs are installed in."""
    option = pytestconfig.getoption("--live-cache", default=None)
    return Path(option).expanduser().absolute() if option else default_cache(pytestconfig.rootpath)


@pytest.fixture
def fake_model(tmp_path: Path) -> Iterator[FakeModel]:
    """A started fake model on 127.0.0.1, logging every request to ``tmp_path/fake-model.jsonl``."""
    with FakeModel(log=tmp_path / "fake-model.jsonl") as model:
        yield model


@pytest.fixture
def live_agent(
    request: pytest.FixtureRequest, fake_model: FakeModel, tmp_path: Path, live_cache: Path
) -> Callable[..., LiveAgent]:
    """``live_agent(cli_id, name=None)`` → a pinned CLI installed and isolated, wired to ``fake_model``.

    Skips without ``--live``; with ``--live`` an install failure fails the test.
    """
    if not _live_enabled(request.config):
        pytest.skip(SKIP_REASON)

    def make(cli_id: str, name: str | None = None) -> LiveAgent:
        try:
            executable = install(cli_id, live_cache)
        except LiveInstallError as exc:
            pytest.fail(f"live tier: cannot install {cli_id}: {exc}", pytrace=False)
        try:  # the protocol arguments come from the installed adapter package's profile
            return prepare(cli_id, fake_model.url, tmp_path / "live" / (name or cli_id), executable=executable)
        except LiveInstallError as exc:
            pytest.fail(f"live tier: cannot prepare {cli_id}: {exc}", pytrace=False)

    return make
